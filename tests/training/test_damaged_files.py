"""Damaged or hostile metadata: what a torn or edited file makes the next command do. It either
recovers (a torn last line of `evals.jsonl`, a log a resumed run repairs) or refuses with one
`error:` line naming the file (an empty `run.json`, a value head whose card is out of range).
Never a traceback, never a silently wrong result."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from crash import ROOT

from cf_env import ChickenFootConfig
from cf_env.agents.policies import load_policy
from cf_env.core import atomic
from training import ppo
from training.artifacts import checkpoints as ckpt
from training.evaluation import plot

SMOKE = str(ROOT / "configs" / "smoke.yaml")


@pytest.fixture(scope="module")
def run_and_agent(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny self-play run (evaluations at steps 256 and 512) and an agent shipped from it."""
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    from training.artifacts import ship

    root = tmp_path_factory.mktemp("damaged")
    ppo.main(["--config", SMOKE, "--set", f"runs_dir={root}", "--set", "run_name=sp",
              "--set", "progress_bar=false"])
    ship.main([str(root / "sp"), str(root / "agent"), "--deals", "2", "--full-games", ""])
    return root / "sp", root / "agent"


def _copy(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / source.name))


def _tear_last_line(file: Path) -> None:
    text = file.read_text()
    file.write_text(text[: len(text) - 25])  # the last line loses its end (and its newline)


# ------------------------------------------------------------------------- run metadata
@pytest.mark.parametrize("damage", ["", "{\"sessions\": ", "[1, 2]"])
def test_resume_refuses_a_damaged_run_json_with_one_line(run_and_agent, tmp_path, capsys, damage):
    run_dir = _copy(run_and_agent[0], tmp_path)
    (run_dir / "run.json").write_text(damage)
    with pytest.raises(SystemExit) as stopped:
        ppo.main(["--resume", str(run_dir), "--set", "total_steps=640"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "run.json" in err[0]
    assert ckpt.read_card(ckpt.resolve_checkpoint(run_dir))["steps"] == 512  # nothing changed


@pytest.mark.slow
def test_a_resumed_run_cuts_a_torn_evaluation_line_before_appending(run_and_agent, tmp_path):
    run_dir = _copy(run_and_agent[0], tmp_path)
    _tear_last_line(run_dir / "evals.jsonl")
    ppo.main(["--resume", str(run_dir), "--set", "total_steps=768"])
    evals = [json.loads(line) for line in (run_dir / "evals.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in evals] == [256, 768]  # the torn line (step 512) is gone


def test_plot_and_ship_read_past_a_torn_last_evaluation_line(run_and_agent, tmp_path):
    from training.artifacts import ship

    run_dir = _copy(run_and_agent[0], tmp_path)
    _tear_last_line(run_dir / "evals.jsonl")
    assert [e["steps"] for e in plot.load_evals(run_dir)["greedy"]] == [256]
    assert plot.main([str(run_dir), "--out", str(tmp_path / "curve.png")]).stat().st_size > 0
    plan = ship.check_ship(run_dir, tmp_path / "agent", deals=2, full_games=())
    assert plan.source.name == "step_000000512"


def test_plot_refuses_a_damaged_evaluation_log_with_one_line(run_and_agent, tmp_path, capsys):
    run_dir = _copy(run_and_agent[0], tmp_path)
    lines = (run_dir / "evals.jsonl").read_text().splitlines()
    (run_dir / "evals.jsonl").write_text("\n".join(["{not json", *lines]) + "\n")
    with pytest.raises(SystemExit) as stopped:
        plot.main([str(run_dir)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {run_dir / 'evals.jsonl'}, line 1: not JSON (Expecting property name "
                   "enclosed in double quotes: line 1 column 2 (char 1)); the log is damaged"]


def test_read_jsonl_skips_only_a_torn_last_line(tmp_path):
    log = tmp_path / "log.jsonl"
    atomic.append_lines(log, ['{"a": 1}', '{"a": 2}'])
    with open(log, "a") as handle:
        handle.write('{"a": 3')  # torn: no end, no newline
    assert atomic.read_jsonl(log) == [{"a": 1}, {"a": 2}]
    assert atomic.repair_jsonl(log) == 1
    atomic.append_lines(log, ['{"a": 4}'])
    assert atomic.read_jsonl(log) == [{"a": 1}, {"a": 2}, {"a": 4}]


# ------------------------------------------------------------------------- checkpoint cards
@pytest.mark.parametrize(("field", "value", "message"), [
    ("win_bonus", math.nan, r"win_bonus must be a finite number in \[-1000, 1000\]; got nan"),
    ("win_bonus", math.inf, r"win_bonus must be a finite number"),
    ("win_bonus", 1e300, r"win_bonus must be a finite number"),
    ("reward_mode", "bogus", r"reward_mode must be one of \['score', 'zero_sum', 'win'\]; got 'bogus'"),
])
def test_a_value_head_card_out_of_range_is_refused_when_loaded(run_and_agent, tmp_path, field,
                                                              value, message):
    agent = _copy(run_and_agent[1], tmp_path)
    card = json.loads((agent / "card.json").read_text())
    card["value"]["reward"][field] = value
    (agent / "card.json").write_text(json.dumps(card))  # json writes NaN and Infinity
    with pytest.raises(ckpt.CheckpointError, match=message):
        ckpt.load_value_head(agent, ChickenFootConfig())
    with pytest.raises(ckpt.CheckpointError, match=message):
        load_policy(f"lookahead:{agent}:4", ChickenFootConfig(num_rounds=1), seed=0)
