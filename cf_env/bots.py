"""Baseline bots. Each is deterministic given its seed and asks only the action mask for legality.

* `random`  — uniform over legal actions.
* `greedy`  — plays the legal tile with the most points (double-blank at its R12 value);
  draws or passes only when forced.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .config import ChickenFootConfig
from .policies import register_policy
from .tiles import tile_tables


class RandomPolicy:
    def __init__(self, config: ChickenFootConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))


class GreedyPolicy:
    def __init__(self, config: ChickenFootConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)
        points = tile_tables(config.max_pips).points(config.double_blank_value)
        # Value of each action: the points of the tile it plays; DRAW/PASS worth -1 (last resort).
        self.action_points = np.append(np.repeat(points, 2), [-1, -1]).astype(np.float64)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        values = self.action_points[legal]
        best = legal[values == values.max()]
        return int(best[0] if best.size == 1 else self.rng.choice(best))


register_policy("random", RandomPolicy)
register_policy("greedy", GreedyPolicy)
