"""`python -m training.plot` with several runs: the ablation picture (a panel per evaluation
opponent, a curve per run, against learner steps or wall-clock hours)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.evaluation import plot

pytest.importorskip("matplotlib")


def _run(root: Path, name: str, evals: list[dict], players: int = 4) -> Path:
    run = root / name
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"sessions": [],
                                              "env_config": {"num_players": players}}))
    (run / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    return run


def _eval(steps: int, opponent: str, mean: float, wall: float | None = None) -> dict:
    line = {"steps": steps, "opponent": opponent, "deals": 10, "single_round": True,
            "win_rate": {"mean": mean, "ci_low": mean - 0.02, "ci_high": mean + 0.02},
            "round_score": {"mean": 1.0, "ci_low": 0.0, "ci_high": 2.0}}
    return line if wall is None else {**line, "wall_time_s": wall}


def test_hours_come_from_the_cards_wall_time_recorded_in_each_evaluation(tmp_path):
    run = _run(tmp_path, "a", [_eval(100, "greedy", 0.3, wall=1800.0),
                               _eval(200, "greedy", 0.4, wall=7200.0)])
    assert plot.evaluation_hours(run, plot.load_evals(run)["greedy"]) == [0.5, 2.0]


def test_several_runs_make_one_picture_per_call(tmp_path):
    a = _run(tmp_path, "a", [_eval(100, "greedy", 0.3, 60.0), _eval(100, "heuristic", 0.25, 60.0)])
    b = _run(tmp_path, "b", [_eval(100, "greedy", 0.35, 90.0)])
    out = plot.main([str(a), str(b), "--x", "hours", "--out", str(tmp_path / "ab.png")])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.main([str(a), str(b)]) == a / "comparison.png"  # the default path, by steps


def test_hours_without_wall_times_are_refused_with_one_line(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    a = _run(tmp_path, "a", [_eval(100, "greedy", 0.3)])  # no wall_time_s, no tb/ events
    b = _run(tmp_path, "b", [_eval(100, "greedy", 0.3, 10.0)])
    with pytest.raises(SystemExit) as stopped:
        plot.main([str(a), str(b), "--x", "hours"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no wall time" in err[0] and "--x steps" in err[0]


def test_runs_of_different_tables_are_not_compared(tmp_path, capsys):
    a = _run(tmp_path, "a", [_eval(100, "greedy", 0.3)])
    b = _run(tmp_path, "b", [_eval(100, "greedy", 0.5)], players=2)
    with pytest.raises(SystemExit):
        plot.main([str(a), str(b)])
    assert "different player counts" in capsys.readouterr().err


def test_a_run_without_evaluations_is_named(tmp_path, capsys):
    a = _run(tmp_path, "a", [_eval(100, "greedy", 0.3)])
    b = _run(tmp_path, "b", [])
    with pytest.raises(SystemExit):
        plot.main([str(a), str(b)])
    assert f"{b}: no evaluations" in capsys.readouterr().err
