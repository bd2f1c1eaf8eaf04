"""`python -m cf_env.tools.compile`: compile the project's numba functions into numba's on-disk
cache (the `__pycache__` folders beside their sources), so that no later command waits for it.

The compiled code (`cf_env.core.kernel`, `cf_env.agents.kernel_bots`,
`cf_env.agents.kernel_search`) is compiled on first use and cached; from an empty cache that takes
tens of seconds (the figures are in docs/speed/kernel.md), paid once per checkout and machine. `make` runs this right after installing, so the first demo,
training run or test run after a fresh set-up loads the cache instead. It drives every entry point
through the public wrappers with the argument types they pass in use (one compilation serves every
config: only the shapes and the `params` row change; `batch_step` alone is called directly, on an
undealt batch, with the types `KernelBatch.step` passes). The parts compile in two stages of
child processes (`--part`, `STAGES`): the rules' step and a new game first, since every other
part calls them, then the rest; numba writes each function's cache file whole.

numba invalidates a function's cache entry when *its own* source file changes, not when a file it
calls into does: after editing `cf_env/core/kernel.py`, the cached `batch_advance` or `search`
would still hold the old rules inlined. `--clean` deletes the project's numba cache files first
(what to run after editing any compiled module; installs never edit them).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from cf_env.tools.cli import HelpFormatter


def _rules_steps() -> None:
    """The rules' step (batch_step: apply_action, is_legal, the round's end and the next
    round's start), which the later stage's entry points call with the same types and so load
    from the cache. Called on an undealt batch with no legal action (nothing changes): the
    types are those `KernelBatch.step` passes."""
    from cf_env.core import kernel
    from cf_env.core.config import ChickenFootConfig

    batch = kernel.KernelBatch(ChickenFootConfig(), 2)
    kernel.batch_step(batch.state, batch.tables, np.full(2, -1, np.int64))


def _rules_reads() -> None:
    """A new game (batch_reset), then what reads a batch without stepping it (legal bitsets,
    observations, privileged vectors, random actions) and its step through the wrapper."""
    from cf_env.core.config import ChickenFootConfig
    from cf_env.core.kernel import KernelBatch, batch_random_actions

    batch = KernelBatch(ChickenFootConfig(), 2)
    batch.reset([1, 2])
    batch.observe()
    batch.privileged()
    batch.observe(seats=np.zeros(2, np.int32))
    out = np.zeros(2, np.int64)
    batch_random_actions(batch.legal(), np.zeros(2), out)


def _rules_games() -> None:
    """The checked steps: the whole batch (batch_first_illegal first), then some games
    (step_games)."""
    from cf_env.core.config import ChickenFootConfig
    from cf_env.core.kernel import KernelBatch

    batch = KernelBatch(ChickenFootConfig(), 2)
    batch.reset([1, 2])
    mask = batch.legal_mask()
    batch.step(np.array([int(np.flatnonzero(row)[0]) for row in mask], np.int64))
    mask = batch.legal_mask()
    batch.step_games(np.array([0], np.int64), np.array([int(np.flatnonzero(mask[0])[0])], np.int64))


def _engine() -> None:
    from cf_env.core.engine import Engine
    from cf_env.core.observation import Encoder

    engine = Engine(seed=0, auto_deal=False)  # one_game, one_observe
    Encoder(engine.config).observe(engine, 0)
    engine.restore(engine.snapshot())
    while not engine.between_rounds:
        engine.step(engine.legal_actions()[0])
    engine.deal_next()


def _bots() -> None:
    from cf_env.envs.batch import ChickenFootBatch

    games = ChickenFootBatch(num_envs=2, bots={1: "random", 2: "greedy", 3: "heuristic"},
                             episode="round", final_observation=True)
    out = games.reset(seed=0)
    while not out.round_over.any():  # the adapter's own deal of the next round too
        out = games.step(out.action_mask.argmax(axis=1))


def _search() -> None:
    from cf_env.agents.policies import load_policy
    from cf_env.core.config import ChickenFootConfig
    from cf_env.envs.env import raw_env

    env = raw_env()
    env.reset(seed=0)
    policy = load_policy("ismcts:20", ChickenFootConfig(), seed=0)
    while env.observe(env.agent_selection)["action_mask"].sum() < 2:  # a choice: the search runs
        env.step(policy.act(env.observe(env.agent_selection)))
    policy.act(env.observe(env.agent_selection))


def _engine_layout() -> None:
    from cf_env.core.engine import Engine

    engine = Engine(seed=0, auto_deal=False)
    engine.playable_values()  # one_playable
    engine.placement(37)  # one_placement (seed 0 deals seat 1 the 9|1: action 37 is legal)


def _engine_and_search() -> None:
    _engine()
    _search()


def _bots_games_and_layout() -> None:
    _bots()
    _rules_games()
    _engine_layout()


# Stages run one after another, the parts of a stage at once (a child process each): the first
# compiles the rules' step and a new game, which every later entry point calls and then loads
# from the cache instead of compiling again. The second pairs the longest chain (the engine, on
# which the search's decision runs, then the search) with the rest.
STAGES = ((_rules_steps, _rules_reads), (_engine_and_search, _bots_games_and_layout))
PARTS = tuple(part for stage in STAGES for part in stage)


def clean_cache(package: Path) -> int:
    """Delete numba's cache files (index `.nbi`, code `.nbc`) in the `__pycache__` folders under
    `package`; returns how many."""
    stale = [p for p in package.rglob("__pycache__/*") if p.suffix in (".nbi", ".nbc")]
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cf_env.tools.compile",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--part", type=int, choices=range(len(PARTS)),
                        help="compile one part in this process (the children's flag)")
    parser.add_argument("--clean", action="store_true",
                        help="delete the project's numba cache files first (after editing a "
                             "compiled module: numba does not track calls into other files)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.part is not None:
        PARTS[args.part]()
        return 0
    if args.clean:
        package = Path(__file__).resolve().parents[1]
        print(f"removed {clean_cache(package)} numba cache files under {package}")
    for number, stage in enumerate(STAGES, 1):
        stage_start = time.perf_counter()
        parts = [PARTS.index(part) for part in stage]
        children = [subprocess.Popen([sys.executable, "-m", "cf_env.tools.compile", "--part", str(i)])
                    for i in parts]
        failed = [i for i, child in zip(parts, children) if child.wait() != 0]
        if failed:
            print(f"error: compiling part(s) {failed} failed (their traceback is above)",
                  file=sys.stderr)
            return 1
        print(f"stage {number} ({', '.join(part.__name__.strip('_') for part in stage)}): "
              f"{time.perf_counter() - stage_start:.1f} s")
    print(f"compiled the numba functions into their cache in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
