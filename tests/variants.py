"""Configs over every variant for the compiled core's tests (tests/core/test_kernel.py and the
tests built on it), and `run_without_jit`, which runs a test's code as plain Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from cf_env import ChickenFootConfig
from cf_env.core.config import SUPPORTED_SETS, max_players, num_tiles

# Rounds per game on each set (as test_fuzz.py: whole games on double-6, few on the big sets) and
# the largest target_score drawn, so that games to a target end after a few rounds.
ROUND_CAP = {6: 7, 9: 3, 12: 2, 15: 1, 18: 1}
TARGET_CAP = {6: 120, 9: 60, 12: 20, 15: 1, 18: 1}
GAMES = {6: 64, 9: 48, 12: 24, 15: 12, 18: 8}


def random_config(rng: np.random.Generator, max_pips: int | None = None, **fixed) -> ChickenFootConfig:
    """A random valid config, drawn field by field as test_fuzz.py's `configs` strategy draws it."""
    if max_pips is None:
        max_pips = int(rng.choice(SUPPORTED_SETS))
    players = int(rng.integers(2, max_players(max_pips) + 1))
    count = num_tiles(max_pips)
    hand = None if rng.random() < 0.5 else int(rng.integers(2, (count - 1) // players + 1))
    target = None if rng.random() < 2 / 3 else int(rng.integers(1, TARGET_CAP[max_pips] + 1))
    cap = ROUND_CAP[max_pips]
    fields = {
        "max_pips": max_pips,
        "num_players": players,
        "hand_size": hand,
        "num_rounds": int(rng.integers(1, min(cap, max_pips + 1) + 1)) if target is None else None,
        "target_score": target,
        "start_search": str(rng.choice(["turns", "all_draw", "lower_double"])),
        "spinner_arms": int(rng.choice([4, 6])),
        "toes": 3 if rng.random() < 0.5 else int(rng.integers(1, max_pips + 1)),
        "draw_until_playable": bool(rng.random() < 0.5),
        "must_play_drawn": bool(rng.random() < 0.5),
        "double_blank_value": int(rng.choice([0, 25, 50, 100, 7])),
        "tie_break": str(rng.choice(["r13", "none"])),
    }
    fields.update(fixed)
    return ChickenFootConfig(**fields)


# One config per (set, variant value) pair at least, then random ones: every field of
# ChickenFootConfig takes each of its kinds of value somewhere.
FIXED = [
    {"max_pips": 6, "num_players": 2},
    {"max_pips": 6, "num_players": 4, "start_search": "all_draw", "hand_size": 2},
    {"max_pips": 9, "num_players": 8, "start_search": "lower_double"},
    {"max_pips": 9, "num_players": 3, "spinner_arms": 6, "toes": 1, "must_play_drawn": True},
    {"max_pips": 9, "num_players": 5, "draw_until_playable": True, "double_blank_value": 0},
    {"max_pips": 6, "num_players": 3, "target_score": 120, "tie_break": "none"},
    {"max_pips": 6, "num_players": 2, "target_score": 40, "tie_break": "r13", "hand_size": 7},
    {"max_pips": 12, "num_players": 10, "start_search": "all_draw", "toes": 12},
    {"max_pips": 15, "num_players": 12, "draw_until_playable": True, "must_play_drawn": True},
    {"max_pips": 18, "num_players": 14, "spinner_arms": 6, "start_search": "lower_double"},
    {"max_pips": 18, "num_players": 2, "double_blank_value": 100, "hand_size": 2},
    # The largest hands: one tile left to search with, rounds that start blocked (R5, R11).
    {"max_pips": 6, "num_players": 3, "hand_size": 9, "start_search": "turns"},
    {"max_pips": 9, "num_players": 2, "hand_size": 27, "start_search": "all_draw"},
    {"max_pips": 6, "num_players": 4, "hand_size": 6, "start_search": "lower_double"},
]


def differential_configs() -> list[ChickenFootConfig]:
    rng = np.random.default_rng(2024)
    defaults = {"num_rounds": None, "target_score": None, "hand_size": None}
    out = []
    for fixed in FIXED:
        base = random_config(rng, fixed["max_pips"])
        fields = {**base.to_dict(), **defaults, **fixed}
        if fields.get("target_score") is not None:
            fields["num_rounds"] = None
        else:
            fields["num_rounds"] = min(ROUND_CAP[fields["max_pips"]], fields["max_pips"] + 1)
        out.append(ChickenFootConfig(**fields))
    for max_pips in SUPPORTED_SETS:
        out += [random_config(rng, max_pips) for _ in range(6)]
    return out


CONFIGS = differential_configs()



def run_without_jit(code: str, folder: str = "core") -> None:
    """Run `code` (which prints "ok" when its checks pass) in a new process under
    NUMBA_DISABLE_JIT=1, tests/ and tests/<folder>/ importable: the compiled code as plain Python."""
    code = (f"import sys; sys.path.insert(0, 'tests/{folder}'); sys.path.insert(0, 'tests')\n"
            "from numba.core import config\nassert config.DISABLE_JIT\n" + code)
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    result = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ok" in result.stdout
