"""The training schedule both learners follow: when a run writes a checkpoint, freezes a snapshot of
the learner into the opponent pool and evaluates; and the run's best checkpoint (`best.json`).

The self-play learner asks once per iteration, the MaskablePPO learner once per env step; both
call `Schedule.due` with the run's step count and do what it says, so the two cannot drift.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cf_env import ChickenFootConfig
from training.artifacts import checkpoints as ckpt
from training.config import TrainConfig
from training.session import Console, best_so_far, evaluate_checkpoint


@dataclasses.dataclass(frozen=True)
class Due:
    """What is due at a step count. An evaluation writes its own checkpoint first, so a learner
    saves separately only when `checkpoint and not evaluate`."""

    snapshot: bool
    evaluate: bool
    checkpoint: bool


class Schedule:
    """The next step counts for a checkpoint (`checkpoint_every`), a snapshot
    (`opponents.snapshot_every`) and an evaluation (`eval.every_steps`; 0: never).

    Snapshots and evaluations fall on multiples of their period, so a resumed run keeps the
    first run's grid; checkpoints count from the session's first step. One call that passes
    several periods at once (a long iteration) makes each due once, not once per period passed.
    """

    def __init__(self, config: TrainConfig, steps: int):
        self.checkpoint_every = config.checkpoint_every
        self.snapshot_every = config.opponents.snapshot_every
        self.eval_every = config.eval.every_steps
        self.next_checkpoint = steps + self.checkpoint_every
        self.next_snapshot = (steps // self.snapshot_every + 1) * self.snapshot_every
        self.next_eval = (steps // self.eval_every + 1) * self.eval_every if self.eval_every else None

    def due(self, steps: int) -> Due:
        snapshot, self.next_snapshot = _passed(steps, self.next_snapshot, self.snapshot_every)
        evaluate = False
        if self.next_eval is not None:
            evaluate, self.next_eval = _passed(steps, self.next_eval, self.eval_every)
        checkpoint, self.next_checkpoint = _passed(steps, self.next_checkpoint,
                                                   self.checkpoint_every)
        return Due(snapshot, evaluate, checkpoint)


def _passed(steps: int, mark: int, every: int) -> tuple[bool, int]:
    """Whether `steps` reached `mark`, and the next mark after `steps`."""
    if steps < mark:
        return False, mark
    return True, mark + ((steps - mark) // every + 1) * every


class Evaluations:
    """A run's periodic evaluations (`training.session.evaluate_checkpoint`) and its best
    checkpoint: `best.json` points at the checkpoint with the highest win rate against
    `eval.best_metric` so far, this session's and earlier sessions' alike."""

    def __init__(self, run_dir: Path, rules: ChickenFootConfig, config: TrainConfig,
                 console: Console):
        self.run_dir, self.rules, self.config, self.console = run_dir, rules, config, console
        self.metric = f"win_rate_vs_{config.eval.best_metric}"
        self.best = best_so_far(run_dir)
        self.failed = 0
        self.last_steps = -1

    def run(self, target: Path, steps: int) -> dict | None:
        """Evaluate the checkpoint `target` written at `steps`; None if the evaluation failed
        (reported on stderr and counted in `failed`)."""
        self.last_steps = steps
        metrics = evaluate_checkpoint(target, self.rules, self.config, steps, self.console)
        if metrics is None:
            self.failed += 1
            return None
        score = metrics.get(self.metric)
        if score is not None and score > self.best:
            self.best = score
            ckpt.write_pointer(self.run_dir / "checkpoints", "best", target, steps=steps,
                               value=score, metric=self.metric)
        return metrics

    def final_due(self, steps: int) -> bool:
        """Whether the run's final checkpoint still needs its evaluation."""
        return bool(self.config.eval.every_steps) and self.last_steps != steps
