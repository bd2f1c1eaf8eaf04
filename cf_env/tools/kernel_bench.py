"""Random-play decisions per CPU-second of the compiled batched core (`cf_env.core.kernel`) at
several batch sizes, beside the pure-Python `Engine` playing one game, in the same process.

    python -m cf_env.tools.kernel_bench [--seconds 1.5] [--batches 1,16,256,4096]

A decision is one action of one game (draws and passes included). Each batch loop is
`batch_legal` -> a uniformly random legal action per game (`batch_random_actions`) ->
`batch_step`, finished games dealt a new seeded game at once, so the per-game RNG's shuffles at
round starts (the wrapper's Python share) are counted too. The "with observation + mask" rows
also write every game's observation for its seat to move (`batch_observe`, into one
preallocated (N, observation size) float32 array) at each step, beside the legal bitset; the
"with observation + privileged + mask" rows write each game's privileged vector for the same seat
too (`batch_privileged`, into the batch's preallocated (N, privileged size) float32 array).
Print only: CPU time is `time.process_time()`, compilation is done before timing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.kernel import KernelBatch, batch_random_actions

CASES = (("4p double-9", {"max_pips": 9, "num_players": 4}), ("8p double-15", {"max_pips": 15, "num_players": 8}))


def kernel_rate(config: ChickenFootConfig, batch: int, seconds: float, seed: int = 0,
                observe: bool = False, privileged: bool = False) -> float:
    games = KernelBatch(config, batch)
    rng = np.random.default_rng(seed)
    next_seed = batch
    games.reset(list(range(batch)))
    actions = np.empty(batch, dtype=np.int64)
    state = games.state
    decisions = 0
    start = time.process_time()
    while True:
        for _ in range(64):
            legal = games.legal()
            if observe:
                games.observe()
            if privileged:
                games.privileged()
            batch_random_actions(legal, rng.random(batch), actions)
            decisions += int((actions >= 0).sum())
            games.step(actions)
            over = state.game_over
            if over.any():
                done = np.flatnonzero(over)
                games.reset(list(range(next_seed, next_seed + len(done))), done)
                next_seed += len(done)
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return decisions / elapsed


def engine_rate(config: ChickenFootConfig, seconds: float, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    engine = Engine(config, seed=seed)
    decisions, games = 0, 0
    start = time.process_time()
    while True:
        for _ in range(256):
            if engine.game_over:
                games += 1
                engine.reset(seed + games)
            legal = engine.legal_bits()
            choices = [a for a in range(legal.bit_length()) if legal >> a & 1]
            engine.step(choices[int(rng.random() * len(choices))])
            decisions += 1
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return decisions / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="CPU seconds per cell")
    parser.add_argument("--batches", default="1,16,256,4096", help="comma-separated batch sizes")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    start = time.perf_counter()
    kernel_rate(ChickenFootConfig(), 2, 0.0, observe=True, privileged=True)  # compile (or load the numba cache) before timing
    print(f"compile / cache load: {time.perf_counter() - start:.2f} s")
    header = f"{'case':<50} {'engine 1 game':>14} " + " ".join(f"{'batch ' + str(b):>12}" for b in batches)
    print("random-play decisions per CPU-second")
    print(header)
    for name, fields in CASES:
        config = ChickenFootConfig(**fields)
        row = f"{name:<50} {engine_rate(config, args.seconds):>14,.0f} "
        row += " ".join(f"{kernel_rate(config, b, args.seconds):>12,.0f}" for b in batches)
        print(row, flush=True)
        row = f"{name + ' with observation + mask':<50} {'':>14} "
        row += " ".join(f"{kernel_rate(config, b, args.seconds, observe=True):>12,.0f}" for b in batches)
        print(row, flush=True)
        row = f"{name + ' with observation + privileged + mask':<50} {'':>14} "
        row += " ".join(f"{kernel_rate(config, b, args.seconds, observe=True, privileged=True):>12,.0f}"
                        for b in batches)
        print(row, flush=True)


if __name__ == "__main__":
    main()
