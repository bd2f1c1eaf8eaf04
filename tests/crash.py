"""Crash injection: a writer killed at each of its file-system steps, not by timing luck.

`kill_points(script, prepare, check)` runs `script` in a fresh Python process that SIGKILLs
itself just before its k-th file-system step — a rename, replace, folder swap, unlink, rmdir or
fsync (every write of the project ends in one: `cf_env.core.atomic`) — for k = 1, 2, … until
the script runs to its end. Before each run `prepare()` lays out a fresh copy of the files
(and returns the names `script` is formatted with); after each kill `check(k, names)` asserts
what the next command finds. The script calls `arm()` once its imports are done, so only the
writer's own steps are counted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import os, signal, sys

def arm():
    import cf_env.core.atomic as atomic
    kill_at, count = int(sys.argv[1]), [0]

    def boundary(function):
        def step(*args, **kwargs):
            count[0] += 1
            if count[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)
        return step

    for name in ("rename", "replace", "unlink", "rmdir", "fsync"):
        setattr(os, name, boundary(getattr(os, name)))
    atomic._exchange = boundary(atomic._exchange)
"""


def run_killed_at(script: str, k: int, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `script` (after `PRELUDE`) killed before its k-th file-system step."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(script), str(k)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def kill_points(script: str, prepare: Callable[[], dict], check: Callable[[int, dict], None],
                limit: int = 200) -> int:
    """Kill `script` at each of its file-system steps in turn (module docstring); returns how
    many there were. The run that is not killed must exit 0 and is checked too (k = 0)."""
    for k in range(1, limit + 1):
        names = prepare()
        done = run_killed_at(script.format(**names), k)
        if done.returncode == 0:
            check(0, names)
            return k - 1
        assert done.returncode == -signal.SIGKILL, (
            f"the script failed at kill point {k} instead of being killed:\n{done.stderr}")
        check(k, names)
    raise AssertionError(f"the script still had file-system steps after {limit}")


def weights_checkpoint(folder, marker: int, steps: int = 0):
    """A valid weights-only checkpoint with random weights for the default game, its card
    carrying `marker` (to tell which writer's checkpoint a folder holds)."""
    import numpy as np

    from cf_env import OBSERVATION_VERSION, ChickenFootConfig
    from cf_env.core.observation import observation_layout
    from training import checkpoints as ckpt

    config = ChickenFootConfig()
    sizes = [observation_layout(config).size, 8, config.num_actions]
    rng = np.random.default_rng(marker)
    weights = [(rng.normal(size=(out, inp)), rng.normal(size=out))
               for inp, out in zip(sizes, sizes[1:])]
    card = {"format": ckpt.CHECKPOINT_FORMAT, "steps": steps, "env_config": config.to_dict(),
            "observation_version": OBSERVATION_VERSION, "observation_size": sizes[0],
            "num_actions": sizes[-1], "activation": "tanh", "net_arch": [8], "marker": marker}
    return ckpt.write_weights_checkpoint(folder, weights, card)


def hidden_leftovers(folder) -> list[str]:
    """The hidden entries (staging folders, temporary files) in `folder`."""
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith("."))
