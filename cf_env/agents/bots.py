"""Baseline bots: `random`, `greedy` and `heuristic` (their specs are in `cf_env.agents.policies`).
Each is deterministic given its seed and asks only the action mask for legality. Each draws its
action uniformly from `choices(observation)` (one action: no chance), so what it does at random is
known exactly (`training.evaluation.variance` corrects that luck).

* `RandomPolicy`    — uniform over legal actions.
* `GreedyPolicy`    — plays the legal tile with the most points (double-blank at its R12 value);
  draws or passes only when forced.
* `HeuristicPolicy` — a hand-written strategy (see the class for its rules) that reads only the
  player's own observation, decoded piece by piece with `cf_env.core.observation.ObservationDecoder`.

The search bots (`ismcts:`, `guided:`) are `cf_env.agents.ismcts`. Bots never look at the engine:
everything they know comes from the observation vector and the action mask.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cf_env.core.actions import actions_in
from cf_env.core.config import ChickenFootConfig
from cf_env.core.observation import ObservationDecoder, ObservedState
from cf_env.core.tiles import tile_tables


class RandomPolicy:
    """Uniform over the legal actions. `act_bits` is the mask-only fast path
    (`cf_env.agents.policies`): ``rng.choice(array)`` draws exactly ``rng.integers(len(array))``, so
    both entry points consume the RNG identically (tests/agents/test_bots.py checks it)."""

    def __init__(self, config: ChickenFootConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))

    def choices(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The actions `act` draws from uniformly: every legal one."""
        return np.flatnonzero(observation["action_mask"])

    def act_bits(self, legal: int) -> int:
        legal_actions = actions_in(legal)
        return legal_actions[int(self.rng.integers(len(legal_actions)))]


class GreedyPolicy:
    """The legal tile with the most points; ties broken by the seeded RNG. `act_bits` is the
    mask-only fast path (`cf_env.agents.policies`), the same choice and RNG use on the legal bitset:
    the actions grouped by points into bitsets, best first, so the first group the legal set
    meets holds the choice."""

    def __init__(self, config: ChickenFootConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)
        points = tile_tables(config.max_pips).points(config.double_blank_value)
        # Value of each action: the points of the tile it plays; DRAW/PASS worth -1 (last resort).
        self.action_points = np.append(np.repeat(points, 2), [-1, -1]).astype(np.float64)
        groups: dict[float, int] = {}
        for action, value in enumerate(self.action_points.tolist()):
            groups[value] = groups.get(value, 0) | 1 << action
        self._by_points = [groups[value] for value in sorted(groups, reverse=True)]

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        best = self.choices(observation)
        return int(best[0] if best.size == 1 else self.rng.choice(best))

    def choices(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The actions `act` draws from uniformly (ascending): the legal ones of most points."""
        legal = np.flatnonzero(observation["action_mask"])
        values = self.action_points[legal]
        return legal[values == values.max()]

    def act_bits(self, legal: int) -> int:
        for group in self._by_points:
            best = legal & group
            if best:
                break
        else:
            raise ValueError("no legal action")
        if not best & (best - 1):
            return best.bit_length() - 1
        tied = actions_in(best)  # ascending, as in `act`
        return tied[int(self.rng.integers(len(tied)))]


# --------------------------------------------------------------------------- heuristic
class HeuristicPolicy:
    """A reasoned hand-written strategy. Every legal play gets a score in points; the best wins
    (ties broken by the seeded RNG). DRAW and PASS are only taken when forced (R8), and a
    playable drawn tile is always played: R8 allows passing instead, but keeping the tile only
    keeps its points in hand, and the turn ends either way.

    The score of playing tile t (attached to an end of value a, leaving a new open end b):

    1. **Shed weight** — the tile's points (R12, the double-blank at its scoring value), so heavy
       tiles and the double-blank leave early. When an opponent is close to going out
       (<= `DANGER_TILES` tiles left) points count double: what stays in hand is about to be
       scored (R11, R12).
    2. **Keep the values I hold open** — `W_FOLLOW` per tile I keep that carries b: the new end is
       one I can extend next turn whatever the others do. Closing the last open end of value a
       costs `W_KEEP` per tile I keep that carries a.
    3. **Known voids** — `W_VOID_END` per opponent known to lack b (it showed so by drawing or
       passing, R8): an end it cannot use.
    4. **Chicken feet (R9)** — a double laid on an open end starts a foot: the next `toes` tiles
       must be toes of its value. It gets `W_DOUBLE` (a double attaches only one way and is hard
       to shed later), plus `W_FOOT_VOID` per opponent known to lack the value (it must draw),
       plus `W_FOOT_HELD` per further tile of that value I hold, up to the toes owed (I can help
       fill the foot when it comes back to me). A foot I cannot help fill and whose value has
       fewer unseen tiles than toes owed may block me too: it costs `W_FOOT_ALONE`.

    The weights were chosen by duplicate-deal evaluation against `greedy` (4 players, double-9,
    single rounds, `python -m training.evaluate`). A term that estimated how many of my tiles
    stay playable after the move ("mobility") made it weaker and was dropped.
    """

    DANGER_TILES = 2
    W_FOLLOW = 3.0
    W_KEEP = 1.5
    W_VOID_END = 1.5
    W_DOUBLE = 8.0
    W_FOOT_VOID = 2.0
    W_FOOT_HELD = 1.5
    W_FOOT_ALONE = 6.0

    def __init__(self, config: ChickenFootConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.decoder = ObservationDecoder(config)
        self.tables = tile_tables(config.max_pips)
        self.points = self.tables.points(config.double_blank_value).astype(np.float64)
        # has_value[t, v]: tile t carries value v.
        self.has_value = np.zeros((config.num_tiles, config.max_pips + 1), dtype=bool)
        for t, (lo, hi) in enumerate(self.tables.pairs):
            self.has_value[t, [lo, hi]] = True
        # Per placing action (tile * 2 + side, actions.py): the value it attaches to and the new
        # open end it leaves (side 1 attaches the high end).
        plays = np.arange(2 * config.num_tiles)
        tiles, high = plays // 2, plays % 2 == 1
        self.attached = np.where(high, self.tables.hi[tiles], self.tables.lo[tiles])
        self.left_open = np.where(high, self.tables.lo[tiles], self.tables.hi[tiles])

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        best = self.choices(observation)
        return int(best[0] if best.size == 1 else self.rng.choice(best))

    def choices(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """The actions `act` draws from uniformly (ascending): the plays of best score, or the
        one action when it has no choice."""
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 1:
            return legal
        plays = legal[legal < self.config.draw_action]
        if plays.size == 0:  # cannot place: DRAW or PASS, whichever is legal (R8)
            return legal[:1]
        scores = self.scores(self.decoder.decode(observation["observation"]), plays)
        return plays[scores >= scores.max() - 1e-9]

    def score(self, state: ObservedState, action: int) -> float:
        """The heuristic value of one legal play (see the class docstring)."""
        return float(self.scores(state, np.array([action]))[0])

    def scores(self, state: ObservedState, plays: np.ndarray) -> np.ndarray:
        """The heuristic values of legal plays (action ids), computed together."""
        tiles = plays // 2
        a, b = self.attached[plays], self.left_open[plays]  # attached value, new open end
        held = self.has_value[state.hand].sum(axis=0)
        # Tiles I keep per value once the played tile (which carries both a and b) is gone.
        keep_a, keep_b = held[a] - 1, held[b] - 1
        danger = state.hand_sizes[1:].min() <= self.DANGER_TILES
        value = self.points[tiles] * (2.0 if danger else 1.0)
        normal = state.foot < 0 and state.spinner_empty == 0  # R6 (not R7 spinner, not R9 toes)
        opp_void = state.voids.sum(axis=0)
        if not normal:
            return value + self.W_FOLLOW * keep_b + self.W_VOID_END * opp_void[b]
        value -= self.W_KEEP * keep_a * (state.open_counts[a] == 1)
        toes = self.config.toes
        unseen = self.has_value[~(state.hand | state.table)].sum(axis=0)
        foot = (  # a double on an open end starts a chicken foot (R9)
            self.W_DOUBLE
            + self.W_FOOT_VOID * opp_void[a]
            + self.W_FOOT_HELD * np.minimum(keep_a, toes)
            - self.W_FOOT_ALONE * ((keep_a == 0) & (unseen[a] < toes))
        )
        other = self.W_FOLLOW * keep_b + self.W_VOID_END * opp_void[b]
        return value + np.where(a == b, foot, other)
