"""The training schedule both learners follow (`training.schedule`): when checkpoints, snapshots
and evaluations fall due, and the best-checkpoint pointer."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("yaml", reason="needs the train extra: pip install -e '.[train]'")

from cf_env import ChickenFootConfig  # noqa: E402
from training import schedule as schedule_module  # noqa: E402
from training.config import load_config  # noqa: E402
from training.schedule import Due, Evaluations, Schedule  # noqa: E402
from training.session import Console  # noqa: E402

SMOKE = "configs/smoke.yaml"


def config(**fields):
    sets = [f"{name}={value}" for name, value in fields.items()]
    return load_config(SMOKE, sets)


def due_steps(schedule: Schedule, steps: list[int]) -> list[Due]:
    return [schedule.due(step) for step in steps]


def test_each_event_falls_due_once_per_period_at_its_marks():
    schedule = Schedule(config(**{"checkpoint_every": 100, "opponents.snapshot_every": 50,
                                  "eval.every_steps": 200}), steps=0)
    got = due_steps(schedule, [49, 50, 99, 100, 150, 199, 200, 201])
    assert [d.snapshot for d in got] == [False, True, False, True, True, False, True, False]
    assert [d.checkpoint for d in got] == [False, False, False, True, False, False, True, False]
    assert [d.evaluate for d in got] == [False, False, False, False, False, False, True, False]


def test_a_long_step_that_passes_several_periods_makes_each_due_once():
    schedule = Schedule(config(**{"checkpoint_every": 100, "opponents.snapshot_every": 50,
                                  "eval.every_steps": 200}), steps=0)
    assert schedule.due(450) == Due(snapshot=True, evaluate=True, checkpoint=True)
    # the next marks are the first ones after 450, not the ones skipped over
    assert (schedule.next_snapshot, schedule.next_eval, schedule.next_checkpoint) == (500, 600, 500)
    assert schedule.due(499) == Due(snapshot=False, evaluate=False, checkpoint=False)


def test_a_resumed_run_keeps_the_snapshot_and_evaluation_grid_and_counts_checkpoints_afresh():
    schedule = Schedule(config(**{"checkpoint_every": 100, "opponents.snapshot_every": 64,
                                  "eval.every_steps": 200}), steps=130)
    assert (schedule.next_snapshot, schedule.next_eval, schedule.next_checkpoint) == (192, 200, 230)


def test_no_evaluation_is_ever_due_when_every_steps_is_0():
    schedule = Schedule(config(**{"eval.every_steps": 0}), steps=0)
    assert schedule.next_eval is None
    assert not any(d.evaluate for d in due_steps(schedule, [10**3, 10**6, 10**9]))


def test_the_best_pointer_follows_the_highest_win_rate_across_sessions(tmp_path, monkeypatch):
    cfg = config(**{"eval.best_metric": "greedy", "eval.every_steps": 64})
    scores = iter([0.30, 0.25, 0.40])
    monkeypatch.setattr(schedule_module, "evaluate_checkpoint",
                        lambda *args, **kwargs: {"win_rate_vs_greedy": next(scores)})
    written = []
    monkeypatch.setattr(schedule_module.ckpt, "write_pointer",
                        lambda folder, name, target, **info: written.append((target, info)))
    evaluations = Evaluations(tmp_path, ChickenFootConfig(), cfg, Console())
    for steps in (64, 128, 192):
        evaluations.run(tmp_path / f"step_{steps}", steps)
    assert [(t.name, i["value"]) for t, i in written] == [("step_64", 0.30), ("step_192", 0.40)]
    assert not evaluations.final_due(192) and evaluations.final_due(200)

    # a later session starts from the best value the run's best.json records
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "best.json").write_text(json.dumps({"value": 0.5}))
    assert Evaluations(tmp_path, ChickenFootConfig(), cfg, Console()).best == 0.5


def test_a_failed_evaluation_is_counted_and_moves_no_pointer(tmp_path, monkeypatch):
    cfg = config(**{"eval.every_steps": 64})
    monkeypatch.setattr(schedule_module, "evaluate_checkpoint", lambda *args, **kwargs: None)
    monkeypatch.setattr(schedule_module.ckpt, "write_pointer",
                        lambda *args, **kwargs: pytest.fail("no pointer for a failed evaluation"))
    evaluations = Evaluations(tmp_path, ChickenFootConfig(), cfg, Console())
    assert evaluations.run(tmp_path / "step_64", 64) is None
    assert evaluations.failed == 1
