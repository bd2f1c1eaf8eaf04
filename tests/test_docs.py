"""docs/rules.md is the repository's copy of the rules; docs/ is the documentation site.

Code, tests, the README and the docs pages cite rules by number (R1–R13); a fresh clone has no
shared rule sheet beside it, so every number cited must be a rule heading in docs/rules.md, the
numbers must keep their meanings, and the page's hand-size and variants tables must agree with
`ChickenFootConfig`. The site shows every example as tested code, and builds offline with no
warning and no resource loaded from the network.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from pathlib import Path

from cf_env.core.config import SUPPORTED_SETS, ChickenFootConfig, default_hand_size, max_players

ROOT = Path(__file__).resolve().parents[1]
RULES_DOC = ROOT / "docs" / "rules.md"
CITING = ("cf_env", "training", "tests", "README.md", "docs")  # where rule numbers are cited
CITATION = re.compile(r"\bR(\d+)\b")
RULE_HEADING = re.compile(r"^#{2,6} R(\d+)\b(.*)$", re.MULTILINE)
# A word each rule's heading must keep, so a renumbering cannot silently move a meaning that
# code cites (e.g. R9 is the chicken foot in engine.py).
MEANINGS = {
    1: "set",
    2: "player",
    3: "deal",
    4: "round",
    5: "start",
    6: "match",
    7: "spinner",
    8: "turn",
    9: "chicken foot",
    10: "after the foot",
    11: "end",
    12: "scor",
    13: "winner",
}


def rules_text() -> str:
    return RULES_DOC.read_text(encoding="utf-8")


def cited_rules() -> dict[int, list[str]]:
    """Every rule number cited in the code, tests and README, with where ("path:line")."""
    files: list[Path] = []
    for name in CITING:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    cited: dict[int, list[str]] = {}
    for path in files:
        if "__pycache__" in path.parts or "_autosummary" in path.parts:
            continue
        if path.parts[len(ROOT.parts)] == "docs" and path.suffix != ".md":
            continue  # the results' json, png and scripts cite no rules
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary files (images, checkpoints) cite nothing
            continue
        for number, line in ((int(m[1]), text.count("\n", 0, m.start()) + 1) for m in CITATION.finditer(text)):
            cited.setdefault(number, []).append(f"{path.relative_to(ROOT)}:{line}")
    return cited


def section(text: str, heading: str) -> str:
    """The body of the `## heading` section, up to the next heading of level 2."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"docs/rules.md has no '## {heading}' section"
    return match[1]


def table_rows(body: str) -> list[list[str]]:
    """The cells of a markdown table's body rows (header and separator dropped)."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in body.splitlines() if line.startswith("|")]
    return rows[2:]


def test_every_cited_rule_number_is_a_rule_heading():
    defined = {int(n) for n, _ in RULE_HEADING.findall(rules_text())}
    cited = cited_rules()
    # The scan reads the code: the engine cites the chicken foot rule.
    assert any(where.startswith("cf_env/core/engine.py:") for where in cited.get(9, [])), cited.get(9)
    missing = {f"R{n}": where[:3] for n, where in sorted(cited.items()) if n not in defined}
    assert not missing, f"rule numbers cited but not defined in docs/rules.md (first places): {missing}"


def test_rules_doc_defines_exactly_r1_to_r13_each_with_text():
    text = rules_text()
    numbers = [int(n) for n, _ in RULE_HEADING.findall(text)]
    assert numbers == list(range(1, 14)), f"rule headings in order, once each; got {numbers}"
    bodies = re.split(r"^#{2,6} .*$", text, flags=re.MULTILINE)
    headings = re.findall(r"^#{2,6} .*$", text, flags=re.MULTILINE)
    for heading, body in zip(headings, bodies[1:]):
        if RULE_HEADING.match(heading):
            assert len(body.split()) >= 20, f"{heading!r} has almost no text: {body!r}"


def test_rule_numbers_keep_their_meanings():
    titles = {int(n): title.lower() for n, title in RULE_HEADING.findall(rules_text())}
    wrong = {f"R{n}": titles.get(n) for n, word in MEANINGS.items() if word not in titles.get(n, "")}
    assert not wrong, f"headings that lost their rule's meaning (expected words {MEANINGS}): {wrong}"


def test_rules_doc_internal_links_resolve():
    text = rules_text()
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    anchors = {
        re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", text, re.MULTILINE)
    }
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links, "docs/rules.md links its own sections (choices, variants, hand size)"
    assert set(links) <= anchors, f"links to missing sections: {set(links) - anchors}"


def test_rules_doc_hand_size_table_matches_the_config_defaults():
    rows = table_rows(section(rules_text(), "Hand size"))
    documented: dict[int, dict[int, int]] = {}
    for set_cell, spec in rows:
        max_pips = int(re.fullmatch(r"double-(\d+)", set_cell)[1])
        sizes = documented.setdefault(max_pips, {})
        for entry in spec.split(","):
            players, hand = entry.split(":")
            low, _, high = players.strip().replace("–", "-").partition("-")
            for n in range(int(low), int(high or low) + 1):
                sizes[n] = int(hand)
    expected = {
        pips: {n: default_hand_size(pips, n) for n in range(2, max_players(pips) + 1)} for pips in SUPPORTED_SETS
    }
    assert documented == expected


def test_rules_doc_variant_fields_exist_with_the_documented_defaults():
    rows = table_rows(section(rules_text(), "Variants"))
    fields = {f.name for f in dataclasses.fields(ChickenFootConfig) if f.init}
    defaults = ChickenFootConfig()
    checked = []
    for variant, rule, field_cell, default_cell, _ in rows:
        assert re.fullmatch(r"R\d+(, R\d+)*", rule), f"variant {variant!r}: rule cell {rule!r}"
        named = re.fullmatch(r"`(\w+)`", field_cell)
        if named is None:  # config fields without a cell of their own; the card's Arguments name them
            assert field_cell == "config field: see Arguments", field_cell
            continue
        name = named[1]
        assert name in fields, f"variant {variant!r} names {name!r}, not a ChickenFootConfig field"
        literal = re.match(r"`([^`]+)`", default_cell)
        if literal:
            value = ast.literal_eval(literal[1])
            assert getattr(defaults, name) == value, f"{name}: documented default {value!r}"
        checked.append(name)
    assert {"spinner_arms", "toes", "draw_until_playable", "must_play_drawn"} <= set(checked)
    assert {"double_blank_value", "tie_break", "num_rounds"} <= set(checked)


def test_readme_links_to_the_rules_doc():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\]\((\./)?docs/rules\.md(#[\w-]+)?\)", readme), (
        "README.md must link to docs/rules.md (e.g. [docs/rules.md](docs/rules.md)): "
        "a fresh clone has no ../shared/RULES.md"
    )


# --- the documentation site -------------------------------------------------------------------

DOCS = ROOT / "docs"


def test_every_example_is_shown_on_a_library_page_as_tested_code():
    # literalinclude shows the file CI runs (tests/test_examples.py), never a copy that can drift.
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "libraries").glob("*.md"))
    included = set(re.findall(r"```\{literalinclude\} \.\./\.\./examples/(\w+\.py)", pages))
    scripts = {p.name for p in (ROOT / "examples").glob("*.py")}
    assert scripts and included == scripts, f"not shown: {scripts - included}; unknown: {included - scripts}"


def test_environment_card_tables_come_from_the_code():
    card = (DOCS / "environment.md").read_text(encoding="utf-8")
    for directive in ("cf-env-summary", "cf-action-table", "cf-observation-table"):
        assert f"```{{{directive}}}" in card, directive
    # The card must not also carry a hand-written copy of the layout that could drift.
    assert "| `hand` |" not in card and "(0:55)" not in card


def test_observation_table_formulas_match_the_layout():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import cf_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    from cf_env.core.observation import observation_layout

    formulas = {p.name: cf_docs._symbolic_size(p.name) for p in observation_layout(ChickenFootConfig()).pieces}
    assert formulas["hand"] == "T" and formulas["opponent_played"] == "(n−1)T"
    assert formulas["round"] == "`num_rounds`" and formulas["open_ends"] == "N+1"
