"""README.md and the documentation pages as a newcomer uses them: the getting-started page says how
to reach the venv, and every shell command shown in a code block pastes into bash as written.

The pages are README.md and every Markdown page under docs/ (the site `make docs` builds).
Commands are read from fenced ```bash blocks and from indented (4+ spaces) blocks. A
`python -m <module>` of ours must name a module that exists, and every `--flag` it passes must be
one its own `--help` lists; a `make <target>` must be a Makefile target. No page names the old
flat module paths (`python -m cf_env.play`), removed in 0.2.0.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_MAX_LINES = 250
# Every Markdown page of the site (the API pages are generated from docstrings, as .rst).
DOC_PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_autosummary" not in p.parts)
PAGES = {"README.md": README} | {
    str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in DOC_PAGES
}
GETTING_STARTED = "docs/getting-started.md"
OUR_PACKAGES = ("cf_env", "training")
# What a reader must replace before running: <run-name>, <shipped>, [--rounds N] ...
PLACEHOLDER = re.compile(r"<[A-Za-z][\w -]*>|\[--[\w-]+")
# `python -m cf_env.<name>` with no subpackage: an old flat path (removed in 0.2.0).
FLAT_MODULE = re.compile(r"python -m cf_env\.(\w+)(?![.\w])")


def shell_commands(markdown: str) -> list[str]:
    """Every command line shown in a bash or indented code block, continuation lines joined."""
    lines: list[str] = []
    fence: str | None = None
    for raw in markdown.splitlines():
        if raw.startswith("```"):
            fence = None if fence is not None else (raw[3:].strip() or "text")
            continue
        if fence == "bash" or (fence is None and raw.startswith("    ") and raw.strip()):
            lines.append(raw.strip())
    commands, pending = [], ""
    for line in lines:
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        command = pending.split(" #", 1)[0].strip()
        pending = ""
        if command and re.match(r"(python|make|pip|tensorboard|source|\.venv/bin/python) ", command):
            commands.append(command)
    return commands


COMMANDS = [(page, command) for page, text in PAGES.items() for command in shell_commands(text)]
README_COMMANDS = shell_commands(README)


def module_commands() -> list[tuple[str, str, list[str]]]:
    """(page, module, arguments) of every `python -m` command of ours."""
    found = []
    for page, command in COMMANDS:
        words = shlex.split(command)
        if "-m" in words and words[words.index("-m") + 1].startswith(OUR_PACKAGES):
            at = words.index("-m")
            found.append((page, words[at + 1], words[at + 2 :]))
    return found


def help_text(module_name: str) -> str:
    module = importlib.import_module(module_name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0, f"{module_name} --help exited {exited.value.code}"
    return out.getvalue()


def section(text: str, heading: str) -> str:
    """The body of the `## heading` section, up to the next heading of level 2 or 1."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^#{{1,2}} |\Z)", text, re.M | re.S)
    assert match, f"no '## {heading}' section"
    return match[1]


def test_parser_finds_the_known_commands():
    # The parser itself must see the pages' examples, or the tests below check nothing.
    modules = {name for _, name, _ in module_commands()}
    assert {"training.ppo", "training.evaluate", "training.ship", "training.export",
            "cf_env.viz.replay", "cf_env.tools.play", "cf_env.tools.bench",
            "cf_env.tools.soak", "cf_env.tools.openspiel_bots"} <= modules
    assert {"make run", "make test", "make docs"} <= set(README_COMMANDS)
    pages = {page for page, _ in COMMANDS}
    assert {"README.md", GETTING_STARTED, "docs/training.md", "docs/agents.md",
            "docs/evaluation.md", "docs/play.md", "docs/robustness.md"} <= pages


def test_readme_is_short():
    lines = README.count("\n") + (not README.endswith("\n"))
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail into a docs page"
    )


def test_getting_started_and_readme_say_how_to_run_other_commands():
    for page, heading in ((GETTING_STARTED, "Using the virtual environment"),
                          ("README.md", "Quickstart")):
        body = section(PAGES[page], heading)
        assert "source .venv/bin/activate" in body, page
        assert ".venv/bin/python -m" in body, page
    assert "make run" in section(PAGES[GETTING_STARTED], "Install: two commands")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_page_uses_a_flat_module_path(page):
    flat = sorted(set(FLAT_MODULE.findall(PAGES[page])))
    assert not flat, f"{page}: use the layered module paths (cf_env.tools.*, cf_env.viz.*): {flat}"


def test_flat_module_check_sees_old_paths():
    assert FLAT_MODULE.findall("python -m cf_env.play --seat 1; python -m cf_env.tools.play") == ["play"]


@pytest.mark.parametrize(("page", "command"), COMMANDS)
def test_commands_have_no_placeholders(page, command):
    assert not PLACEHOLDER.search(command), f"{page}: command is not runnable as written: {command}"


def test_make_commands_name_makefile_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    assert "docs" in targets
    for page, command in COMMANDS:
        if command.startswith("make "):
            assert set(command.split()[1:]) <= targets, f"{page}: {command}"


@pytest.mark.parametrize("module_name", sorted({name for _, name, _ in module_commands()}))
def test_flags_are_listed_by_each_modules_help(module_name):
    if module_name == "training.rllib_ppo":
        pytest.importorskip("ray", reason="the rllib extra has its own venv (make test-rllib)")
    helped = help_text(module_name)
    for page, name, args in module_commands():
        if name != module_name:
            continue
        for arg in args:
            flag = arg.split("=", 1)[0]
            if flag.startswith("--"):
                assert re.search(rf"(^|[\s,\[]){re.escape(flag)}\b", helped), (
                    f"{page} passes {flag} to python -m {name}, which its --help does not list"
                )


def test_readme_links_resolve():
    # Relative links and images: each names a file or folder of the repository.
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert len(local) >= 15, local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to paths that do not exist: {missing}"


def test_readme_links_every_docs_page_of_the_site_navigation():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^(?!:)([\w/-]+)$", "\n".join(re.findall(r"```\{toctree\}(.*?)```", index, re.S)),
                        flags=re.M)
    assert {"getting-started", "rules", "environment", "training", "api"} <= set(listed), listed
    for name in listed:
        if name in ("api", "results", "changelog"):
            continue  # generated, or the raw measurements, or the root CHANGELOG.md
        assert f"](docs/{name}.md)" in README, f"README.md does not link docs/{name}.md"


# Every command-line program: its module and how it is started (examples by path).
CLIS = ["training.ppo", "training.evaluate", "training.ship", "training.export", "training.plot",
        "training.fit_value", "training.bench", "training.benchmark", "training.leaderboard",
        "training.exploit", "training.model_card", "cf_env.viz.replay", "cf_env.tools.play",
        "cf_env.tools.demo", "cf_env.tools.bench", "cf_env.tools.soak", "cf_env.tools.compile",
        "cf_env.tools.kernel_bench", "cf_env.tools.search_bench", "cf_env.tools.openspiel_bots",
        "cf_env.tools.serve", "cf_env.tools.web_load",
        *(f"examples/{p.name}" for p in sorted((ROOT / "examples").glob("*.py")))]


def _parser_of(cli: str, monkeypatch):
    """The argparse parser a program's `main` builds (stopped before it parses anything)."""
    import argparse

    class Built(Exception):
        pass

    def capture(self, *args, **kwargs):
        raise Built(self)

    if cli.startswith("examples/"):
        spec = importlib.util.spec_from_file_location(f"example_{Path(cli).stem}", ROOT / cli)
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except (ImportError, SystemExit) as missing:  # an optional library's example
            pytest.skip(f"{cli}: {missing}")
    else:
        module = importlib.import_module(cli)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    with pytest.raises(Built) as built:
        (getattr(module, "parse_args", None) or module.main)([])
    return built.value.args[0]


@pytest.mark.parametrize("cli", CLIS)
def test_every_cli_help_shows_its_defaults(cli, monkeypatch):
    import argparse

    parser = _parser_of(cli, monkeypatch)
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        default = action.default
        if default is None or default is False or default is argparse.SUPPRESS or default in (
                [], ""):
            continue  # "not given": the help says in words what happens then, if anything
        shown = formatter._get_help_string(action) % {**vars(action), "prog": parser.prog}
        assert "default" in shown, f"{cli} {action.option_strings[0]}: --help shows no default"


@pytest.mark.parametrize(("page", "heading"), [(GETTING_STARTED, "A first game in Python"),
                                               ("README.md", "In Python"),
                                               ("docs/environment.md", "Usage")])
def test_first_game_snippets_print_what_their_comments_say(page, heading):
    # Each `print(...)  # words: VALUE` line of the snippet prints exactly VALUE.
    code = re.search(r"```python\n(.*?)```", section(PAGES[page], heading), re.S)[1]
    promised = [line.split("#", 1)[1].rsplit(": ", 1)[1].strip()
                for line in code.splitlines() if line.startswith("print(")]
    assert promised, f"{page}: no print line with its output in a comment"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, page, "exec"), {"__name__": "snippet"})
    assert out.getvalue().splitlines() == promised, page
