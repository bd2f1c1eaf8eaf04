"""Privileged vectors written by the compiled batched core (`cf_env.core.kernel.batch_privileged`)
against the reference encoder (`Encoder.privileged`, which the training collector calls for the
acting seat: the opponents' hands egocentric, then the boneyard's tiles).

* Differential: the games of tests/core/test_kernel.py's differential (its configs, every variant
  field, and its game driver) with, at every decision, the kernel's privileged row for the seat
  to move compared bit for bit with the Encoder's; a finished game's row is all zero. The output
  buffer is prefilled with NaN, so a position the kernel leaves unwritten fails.
* The same functions as plain Python: a small differential run under NUMBA_DISABLE_JIT=1.
* A wrong `out` array is refused.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_kernel import differential
from variants import CONFIGS, GAMES, run_without_jit

from cf_env import ChickenFootConfig, Engine
from cf_env.core.kernel import KernelBatch, priv_tables
from cf_env.core.observation import Encoder, privileged_layout


class PrivilegedCheck:
    """The `check` of test_kernel.differential: every live game's privileged row against
    Encoder.privileged for the acting seat."""

    def __init__(self, config: ChickenFootConfig, num_games: int):
        self.encoder = Encoder(config)
        self.out = np.full((num_games, privileged_layout(config).size), np.nan, np.float32)
        self.slices = self.encoder.privileged_layout.slices
        self.seen = {"decisions": 0, "finished_rows": 0, "boneyard": 0, "empty_boneyard": 0, "other_seat": 0}

    def __call__(self, batch: KernelBatch, engines: list[Engine]) -> None:
        self.out.fill(np.nan)
        rows = batch.privileged(self.out)
        assert rows is self.out
        s = self.slices
        for i, engine in enumerate(engines):
            if engine.game_over:
                assert not rows[i].any(), f"game {i} is over: its row must be zero"
                self.seen["finished_rows"] += 1
                continue
            seat = engine.current
            ref = self.encoder.privileged(engine, seat)
            if not np.array_equal(rows[i], ref):
                wrong = [name for name, sl in s.items() if not np.array_equal(rows[i, sl], ref[sl])]
                raise AssertionError(f"{batch.config} game {i} decision {len(engine.history)} "
                                     f"seat {seat}: pieces {wrong} differ")
            self.seen["decisions"] += 1
            bone = bool(ref[s["boneyard"]].any())
            self.seen["boneyard"] += bone
            self.seen["empty_boneyard"] += not bone
        others = ((batch.state.current + 1) % batch.config.num_players).astype(np.int32)
        rows = batch.privileged(self.out, seats=others)  # another seat's hidden information
        for i, engine in enumerate(engines):
            if not engine.game_over:
                assert np.array_equal(rows[i], self.encoder.privileged(engine, int(others[i])))
                self.seen["other_seat"] += 1


def privileged_differential(config: ChickenFootConfig, seeds: list[int], action_seed: int) -> dict:
    check = PrivilegedCheck(config, len(seeds))
    differential(config, seeds, action_seed, check=check)
    return check.seen


def test_kernel_privileged_equals_the_encoders_at_every_decision_over_every_config():
    warm = KernelBatch(ChickenFootConfig(), 1)  # compile (or load the cache) before timing
    warm.reset([0])
    warm.privileged()
    totals = {"decisions": 0, "finished_rows": 0, "boneyard": 0, "empty_boneyard": 0,
              "other_seat": 0}
    start = time.perf_counter()
    for k, cfg in enumerate(CONFIGS):
        seeds = [1000 * k + j for j in range(GAMES[cfg.max_pips])]
        for key, value in privileged_differential(cfg, seeds, action_seed=k).items():
            totals[key] += value
    elapsed = time.perf_counter() - start
    print(f"privileged differential: {len(CONFIGS)} configs, {totals} in {elapsed:.1f} s")
    assert totals["decisions"] >= 100_000
    assert min(totals.values()) > 0  # full and empty boneyards and finished games seen


def test_priv_tables_follow_the_layout():
    for cfg in CONFIGS[:6]:
        layout = privileged_layout(cfg)
        tables = priv_tables(cfg)
        assert tables.size == layout.size
        assert tables.starts.tolist() == [sl.start for sl in layout.slices.values()]
        assert tables.stops.tolist() == [sl.stop for sl in layout.slices.values()]


def test_kernel_privileged_checks_its_out_array():
    batch = KernelBatch(ChickenFootConfig(), 2)
    batch.reset([0, 1])
    assert batch.privileged() is batch.privileged_rows
    size = batch.priv_tables.size
    for bad in (np.zeros((2, size), np.float64), np.zeros((3, size), np.float32),
                np.zeros((2, size + 1), np.float32), np.zeros((size, 2), np.float32).T):
        with pytest.raises(ValueError, match="C-contiguous float32"):
            batch.privileged(bad)


# ---------------------------------------------------------------------------- plain Python
def test_kernel_privileged_equals_the_encoders_without_jit():
    code = (
        "from test_kernel_privileged import privileged_differential\n"
        "from cf_env import ChickenFootConfig\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, draw_until_playable=True,"
        " start_search='all_draw', num_rounds=2, target_score=None)\n"
        "seen = privileged_differential(cfg, [1, 2, 3, 4], action_seed=0)\n"
        "assert seen['decisions'] > 100 and seen['finished_rows'] > 0, seen\n"
        "print('ok', seen)\n"
    )
    run_without_jit(code)
