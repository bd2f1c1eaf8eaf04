"""Rewards per `reward_mode` (a driver option, `DriverOptions`), from round points (R12) and the
game result (R13).

* ``"score"``    — at each round end: minus own points / points_scale.
* ``"zero_sum"`` — at each round end: (mean of the others' points − own points) / points_scale;
  the rewards of a round sum to zero. **Default**: the game is won on relative totals, so this
  is the per-round signal aligned with winning, dense enough to learn from, and zero-sum for
  self-play.
* ``"win"``      — at game end only: +1 for each winner (R13, ties share), −1 for the others.

`win_bonus` is the self-play trainer's optional extra (`selfplay.win_bonus`): a zero-sum bonus
for a round's winners (R12's lowest points, ties share), added to any mode's round rewards.
"""

from __future__ import annotations

import numpy as np

from cf_env.core.config import ChickenFootConfig


def round_rewards(cfg: ChickenFootConfig, reward_mode: str, points: list[int]) -> list[float]:
    scale = cfg.points_scale
    if reward_mode == "score":
        return [-p / scale for p in points]
    if reward_mode == "zero_sum":
        total, others = sum(points), len(points) - 1
        return [((total - p) / others - p) / scale for p in points]
    return [0.0] * len(points)


def round_rewards_batch(cfg: ChickenFootConfig, reward_mode: str, points: np.ndarray) -> np.ndarray:
    """`round_rewards` for many rounds at once: points (G, n) int -> (G, n) float64, the same
    float64 operations in the same order (so the same numbers)."""
    points = points.astype(np.float64)
    scale = cfg.points_scale
    if reward_mode == "score":
        return -points / scale
    if reward_mode == "zero_sum":
        total = points.sum(axis=1, keepdims=True)
        return ((total - points) / (points.shape[1] - 1) - points) / scale
    return np.zeros_like(points)


def game_rewards_batch(reward_mode: str, winners: np.ndarray) -> np.ndarray:
    """`game_rewards` for many games at once: winners (G, n) bool -> (G, n) float64."""
    if reward_mode != "win":
        return np.zeros(winners.shape)
    return np.where(winners, 1.0, -1.0)


def game_rewards(cfg: ChickenFootConfig, reward_mode: str, winners: list[int]) -> list[float]:
    if reward_mode != "win":
        return [0.0] * cfg.num_players
    return [1.0 if seat in winners else -1.0 for seat in range(cfg.num_players)]


def win_bonus(points: list[int], bonus: float) -> list[float]:
    """Zero-sum round-win bonus: `bonus` shared by the seats with the round's fewest points, minus
    its mean (`bonus / n`) for every seat."""
    low = min(points)
    winners = sum(1 for p in points if p == low)
    mean = bonus / len(points)
    return [(bonus / winners if p == low else 0.0) - mean for p in points]
