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

The batched envs (`--envs`): "ChickenFootBatch" rows step `cf_env.envs.batch.ChickenFootBatch`
with every seat outside (all its outputs: seat to move, observation, mask, rewards, flags) and a
uniformly random legal action per game; the "learner steps" rows compare the native vector env
(`gymnasium.make_vec(ENV_ID, vectorization_mode="vector_entry_point")`, compiled greedy bots)
with Gymnasium's `SyncVectorEnv` over the single-agent env (`vectorization_mode="sync"`, the
Python greedy policy) at the same N, both with `opponents=["greedy"]` and a uniformly random
action from `info["action_mask"]` (packed into bits and drawn by `batch_random_actions` for both).
Print only: CPU time is `time.process_time()`, compilation is done before timing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.kernel import KernelBatch, batch_random_actions
from cf_env.tools.cli import HelpFormatter

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


def masked_random(mask: np.ndarray, uniforms: np.ndarray, out: np.ndarray) -> np.ndarray:
    """A uniformly random True column per row of a (N, A) bool mask, into out (N,) int64."""
    n, actions = mask.shape
    width = (actions + 63) // 64
    packed = np.zeros((n, 8 * width), np.uint8)
    packed[:, : (actions + 7) // 8] = np.packbits(mask, axis=1, bitorder="little")
    batch_random_actions(packed.view(np.uint64), uniforms, out)
    return out


def batch_env_rate(config: ChickenFootConfig, batch: int, seconds: float, seed: int = 0) -> float:
    """Outside decisions per CPU-second of ChickenFootBatch, every seat outside."""
    from cf_env.envs.batch import ChickenFootBatch

    games = ChickenFootBatch(config, batch)
    rng = np.random.default_rng(seed)
    actions = np.empty(batch, dtype=np.int64)
    games.reset(seed=seed)
    decisions = 0
    start = time.process_time()
    while True:
        for _ in range(32):
            batch_random_actions(games.legal_words, rng.random(batch), actions)
            games.step(actions)
            decisions += batch
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return decisions / elapsed


def learner_rate(mode: str, batch: int, seconds: float, seed: int = 0) -> float:
    """Learner steps per CPU-second of make_vec(ENV_ID, vectorization_mode=mode) against greedy
    opponents (default config), with masked random actions."""
    import gymnasium as gym

    from cf_env.envs.single_agent import ENV_ID  # importing the package registers ENV_ID

    envs = gym.make_vec(ENV_ID, num_envs=batch, vectorization_mode=mode, opponents=["greedy"])
    rng = np.random.default_rng(seed)
    actions = np.empty(batch, dtype=np.int64)
    _, info = envs.reset(seed=seed)
    steps = 0
    start = time.process_time()
    while True:
        for _ in range(16):
            masked_random(info["action_mask"], rng.random(batch), actions)
            _, _, _, _, info = envs.step(actions)
            steps += batch
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            envs.close()
            return steps / elapsed


def env_rows(args) -> None:
    batches = [int(b) for b in args.batches.split(",")]
    batch_env_rate(ChickenFootConfig(), 2, 0.0)  # compile batch_advance before timing
    print("ChickenFootBatch (every seat outside): decisions per CPU-second, obs + mask + rewards")
    print(f"{'case':<50} " + " ".join(f"{'batch ' + str(b):>12}" for b in batches))
    for name, fields in CASES:
        config = ChickenFootConfig(**fields)
        row = f"{name:<50} " + " ".join(f"{batch_env_rate(config, b, args.seconds):>12,.0f}" for b in batches)
        print(row, flush=True)
    print("learner steps per CPU-second, 4p double-9 against greedy opponents")
    print(f"{'num_envs':>8} {'sync (Python)':>14} {'native vector':>14} {'ratio':>7}")
    for n in (int(b) for b in args.vector_envs.split(",")):
        learner_rate("vector_entry_point", 2, 0.0)
        sync = learner_rate("sync", n, args.seconds)
        native = learner_rate("vector_entry_point", n, args.seconds)
        print(f"{n:>8} {sync:>14,.0f} {native:>14,.0f} {native / sync:>6.1f}x", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.5, help="CPU seconds per cell")
    parser.add_argument("--batches", default="1,16,256,4096", help="comma-separated batch sizes")
    parser.add_argument("--envs", action="store_true",
                        help="the batched env rows instead (ChickenFootBatch, vector env vs sync)")
    parser.add_argument("--vector-envs", default="16,256", help="num_envs of the learner-steps rows")
    args = parser.parse_args(argv)
    if args.envs:
        env_rows(args)
        return
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
