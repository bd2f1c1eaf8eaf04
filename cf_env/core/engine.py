"""The Chicken Foot rules engine: game state and the only code that changes it.

Pure Python + numpy (no gymnasium, pettingzoo or torch). One `Engine` plays a whole game of
`config.num_rounds` rounds (R4), or, with `target_score`, rounds until a total passes the target
(`round` is then the place in the countdown of doubles, which restarts after the double-blank;
`len(scores[s])` counts the rounds played). The variants are decided where a round starts
(`start_search`) and ends (`target_score`), never per step. The acting seat is
`engine.current`; `legal_bits()` is the single source of legality (R6–R9) that the mask, the
list, the env, bots and tests all come from; `step(action)` raises `IllegalActionError` and
changes nothing when the action is not legal.

Rules state vs layout: legality depends only on the open-end value counts, the number of empty
spinner arms and the pending foot. The physical layout (which arm each tile sits on) is kept
alongside for rendering and snapshots; equal-valued ends are interchangeable, so a tile played
on value v goes to the oldest open arm tip of value v.

Representation for speed: each hand is mirrored as a bitset over action ids (`tiles.tile_bits`),
and the playable values as the bitset of the actions that attach them (`tiles.attach_bits`), so
legality is one AND of two Python ints, computed once per state and cached. The open ends' attach
bitset is kept up to date as tips open and close (with `open_count`), so placing a tile costs no
scan over the values. The 0/1 boards (hands, table, played tiles, voids) are bytearrays that the
engine writes entry by entry, with numpy views over them (`hands` read-only) for everyone else:
the engine is the only writer, which keeps the representations in step.

Beside it in the core: the snapshot format and its validated restore (`cf_env.core.snapshot`,
behind `snapshot()` / `restore()`) and the layout's `Arm` (`cf_env.core.layout`).
"""

from __future__ import annotations

import bisect
import copy
import functools
from collections.abc import Callable, Sequence
from itertools import compress
from typing import NamedTuple

import numpy as np

from cf_env.core import snapshot as snapshot_format
from cf_env.core.actions import actions_in, describe
from cf_env.core.config import ChickenFootConfig
from cf_env.core.layout import Arm
from cf_env.core.scoring import r13_key as r13_key  # (its old home: importable from here)
from cf_env.core.scoring import r13_winners
from cf_env.core.snapshot import SNAPSHOT_KEYS, SNAPSHOT_VERSION, SNAPSHOT_VERSIONS, SnapshotError
from cf_env.core.tiles import TileTables, tile_tables


class IllegalActionError(ValueError):
    """An action that is malformed or not legal now. The game state is unchanged."""


class Placement(NamedTuple):
    """Where a tile action puts its tile (`Engine.placement`), by R6, R7 or R9.

    `rule` is the rule that places it now: "R9" a toe of the pending chicken foot, "R7" an empty
    arm of the centre double, "R6" the oldest open arm tip of the attached value. `arm` is the
    index in `engine.arms` the tile lands on (`len(engine.arms)` when it starts a new arm:
    `new_arm`), `parent` that arm's parent (-1: the centre double; else the arm that ends in the
    foot's double). `toe` numbers the toe (1..toes) under R9, else 0. `leaves_open` is the value
    the tile leaves open: its free end, or -1 for a double, which closes its arm and starts a
    chicken foot (R9)."""

    tile: int
    attached: int
    free_end: int
    rule: str
    arm: int
    parent: int
    new_arm: bool
    toe: int
    leaves_open: int


class Engine:
    """A whole game: deal, play, score every round; R13 decides the winners."""

    # Slots, not an instance dict: the engine's state is a fixed set of fields, read on every
    # decision (slot reads are the cheapest attribute access in CPython).
    __slots__ = (
        "_attach",
        "_deal_seats",
        "_deal_slices",
        "_draw_action",
        "_hand_bits",
        "_hand_bytes",
        "_hands",
        "_legal",
        "_next_seat",
        "_no_values",
        "_num_tiles",
        "_num_values",
        "_open_attach",
        "_pass_action",
        "_phase",
        "_played_bytes",
        "_synthetic_arms",
        "_table_bytes",
        "_value_ids",
        "_values",
        "_void_bytes",
        "arms",
        "auto_deal",
        "between_rounds",
        "boneyard",
        "center",
        "config",
        "current",
        "deal_order",
        "drawn_tile",
        "foot_arm",
        "foot_value",
        "game_over",
        "hand_counts",
        "hands",
        "history",
        "on_table",
        "open_count",
        "played_by",
        "points",
        "rng",
        "round",
        "scores",
        "seed",
        "skip_forced",
        "spinner_empty",
        "start_seat",
        "tables",
        "tip_arms",
        "toes_left",
        "voids",
        "winners",
    )

    def __init__(
        self,
        config: ChickenFootConfig | None = None,
        seed: int | None = None,
        *,
        auto_deal: bool = True,
        skip_forced: bool = False,
    ):
        self.config = config if config is not None else ChickenFootConfig()
        # A driver option, not a rule (`DriverOptions.skip_forced`): take every decision that has
        # exactly one legal action without returning (search, soak, envs that ask for it).
        if not isinstance(skip_forced, bool):
            raise ValueError(f"skip_forced must be True or False, got {skip_forced!r}")
        self.skip_forced = skip_forced
        # Whether a round's end deals the next round at once (the default), or stops the engine
        # between rounds, the finished table still laid out, until `deal_next()` (a replay
        # showing each round's end; a driver dealing from another source of chance).
        self.auto_deal = bool(auto_deal)
        self.tables: TileTables = tile_tables(self.config.max_pips)
        self.points = self.tables.points(self.config.double_blank_value)
        self._set_constants()
        self._new_boards()
        self.reset(seed)

    def _set_constants(self) -> None:
        # Hot-path copies of derived config values (config properties compute on each access).
        self._draw_action = self.config.draw_action
        self._pass_action = self.config.pass_action
        self._num_tiles = self.config.num_tiles
        self._num_values = self.config.max_pips + 1
        self._no_values = bytes(self._num_values)
        self._value_ids = range(self._num_values)
        # Row of each dealt tile in the deal order: seat 0's hand first (`_start_round`).
        n, size = self.config.num_players, self.config.hand_size
        self._deal_seats = np.repeat(np.arange(n), size)
        self._deal_slices = [slice(seat * size, (seat + 1) * size) for seat in range(n)]
        self._next_seat = [(seat + 1) % n for seat in range(n)]

    # ------------------------------------------------------------------ game flow
    def reset(self, seed: int | None = None) -> list[list[int]]:
        """Start a new game. Returns the rounds that ended with no decision (normally none)."""
        cfg = self.config
        self.seed = seed  # what a game record needs to replay this game (None: unseeded)
        self.rng = np.random.default_rng(seed)
        self.round = 0
        self.scores: list[list[int]] = [[] for _ in range(cfg.num_players)]
        self.game_over = False
        self.between_rounds = False
        self.winners: list[int] = []
        self.history: list[tuple[int, int, int]] = []  # (round, seat, action), whole game
        self._start_round()
        return self._settle([])

    # ------------------------------------------------------------------ external chance
    # The RNG is the engine's own source of chance. An external one (OpenSpiel's chance nodes,
    # a deal replayed from another API) decides the same events through these two methods: the
    # shuffle of a round (R3, R4) and which tiles the next draws take (R5's search, R8). Each
    # round's shuffle is kept as `deal_order`, so a deal made here can be replayed elsewhere.

    def deal_round(self, order: Sequence[int]) -> list[list[int]]:
        """Deal the current round again, from `order` instead of the RNG. `order` holds every
        tile id once: seat s is dealt `order[s * hand_size:(s + 1) * hand_size]` and the rest is
        the boneyard, drawn from its front (R5's search for the start double first, then R8's
        draws). The previous deal of the round is discarded; the round number, the scores, the
        history and the RNG are untouched (later rounds still come from the RNG). Allowed only
        before the round's first decision. Returns what `reset` returns. Raises `ValueError`
        naming the problem, the engine unchanged."""
        if self.game_over:
            raise ValueError("deal_round: the game is over; call reset()")
        if self.between_rounds:
            raise ValueError(
                f"deal_round: round {self.round} is over; deal the next with deal_next()"
            )
        if (self.history and self.history[-1][0] == self.round) or self._table_bytes.count(1) > 1:
            raise ValueError(
                f"deal_round: round {self.round} has begun (a decision was made); a round can "
                "be dealt again only before its first decision"
            )
        tiles = self._deal_order(order, "deal_round")
        self._start_round(tiles)
        return self._settle([])

    def deal_next(self, order: Sequence[int] | None = None) -> list[list[int]]:
        """Deal the next round (R4) of an engine stopped between rounds (`auto_deal=False`):
        shuffled by the RNG, as `auto_deal` would have dealt it, or from `order` as `deal_round`
        takes it. Returns what `reset` returns (with `skip_forced`, a round that ended with no
        decision stops the engine between rounds again). Raises `ValueError` naming the problem,
        the engine unchanged, unless it is between rounds."""
        if not self.between_rounds:
            where = "the game is over" if self.game_over else f"round {self.round} is in play"
            raise ValueError(f"deal_next: not between rounds ({where})")
        tiles = None if order is None else self._deal_order(order, "deal_next")
        self.between_rounds = False
        self._next_round(tiles)
        return self._settle([])

    def _deal_order(self, order: Sequence[int], what: str) -> list[int]:
        """`order` as a list of tile ids holding each tile once (R1), or `ValueError`."""
        count = self._num_tiles
        tiles = _tile_ids(order, count, f"{what}: order")
        if sorted(tiles) != list(range(count)):
            repeated = sorted({t for t in tiles if tiles.count(t) > 1})
            missing = sorted(set(range(count)) - set(tiles))
            raise ValueError(
                f"{what}: order must hold each tile id 0..{count - 1} exactly once (R1); "
                f"got {len(tiles)} ids, repeated {repeated}, missing {missing}"
            )
        return tiles

    def set_next_draws(self, tiles: Sequence[int]) -> None:
        """Make the next draws from the boneyard take `tiles`, in this order; the boneyard's
        other tiles keep their order after them. Only the hidden order of the boneyard changes:
        nothing public, nothing legal. Raises `ValueError` (engine unchanged) unless the tiles
        are distinct and all in the boneyard."""
        chosen = _tile_ids(tiles, self._num_tiles, "set_next_draws: tiles")
        stock = set(self.boneyard)
        outside = [t for t in chosen if t not in stock]
        if outside or len(set(chosen)) != len(chosen):
            pairs = self.tables.pairs
            raise ValueError(
                "set_next_draws: tiles must be distinct tiles of the boneyard; "
                f"{[list(pairs[t]) for t in outside] or 'a tile repeats'} "
                f"(the boneyard holds {len(self.boneyard)} tiles)"
            )
        picked = set(chosen)
        # Internal order: the next tile drawn is the last element.
        self.boneyard = [t for t in self.boneyard if t not in picked] + chosen[::-1]

    def _start_round(self, order: list[int] | None = None) -> None:
        cfg, tables = self.config, self.tables
        n, count, size = cfg.num_players, cfg.num_tiles, cfg.hand_size
        self.center = cfg.max_pips - self.round  # R4
        # R3/R4: the RNG shuffles, unless an external source of chance gave the order (`deal_round`).
        perm = self.rng.permutation(count) if order is None else np.array(order, dtype=np.int64)
        for board in (self._hand_bytes, self._table_bytes, self._played_bytes, self._void_bytes):
            board[:] = bytes(len(board))  # in place: the views stay the engine's boards
        self._hands[self._deal_seats, perm[: n * size]] = True
        # The deal also as Python lists: cheap to search and to sum into the hand bitsets.
        order = perm.tolist()
        self.deal_order = tuple(order)
        dealt = list(map(order.__getitem__, self._deal_slices))
        self.hand_counts = [size] * n
        # Internal boneyard is reversed: the next tile drawn is the last element (pop is O(1)).
        self.boneyard = order[n * size :][::-1]
        self.open_count = [0] * (cfg.max_pips + 1)
        self.arms: list[Arm] = []
        self.tip_arms: list[list[int]] = [[] for _ in range(cfg.max_pips + 1)]
        self._synthetic_arms = False  # the layout is real (see `restore` without arms)
        self.spinner_empty = cfg.spinner_arms
        self.foot_value = -1
        self.foot_arm = -1
        self.toes_left = 0
        self.drawn_tile = -1
        # R5: whoever holds the start double places it; if nobody does, seats draw in turn
        # (beginning with seat round % n) until it is drawn; drawn tiles stay in hand.
        start = int(tables.double_id[self.center])
        holder = _holder(dealt, start)
        if holder < 0 and cfg.start_search == "lower_double":
            # Variant: the highest lower double someone holds starts the round; when nobody
            # holds any, the round's own double is searched for as R5 says.
            for value in range(self.center - 1, -1, -1):
                holder = _holder(dealt, int(tables.double_id[value]))
                if holder >= 0:
                    self.center, start = value, int(tables.double_id[value])
                    break
        if holder < 0 and cfg.start_search == "all_draw":
            holder = self._search_all_draw(dealt, start)
        elif holder < 0:
            holder = self.round % n
            while True:
                tile = self.boneyard.pop()
                dealt[holder].append(tile)
                self._hand_bytes[holder * count + tile] = 1
                self.hand_counts[holder] += 1
                if tile == start:
                    break
                holder = (holder + 1) % n
        dealt[holder].remove(start)
        self._hand_bytes[holder * count + start] = 0
        self.hand_counts[holder] -= 1
        self._table_bytes[start] = 1
        self.start_seat = holder
        self.current = (holder + 1) % n
        bits = tables.tile_bits
        self._hand_bits = [sum(map(bits.__getitem__, hand)) for hand in dealt]
        self._open_attach = 0  # no open ends yet
        self._refresh_playable()

    def _search_all_draw(self, dealt: list[list[int]], start: int) -> int:
        """R5 variant "all_draw": every seat draws one tile at once (in seat order from round % n,
        which fixes who gets which tile), again and again until the start double appears. The
        whole batch draws, so seats after its finder keep a tile too; a batch the boneyard cannot
        fill goes to the first seats in that order, and the double is always among its tiles."""
        n, count = self.config.num_players, self.config.num_tiles
        holder, first = -1, self.round % n
        while holder < 0:
            for k in range(min(n, len(self.boneyard))):
                seat = (first + k) % n
                tile = self.boneyard.pop()
                dealt[seat].append(tile)
                self._hand_bytes[seat * count + tile] = 1
                self.hand_counts[seat] += 1
                if tile == start:
                    holder = seat
        return holder

    def _new_boards(self, copy_of: Engine | None = None) -> None:
        """Create the 0/1 boards: hands, table, played tiles and voids (zeroed, or copies of
        another engine's). Each lives in a bytearray with a numpy view over it: the hot paths
        write single entries through the bytearray (a plain item assignment, several times
        cheaper than numpy scalar indexing) and everyone else reads the arrays. The views are
        live for the engine's life (a new round clears them in place): copy to keep one."""
        n, count, values = self.config.num_players, self.config.num_tiles, self.config.max_pips + 1
        if copy_of is None:
            self._hand_bytes, self._table_bytes = bytearray(n * count), bytearray(count)
            self._played_bytes, self._void_bytes = bytearray(n * count), bytearray(n * values)
        else:
            self._hand_bytes = bytearray(copy_of._hand_bytes)
            self._table_bytes = bytearray(copy_of._table_bytes)
            self._played_bytes = bytearray(copy_of._played_bytes)
            self._void_bytes = bytearray(copy_of._void_bytes)
        self._hands = np.frombuffer(self._hand_bytes, dtype=bool).reshape(n, count)
        self.hands = _readonly_view(self._hands)
        self.on_table = np.frombuffer(self._table_bytes, dtype=bool)
        self.played_by = np.frombuffer(self._played_bytes, dtype=bool).reshape(n, count)
        self.voids = np.frombuffer(self._void_bytes, dtype=bool).reshape(n, values)

    _VIEWS = ("_hands", "hands", "on_table", "played_by", "voids")

    def __getstate__(self) -> dict:
        # The numpy views must be rebuilt over the copied bytearrays (copy, deepcopy, pickle).
        return {
            name: getattr(self, name)
            for name in self.__slots__
            if name not in self._VIEWS and hasattr(self, name)
        }

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        if "_hand_bytes" in state:
            self._new_boards(copy_of=self)

    def _sync_hands(self) -> None:
        """Rebuild the hand bitsets from `_hands` (after a restore)."""
        bits = self.tables.tile_bits
        self._hand_bits = [sum(bits[t] for t in np.flatnonzero(row).tolist()) for row in self._hands]

    def _refresh_playable(self, recount: bool = False) -> None:
        """The phase of play, decided here and nowhere else: which rule says where tiles go now
        (`_phase`: R9 a pending foot's toes first, else R7 the centre's empty arms, else R6 any
        open end) and so the playable values, as their attach bitset (`_attach`) and list
        (`_values`). Called whenever they may have changed (a tile placed, a new round, a
        restore); drops the cached legality. `recount` rebuilds the open ends' bitset from
        `open_count`; otherwise `_place` keeps it current."""
        attach_bits = self.tables.attach_bits
        if recount:
            self._open_attach = 0
            for value, count in enumerate(self.open_count):
                if count:
                    self._open_attach |= attach_bits[value]
        if self.foot_value >= 0:  # R9: only toes on the pending foot
            self._phase, self._values = "R9", [self.foot_value]
            self._attach = attach_bits[self.foot_value]
        elif self.spinner_empty > 0:  # R7: fill the centre's empty arms first
            self._phase, self._values = "R7", [self.center]
            self._attach = attach_bits[self.center]
        else:  # R6: any open end (the list is built on demand: `_playable`)
            self._phase, self._values = "R6", None
            self._attach = self._open_attach
        self._legal = None

    def playable_values(self) -> list[int]:
        """Values a tile may be attached to now (R7 spinner phase, R9 pending foot, R6 otherwise)."""
        return list(self._playable())

    def _playable(self) -> list[int]:
        if self._values is None:  # R6: the open ends' values, listed once per position
            self._values = list(compress(self._value_ids, self.open_count))
        return self._values

    def placement(self, action: int) -> Placement:
        """Where tile action `action` puts its tile if played now (R6, R7, R9): the rule that
        places it, the arm it lands on, and the value it leaves open. The engine lays every
        tile by this decision (`_slot`, which `_place` applies), and every description of a
        move reads it (`cf_env.viz.render.move_name`). It does not check that the acting seat holds the tile;
        raises `ValueError` for DRAW, PASS, an id out of range, a tile whose attached half is
        not a playable value now, or when no round is in play."""
        tables = self.tables
        if self.game_over or self.between_rounds:
            raise ValueError("placement: no round is in play (the game is over, or between rounds)")
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"placement: {action!r} is not a tile action id")
        action = int(action)
        if not 0 <= action < self._draw_action:
            raise ValueError(
                f"placement: action {action} is not a tile action (0..{self._draw_action - 1})"
            )
        tile = action >> 1  # action 2t + side (cf_env.core.actions)
        lo, hi = tables.pairs[tile]
        attached, free_end = (hi, lo) if action & 1 else (lo, hi)
        if attached not in self._playable():
            raise ValueError(
                f"placement: {attached}|{free_end} attaches a {attached}, which is not playable "
                f"now (playable: {self._playable()})"
            )
        arm, parent = self._slot(attached)
        starts_foot = self._phase == "R6" and attached == free_end
        toe = self.config.toes - self.toes_left + 1 if self._phase == "R9" else 0
        return Placement(
            tile, attached, free_end, self._phase, arm, parent, arm == len(self.arms), toe,
            -1 if starts_foot else free_end,
        )

    def _slot(self, attached: int) -> tuple[int, int]:
        """Where a tile attached to `attached` goes, as (arm index, that arm's parent): R9 a new
        toe of the pending foot, R7 a new arm of the centre double (index `len(arms)` for a new
        arm), R6 the oldest open arm tip of that value (`tip_arms` is kept in arm order, so the
        layout alone says which: a restore lays tiles where the original game would)."""
        phase = self._phase
        if phase == "R6":
            arm = self.tip_arms[attached][0]
            return arm, self.arms[arm].parent
        return len(self.arms), (self.foot_arm if phase == "R9" else -1)

    def legal_action_mask(self) -> np.ndarray:
        """The acting seat's legal actions as a fresh int8 array (all zeros once the game is over)."""
        mask = np.zeros(self.config.num_actions, dtype=np.int8)
        for action in actions_in(self.legal_bits()):  # a handful: faster than unpacking bits
            mask[action] = 1
        return mask

    def legal_actions(self) -> list[int]:
        return actions_in(self.legal_bits())

    def legal_bits(self) -> int:
        """The one place legality is decided: the legal actions as an int bitset (bit a set <=>
        action a legal), computed once per state. The cheapest form of the legal set: the mask
        and the list are made from it, and fast-path policies take it as is (`cf_env.policies`)."""
        if self._legal is not None:
            return self._legal
        if self.game_over or self.between_rounds:
            legal = 0
        elif self.drawn_tile >= 0:
            # R8: after a draw only the drawn tile may be placed; PASS ends the turn unless the
            # must-play variant forces a playable drawn tile.
            legal = self.tables.tile_bits[self.drawn_tile] & self._attach
            if not (legal and self.config.must_play_drawn):
                legal |= 1 << self._pass_action
        else:
            legal = self._hand_bits[self.current] & self._attach
            if not legal:  # R8: draw only when you cannot place; pass once the boneyard is empty
                legal = 1 << (self._draw_action if self.boneyard else self._pass_action)
        self._legal = legal
        return legal

    def action_problem(self, action: object) -> str | None:
        """None when `action` is legal now for the acting seat; else what is wrong with it.

        Accepted as actions: a plain int, a numpy integer, or a 0-d integer array (what SB3's
        predict() returns for one observation); a bool, a float, None or any other array is
        malformed. The message names the problem (malformed, out of range, not legal now, game
        over) and, for an action not legal now, lists the legal ones with their names
        (`cf_env.core.actions.describe`). `step` raises `IllegalActionError` with this message;
        drivers that check a policy's answer before stepping ask here instead of re-deciding."""
        if isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
            action = action[()]
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            return (
                f"action must be an int in 0..{self.config.num_actions - 1}; "
                f"got {action!r} ({type(action).__name__})"
            )
        action = int(action)
        if self.game_over:
            return f"action {action}: the game is over; call reset()"
        if self.between_rounds:
            return f"action {action}: round {self.round} is over; call deal_next()"
        legal_bits = self.legal_bits()
        if action >= 0 and legal_bits >> action & 1:
            return None
        in_range = 0 <= action < self.config.num_actions
        what = describe(self.tables, action) if in_range else "out of range"
        named = ", ".join(f"{a} ({describe(self.tables, a)})" for a in actions_in(legal_bits))
        return f"action {action} ({what}) is not legal for seat {self.current}; legal: {named}"

    def _check_action(self, action: object) -> int:
        """`action` as a plain int if legal now; else raises `IllegalActionError` (the slow path
        of `step` and `advance`: a legal plain int never gets here)."""
        problem = self.action_problem(action)
        if problem is not None:
            raise IllegalActionError(problem)
        return int(action)

    def step(self, action: int) -> list[list[int]]:
        """Apply one action of the acting seat. Returns the points of every round that ended."""
        if type(action) is int and action >= 0 and self.legal_bits() >> action & 1:
            finished = self._apply(action)  # the usual case: a legal plain int, nothing to check
        else:
            finished = self._apply(self._check_action(action))  # raises, naming the problem
        return self._settle(finished) if self.skip_forced else finished

    def _apply(self, action: int) -> list[list[int]]:
        cfg, tables = self.config, self.tables
        seat = self.current
        self.history.append((self.round, seat, action))
        went_out = False
        if action == self._draw_action:
            # The seat showed it holds none of the playable values; drawing adds an unseen
            # tile, so older knowledge about this seat is dropped.
            row = seat * self._num_values
            voids = self._void_bytes
            voids[row : row + self._num_values] = self._no_values
            for value in self._playable():
                voids[row + value] = 1
            tile = self._draw(seat)
            while cfg.draw_until_playable and self.boneyard and not self._fits(tile):
                tile = self._draw(seat)
            self.drawn_tile = tile
        elif action == self._pass_action:
            if self.drawn_tile < 0:
                row = seat * self._num_values
                for value in self._playable():
                    self._void_bytes[row + value] = 1
            self.drawn_tile = -1
            self.current = self._next_seat[seat]
        else:
            tile = action >> 1  # action 2t + side (cf_env.actions)
            lo, hi = tables.pairs[tile]
            self._hand_bytes[seat * self._num_tiles + tile] = 0
            self._hand_bits[seat] ^= tables.tile_bits[tile]  # both of the tile's bits are set
            self.hand_counts[seat] -= 1
            self._table_bytes[tile] = 1
            self._played_bytes[seat * self._num_tiles + tile] = 1
            if action & 1:
                self._place(tile, hi, lo)
            else:
                self._place(tile, lo, hi)
            self._refresh_playable()
            self.drawn_tile = -1
            self.current = self._next_seat[seat]
            went_out = not self.hand_counts[seat]
        self._legal = None
        # R11: the round ends when a hand empties, or when nobody can place and nobody can draw.
        if went_out or (not self.boneyard and not self._anyone_can_place()):
            return [self._end_round()]
        return []

    def advance(
        self,
        stop_seat: int = -1,
        choosers: Sequence[Callable[[int], int] | None] | None = None,
    ) -> list[list[int]]:
        """Apply decisions that need nobody's input, until someone must be asked: every forced
        decision (exactly one legal action: most draws and passes), and a seat's real choice when
        `choosers[seat]` is given (called with the legal bitset, it returns the action; an
        illegal one raises `IllegalActionError` as `step` does, the decisions before it staying
        applied). Stops when `stop_seat` is to act, when a seat without a chooser has a real
        choice, at the game's end, or right after a round ends. Returns what `step` returns: the
        points of the round that ended, if one did.

        One call replaces the check-then-step loop a driver would run over these decisions (the
        single-agent adapter's opponents' turns), which is most of the decisions of a game."""
        finished: list[list[int]] = []
        while not finished and self.current != stop_seat:
            legal = self.legal_bits()
            if not legal:  # the game is over
                break
            if legal & (legal - 1):  # more than one bit: a real choice
                choose = choosers[self.current] if choosers is not None else None
                if choose is None:
                    break
                action = choose(legal)
                if type(action) is not int or action < 0 or not legal >> action & 1:
                    action = self._check_action(action)  # raises, naming the problem
                finished = self._apply(action)
            else:
                finished = self._apply(legal.bit_length() - 1)
        return finished

    def _settle(self, finished: list[list[int]]) -> list[list[int]]:
        """With `skip_forced`, take every decision that has exactly one legal action."""
        if self.skip_forced:
            while more := self.advance():
                finished += more
        return finished

    def _draw(self, seat: int) -> int:
        tile = self.boneyard.pop()
        self._hand_bytes[seat * self._num_tiles + tile] = 1
        self._hand_bits[seat] |= self.tables.tile_bits[tile]
        self.hand_counts[seat] += 1
        return tile

    def _fits(self, tile: int) -> bool:
        return bool(self.tables.tile_bits[tile] & self._attach)

    def _anyone_can_place(self) -> bool:
        attach = self._attach
        for bits in self._hand_bits:  # noqa: SIM110 (a loop, not any(<generator>): this runs every late step)
            if bits & attach:
                return True
        return False

    def _place(self, tile: int, attached: int, free_end: int) -> None:
        """Lay `tile` where `_slot` says (the decision `placement` reports) and update the ends.

        `_slot`'s decision is applied inline, reading the same phase: a call per placement
        costs 3% of a random playout (measured), and tests/core/test_i16_engine.py checks that every
        tile of random games lands where `placement` said."""
        arms, phase = self.arms, self._phase
        if phase != "R6":  # a new arm: a toe of the pending foot (R9) or a spinner arm (R7)
            arm = len(arms)
            arms.append(Arm(self.foot_arm if phase == "R9" else -1, [(tile, attached)], free_end))
            if phase == "R7":
                self.spinner_empty -= 1
            else:
                self.toes_left -= 1
                if self.toes_left == 0:  # R10: the foot is filled; its toes are ordinary ends
                    self.foot_value = self.foot_arm = -1
        else:  # R6: extend the oldest open arm tip of that value
            arm = self.tip_arms[attached].pop(0)
            self.open_count[attached] -= 1
            if not self.open_count[attached]:  # the last open end of that value is covered
                self._open_attach ^= self.tables.attach_bits[attached]
            arms[arm].tiles.append((tile, attached))
            if free_end == attached:  # R9: a double starts a chicken foot
                arms[arm].tip = -1
                self.foot_value, self.foot_arm, self.toes_left = attached, arm, self.config.toes
                return
            arms[arm].tip = free_end
        self.open_count[free_end] += 1
        if self.open_count[free_end] == 1:  # a value newly open
            self._open_attach |= self.tables.attach_bits[free_end]
        bisect.insort(self.tip_arms[free_end], arm)  # arm order: see `_slot`

    def _end_round(self) -> list[int]:
        """R12: score the hands, then finish the game (R13), or deal the next round (R4), or
        with `auto_deal` off stop between rounds (the finished table stays laid out)."""
        points = self._hands.dot(self.points).tolist()  # each seat's pips left in hand
        for seat, value in enumerate(points):
            self.scores[seat].append(value)
        if self._game_ends():
            self.game_over = True
            self.drawn_tile = -1
            self.winners = self._winners()
            self._legal = None
        elif self.auto_deal:
            self._next_round()
        else:
            self.between_rounds = True
            self._legal = 0
        return points

    def _next_round(self, order: list[int] | None = None) -> None:
        # With a target score the countdown restarts after the double-blank round.
        self.round = (self.round + 1) % self.config.num_rounds
        self._start_round(order)

    def _game_ends(self) -> bool:
        """After a round: R4's last round was played, or (variant) a total passed the target."""
        target = self.config.target_score
        if target is None:
            return self.round + 1 >= self.config.num_rounds
        return max(map(sum, self.scores)) > target

    def _winners(self) -> list[int]:
        return r13_winners(self.scores, self.config.tie_break)

    # ------------------------------------------------------------------ queries
    @property
    def num_players(self) -> int:
        return self.config.num_players

    def hand(self, seat: int) -> list[int]:
        return np.flatnonzero(self.hands[seat]).tolist()

    def totals(self) -> list[int]:
        return list(map(sum, self.scores))

    def clone(self) -> Engine:
        """An independent copy (cheaper than snapshot/restore), e.g. for tree search."""
        other = copy.copy(self)  # own copies of the boards: __setstate__
        other.rng = copy.deepcopy(self.rng)
        other.scores = [list(s) for s in self.scores]
        other.winners = list(self.winners)
        other.history = list(self.history)
        other._hand_bits = list(self._hand_bits)
        other._values = None if self._values is None else list(self._values)
        other.hand_counts = list(self.hand_counts)
        other.boneyard = list(self.boneyard)
        other.open_count = list(self.open_count)
        other.arms = [Arm(a.parent, list(a.tiles), a.tip) for a in self.arms]
        other.tip_arms = [list(ids) for ids in self.tip_arms]
        return other

    # ------------------------------------------------------------------ search: determinizations
    def copy_from(self, other: Engine, rng: bool = True) -> None:
        """Become a copy of `other` in place (same config), keeping this engine's boards and views.

        Search resets one engine to the same root position thousands of times per decision;
        `clone` builds new bytearrays, numpy views and a deep-copied RNG each time, which costs
        more than the rollout that follows. Here the boards are overwritten in place and only
        the containers play mutates are copied. The result equals `other.clone()` field by field
        (tests/agents/test_ismcts.py checks every slot). The RNG only deals later rounds: `rng=False`
        leaves this engine's own (a search that stops at the round's end never uses it)."""
        if other.config is not self.config and other.config != self.config:
            raise ValueError("copy_from needs an engine with the same config (its boards' sizes)")
        self._hand_bytes[:] = other._hand_bytes
        self._table_bytes[:] = other._table_bytes
        self._played_bytes[:] = other._played_bytes
        self._void_bytes[:] = other._void_bytes
        self._hand_bits = other._hand_bits[:]
        self.hand_counts = other.hand_counts[:]
        self.boneyard = other.boneyard[:]
        self.open_count = other.open_count[:]
        self.arms = [Arm(a.parent, a.tiles[:], a.tip) for a in other.arms]
        self.tip_arms = [ids[:] for ids in other.tip_arms]
        self.scores = [s[:] for s in other.scores]
        self.winners = other.winners[:]
        self.history = other.history[:]
        if rng:
            self.rng.bit_generator.state = other.rng.bit_generator.state
        self._attach = other._attach
        self._legal = other._legal
        self._open_attach = other._open_attach
        self._synthetic_arms = other._synthetic_arms
        self._values = None if other._values is None else other._values[:]
        self.center = other.center
        self.current = other.current
        self.deal_order = other.deal_order
        self.drawn_tile = other.drawn_tile
        self.foot_arm = other.foot_arm
        self.foot_value = other.foot_value
        self.game_over = other.game_over
        self.round = other.round
        self.seed = other.seed
        self.spinner_empty = other.spinner_empty
        self.start_seat = other.start_seat
        self.toes_left = other.toes_left
        for name in _COPY_AS_IS:  # any other field: immutable values, shared as `clone` shares them
            setattr(self, name, getattr(other, name))

    def hand_bits(self, seat: int) -> int:
        """Seat `seat`'s hand as an int bitset over action ids (each tile's `tiles.tile_bits`):
        the set legality ANDs with the playable ends. Rollout policies on the fast path read it
        instead of the numpy board."""
        return self._hand_bits[seat]

    def redeal(self, hands: Sequence[Sequence[int]], boneyard: Sequence[int]) -> None:
        """Give the hidden tiles out again, in place: seat s's hand becomes `hands[s]` and the
        boneyard `boneyard` (tile ids; `boneyard[0]` is drawn first). Search calls it on a copy
        of a position to play out one sampled deal (a determinization) without a snapshot.

        Everything public is kept: the table, the layout, every hand's size, the boneyard's
        size, voids, played tiles, scores, the seat to act. So the new deal must hold exactly the
        tiles not on the table, each hand as many as it holds now, and a drawn tile (R8) must
        stay in the acting seat's hand; then every invariant `restore` checks still holds (the
        tests restore each re-dealt engine's snapshot). Raises `ValueError` naming the problem,
        the engine unchanged. Nothing is settled afterwards: a re-dealt position is one the
        real game could be in, and the acting seat's legal set is recomputed on demand."""
        n, count = self.config.num_players, self._num_tiles
        if len(hands) != n:
            raise ValueError(f"redeal: {len(hands)} hands given for {n} seats")
        if list(map(len, hands)) != self.hand_counts:
            for seat, hand in enumerate(hands):
                if len(hand) != self.hand_counts[seat]:
                    raise ValueError(
                        f"redeal: hand {seat} gets {len(hand)} tiles but holds "
                        f"{self.hand_counts[seat]} (hand sizes are public and stay as they are)"
                    )
        if len(boneyard) != len(self.boneyard):
            raise ValueError(
                f"redeal: the boneyard gets {len(boneyard)} tiles but holds {len(self.boneyard)}"
            )
        # Each place's tiles as one int with byte t set to 1 for tile t: the same layout as the
        # boards, so a hand's row is its int's bytes, and the check is one sum: every byte of
        # (deal + table) must be exactly 1 (each tile dealt once, none from the table, R1, R3).
        # A hand's int also carries its action bits (`hand_bits`) above the bytes and a guard
        # (`_deal_spread`), so one sum per hand gives both.
        spread, shift = _deal_spread(self.config.max_pips)
        low = (1 << shift) - 1
        try:
            rows = [sum(map(spread.__getitem__, hand)) for hand in hands]
            dealt = (sum(rows) & low) + sum(map(_byte_spread(count).__getitem__, boneyard))
        except (KeyError, TypeError):
            dealt = -1
        if dealt < 0 or dealt + int.from_bytes(self._table_bytes, "little") != _byte_spread(count)[count]:
            raise ValueError(self._redeal_error(hands, boneyard))
        if self.drawn_tile >= 0 and not rows[self.current] >> 8 * self.drawn_tile & 1:
            raise ValueError(
                f"redeal: the drawn tile {list(self.tables.pairs[self.drawn_tile])} must stay in "
                f"the hand of seat {self.current}, which drew it (R8)"
            )
        board = self._hand_bytes
        for seat, row in enumerate(rows):
            board[seat * count : (seat + 1) * count] = (row & low).to_bytes(count, "little")
        self._hand_bits = [row >> shift for row in rows]
        self.boneyard = list(boneyard)[::-1]  # internal order: the next tile drawn is last
        self._legal = None

    def _redeal_error(self, hands: Sequence[Sequence[int]], boneyard: Sequence[int]) -> str:
        """What is wrong with a deal `redeal` refused (the slow path: names the first culprit)."""
        count, seen = self._num_tiles, {}
        for place, tiles in [*((f"hand {s}", h) for s, h in enumerate(hands)), ("the boneyard", boneyard)]:
            for t in tiles:
                if type(t) is not int or not 0 <= t < count:
                    return f"redeal: {place} names {t!r}, not a tile id (an int 0..{count - 1})"
                pair = list(self.tables.pairs[t])
                if self._table_bytes[t]:
                    return f"redeal: {place} names tile {pair}, which is on the table (public)"
                if t in seen:
                    return f"redeal: tile {pair} is dealt twice ({seen[t]} and {place})"
                seen[t] = place
        return "redeal: the deal does not hold exactly the tiles off the table"

    # ------------------------------------------------------------------ snapshot / restore
    def snapshot(self) -> dict:
        """A JSON-serialisable dict from which `restore` continues exactly (keys:
        `SNAPSHOT_KEYS` and the extras of `cf_env.core.snapshot`). A snapshot holds a round in
        play or a finished game: between rounds raises `ValueError`."""
        if self.between_rounds:
            raise ValueError(f"snapshot: round {self.round} is over; call deal_next() first")
        return snapshot_format.snapshot(self)

    def restore(self, snapshot: dict) -> None:
        """Continue from `snapshot`. Raises `SnapshotError` (state unchanged) if it is invalid."""
        position = snapshot_format.read(self.config, self.tables, snapshot)
        for name in snapshot_format.POSITION_FIELDS:
            setattr(self, name, getattr(position, name))
        self._new_boards()  # new arrays: views taken before the restore keep the old position
        self._hands[:] = position.hands
        self.on_table[:] = position.on_table
        self.played_by[:] = position.played_by
        self.voids[:] = position.voids
        self._synthetic_arms = position.synthetic_arms
        self._sync_hands()
        self._refresh_playable(recount=True)
        self._settle([])

    @property
    def synthetic_arms(self) -> bool:
        """Whether the arms are stand-ins carrying only the open ends (restored from a snapshot
        without a layout); `snapshot()` leaves them out again."""
        return self._synthetic_arms


def _tile_ids(values: object, count: int, what: str) -> list[int]:
    """`values` as a list of plain tile ids 0..count-1 (numpy integers accepted)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{what} must be a sequence of tile ids; got {values!r}")
    ids = list(values)
    for t in ids:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)) or not 0 <= t < count:
            raise ValueError(f"{what}: {t!r} is not a tile id (an int 0..{count - 1})")
    return [int(t) for t in ids]


def _holder(hands: list[list[int]], tile: int) -> int:
    """The seat whose hand (a list of tile ids) holds `tile`, or -1."""
    for seat, hand in enumerate(hands):
        if tile in hand:
            return seat
    return -1


# Fields `copy_from` sets itself (copies of containers, or plain values), the boards' views, the
# RNG, and what follows from the config; any other field is copied as it is (`_COPY_AS_IS`).
_COPIED = {
    "_hand_bytes", "_table_bytes", "_played_bytes", "_void_bytes", "_hand_bits", "hand_counts",
    "boneyard", "open_count", "arms", "tip_arms", "scores", "winners", "history", "rng",
    "_attach", "_legal", "_open_attach", "_synthetic_arms", "_values", "center", "current",
    "drawn_tile", "foot_arm", "foot_value", "game_over", "round", "seed", "spinner_empty",
    "start_seat", "toes_left", *Engine._VIEWS, "config", "tables", "points", "_deal_seats",
    "_deal_slices", "_draw_action", "_next_seat", "_no_values", "_num_tiles", "_num_values",
    "_pass_action", "_value_ids",
}
_COPY_AS_IS = tuple(name for name in Engine.__slots__ if name not in _COPIED)


@functools.cache
def _deal_spread(max_pips: int) -> tuple[dict[int, int], int]:
    """({tile id: its `_byte_spread` byte | its action bits << shift}, shift) for `redeal`: a
    guard byte between the two parts keeps a sum's bytes (each at most the number of tiles
    summed) from reaching the bits."""
    tables = tile_tables(max_pips)
    count = tables.num_tiles
    shift = 8 * (count + 2)
    return {t: 1 << 8 * t | tables.tile_bits[t] << shift for t in range(count)}, shift


@functools.cache
def _byte_spread(count: int) -> dict[int, int]:
    """{tile id: 1 << 8 * id} for ids 0..count-1, and [count]: every tile's byte set."""
    spread = {t: 1 << 8 * t for t in range(count)}
    spread[count] = int.from_bytes(b"\x01" * count, "little")
    return spread


def _readonly_view(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


# The snapshot format's names (`cf_env.core.snapshot`) stay importable from here.
__all__ = [
    "SNAPSHOT_KEYS",
    "SNAPSHOT_VERSION",
    "SNAPSHOT_VERSIONS",
    "Arm",
    "Engine",
    "IllegalActionError",
    "Placement",
    "SnapshotError",
]
