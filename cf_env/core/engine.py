"""The Chicken Foot rules engine for one game: a facade over the compiled core.

The rules themselves (legality R6–R9, transitions R8–R11, scoring R12, R13, every variant) are
stated once, as compiled functions over a state value, in `cf_env.core.kernel`; an `Engine`
holds one game of that state (`kernel.GameBuffer`) and steps it through the `one_*` entry
points. What the engine adds is what a single game driven from Python needs: its RNG (one
`rng.permutation` per round, R3/R4), the public history, the per-round scores, the table's
layout as `Arm`s read from the compiled state (`arms`, `placement`: for pictures, move names and
exact snapshots), external chance (`deal_round`, `set_next_draws`, `redeal`), snapshot/restore
and its validation (`cf_env.core.snapshot`), the error messages, and `advance` with bots.

One `Engine` plays a whole game of `config.num_rounds` rounds (R4), or, with `target_score`,
rounds until a total passes the target (`round` is then the place in the countdown of doubles,
which restarts after the double-blank; `len(scores[s])` counts the rounds played). The acting
seat is `engine.current`; `legal_bits()` (the compiled `legal_into`, as an int bitset) is the
single source of legality that the mask, the list, the env, bots and tests all come from;
`step(action)` raises `IllegalActionError` and changes nothing when the action is not legal.

The state's fields read as the engine's attributes (`current`, `open_count`, `boneyard`, …);
the 0/1 boards (`hands`, `on_table`, `played_by`, `voids`) are read-only numpy views of the
compiled state, live for the engine's life (copy to keep one).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np

from cf_env.core import checks, kernel
from cf_env.core import snapshot as snapshot_format
from cf_env.core.actions import IllegalActionError, actions_in, describe
from cf_env.core.config import ChickenFootConfig
from cf_env.core.deals import redeal_rows
from cf_env.core.layout import Arm, Placement
from cf_env.core.snapshot import SnapshotError
from cf_env.core.tiles import TileTables, tile_ids, tile_tables

_FLOAT32 = np.dtype(np.float32)
_RULES = {kernel.PHASE_R6: "R6", kernel.PHASE_R7: "R7", kernel.PHASE_R9: "R9"}

# The state's scalar fields, read as attributes of the engine (a game of one: index 0).
_SCALARS = ("current", "round", "center", "start_seat", "drawn_tile", "foot_value", "toes_left",
            "spinner_empty")


class Engine:
    """A whole game: deal, play, score every round; R13 decides the winners."""

    __slots__ = (
        "_bytes", "_draw_action", "_ints", "_legal", "_legal_bytes", "_held_bytes", "_num_players",
        "_num_tiles",
        "_row_shape", "_st", "_synthetic_arms", "auto_deal", "between_rounds", "config",
        "deal_order", "game", "hands", "history", "on_table", "played_by", "points", "rng",
        "scores", "seed", "skip_forced", "tables", "voids", "winners",
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
        self._draw_action = self.config.draw_action
        self._num_tiles = self.config.num_tiles
        self._num_players = self.config.num_players
        self._bind(kernel.GameBuffer(self.config))
        self.reset(seed)

    def _bind(self, game: kernel.GameBuffer) -> None:
        """Hold `game` and the views of it that the engine reads and writes."""
        self.game, self._st = game, game.state
        self._row_shape = (game.observation_size,)  # what write_observation writes
        self._bytes = memoryview(game.buffer).cast("B")  # the scalars (`GameBuffer.SCALAR_AT`)
        self._ints = self._bytes.cast("i")
        self._legal_bytes = memoryview(game.legal_words.view(np.uint8).reshape(-1))
        self._held_bytes = memoryview(game.state.held.view(np.uint8).reshape(-1))
        self.hands = _readonly(game.state.held[0])
        self.on_table = game.state.on_table[0]
        self.played_by = game.state.played[0]
        self.voids = game.state.voids[0]
        self._legal = None

    # ------------------------------------------------------------------ the state's fields
    # (and those of `_SCALARS`: properties made below the class)
    @property
    def game_over(self) -> bool:
        return self._bytes[_GAME_OVER_BYTE] != 0

    @property
    def hand_counts(self) -> list[int]:
        return self._st.hand_count[0].tolist()

    @property
    def open_count(self) -> list[int]:
        return self._st.open_count[0].tolist()

    @property
    def boneyard(self) -> list[int]:
        """The boneyard's tiles; the next drawn is the last."""
        return self._st.boneyard[0, self._st.bone_pos[0] :][::-1].tolist()

    @property
    def foot_arm(self) -> int:
        """The arm that ends in the pending chicken foot's double, -1 if none (R9)."""
        return self._ints[kernel.GameBuffer.SCALAR_AT["foot_arm"]]

    @property
    def arms(self) -> list[Arm]:
        """The table's layout, a new list of `Arm`s read from the compiled state: spinner arms
        and toes in the order they were started, each with its tiles from the inner end out."""
        st = self._st
        count = int(st.arm_count[0])
        arms = [Arm(parent, [], tip) for parent, tip in
                zip(st.arm_parent[0, :count].tolist(), st.arm_tip[0, :count].tolist(), strict=True)]
        on_arms = np.flatnonzero(st.tile_arm[0] >= 0)
        order = on_arms[np.lexsort((st.tile_pos[0, on_arms], st.tile_arm[0, on_arms]))]
        for tile, arm, attached in zip(order.tolist(), st.tile_arm[0, order].tolist(),
                                       st.tile_attached[0, order].tolist(), strict=True):
            arms[arm].tiles.append((tile, attached))
        return arms

    @property
    def num_players(self) -> int:
        return self.config.num_players

    @property
    def synthetic_arms(self) -> bool:
        """Whether the arms are stand-ins carrying only the open ends (restored from a snapshot
        without a layout); `snapshot()` leaves them out again."""
        return self._synthetic_arms

    # ------------------------------------------------------------------ game flow
    def reset(self, seed: int | None = None) -> list[list[int]]:
        """Start a new game. Returns the rounds that ended with no decision (normally none)."""
        self.seed = seed  # what a game record needs to replay this game (None: unseeded)
        self.rng = np.random.default_rng(seed)
        self.scores: list[list[int]] = [[] for _ in range(self.config.num_players)]
        self.between_rounds = False
        self.winners: list[int] = []
        self.history: list[tuple[int, int, int]] = []  # (round, seat, action), whole game
        self._deal_from(None, kernel.OP_NEW_GAME)
        return self._settle([])

    def _deal_from(self, order: list[int] | None, deal: int) -> None:
        """Shuffle (R3/R4: the RNG, unless an external source of chance gave the order) and deal
        a round by `deal` (`kernel.OP_NEW_GAME`, `OP_DEAL_AGAIN` or `OP_DEAL_NEXT`)."""
        perm = self.rng.permutation(self._num_tiles) if order is None else np.array(order)
        self._st.boneyard[0] = perm
        self.deal_order = tuple(perm.tolist())
        kernel.one_game(self.game.buffer, self.game.table_buffer, deal, 0)
        self._synthetic_arms = False  # the layout is real (see `restore` without arms)
        self._legal = None

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
        if (self.history and self.history[-1][0] == self.round) or self.on_table.sum() > 1:
            raise ValueError(
                f"deal_round: round {self.round} has begun (a decision was made); a round can "
                "be dealt again only before its first decision"
            )
        tiles = self._deal_order(order, "deal_round")
        self._deal_from(tiles, kernel.OP_DEAL_AGAIN)
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
        self._deal_from(tiles, kernel.OP_DEAL_NEXT)
        return self._settle([])

    def _deal_order(self, order: Sequence[int], what: str) -> list[int]:
        """`order` as a list of tile ids holding each tile once (R1), or `ValueError`."""
        count = self._num_tiles
        tiles = tile_ids(order, count, f"{what}: order")
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
        chosen = tile_ids(tiles, self._num_tiles, "set_next_draws: tiles")
        stock = self._st.boneyard[0, self._st.bone_pos[0] :]  # drawn from the front
        outside = [t for t in chosen if t not in set(stock.tolist())]
        if outside or len(set(chosen)) != len(chosen):
            pairs = self.tables.pairs
            raise ValueError(
                "set_next_draws: tiles must be distinct tiles of the boneyard; "
                f"{[list(pairs[t]) for t in outside] or 'a tile repeats'} "
                f"(the boneyard holds {len(stock)} tiles)"
            )
        picked = set(chosen)
        stock[:] = chosen + [t for t in stock.tolist() if t not in picked]

    # ------------------------------------------------------------------ legality
    def playable_values(self) -> list[int]:
        """Values a tile may be attached to now (R7 spinner phase, R9 pending foot, R6 otherwise:
        the compiled `play_phase` decides)."""
        out = np.empty(self.config.max_pips + 1, np.int32)
        count = kernel.one_playable(self.game.buffer, self.game.table_buffer, out)
        return out[:count].tolist()

    def placement(self, action: int) -> Placement:
        """Where tile action `action` puts its tile if played now (R6, R7, R9): the rule that
        places it, the arm it lands on, and the value it leaves open, as the compiled placement
        that lays it decides (`kernel.placement_into`); every description of a move reads it
        (`cf_env.viz.render.move_name`). It does not check that the acting seat holds the tile;
        raises `ValueError` for DRAW, PASS, an id out of range, a tile whose attached half is
        not a playable value now, or when no round is in play."""
        if self.game_over or self.between_rounds:
            raise ValueError("placement: no round is in play (the game is over, or between rounds)")
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"placement: {action!r} is not a tile action id")
        action = int(action)
        if not 0 <= action < self._draw_action:
            raise ValueError(
                f"placement: action {action} is not a tile action (0..{self._draw_action - 1})"
            )
        tile, attached, free_end = self._halves(action)
        out = np.empty(6, np.int32)
        if not kernel.one_placement(self.game.buffer, self.game.table_buffer, action, out):
            raise ValueError(
                f"placement: {attached}|{free_end} attaches a {attached}, which is not playable "
                f"now (playable: {self.playable_values()})"
            )
        phase, arm, parent, new_arm, toe, leaves_open = out.tolist()
        return Placement(tile, attached, free_end, _RULES[phase], arm, parent, bool(new_arm), toe,
                         leaves_open)

    def _halves(self, action: int) -> tuple[int, int, int]:
        """(tile, attached value, free end) of tile action 2t + side (cf_env.core.actions)."""
        tile = action >> 1
        lo, hi = self.tables.pairs[tile]
        return (tile, hi, lo) if action & 1 else (tile, lo, hi)

    def legal_action_mask(self) -> np.ndarray:
        """The acting seat's legal actions as a fresh int8 array (all zeros once the game is over)."""
        mask = np.zeros(self.config.num_actions, dtype=np.int8)
        for action in actions_in(self.legal_bits()):  # a handful: faster than unpacking bits
            mask[action] = 1
        return mask

    def legal_actions(self) -> list[int]:
        return actions_in(self.legal_bits())

    def legal_bits(self) -> int:
        """The legal actions as an int bitset (bit a set <=> action a legal): the compiled
        `legal_into` (R6–R9), written by every step, read once per state. The cheapest form of
        the legal set: the mask and the list are made from it, and fast-path policies take it
        as is (`cf_env.agents.policies`). Zero once the game is over and between rounds."""
        legal = self._legal
        if legal is None:
            legal = 0 if self.between_rounds else int.from_bytes(self._legal_bytes, "little")
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

    # ------------------------------------------------------------------ play
    def step(self, action: int) -> list[list[int]]:
        """Apply one action of the acting seat. Returns the points of every round that ended."""
        if type(action) is int and action >= 0 and self.legal_bits() >> action & 1:
            finished = self._apply(action)  # the usual case: a legal plain int, nothing to check
        else:
            finished = self._apply(self._check_action(action))  # raises, naming the problem
        return self._settle(finished) if self.skip_forced else finished

    def _apply(self, action: int) -> list[list[int]]:
        """Apply a legal action: the compiled rules (R8–R11), then the layout (in the phase of
        play the move was made in), then the round's end."""
        code = kernel.one_game(self.game.buffer, self.game.table_buffer, kernel.OP_STEP, action)
        self.history.append((code >> 10, code >> 4 & 63, action))
        self._legal = None
        return [self._end_round()] if code & 1 else []

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
        ints, current = self._ints, kernel.GameBuffer.SCALAR_AT["current"]
        while not finished and ints[current] != stop_seat:
            legal = self.legal_bits()
            if not legal:  # the game is over
                break
            if legal & (legal - 1):  # more than one bit: a real choice
                choose = choosers[ints[current]] if choosers is not None else None
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

    def _end_round(self) -> list[int]:
        """After the compiled R12 scoring: record the round's points, then the game is over
        (R13's winners), or the next round is dealt (R4), or with `auto_deal` off the engine
        stops between rounds (the finished table stays laid out)."""
        points = self._st.round_points[0].tolist()  # each seat's pips left in hand
        for seat, value in enumerate(points):
            self.scores[seat].append(value)
        if self.game_over:
            self.winners = np.flatnonzero(self._st.winners[0]).tolist()
        elif self.auto_deal:
            self._deal_from(None, kernel.OP_DEAL_NEXT)
        else:
            self.between_rounds = True
        return points

    # ------------------------------------------------------------------ queries
    def hand(self, seat: int) -> list[int]:
        return np.flatnonzero(self.hands[seat]).tolist()

    def hand_bits(self, seat: int) -> int:
        """Seat `seat`'s hand as an int bitset over action ids (each tile's `tiles.tile_bits`):
        the set legality ANDs with the playable ends. Rollout policies on the fast path read it
        instead of the numpy board."""
        return int.from_bytes(self._st.hands[0, seat].tobytes(), "little")

    def totals(self) -> list[int]:
        return list(map(sum, self.scores))

    def write_observation(self, seat: int, out: np.ndarray) -> None:
        """Seat `seat`'s observation of a game in play into `out` (a C-contiguous writable
        float32 array of shape (observation size,)), written by the compiled core
        (`kernel.one_observe`): bit for bit `Encoder.encode(engine, seat)`. `Encoder.observe`
        calls it. Raises `ValueError` naming the argument, `out` untouched, for a seat out of
        range or any other `out` (the compiled code checks nothing)."""
        if not (type(seat) is int and 0 <= seat < self._num_players and type(out) is np.ndarray
                and out.shape == self._row_shape and out.dtype == _FLOAT32 and out.flags.carray):
            seat = checks.index(seat, "seat", self._num_players)
            out = checks.array(out, "out", self._row_shape, np.float32, writable=True)
        kernel.one_observe(self.game.buffer, self.game.table_buffer, seat, out)

    # Jupyter shows an engine as its table (`_repr_svg_`). The SVG writer is in `cf_env.viz`,
    # a higher layer, so the package facade (`cf_env/__init__.py`) registers it here.
    svg_renderer: Callable[[Engine], str] | None = None

    def _repr_svg_(self) -> str | None:
        return None if Engine.svg_renderer is None else Engine.svg_renderer(self)

    # ------------------------------------------------------------------ copies
    def clone(self) -> Engine:
        """An independent copy (cheaper than snapshot/restore), e.g. for tree search."""
        other = Engine.__new__(Engine)
        for name in (n for n in self.__slots__ if n not in self._BOUND and hasattr(self, n)):
            setattr(other, name, getattr(self, name))
        other._bind(kernel.GameBuffer(self.config, copy_of=self.game))
        other._legal = self._legal
        other._copy_lists(self)
        other.rng = copy.deepcopy(self.rng)
        return other

    def copy_from(self, other: Engine, rng: bool = True) -> None:
        """Become a copy of `other` in place (same config), keeping this engine's buffers and
        views: search resets one engine to the same root position thousands of times per
        decision. The result equals `other.clone()` field by field (tests/agents/test_ismcts.py
        checks every slot). The RNG only deals later rounds: `rng=False` leaves this engine's
        own (a search that stops at the round's end never uses it)."""
        if other.config is not self.config and other.config != self.config:
            raise ValueError("copy_from needs an engine with the same config (its boards' sizes)")
        self.game.buffer[:] = other.game.buffer
        self._copy_lists(other)
        if rng:
            self.rng.bit_generator.state = other.rng.bit_generator.state
        for name in ("auto_deal", "between_rounds", "deal_order", "seed", "skip_forced",
                     "_legal", "_synthetic_arms"):
            setattr(self, name, getattr(other, name))

    def _copy_lists(self, other: Engine) -> None:
        self.scores = [s[:] for s in other.scores]
        self.winners = other.winners[:]
        self.history = other.history[:]

    def __copy__(self) -> Engine:
        # A shallow copy would share the RNG (the copy's deals would move the original's) and
        # the game buffer: a copy of a game is an independent game.
        return self.clone()

    _BOUND = ("game", "_st", "_bytes", "_ints", "_legal_bytes", "_held_bytes", "hands", "on_table",
              "played_by", "voids")

    def __getstate__(self) -> dict:
        # The game buffer travels as an array; the views are rebuilt over the copy (copy,
        # deepcopy, pickle).
        state = {name: getattr(self, name) for name in self.__slots__
                 if name not in self._BOUND and hasattr(self, name)}
        state["buffer"] = self.game.buffer.copy()
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        buffer = state.pop("buffer")
        for name, value in state.items():
            setattr(self, name, value)
        self._num_players = self.config.num_players  # (pickles older than the field)
        self._bind(kernel.GameBuffer(self.config))
        self.game.buffer[:] = buffer
        self._legal = state.get("_legal")
        if "scores" in state:
            self._copy_lists(self)

    # ------------------------------------------------------------------ search: determinizations
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
        rows = redeal_rows(self, hands, boneyard)
        count = self._num_tiles
        board = self._held_bytes
        for seat, row in enumerate(rows):
            board[seat * count : (seat + 1) * count] = row
        self._st.boneyard[0, self._st.bone_pos[0] :] = boneyard
        kernel.one_game(self.game.buffer, self.game.table_buffer, kernel.OP_SYNC, 0)
        self._legal = None

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
        p = snapshot_format.read(self.config, self.tables, snapshot)
        # The position goes into a new buffer, bound only once it is complete: a refused
        # restore leaves the engine as it was, and views taken before a restore keep the old
        # position.
        game = kernel.GameBuffer(self.config)
        try:
            kernel.write_position(game.state, 0, p)
            kernel.one_game(game.buffer, game.table_buffer, kernel.OP_SYNC, 0)
        except (OverflowError, ValueError, IndexError) as err:  # read() bounds every value
            raise SnapshotError(f"invalid snapshot: {err}") from err
        self._bind(game)
        self.scores, self.winners, self.history = p.scores, p.winners, p.history
        self.between_rounds, self.deal_order, self.seed = p.between_rounds, p.deal_order, p.seed
        if p.rng is not None:  # a snapshot without an RNG state deals on from this engine's
            self.rng = p.rng
        self._synthetic_arms = p.synthetic_arms
        self._settle([])


def _scalar(at: int) -> property:
    return property(lambda self: self._ints[at])


for _name in _SCALARS:
    setattr(Engine, _name, _scalar(kernel.GameBuffer.SCALAR_AT[_name]))
_GAME_OVER_BYTE = 4 * kernel.GameBuffer.SCALAR_AT["game_over"]


def _readonly(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
