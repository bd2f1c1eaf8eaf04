"""The built docs site (`make docs` → `site/`) in headless Chromium: every page loads cleanly and
offline, every internal link and anchor resolves, every image loads, the search finds pages, and
the environment card is saved as a screenshot (`test-artifacts/environment-card.png`).

Not part of `make test` (pyproject's `norecursedirs`): run `make docs-check`, or
`pytest -q tests/site` on a built site. `CF_SITE_DIR` points at another build, `CF_SITE_ARTIFACTS`
at another folder for the screenshot. The checker itself is tested here too, on small broken
sites written to `tmp_path`, so it is known to be able to fail.
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PIL import Image
from sitecheck import Checker, serve

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("CF_SITE_DIR", ROOT / "site"))
ARTIFACTS = Path(os.environ.get("CF_SITE_ARTIFACTS", ROOT / "test-artifacts"))
CARD = "environment.html"
SEARCH_QUERY = "observation"


@pytest.fixture(scope="module")
def site(browser):
    """A checker on the built site, shared by the tests below (one context, one page)."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE} (run `make docs`, or set CF_SITE_DIR)")
    with serve(SITE) as base:
        checker = Checker(browser, SITE, base)
        yield checker
        checker.close()


def test_every_page_is_clean(site):
    report = site.crawl()
    assert len(report.visited) >= len(list(SITE.rglob("*.html")))
    assert not report, report.format()


def test_search_finds_pages(site):
    site.report.problems.clear()
    found = site.search(SEARCH_QUERY)
    assert found, site.report.format()
    assert not site.report, site.report.format()


def test_environment_card_screenshot(site):
    site.report.problems.clear()
    out = ARTIFACTS / "environment-card.png"
    out.unlink(missing_ok=True)
    assert site.screenshot(CARD, out), site.report.format()
    assert not site.report, site.report.format()
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000  # a rendered page, not a blank image
    # the card's tables are generated from the code when the site is built
    card = (site.root / CARD).read_text(encoding="utf-8")
    assert "opponent_played" in card and "Discrete(112)" in card and "(421,)" in card


# -------------------------------------------------------------------------- the checker itself


BROKEN_SITE = {
    "index.html": """<!doctype html><title>home</title>
        <h1 id="top">Home</h1>
        <a href="good.html">fine</a> <a href="good.html#here">fine anchor</a> <a href="#top">self</a>
        <a href="sub/">a folder</a> <a href="https://example.org/">out of the site: allowed</a>
        <a href="missing.html">broken link</a>
        <a href="good.html#nowhere">broken anchor</a>
        <a href="#absent">broken self anchor</a>
        <img src="pixel.png" alt="fine"> <img src="missing.png" alt="broken">""",
    "good.html": """<!doctype html><title>good</title>
        <h2 id="here">Here</h2><img src="pixel.png" alt="ok"><a href="index.html">home</a>""",
    "sub/index.html": """<!doctype html><title>sub</title><a href="../good.html">up</a>""",
    "noisy.html": """<!doctype html><title>noisy</title>
        <script>console.error("boom from the page")</script>
        <script>setTimeout(() => { throw new Error("uncaught kaboom"); }, 0)</script>
        <link rel="stylesheet" href="missing.css"> <link rel="icon" href="missing-icon.png">
        <script src="https://cdn.example.invalid/lib.js"></script>
        <p>not linked from anywhere: found by walking the files</p>""",
}


def _write(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # A real image, so that a working <img> is told apart from a broken one.
    Image.new("RGB", (4, 4), "teal").save(tmp_path / "pixel.png")
    return tmp_path


def test_checker_reports_each_problem(browser, tmp_path):
    root = _write(tmp_path, BROKEN_SITE)
    with serve(root) as base:
        checker = Checker(browser, root, base)
        report = checker.crawl()
        checker.close()
    problems = report.problems
    assert sorted(report.visited) == ["good.html", "index.html", "noisy.html", "sub/index.html"]
    assert problems["good.html"] == [] and problems["sub/index.html"] == [], report.format()
    index = "\n".join(problems["index.html"])
    assert "broken link: missing.html" in index
    assert "broken anchor: good.html#nowhere" in index
    assert "broken anchor: #absent" in index
    assert "broken image: missing.png" in index
    assert "HTTP 404: missing.png" in index
    for fine in ("good.html#here", "#top", "sub/", "example.org", "pixel.png"):
        assert fine not in index, report.format()
    noisy = "\n".join(problems["noisy.html"])
    assert "console error: boom from the page" in noisy
    assert "uncaught error: " in noisy and "uncaught kaboom" in noisy
    assert "HTTP 404: missing.css" in noisy
    assert "broken link: missing-icon.png" in noisy
    assert "request leaves localhost: https://cdn.example.invalid/lib.js" in noisy
    message = report.format()
    assert "index.html:" in message and "noisy.html:" in message and "good.html:" not in message


def test_checker_reports_a_page_that_does_not_load_and_a_missing_card(browser, tmp_path):
    root = _write(tmp_path, {"index.html": "<!doctype html><title>home</title>"})
    with serve(root) as base:
        checker = Checker(browser, root, base)
        checker.crawl(start=["index.html", "gone.html"])
        assert not checker.screenshot(CARD, tmp_path / "card.png")
        assert checker.search(SEARCH_QUERY) == []
        checker.close()
    problems = checker.report.problems
    assert problems["gone.html"] == ["page did not load: HTTP 404"]
    assert problems[CARD] == ["missing: no such page to screenshot"]
    assert any("no search results" in p for p in problems[f"search.html?q={SEARCH_QUERY}"])
    assert not (tmp_path / "card.png").exists()


def _outside_address() -> str | None:
    """This machine's address on a non-loopback interface (no packet is sent), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def test_checker_never_lets_a_request_leave_localhost(browser, tmp_path):
    """A request to a host that is not localhost is reported and never sent: a server on this
    machine's own outside address hears nothing."""
    address = _outside_address()
    if address is None:
        pytest.skip("no non-loopback interface to listen on")
    heard = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            heard.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, format, *args):
            pass

    outside = http.server.ThreadingHTTPServer((address, 0), Recorder)
    threading.Thread(target=outside.serve_forever, daemon=True).start()
    url = f"http://{address}:{outside.server_address[1]}"
    page = f'<!doctype html><title>t</title><script src="{url}/lib.js"></script><img src="{url}/i.png">'
    root = _write(tmp_path, {"index.html": page})
    with serve(root) as base:
        checker = Checker(browser, root, base)
        checker.crawl()
        checker.close()
    outside.shutdown()
    outside.server_close()
    assert heard == []
    problems = checker.report.problems["index.html"]
    assert f"request leaves localhost: {url}/lib.js" in problems
    assert f"request leaves localhost: {url}/i.png" in problems


SPHINX_PAGES = {
    "conf.py": 'project = "mini"\nextensions = ["myst_parser"]\nhtml_theme = "furo"\n',
    "index.md": "# Home\n\n```{toctree}\nenvironment\n```\n\nSee [the card](environment.md#actions).\n",
    "environment.md": "# Environment card\n\nThe observation is a dict.\n\n"
    "![a pixel](pixel.png)\n\n(actions)=\n## Actions\n\nBack [home](index.md).\n",
}


def test_checker_passes_a_clean_sphinx_build(browser, tmp_path):
    """No false alarms on what Sphinx and furo write; the search and the screenshot work."""
    pytest.importorskip("furo")
    pytest.importorskip("myst_parser")
    source = _write(tmp_path / "src", SPHINX_PAGES)
    out = tmp_path / "html"
    build = [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(source), str(out)]
    subprocess.run(build, check=True, capture_output=True)
    with serve(out) as base:
        checker = Checker(browser, out, base)
        checker.crawl()
        found = checker.search(SEARCH_QUERY)
        shot = checker.screenshot(CARD, tmp_path / "card.png")
        checker.close()
    assert not checker.report, checker.report.format()
    assert "environment.html" in found
    assert shot and (tmp_path / "card.png").stat().st_size > 1000
    assert {"index.html", "environment.html", "search.html"} <= set(checker.report.visited)
