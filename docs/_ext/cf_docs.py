"""Sphinx extension for the chickenfoot docs: Markdown docstrings and tables read from the code.

- Docstrings in `cf_env` and `training` are Markdown (backticks, pipe tables, bullets). The
  `autodoc-process-docstring` hook wraps each one in a `markdown-docstring` directive, which parses
  it with MyST, so autodoc renders them as the Markdown they are (headings become bold lines:
  a docstring cannot open sections inside an API entry).
- Result tables that `training.evaluate` wrote without a heading get a title saying what they
  show; `cf-bibtex` writes the project's BibTeX entry from CITATION.cff.
- `cf-observation-table` and `cf-action-table` build the environment card's tables from
  `cf_env.core.observation.observation_layout` and the action codec, so the card cannot drift
  from the code.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective, new_document

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _markdown_nodes(directive: SphinxDirective, text: str) -> list[nodes.Node]:
    """`text` parsed as MyST Markdown into nodes for the directive's place."""
    from myst_parser.parsers.sphinx_ import MystParser

    settings = directive.state.document.settings
    document = new_document(directive.env.docname, settings)
    MystParser().parse(text, document)
    return list(document.children)


def _demote_headings(lines: list[str]) -> list[str]:
    out, fence = [], False
    for line in lines:
        if line.lstrip().startswith("``"):
            fence = not fence
        match = None if fence else HEADING.match(line)
        out.append(f"**{match[2]}**" if match else line)
    return out


class MarkdownDocstring(SphinxDirective):
    """The directive's content, a docstring, parsed as Markdown."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        return _markdown_nodes(self, "\n".join(_demote_headings(list(self.content))))


WRAPPER = ".. markdown-docstring::"


def process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    if not any(line.strip() for line in lines):
        return
    body = [f"   {line}" if line.strip() else "" for line in lines]
    lines[:] = [WRAPPER, "", *body, ""]


def _unwrapped(lines: list[str]) -> list[str]:
    if lines and lines[0] == WRAPPER:
        return [line[3:] for line in lines[1:]]
    return list(lines)


def _patch_autosummary() -> None:
    """autosummary's one-line summaries read the docstring's first sentence, not the wrapper."""
    from sphinx.ext import autosummary

    original = autosummary.extract_summary
    if getattr(original, "_cf_docs", False):
        return

    def extract_summary(doc, settings):
        return original(_demote_headings(_unwrapped(list(doc))), settings)

    extract_summary._cf_docs = True
    autosummary.extract_summary = extract_summary


# --- the environment card's tables, read from the code ------------------------------------------

def _symbolic_size(name: str) -> str:
    """A piece's size as a formula in T, N, n and the rounds, checked on several configs."""
    from cf_env.core.config import ChickenFootConfig
    from cf_env.core.observation import observation_layout

    configs = [ChickenFootConfig(max_pips=p, num_players=n, num_rounds=r) for p, n, r in
               ((6, 2, 7), (6, 3, 2), (9, 4, 10), (9, 7, 4), (12, 5, 13), (15, 9, 1))]
    candidates = {
        "1": lambda c: 1,
        "T": lambda c: c.num_tiles,
        "N+1": lambda c: c.max_pips + 1,
        "n": lambda c: c.num_players,
        "(n−1)(N+1)": lambda c: (c.num_players - 1) * (c.max_pips + 1),
        "(n−1)T": lambda c: (c.num_players - 1) * c.num_tiles,
        "`num_rounds`": lambda c: c.num_rounds,
    }
    sizes = [{p.name: p.size for p in observation_layout(c).pieces}[name] for c in configs]
    for formula, size_of in candidates.items():
        if all(size_of(c) == s for c, s in zip(configs, sizes)):
            return formula
    raise ValueError(f"observation piece {name!r}: no size formula fits {sizes}; "
                     "add one to docs/_ext/cf_docs.py")


def _table_md(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown pipe table (the pages are MyST, so directives parse their content as Markdown)."""
    def line(cells):
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
    return [line(header), line(["---"] * len(header)), *(line(row) for row in rows)]


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


class ObservationTable(SphinxDirective):
    """The observation's pieces for the default config, with sizes in general."""

    def run(self) -> list[nodes.Node]:
        from cf_env.core.config import ChickenFootConfig
        from cf_env.core.observation import observation_layout

        layout = observation_layout(ChickenFootConfig())
        rows = []
        for piece in layout.pieces:
            where = layout.slices[piece.name]
            rows.append([f"`{piece.name}`", f"{piece.size} ({where.start}:{where.stop})",
                         _symbolic_size(piece.name), _number(piece.high),
                         piece.doc])
        rows.append(["total (D)", str(layout.size), "", "", "the observation's length"])
        return self._parse(_table_md(
            ["piece", "size (default, slice)", "size in general", "upper bound", "meaning"], rows))

    def _parse(self, lines: list[str]) -> list[nodes.Node]:
        return _markdown_nodes(self, "\n".join(lines))


class KernelStateTable(ObservationTable):
    """The compiled state's arrays (`cf_env.core.kernel.STATE_FIELDS`), the table the code is
    made from."""

    def run(self) -> list[nodes.Node]:
        import numpy as np

        from cf_env.core.kernel import STATE_FIELDS

        rows = [[f"`{f.name}`", "(" + ", ".join(["N", *f.dims]) + ("," if not f.dims else "") + ")",
                 np.dtype(f.dtype).name, str(f.fill), f.meaning] for f in STATE_FIELDS]
        return self._parse(_table_md(["field", "shape", "dtype", "new slot", "meaning"], rows))


class ActionTable(ObservationTable):
    """The action ids, from the codec itself (`cf_env.core.actions.decode`)."""

    def run(self) -> list[nodes.Node]:
        from cf_env.core.actions import DRAW, PASS, decode, describe
        from cf_env.core.config import ChickenFootConfig
        from cf_env.core.tiles import tile_tables

        cfg = ChickenFootConfig()
        tables = tile_tables(cfg.max_pips)
        count = tables.num_tiles
        assert decode(tables, 2 * count).kind == DRAW and decode(tables, 2 * count + 1).kind == PASS
        t = count - 2  # a tile that is not a double: 8|9 on the default set
        rows = [
            ["`2t`", f"play tile t attaching its **lo** half (default set: `{2 * t}` is "
                       f"{describe(tables, 2 * t)})"],
            ["`2t + 1`", f"play tile t attaching its **hi** half, never legal for a double "
                           f"(`{2 * t + 1}` is {describe(tables, 2 * t + 1)})"],
            ["`2T`", f"DRAW (`{2 * count}` on the default set): only when you cannot place and "
                       "the boneyard is not empty"],
            ["`2T + 1`", f"PASS (`{2 * count + 1}`): after a DRAW (unless `must_play_drawn` "
                           "and the tile fits), or when you cannot place and cannot draw"],
        ]
        return self._parse(_table_md(["action", "meaning"], rows))


class EnvSummary(ObservationTable):
    """PettingZoo's summary table of an environment, read from a default `cf_env.env()`."""

    def run(self) -> list[nodes.Node]:
        import cf_env

        env = cf_env.env()
        env.reset(seed=0)
        agent = env.agents[0]
        action_space, obs_space = env.action_space(agent), env.observation_space(agent)
        box = obs_space["observation"]
        rows = [
            ["Import", "`from cf_env import chicken_foot_v1`"],
            ["Actions", "Discrete"],
            ["Parallel API", "No"],
            ["Manual control", "Yes: `python -m cf_env.tools.play`"],
            ["Agents", f"{len(env.agents)} by default; 2 to 14 (`num_players`, up to the "
                       "set's maximum)"],
            ["Agent names", f"`agents= {env.agents}`: `player_0` … `player_{{n-1}}`, "
                            "clockwise"],
            ["Action shape", f"`{action_space}`"],
            ["Action values", f"`{action_space}`: 0 … {action_space.n - 1}"],
            ["Observation shape", f"`{box.shape}` (`observation`), "
                                  f"`{obs_space['action_mask'].shape}` (`action_mask`)"],
            ["Observation values", f"`observation` in [0, {_number(float(box.high.max()))}] "
                                   "(per piece: the table below), float32; `action_mask` 0 or 1, "
                                   "int8"],
        ]
        env.close()
        return self._parse(_table_md(["", ""], rows))


def results_title(docname: str, text: str) -> str:
    """A title for a results page written without one, saying what it shows: a benchmark score
    card ("Score card: <agent>"), an evaluation table ("<agent> against <opponents>: <table>",
    from the table `training.evaluate` writes), else the file's name in words."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    card = re.match(r"\*\*(.+?)\*\* score card of `([^`]+)`", first)
    if card:
        return f"{card[1]} score card: `{card[2]}`"
    rows = re.findall(r"^\| (\S[^|]*?) \| (\d+) \| \d", text, flags=re.M)
    if rows and first and not first.startswith("|"):
        agent, opponents = rows[0][0], rows[1:]
        against = ", ".join(f"{seats}× `{name}`" if seats != "1" else f"`{name}`"
                            for name, seats in opponents)
        what = first.split(";")[0].rstrip(".")
        deals = re.search(r"(\d+) duplicate deals", first)
        count = f", {deals[1]} deals" if deals else ""
        return f"`{agent}` against {against} ({what}{count})"
    return docname.rsplit("/", 1)[-1].replace("-", " ").replace("_", " ")


def title_results_tables(app, docname: str, source: list[str]) -> None:
    """`training.evaluate` and `training.benchmark` write their tables as Markdown with no
    heading; the site's navigation needs a title, so such a page gets one saying what it shows
    (`results_title`; the file itself is left as written)."""
    text = source[0]
    if not str(app.env.doc2path(docname)).endswith(".md") or re.match(r"\s*(---|# )", text):
        return
    source[0] = f"# {results_title(docname, text)}\n\n{text}"


class BibTeX(SphinxDirective):
    """The project's BibTeX entry, made from `CITATION.cff` (the repository root's) at build
    time, so the two cannot disagree."""

    def run(self) -> list[nodes.Node]:
        from pathlib import Path

        import yaml  # (myst-parser's own dependency)

        path = Path(self.env.srcdir).parent / "CITATION.cff"
        self.env.note_dependency(str(path))
        cff = yaml.safe_load(path.read_text(encoding="utf-8"))
        authors = " and ".join(
            "{" + a["name"] + "}" if "name" in a
            else f"{a.get('family-names', '')}, {a.get('given-names', '')}".strip(", ")
            for a in cff["authors"]
        )
        date = str(cff.get("date-released", ""))
        fields = [("title", "{" + cff["title"] + "}"), ("author", authors),
                  ("version", cff.get("version")), ("year", date[:4] or None),
                  ("month", date[5:7] or None), ("license", cff.get("license")),
                  ("url", cff.get("repository-code") or cff.get("url"))]
        body = ",\n".join(f"  {key:<8}= {{{value}}}" for key, value in fields if value)
        text = f"@software{{chickenfoot,\n{body}\n}}"
        block = nodes.literal_block(text, text)
        block["language"] = "bibtex"
        return [block]


def setup(app: Sphinx) -> dict:
    app.add_directive("markdown-docstring", MarkdownDocstring)
    app.add_directive("cf-observation-table", ObservationTable)
    app.add_directive("cf-action-table", ActionTable)
    app.add_directive("cf-env-summary", EnvSummary)
    app.add_directive("cf-kernel-state", KernelStateTable)
    app.add_directive("cf-bibtex", BibTeX)
    app.connect("autodoc-process-docstring", process_docstring)
    app.connect("source-read", title_results_tables)
    _patch_autosummary()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
