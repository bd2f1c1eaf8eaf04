"""README.md as a newcomer uses it: the Quickstart says how to reach the venv, and every shell
command shown in a code block pastes into bash as written.

Commands are read from fenced ```bash blocks and from indented (4+ spaces) blocks. A
`python -m <module>` of ours must name a module that exists, and every `--flag` it passes must be
one its own `--help` lists; a `make <target>` must be a Makefile target.
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
OUR_PACKAGES = ("cf_env", "training")
# What a reader must replace before running: <run-name>, <shipped>, [--rounds N] ...
PLACEHOLDER = re.compile(r"<[A-Za-z][\w -]*>|\[--[\w-]+")


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


COMMANDS = shell_commands(README)


def module_commands() -> list[tuple[str, list[str]]]:
    found = []
    for command in COMMANDS:
        words = shlex.split(command)
        if "-m" in words and words[words.index("-m") + 1].startswith(OUR_PACKAGES):
            at = words.index("-m")
            found.append((words[at + 1], words[at + 2 :]))
    return found


def help_text(module_name: str) -> str:
    module = importlib.import_module(module_name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0, f"{module_name} --help exited {exited.value.code}"
    return out.getvalue()


def test_readme_parser_finds_the_known_commands():
    # The parser itself must see the README's examples, or the tests below check nothing.
    modules = {name for name, _ in module_commands()}
    assert {"training.ppo", "training.evaluate", "cf_env.replay", "cf_env.play"} <= modules
    assert "make run" in COMMANDS and "make test" in COMMANDS


def test_quickstart_says_how_to_run_other_commands():
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert "source .venv/bin/activate" in quickstart
    assert ".venv/bin/python -m" in quickstart


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_commands_have_no_placeholders(command):
    assert not PLACEHOLDER.search(command), f"README command is not runnable as written: {command}"


def test_readme_make_commands_name_makefile_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    for command in COMMANDS:
        if command.startswith("make "):
            assert set(command.split()[1:]) <= targets, command


@pytest.mark.parametrize("module_name", sorted({name for name, _ in module_commands()}))
def test_readme_flags_are_listed_by_each_modules_help(module_name):
    if module_name == "training.rllib_ppo":
        pytest.importorskip("ray", reason="the rllib extra has its own venv (make test-rllib)")
    helped = help_text(module_name)
    for name, args in module_commands():
        if name != module_name:
            continue
        for arg in args:
            flag = arg.split("=", 1)[0]
            if flag.startswith("--"):
                assert re.search(rf"(^|[\s,\[]){re.escape(flag)}\b", helped), (
                    f"README passes {flag} to python -m {name}, which its --help does not list"
                )


# Every command-line program: its module and how it is started (examples by path).
CLIS = ["training.ppo", "training.evaluate", "training.ship", "training.export", "training.plot",
        "training.fit_value", "training.bench", "cf_env.viz.replay", "cf_env.tools.play",
        "cf_env.tools.demo", "cf_env.tools.bench", "cf_env.tools.soak", "cf_env.tools.compile",
        "cf_env.tools.kernel_bench", "cf_env.tools.search_bench", "cf_env.tools.openspiel_bots",
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
