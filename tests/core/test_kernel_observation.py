"""Observations written by the compiled batched core (`cf_env.core.kernel.batch_observe`) against
the reference encoding (`Encoder.encode`, numpy over the engine's public fields) and the
engine's own compiled observation (`Encoder.observe`, which the envs call).

* Differential: the games of tests/core/test_kernel.py's differential (its random configs, every
  variant field, and its game driver) with, at every decision, the kernel's observation row for
  the seat to move compared bit for bit with `Encoder.encode`'s and `Encoder.observe`'s; a finished game's
  row is all zero.
* `KernelBatch.load`: positions reached by an Engine, loaded into a batch, observe the same.
* The same functions as plain Python: a small differential run under NUMBA_DISABLE_JIT=1.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_kernel import differential
from variants import CONFIGS, GAMES, random_config, run_without_jit

from cf_env import ChickenFootConfig, Engine
from cf_env.core.kernel import KernelBatch, obs_tables
from cf_env.core.observation import Encoder, observation_layout


class ObservationCheck:
    """The `check` of test_kernel.differential: every live game's observation row against
    `Encoder.encode` (the numpy definition) and the engine's own compiled observation
    (`Encoder.observe`, written afresh at each decision)."""

    def __init__(self, config: ChickenFootConfig, num_games: int):
        self.encoder = Encoder(config)
        self.out = np.full((num_games, observation_layout(config).size), np.nan, np.float32)
        self.slices = self.encoder.layout.slices
        self.seen = {"decisions": 0, "finished_rows": 0, "voids": 0, "played": 0, "drawn": 0, "other_seat": 0}

    def __call__(self, batch: KernelBatch, engines: list[Engine]) -> None:
        obs = batch.observe(self.out)
        assert obs is self.out
        s = self.slices
        for i, engine in enumerate(engines):
            if engine.game_over:
                assert not obs[i].any(), f"game {i} is over: its row must be zero"
                self.seen["finished_rows"] += 1
                continue
            seat = engine.current
            ref = self.encoder.encode(engine, seat)
            if not np.array_equal(obs[i], ref):
                wrong = [name for name, sl in s.items() if not np.array_equal(obs[i, sl], ref[sl])]
                raise AssertionError(f"{batch.config} game {i} decision {len(engine.history)} "
                                     f"seat {seat}: pieces {wrong} differ")
            assert np.array_equal(obs[i], self.encoder.observe(engine, seat))
            self.seen["decisions"] += 1
            self.seen["voids"] += bool(ref[s["opponent_voids"]].any())
            self.seen["played"] += bool(ref[s["opponent_played"]].any())
            self.seen["drawn"] += bool(ref[s["drawn_tile"]].any())
        # Another seat's view of the same position (the collector's bootstrap rows): its hand,
        # its egocentric order, no drawn tile (only the seat to move sees it).
        others = ((batch.state.current + 1) % batch.config.num_players).astype(np.int32)
        obs = batch.observe(self.out, seats=others)
        for i, engine in enumerate(engines):
            if not engine.game_over:
                assert np.array_equal(obs[i], self.encoder.encode(engine, int(others[i])))
                self.seen["other_seat"] += 1


def observation_differential(config: ChickenFootConfig, seeds: list[int], action_seed: int) -> dict:
    check = ObservationCheck(config, len(seeds))
    differential(config, seeds, action_seed, check=check)
    return check.seen


def test_kernel_observations_equal_the_encoders_at_every_decision_over_random_configs():
    warm = KernelBatch(ChickenFootConfig(), 1)  # compile (or load the cache) before timing
    warm.reset([0])
    warm.observe()
    warm.step(np.array([int(np.flatnonzero(warm.legal_mask()[0])[0])]))
    totals = {"decisions": 0, "finished_rows": 0, "voids": 0, "played": 0, "drawn": 0,
              "other_seat": 0}
    start = time.perf_counter()
    for k, cfg in enumerate(CONFIGS):
        seeds = [1000 * k + j for j in range(GAMES[cfg.max_pips])]
        for key, value in observation_differential(cfg, seeds, action_seed=k).items():
            totals[key] += value
    elapsed = time.perf_counter() - start
    print(f"observation differential: {totals} in {elapsed:.1f} s")
    assert totals["decisions"] >= 100_000
    assert min(totals.values()) > 0  # voids, opponents' tiles, drawn tiles and finished games seen


def test_obs_tables_follow_the_layout():
    for cfg in CONFIGS[:6]:
        layout = observation_layout(cfg)
        tables = obs_tables(cfg)
        assert tables.size == layout.size
        assert sorted(tables.starts.tolist()) == sorted(sl.start for sl in layout.slices.values())


def test_kernel_observe_checks_its_out_array():
    batch = KernelBatch(ChickenFootConfig(), 2)
    batch.reset([0, 1])
    assert batch.observe() is batch.observations
    for bad in (np.zeros((2, batch.obs_tables.size), np.float64),
                np.zeros((3, batch.obs_tables.size), np.float32),
                np.zeros((batch.obs_tables.size, 2), np.float32).T):
        with pytest.raises(ValueError, match="C-contiguous float32"):
            batch.observe(bad)


@pytest.mark.parametrize("max_pips", [6, 9, 12])
def test_loaded_positions_observe_as_the_engine(max_pips):
    """Engines played some random moves (voids, played tiles, drawn tiles on the board), loaded
    into a batch, then played on in both: the observations agree before and after."""
    rng = np.random.default_rng(max_pips)
    for trial in range(8):
        cfg = random_config(rng, max_pips)
        engines = [Engine(cfg, seed=100 * trial + j) for j in range(4)]
        for engine in engines:
            for _ in range(int(rng.integers(0, 60))):
                if engine.game_over:
                    break
                bits = engine.legal_bits()
                choices = [a for a in range(bits.bit_length()) if bits >> a & 1]
                engine.step(choices[int(rng.integers(len(choices)))])
        batch = KernelBatch(cfg, len(engines))
        for i, engine in enumerate(engines):
            batch.load(i, engine)
        check = ObservationCheck(cfg, len(engines))
        for _ in range(30):
            check(batch, engines)
            legal = batch.legal_mask()
            actions = np.array([int(rng.choice(np.flatnonzero(row))) if row.any() else -1
                                for row in legal])
            batch.step(actions)
            for engine, action in zip(engines, actions.tolist(), strict=True):
                if action >= 0:
                    engine.step(action)


# ---------------------------------------------------------------------------- plain Python
def test_kernel_observations_equal_the_encoders_without_jit():
    code = (
        "from test_kernel_observation import observation_differential\n"
        "from cf_env import ChickenFootConfig\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, draw_until_playable=True,"
        " start_search='all_draw', num_rounds=2, target_score=None)\n"
        "seen = observation_differential(cfg, [1, 2, 3, 4], action_seed=0)\n"
        "assert seen['decisions'] > 100 and seen['voids'] > 0, seen\n"
        "print('ok', seen)\n"
    )
    run_without_jit(code)
