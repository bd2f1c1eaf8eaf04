"""Baseline bots. Each is deterministic given its seed and asks only the action mask for legality.

* `random`    — uniform over legal actions.
* `greedy`    — plays the legal tile with the most points (double-blank at its R12 value);
  draws or passes only when forced.
* `heuristic` — a hand-written strategy (see `HeuristicPolicy` for its rules) that reads only the
  player's own observation, decoded piece by piece with `ObservationDecoder`.
* `ismcts:<iterations>` / `ismcts:ms=<milliseconds>` — determinized information-set MCTS
  (`cf_env.ismcts`).
* `guided:<checkpoint>[:<iterations> | :ms=<milliseconds>]` — the same search guided by a
  checkpoint's policy (a PUCT prior at the root; `cf_env.ismcts`).

Bots never look at the engine: everything they know comes from the observation vector, decoded
through `Encoder(config).layout.slices`, and the action mask.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cf_env.agents.policies import register_policy
from cf_env.core.actions import actions_in
from cf_env.core.config import ChickenFootConfig
from cf_env.core.observation import Encoder
from cf_env.core.tiles import tile_tables


class RandomPolicy:
    """Uniform over the legal actions. `act_bits` is the mask-only fast path
    (`cf_env.policies`): ``rng.choice(array)`` draws exactly ``rng.integers(len(array))``, so
    both entry points consume the RNG identically (tests/test_bots.py checks it)."""

    def __init__(self, config: ChickenFootConfig, seed: int | None = None):
        self.config = config
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))

    def act_bits(self, legal: int) -> int:
        legal_actions = actions_in(legal)
        return legal_actions[int(self.rng.integers(len(legal_actions)))]


class GreedyPolicy:
    """The legal tile with the most points; ties broken by the seeded RNG. `act_bits` is the
    mask-only fast path (`cf_env.policies`), the same choice and RNG use on the legal bitset:
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
        legal = np.flatnonzero(observation["action_mask"])
        values = self.action_points[legal]
        best = legal[values == values.max()]
        return int(best[0] if best.size == 1 else self.rng.choice(best))

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


# --------------------------------------------------------------------------- observation decoding
@dataclass
class ObservedState:
    """What one player knows, decoded from its observation vector. Seats are egocentric
    (index 0 = me, then the opponents clockwise); tile ids and values as in `tiles.py`."""

    hand: np.ndarray  # (T,) bool
    table: np.ndarray  # (T,) bool, start double included
    open_counts: np.ndarray  # (V,) int: open tips per value
    playable: np.ndarray  # (V,) bool: values a tile may be attached to now
    spinner_empty: int  # empty arms of the centre double (R7)
    foot: int  # value of the pending chicken-foot double, -1 if none (R9)
    toes_left: int
    drawn_tile: int  # the tile I just drew (R8), -1 if none
    boneyard: int  # tiles left in the boneyard
    hand_sizes: np.ndarray  # (n,) int, me first
    voids: np.ndarray  # (n-1, V) bool: values each opponent showed it lacks
    played: np.ndarray  # (n-1, T) bool: tiles each opponent played this round
    round: int
    center: int
    totals: np.ndarray  # (n,) int: finished rounds' points, me first


class ObservationDecoder:
    """Turns an observation vector back into integers, using only the declared layout."""

    def __init__(self, config: ChickenFootConfig):
        self.config = config
        layout = Encoder(config).layout
        self.slices = layout.slices
        self.values = config.max_pips + 1
        # The pieces encoded as count / scale: decoding multiplies the whole vector by this once
        # (a handful of numpy calls per decode instead of four per piece; policies decode at
        # every decision).
        self.scale = np.ones(layout.size, dtype=np.float64)
        for name, factor in (("boneyard_size", config.num_tiles), ("hand_sizes", config.hand_size),
                             ("scores", config.points_scale)):
            self.scale[self.slices[name]] = factor

    def decode(self, vector: np.ndarray) -> ObservedState:
        cfg, s, n = self.config, self.slices, self.config.num_players
        v = np.asarray(vector)
        ints = np.rint(v.astype(np.float64) * self.scale).astype(np.int64)
        bits = v > 0.5
        foot = np.flatnonzero(v[s["foot_double"]])
        drawn = np.flatnonzero(v[s["drawn_tile"]])
        return ObservedState(
            hand=bits[s["hand"]],
            table=bits[s["table"]],
            open_counts=ints[s["open_ends"]],
            playable=bits[s["playable_values"]],
            spinner_empty=int(ints[s["spinner_arms_empty"]][0]),
            foot=int(foot[0]) if foot.size else -1,
            toes_left=int(ints[s["foot_toes_left"]][0]),
            drawn_tile=int(drawn[0]) if drawn.size else -1,
            boneyard=int(ints[s["boneyard_size"]][0]),
            hand_sizes=ints[s["hand_sizes"]],
            voids=bits[s["opponent_voids"]].reshape(n - 1, self.values),
            played=bits[s["opponent_played"]].reshape(n - 1, cfg.num_tiles),
            round=int(np.argmax(v[s["round"]])),
            center=int(np.argmax(v[s["center"]])),
            totals=ints[s["scores"]],
        )


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
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 1:
            return int(legal[0])
        plays = legal[legal < self.config.draw_action]
        if plays.size == 0:  # cannot place: DRAW or PASS, whichever is legal (R8)
            return int(legal[0])
        scores = self.scores(self.decoder.decode(observation["observation"]), plays)
        best = plays[scores >= scores.max() - 1e-9]
        return int(best[0] if best.size == 1 else self.rng.choice(best))

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


def _ismcts_factory(config: ChickenFootConfig, seed: int | None = None, arg: str = ""):
    from cf_env.agents.ismcts import ISMCTSPolicy  # imported lazily: ismcts imports this module

    return ISMCTSPolicy.from_spec(config, seed, arg)


def _guided_factory(config: ChickenFootConfig, seed: int | None = None, arg: str = ""):
    from cf_env.agents.ismcts import guided_from_spec  # lazily, as above

    return guided_from_spec(config, seed, arg)


register_policy("random", RandomPolicy)
register_policy("greedy", GreedyPolicy)
register_policy("heuristic", HeuristicPolicy)
register_policy("ismcts", _ismcts_factory)
register_policy("guided", _guided_factory)
