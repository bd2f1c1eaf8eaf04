"""Safety of the batched adapters (`cf_env.envs.batch.ChickenFootBatch`,
`cf_env.envs.vector_env.ChickenFootVectorEnv`) and their compiled bots: bad input refused before
any game changes (the whole state compared before and after), sizes bounded before anything is
allocated, opponent weights checked, `reset`'s seeds and options checked or honoured, Gymnasium's
SAME_STEP autoreset contract (`final_obs` / `final_info`) checked against Gymnasium's own
wrappers, and the bots' splitmix64 stream free of overflow warnings without the JIT."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cf_env.agents.kernel_bots import next_uniform

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- splitmix64
def splitmix64(state: int) -> tuple[int, float]:
    """The reference stream in Python ints: the next state and its float in [0, 1)."""
    mask = 2**64 - 1
    x = (state + 0x9E3779B97F4A7C15) & mask
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return x, (z >> 11) / 2.0**53


def test_the_bots_stream_is_splitmix64_modulo_2_to_the_64():
    rng = np.random.default_rng(0)
    states = rng.integers(0, 2**64, 500, dtype=np.uint64).tolist() + [0, 2**63, 2**64 - 1]
    for state in states:
        words = np.array([state], np.uint64)
        uniform = next_uniform(words, 0)
        assert (int(words[0]), uniform) == splitmix64(state)


def test_the_batch_bots_run_without_jit_with_warnings_as_errors():
    """Under NUMBA_DISABLE_JIT=1 the stream is numpy uint64 scalars, which warn on overflow:
    the bots must wrap without one, and draw what the compiled bots draw."""
    code = (
        "import numpy as np\n"
        "from numba.core import config\n"
        "assert config.DISABLE_JIT\n"
        "from cf_env.envs.batch import ChickenFootBatch\n"
        "games = ChickenFootBatch(num_envs=3, bots={1: 'random', 2: 'greedy', 3: 'heuristic'},"
        " max_pips=6)\n"
        "out = games.reset(seed=1)\n"
        "for _ in range(30):\n"
        "    out = games.step(out.action_mask.argmax(axis=1))\n"
        "print('ok', games.bot_rng.tolist())\n"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")
    from cf_env.envs.batch import ChickenFootBatch

    games = ChickenFootBatch(num_envs=3, bots={1: "random", 2: "greedy", 3: "heuristic"}, max_pips=6)
    out = games.reset(seed=1)
    for _ in range(30):
        out = games.step(out.action_mask.argmax(axis=1))
    assert result.stdout.split(" ", 1)[1].strip() == str(games.bot_rng.tolist())
