"""Observation and global-state encodings, built from declared tables of named pieces.

`observation_layout(config)` lists the pieces of a player's observation in order; each piece has a
name, a size and an upper bound. Seats are egocentric: "self" first, then the opponents clockwise.
Everything in it is the player's own hand or public information (R3: hands and boneyard are
hidden). `state_layout(config)` is the full-information vector for centralised critics, and
`privileged_layout(config)` what a seat's privileged critic reads beside its observation (the
hidden tiles, egocentric; `training.selfplay` trains on it, `lookahead:` search reads a shipped
value head through it). `Encoder` fills these vectors (an engine's observation is written by
the compiled core); `ObservationDecoder` inverts an observation into an `ObservedState`, the integers a
policy reasons with.

Bump `OBSERVATION_VERSION` whenever a piece of the observation or of the privileged vector
changes meaning, size or order: checkpoints record it, and a shipped value head reads both.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import truediv

import numpy as np

from cf_env.core import checks
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
        self._seen_config, self._same_layout = cfg, True
        self._state_values = _CountPieces(self.state_layout, cfg, ["scores"])

    def observe(self, engine, seat: int, out: np.ndarray | None = None) -> np.ndarray:
        """Seat `seat`'s observation (`observation_layout`): a fresh array, or written into
        `out` (a float32 row of the observation's size, e.g. a trainer's batch buffer) and `out`
        returned. An `Engine` with its game in play writes it in compiled code
        (`Engine.write_observation`); anything else with the engine's fields (a finished game, a
        stand-in) gets `encode`, which says the same in numpy. Raises `ValueError`, nothing
        written, for a seat out of range or an `out` that is not a writable float array of
        shape (observation size,)."""
        if not (type(seat) is int and 0 <= seat < self.config.num_players):
            seat = checks.index(seat, "seat", self.config.num_players)
        if out is not None and not (type(out) is np.ndarray and out.shape == (self.layout.size,)
                                    and out.dtype.kind == "f" and out.flags.writeable):
            raise ValueError(
                f"out must be a writable float numpy array of shape ({self.layout.size},); got "
                + (f"{out.dtype} of shape {out.shape}" + ("" if out.flags.writeable else
                                                          " (read-only)")
                   if isinstance(out, np.ndarray) else type(out).__name__))
        write = getattr(engine, "write_observation", None)
        if write is not None and engine.config is not self._seen_config:
            # The compiled form writes the engine's own config's layout: the encoder's only if
            # the two configs lay out and scale the pieces alike (search plays a round as a
            # one-round game, say, with a shorter round piece).
            cfg = engine.config
            self._seen_config, self._same_layout = cfg, (
                observation_layout(cfg).slices == self.layout.slices
                and count_divisors(cfg) == count_divisors(self.config))
        if write is None or not self._same_layout or engine.game_over:
            if out is None:
                return self.encode(engine, seat)
            out[:] = self.encode(engine, seat)
            return out
        if out is None or out.dtype != np.float32 or not out.flags.c_contiguous:
            row = np.empty(self.layout.size, dtype=np.float32)
            write(seat, row)
            if out is None:
                return row
            out[:] = row
            return out
        write(seat, out)
        return out

    def encode(self, engine, seat: int) -> np.ndarray:
        """The observation built in numpy from the engine's public fields: the layout's
        definition in code, against which the compiled form is checked (tests/core)."""
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
    inverse of `Encoder.observe`: tests/agents/test_specs_and_decoder.py round-trips them)."""

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


def _moving_bits(engine, playable_start: int, foot_start: int) -> list[int]:
    """Positions of the public one-hot bits that move within a round: the playable values (none
    once the game is over) and the pending foot's value."""
    ones = [] if engine.game_over else list(map(playable_start.__add__, engine.playable_values()))
    if engine.foot_value >= 0:
        ones.append(foot_start + engine.foot_value)
    return ones
