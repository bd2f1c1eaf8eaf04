"""Observation and global-state encodings, built from declared tables of named pieces.

`observation_layout(config)` lists the pieces of a player's observation in order; each piece has a
name, a size and an upper bound. Seats are egocentric: "self" first, then the opponents clockwise.
Everything in it is the player's own hand or public information (R3: hands and boneyard are
hidden). `state_layout(config)` is the full-information vector for centralised critics, and
`privileged_layout(config)` what a seat's privileged critic reads beside its observation (the
hidden tiles, egocentric; `training.selfplay` trains on it, `lookahead:` search reads a shipped
value head through it). `Encoder` fills these vectors (`SeatView` keeps one seat's observation
current); `ObservationDecoder` inverts an observation into an `ObservedState`, the integers a
policy reasons with.

Bump `OBSERVATION_VERSION` whenever a piece of the observation or of the privileged vector
changes meaning, size or order: checkpoints record it, and a shipped value head reads both.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import truediv

import numpy as np

from cf_env.core.config import ChickenFootConfig
from cf_env.core.tiles import tile_tables

OBSERVATION_VERSION = 1


@dataclass(frozen=True)
class Piece:
    name: str
    size: int
    high: float
    doc: str


class Layout:
    """An ordered table of pieces; `slices[name]` locates a piece in the flat vector."""

    def __init__(self, pieces: list[Piece]):
        self.pieces = tuple(pieces)
        self.slices: dict[str, slice] = {}
        start = 0
        for piece in self.pieces:
            self.slices[piece.name] = slice(start, start + piece.size)
            start += piece.size
        self.size = start
        self.high = np.concatenate([np.full(p.size, p.high, np.float32) for p in self.pieces])

    def view(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """The vector split into named pieces (views, not copies)."""
        return {name: vector[s] for name, s in self.slices.items()}


def observation_layout(cfg: ChickenFootConfig) -> Layout:
    count, values, n = cfg.num_tiles, cfg.max_pips + 1, cfg.num_players
    max_total = float(tile_tables(cfg.max_pips).points(cfg.double_blank_value).sum())
    return Layout(
        [
            Piece("hand", count, 1, "1 for each tile id in my hand"),
            Piece("table", count, 1, "1 for each tile on the table, start double included"),
            Piece("open_ends", values, count, "number of open arm/toe tips of each value"),
            Piece("playable_values", values, 1, "1 for each value a tile may be attached to now"),
            Piece("spinner_arms_empty", 1, cfg.spinner_arms, "empty arms of the centre double (R7)"),
            Piece("foot_double", values, 1, "one-hot value of the pending chicken foot (R9)"),
            Piece("foot_toes_left", 1, cfg.toes, "toes still owed on the pending foot"),
            Piece("drawn_tile", count, 1, "one-hot tile I just drew (post-draw decision, R8)"),
            Piece("boneyard_size", 1, 1, "tiles in the boneyard / tiles in the set"),
            Piece("hand_sizes", n, count / cfg.hand_size, "tiles in each hand / hand_size, self first"),
            Piece("opponent_voids", (n - 1) * values, 1, "values each opponent showed it lacks"),
            Piece("opponent_played", (n - 1) * count, 1, "tiles each opponent played this round"),
            Piece("round", cfg.num_rounds, 1, "one-hot round number (R4)"),
            Piece("center", values, 1, "one-hot value of this round's start double"),
            Piece("scores", n, cfg.num_rounds * max_total / cfg.points_scale,
                  "finished rounds' points / points_scale, self first"),
        ]
    )


def state_layout(cfg: ChickenFootConfig) -> Layout:
    count, values, n = cfg.num_tiles, cfg.max_pips + 1, cfg.num_players
    obs = {p.name: p for p in observation_layout(cfg).pieces}
    return Layout(
        [
            Piece("hands", n * count, 1, "each seat's hand, seat 0 first"),
            Piece("boneyard", count, 1, "1 for each tile in the boneyard"),
            obs["table"],
            obs["open_ends"],
            obs["playable_values"],
            obs["spinner_arms_empty"],
            obs["foot_double"],
            obs["foot_toes_left"],
            Piece("drawn_tile", count, 1, "one-hot tile the acting seat just drew"),
            Piece("current", n, 1, "one-hot acting seat"),
            Piece("voids", n * values, 1, "values each seat showed it lacks"),
            obs["round"],
            obs["center"],
            Piece("scores", n, obs["scores"].high, "finished rounds' points / points_scale"),
        ]
    )


def privileged_layout(cfg: ChickenFootConfig) -> Layout:
    count, n = cfg.num_tiles, cfg.num_players
    return Layout(
        [
            Piece("opponent_hands", (n - 1) * count, 1,
                  "each opponent's hand, left neighbour first, clockwise"),
            Piece("boneyard", count, 1, "1 for each tile in the boneyard (its order is not shown)"),
        ]
    )


class Encoder:
    """Fills observation and state vectors for one config; tables are built once.

    Speed (CPython 3.11, where every comprehension is a function call and every numpy call costs
    more than the data it moves at these sizes): an observation is a fresh zero buffer, four
    whole-array copies (hand, table, and the opponents' voids and played tiles gathered with one
    `take` each in a precomputed clockwise order), one division that turns every count and scalar
    piece into its value at precomputed positions, and the one-hot bits written one by one.
    """

    def __init__(self, cfg: ChickenFootConfig):
        self.config = cfg
        self.layout = observation_layout(cfg)
        self.state_layout = state_layout(cfg)
        self.privileged_layout = privileged_layout(cfg)
        n = cfg.num_players
        # Egocentric seat order for each viewer: self, then clockwise.
        self.seat_order = [np.array([(seat + k) % n for k in range(n)]) for seat in range(n)]
        self.opponents = [order[1:] for order in self.seat_order]
        self._obs_values = _CountPieces(self.layout, cfg, ["hand_sizes", "scores"])
        self._state_values = _CountPieces(self.state_layout, cfg, ["scores"])

    def observe(self, engine, seat: int) -> np.ndarray:
        s = self.layout.slices
        out = np.zeros(self.layout.size, dtype=np.float32)
        out[s["hand"]] = engine.hands[seat]
        out[s["table"]] = engine.on_table
        opponents = self.opponents[seat]
        out[s["opponent_voids"]] = engine.voids.take(opponents, axis=0).reshape(-1)
        out[s["opponent_played"]] = engine.played_by.take(opponents, axis=0).reshape(-1)
        counts, totals = engine.hand_counts, engine.totals()
        per_seat = counts[seat:] + counts[:seat] + totals[seat:] + totals[:seat]
        self._obs_values.write(out, engine, per_seat, len(engine.boneyard))
        view = self._one_hots(engine, out, s)
        if engine.drawn_tile >= 0 and engine.current == seat:
            view[s["drawn_tile"].start + engine.drawn_tile] = 1.0
        return out

    def privileged(self, engine, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """Seat `seat`'s privileged vector (`privileged_layout`): hidden information, for
        critics only (never an actor's input); written into `out` when given."""
        if out is None:
            out = np.empty(self.privileged_layout.size, dtype=np.float32)
        s = self.privileged_layout.slices
        hands = engine.hands
        out[s["opponent_hands"]] = hands.take(self.opponents[seat], axis=0).reshape(-1)
        np.logical_not(engine.on_table | hands.any(axis=0), out=out[s["boneyard"]], casting="unsafe")
        return out

    def state(self, engine) -> np.ndarray:
        s = self.state_layout.slices
        out = np.zeros(self.state_layout.size, dtype=np.float32)
        out[s["hands"]] = engine.hands.ravel()
        out[s["boneyard"].start + np.asarray(engine.boneyard, dtype=np.int64)] = 1
        out[s["table"]] = engine.on_table
        out[s["voids"]] = engine.voids.ravel()
        self._state_values.write(out, engine, engine.totals())
        view = self._one_hots(engine, out, s)
        if engine.drawn_tile >= 0:
            view[s["drawn_tile"].start + engine.drawn_tile] = 1.0
        if not engine.game_over:
            view[s["current"].start + engine.current] = 1.0
        return out

    @staticmethod
    def _one_hots(engine, out: np.ndarray, s: dict[str, slice]) -> memoryview:
        """Writes the public one-hot bits (playable values, pending foot, round, centre); returns
        the buffer's memoryview for the caller's own bits (single float writes, no numpy call)."""
        view = memoryview(out)
        view[s["round"].start + engine.round] = 1.0
        view[s["center"].start + engine.center] = 1.0
        for position in _moving_bits(engine, s["playable_values"].start, s["foot_double"].start):
            view[position] = 1.0
        return view


def count_divisors(cfg: ChickenFootConfig) -> dict[str, float]:
    """The pieces encoded as a count over a divisor other than 1 (the rest: the count itself)."""
    return {"hand_sizes": cfg.hand_size, "scores": cfg.points_scale, "boneyard_size": cfg.num_tiles}


class _CountPieces:
    """The pieces that are a count over a fixed divisor (open ends, the per-seat pieces, the
    spinner, the toes and, in observations, the boneyard): their positions and divisors, so one
    float32 division fills them all. float32 division of exact integers is correctly rounded, so
    it equals the float64 quotient rounded to float32."""

    def __init__(self, layout: Layout, cfg: ChickenFootConfig, seat_pieces: list[str]):
        s = layout.slices
        divisor = count_divisors(cfg)
        names = ["open_ends", *seat_pieces, "spinner_arms_empty", "foot_toes_left"]
        names += ["boneyard_size"] if "boneyard_size" in s else []
        self.index = np.concatenate([np.arange(s[name].start, s[name].stop) for name in names])
        self.divisors = np.concatenate(
            [np.full(s[name].stop - s[name].start, divisor.get(name, 1)) for name in names]
        ).tolist()

    def write(self, out: np.ndarray, engine, per_seat: list[int], *boneyard: int) -> None:
        counts = [*engine.open_count, *per_seat, engine.spinner_empty, engine.toes_left, *boneyard]
        out[self.index] = list(map(truediv, counts, self.divisors))


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
    """Turns an observation vector back into integers, using only the declared layout (the
    inverse of `Encoder.observe`: tests/agents/test_i16_agents.py round-trips them)."""

    def __init__(self, config: ChickenFootConfig):
        self.config = config
        layout = observation_layout(config)
        self.slices = layout.slices
        self.values = config.max_pips + 1
        # The pieces encoded as count / scale: decoding multiplies the whole vector by this once
        # (a handful of numpy calls per decode instead of four per piece; policies decode at
        # every decision).
        self.scale = np.ones(layout.size, dtype=np.float64)
        for name, factor in count_divisors(config).items():
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


class SeatView:
    """One seat's observations of one engine, kept current between calls: for a driver that
    observes the same seat again and again (the single-agent adapter keeps one per seat, for the
    learner and observation-reading opponents; the AEC env one per agent).

    Within a round the engine changes only by actions, and it appends each to `engine.history`.
    So a call that continues the previous one (the same history list, round and seat; game not
    over) updates a kept buffer instead of building a new one: each new placement marks its tile
    on the table (and in the opponent's played tiles, or out of the seat's hand) and rewrites
    the open-end counts of the tile's two values; then what changes otherwise is rewritten (the
    hand after the seat drew, the voids after an opponent drew or passed, hand sizes, scalars,
    one-hot bits). Anything else (another engine, a new round or game, a restore) is built from
    scratch by `Encoder.observe`. Every call returns a fresh copy, equal to `Encoder.observe`
    (tests/core/test_fuzz.py checks each call).
    """

    def __init__(self, encoder: Encoder):
        self.encoder = encoder
        cfg, s = encoder.config, encoder.layout.slices
        self._two_t, self._draw = 2 * cfg.num_tiles, cfg.draw_action
        self._pairs = tile_tables(cfg.max_pips).pairs
        self._start = {name: piece.start for name, piece in s.items()}
        self._history: list | None = None
        self._seat = -1

    def observe(self, engine, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """The seat's observation now: a fresh copy, or written into `out` (a float32 row of
        the observation's size, e.g. a trainer's batch buffer) and `out` returned."""
        history = engine.history
        if (
            history is not self._history
            or seat != self._seat
            or engine.round != self._round
            or engine.game_over
        ):
            self._buffer = self.encoder.observe(engine, seat)
            self._view = memoryview(self._buffer)
            if seat != self._seat:
                self._seat_tables(seat)
            self._history, self._seat, self._round = history, seat, engine.round
            self._seen = len(history)
            self._ones = self._one_hot_positions(engine, seat)
        else:
            self._update(engine, seat, history)
        if out is None:
            return self._buffer.copy()
        out[:] = self._buffer
        return out

    def _seat_tables(self, seat: int) -> None:
        n, count = self.encoder.config.num_players, self.encoder.config.num_tiles
        others = [(actor - seat) % n for actor in range(n)]  # 0 = the seat itself, then clockwise
        # Offset of each actor's row in "opponent_played" (the seat's own entry is never used:
        # its placements leave its hand instead), and the position of each actor's hand size.
        self._played_row = [(k - 1) * count for k in others]
        self._size_pos = [self._start["hand_sizes"] + k for k in others]

    def _update(self, engine, seat: int, history: list) -> None:
        view, start, cfg = self._view, self._start, self.encoder.config
        table, played, open_ends = start["table"], start["opponent_played"], start["open_ends"]
        hand, size_of = start["hand"], self._size_pos
        counts, size = engine.hand_counts, cfg.hand_size
        played_row, open_count, pairs = self._played_row, engine.open_count, self._pairs
        drew = voids_changed = False
        for _, actor, action in history[self._seen :]:
            if action < self._two_t:  # a placement (cf_env.actions)
                tile = action >> 1
                view[table + tile] = 1.0
                if actor == seat:
                    view[hand + tile] = 0.0
                else:
                    view[played + played_row[actor] + tile] = 1.0
                lo, hi = pairs[tile]
                view[open_ends + lo] = open_count[lo]
                view[open_ends + hi] = open_count[hi]
                view[size_of[actor]] = counts[actor] / size
            elif action == self._draw:
                view[size_of[actor]] = counts[actor] / size
                if actor == seat:  # which tiles came is in the hand, not in the history
                    drew = True
                else:  # what the opponent showed it lacks changed
                    voids_changed = True
            elif actor != seat:  # an opponent's pass: with no draw before it, it shows voids
                voids_changed = True
        self._seen = len(history)
        s, buffer = self.encoder.layout.slices, self._buffer
        if drew:
            buffer[s["hand"]] = engine.hands[seat]
        if voids_changed:
            opponents = self.encoder.opponents[seat]
            buffer[s["opponent_voids"]] = engine.voids.take(opponents, axis=0).reshape(-1)
        view[start["spinner_arms_empty"]] = engine.spinner_empty
        view[start["foot_toes_left"]] = engine.toes_left
        view[start["boneyard_size"]] = len(engine.boneyard) / cfg.num_tiles
        ones = self._one_hot_positions(engine, seat)
        if ones != self._ones:
            for position in self._ones:
                view[position] = 0.0
            for position in ones:
                view[position] = 1.0
            self._ones = ones

    def _one_hot_positions(self, engine, seat: int) -> list[int]:
        """Positions of the one-hot bits that can move within a round: `_moving_bits` and the
        seat's drawn tile."""
        start = self._start
        ones = _moving_bits(engine, start["playable_values"], start["foot_double"])
        if engine.drawn_tile >= 0 and engine.current == seat:
            ones.append(start["drawn_tile"] + engine.drawn_tile)
        return ones


def _moving_bits(engine, playable_start: int, foot_start: int) -> list[int]:
    """Positions of the public one-hot bits that move within a round: the playable values (none
    once the game is over) and the pending foot's value."""
    ones = [] if engine.game_over else list(map(playable_start.__add__, engine.playable_values()))
    if engine.foot_value >= 0:
        ones.append(foot_start + engine.foot_value)
    return ones
