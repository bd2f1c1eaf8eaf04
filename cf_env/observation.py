"""Observation and global-state encodings, built from declared tables of named pieces.

`observation_layout(config)` lists the pieces of a player's observation in order; each piece has a
name, a size and an upper bound. Seats are egocentric: "self" first, then the opponents clockwise.
Everything in it is the player's own hand or public information (R3: hands and boneyard are
hidden). `state_layout(config)` is the full-information vector for centralised critics.

Bump `OBSERVATION_VERSION` whenever a piece changes meaning, size or order: checkpoints record it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import ChickenFootConfig
from .tiles import tile_tables

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


class Encoder:
    """Fills observation and state vectors for one config; tables are built once.

    Speed: an observation is a dozen slice copies and scalar writes into one fresh buffer; the
    opponents' rows of the engine's per-seat arrays are gathered with one `take` in a precomputed
    clockwise order.
    """

    def __init__(self, cfg: ChickenFootConfig):
        self.config = cfg
        self.layout = observation_layout(cfg)
        self.state_layout = state_layout(cfg)
        n = cfg.num_players
        # Egocentric seat order for each viewer: self, then clockwise.
        self.seat_order = [np.array([(seat + k) % n for k in range(n)]) for seat in range(n)]
        self.opponents = [order[1:] for order in self.seat_order]

    def observe(self, engine, seat: int) -> np.ndarray:
        cfg, s = self.config, self.layout.slices
        out = np.zeros(self.layout.size, dtype=np.float32)
        out[s["hand"]] = engine.hands[seat]
        self._fill_public(engine, out, s)
        if engine.drawn_tile >= 0 and engine.current == seat:
            out[s["drawn_tile"].start + engine.drawn_tile] = 1
        counts = engine.hand_counts
        out[s["hand_sizes"]] = [c / cfg.hand_size for c in counts[seat:] + counts[:seat]]
        opponents = self.opponents[seat]
        out[s["opponent_voids"]] = engine.voids.take(opponents, axis=0).reshape(-1)
        out[s["opponent_played"]] = engine.played_by.take(opponents, axis=0).reshape(-1)
        totals, scale = engine.totals(), cfg.points_scale
        # float64 division rounded to float32 equals the float32 division (exact int inputs).
        out[s["scores"]] = [t / scale for t in totals[seat:] + totals[:seat]]
        return out

    def state(self, engine) -> np.ndarray:
        cfg, s = self.config, self.state_layout.slices
        out = np.zeros(self.state_layout.size, dtype=np.float32)
        out[s["hands"]] = engine.hands.ravel()
        out[s["boneyard"].start + np.asarray(engine.boneyard, dtype=np.int64)] = 1
        self._fill_public(engine, out, s)
        if engine.drawn_tile >= 0:
            out[s["drawn_tile"].start + engine.drawn_tile] = 1
        if not engine.game_over:
            out[s["current"].start + engine.current] = 1
        out[s["voids"]] = engine.voids.ravel()
        out[s["scores"]] = np.asarray(engine.totals(), dtype=np.float32) / cfg.points_scale
        return out

    def _fill_public(self, engine, out: np.ndarray, s: dict[str, slice]) -> None:
        out[s["table"]] = engine.on_table
        out[s["open_ends"]] = engine.open_count
        if not engine.game_over:
            start = s["playable_values"].start
            for value in engine.playable_values():
                out[start + value] = 1
        out[s["spinner_arms_empty"].start] = engine.spinner_empty
        if engine.foot_value >= 0:
            out[s["foot_double"].start + engine.foot_value] = 1
        out[s["foot_toes_left"].start] = engine.toes_left
        if "boneyard_size" in s:
            out[s["boneyard_size"].start] = len(engine.boneyard) / self.config.num_tiles
        out[s["round"].start + engine.round] = 1
        out[s["center"].start + engine.center] = 1
