"""The built docs site as a newcomer reads it, on a laptop's screen (1366×900) in headless
Chromium: nothing cut off, pages titled by what they show, score cards shown once, the light
install path, the environment card's Usage block, the API's entry points on its first screen,
the BibTeX entry, the favicon, and no Sphinx build files published.

Run with the rest of tests/site by `make docs-check` (on a built site: `CF_SITE_DIR`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from sitecheck import Checker, serve

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("CF_SITE_DIR", ROOT / "site"))

WIDTH, HEIGHT = 1366, 900
# Every block and table a reader scrolls sideways to see is cut off at this width.
_OVERFLOW_JS = """() => Array.from(document.querySelectorAll(
    'article pre, article table, article .table-wrapper, article div.highlight'))
  .filter((e) => e.scrollWidth > e.clientWidth + 1)
  .map((e) => `${e.tagName.toLowerCase()} ${e.scrollWidth}>${e.clientWidth}: `
    + (e.innerText || '').slice(0, 50).replace(/\\s+/g, ' '))"""
ENTRY_POINTS = ("cf_env.env", "cf_env.raw_env", "ChickenFootConfig", "ChickenFootBatch",
                "Engine", "load_policy")


@pytest.fixture(scope="module")
def reader(browser):
    """A checker on the built site at 1366×900."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE} (run `make docs`, or set CF_SITE_DIR)")
    with serve(SITE) as base:
        checker = Checker(browser, SITE, base, viewport=(WIDTH, HEIGHT))
        yield checker
        checker.close()


def pages() -> list[str]:
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
                  if not {"_modules", "_sources"} & set(p.parts))


_FACTS_JS = """(card) => ({
  cut: (OVERFLOW)(),
  title: document.title,
  heading: document.querySelector('h1')?.innerText || '',
  card: document.body.innerText.includes(card),
  blocks: Array.from(document.querySelectorAll('article pre'), (e) => e.innerText),
})""".replace("OVERFLOW", _OVERFLOW_JS)


@pytest.fixture(scope="module")
def facts(reader) -> dict:
    """Each page's facts, from one visit: what overflows, its title and heading, whether it
    shows the 4-player score card, its code blocks."""
    card = (ROOT / "docs" / "benchmark" / "selfplay-4p-d9.md").read_text(encoding="utf-8")
    shown = re.sub(r"[*`]", "", card.splitlines()[0])  # "Chicken Foot ... score card of ppo:..."
    found = {}
    for path in pages():
        assert reader.visit(path) is not None, reader.report.format()
        found[path] = reader.page.evaluate(_FACTS_JS, shown)
    return found


def test_no_code_block_or_table_is_cut_off_at_1366_px(facts):
    cut = {path: page["cut"] for path, page in facts.items() if page["cut"]}
    assert not cut, cut


def test_pages_are_titled_by_what_they_show_and_score_cards_shown_once(facts):
    named = {path: page["title"] for path, page in facts.items()
             if ".md" in page["title"] or ".md" in page["heading"]}
    assert not named, named
    assert [path for path, page in facts.items() if page["card"]] == ["benchmark.html"]


def test_landing_and_getting_started_show_the_light_install_path(facts):
    for path in ("index.html", "getting-started.html"):
        blocks = "\n".join(facts[path]["blocks"])
        assert re.search(r"^pip install -e \.(\s|$)", blocks, flags=re.M), path
        assert "python -m cf_env.tools.demo" in blocks, path
        assert "make run" in blocks, path  # beside the make commands
    for path, page in facts.items():  # extras are quoted (zsh reads [...] as a pattern)
        assert not re.search(r"pip install (-e )?\.\[", "\n".join(page["blocks"])), path


def test_the_environment_card_starts_with_an_aec_usage_block(reader):
    reader.visit("environment.html")
    first = reader.page.evaluate(
        "() => { const h = document.querySelector('article section section h2');"
        " const block = h.parentElement.querySelector('pre');"
        " return [h.innerText, block.innerText]; }")
    assert first[0].startswith("Usage")
    assert "agent_iter()" in first[1] and 'observation["action_mask"]' in first[1]
    errors = reader.page.locator("a", has_text="Errors").first
    assert errors.get_attribute("href").startswith("robustness.html")
    # The Gymnasium page shows the card's section, included from it (the source holds no copy).
    reader.visit("libraries/gymnasium.html")
    assert "Masks through wrappers" in reader.page.evaluate("() => document.body.innerText")
    source = (ROOT / "docs" / "libraries" / "gymnasium.md").read_text(encoding="utf-8")
    assert "{include} ../environment.md" in source and "Masks through wrappers" not in source


def test_the_api_index_names_the_entry_points_on_its_first_screen(reader):
    reader.visit("api.html")
    visible = reader.page.evaluate(
        "() => Array.from(document.querySelectorAll('article a, article code'))"
        ".filter((e) => e.getBoundingClientRect().bottom <= window.innerHeight)"
        ".map((e) => e.innerText)")
    for name in ENTRY_POINTS:
        assert any(name in text for text in visible), name


def test_landing_and_benchmark_pages_give_the_bibtex_from_citation_cff(facts):
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for path in ("index.html", "benchmark.html"):
        entries = [b for b in facts[path]["blocks"] if b.startswith("@software{")]
        assert len(entries) == 1, path
        assert cff["title"] in entries[0] and cff["version"] in entries[0]


def test_every_page_has_a_favicon_and_no_build_files_are_published(reader):
    reader.report.problems.clear()  # (this test's own visits; the crawl checks every page)
    reader.visit("index.html")
    status = reader.page.evaluate(
        "async () => (await fetch(document.querySelector(\"link[rel~='icon']\").href)).status")
    assert status == 200
    for path in ("environment.html", "libraries/index.html"):
        reader.visit(path)
        assert reader.page.locator("link[rel~='icon']").count() == 1
    assert not (SITE / ".doctrees").exists()
    assert not reader.report, reader.report.format()
