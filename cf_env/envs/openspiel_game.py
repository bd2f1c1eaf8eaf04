"""Chicken Foot as an OpenSpiel game, `python_chicken_foot`: the engine behind `pyspiel`'s API.

    import pyspiel
    import cf_env.envs.openspiel_game  # registers "python_chicken_foot" with pyspiel (once)
    game = pyspiel.load_game("python_chicken_foot", {"num_players": 2, "max_pips": 6})

Needs the optional extra `openspiel` (`pip install -e '.[openspiel]'`; the `dev` extra has it).
Importing this module registers the game; `load_game(config)` loads one from a
`ChickenFootConfig`. The module only translates: every rule is the engine's (`cf_env.core.engine`),
every observation the encoder's (`cf_env.core.observation`).

**Parameters.** The rule fields of `ChickenFootConfig`, with its defaults and its validation
(an invalid value raises the config's `ValueError`, an unknown name suggests the nearest one):
max_pips, num_players, hand_size, num_rounds, spinner_arms, toes, draw_until_playable,
must_play_drawn, double_blank_value, start_search, target_score, tie_break. OpenSpiel has no
None, so 0 stands for None (hand_size and num_rounds: the default; target_score: none). The
driver options (`DriverOptions`) are not game parameters (`pyspiel.load_game` calls them unknown;
`config_from_params` says why): `reward_mode` (OpenSpiel returns are R13's result, below),
`illegal_action` (an illegal action always raises, the state unchanged) and `skip_forced`
(every decision is a node, so the tree never depends on hidden tiles; OpenSpiel's bots answer
one-action nodes at once).

**Actions** are our action ids (`cf_env.core.actions`): 2t / 2t+1 play tile t, 2T draws, 2T+1
passes; `legal_actions()` is the engine's legal set. **Chance outcomes** are tile ids 0..T-1.

**Chance nodes** (uniform over the tiles not yet dealt or drawn): the deal of every round is one
chance node per tile (R3, R4: seat 0's hand first, `hand_size` tiles per seat), followed by one
per tile drawn while the players search for the start double (R5), and every draw is one chance
node per tile drawn (R8; with `draw_until_playable` one DRAW makes as many as it draws). The
k-th chance outcome of a round is the k-th tile of the round's shuffle: the engine deals the
round from the outcomes (`Engine.deal_round`) and draws them (`Engine.set_next_draws`), so a
deal from `cf_env.env()` replays here by answering the k-th chance node of a round with
`env.unwrapped.engine.deal_order[k]`. Whether one more tile is needed (R5's search, a
`draw_until_playable` draw) is the engine's answer too: the deal, or a copy of the draw, is
applied and the tiles it took are counted. The engine's own RNG (seed 0) only makes a
placeholder deal that the chance outcomes replace.

**Returns** (terminal only; rewards are 0 before): R13's result over the whole game (all
`num_rounds` rounds, or rounds until a total passes `target_score`), zero-sum: each of the k
winners gets n/(n-1) * (1/k - 1/n) and each other player -1/(n-1). Two players: +1 / -1; four:
a sole winner +1, the others -1/3; a shared win splits it; all tied: 0. Points decide only
through R13 (lowest total, then the tie-breaks of `tie_break`).

**Observer.** The default observation (`observation_tensor`, `make_py_observer()`) is our
observation vector: for player p at a decision node or a terminal, exactly what `cf_env.env()`
gives p there (`cf_env.core.observation.Encoder`), its pieces named in `dict` as in
`observation_layout`. At a chance node of a draw it is the state before the draw; at a chance
node of a deal (no round on the table yet) all zeros. `observation_string` lists the vector's
non-zero pieces. The perfect-recall observer (`information_state_string`) is a string:

    p<viewer> r0 <events> = <points>; r1 <events> = <points>; ... r<current> <events>

(`end` in place of the current round once the game is over) with, per event, `<seat>+<tile>`
for a chance outcome that seat received (`?` for a tile hidden from the viewer), `start <seat>
<value>` when the start double is placed, and `<seat>:<action id>` for a decision. A finished
round is public: at its end every tile it dealt or drew is shown (R12 counts the hands face up)
with each seat's points (R12) after `=`. Nothing
hidden in a finished round can change a later return (R4 shuffles every tile again and the
points are public), and it keeps resampling to the current round. There is no
information-state tensor.

**resample_from_infostate(p, sampler)** returns a state p cannot tell from this one: the
finished rounds as they were (public), p's own tiles where they were, and the current round's
other chance outcomes drawn at random (from `sampler`, e.g. `pyspiel.UniformProbabilitySampler`)
so that every decision of the round stays legal: a tile an opponent placed was dealt to or drawn
by it earlier, an opponent that drew or passed held no tile carrying a playable value then (R8),
a tile placed right after a draw is the drawn one, the start double is where it was seen (R5).
Each candidate round is replayed through the engine from its start and kept only if every
decision is legal and every public event (receivers, start, round still running) is the same,
so only consistent deals come back. Only p's information is read: two states with the same
information state give the same sample for the same sampler draws. The distribution is an
approximation of the posterior (constrained tiles are placed first, uniformly among the slots
they allow), not the exact one.

**Serialization** is OpenSpiel's default for Python games (the history and a pickle of the
state); `clone()` copies the engine with `Engine.clone`. OpenSpiel's own readers
(`pyspiel.deserialize_game_and_state`, `game.deserialize_state`) unpickle that `__dict__=` part
in C++, so a crafted string runs code there. **`load_state(text)`** reads what
`pyspiel.serialize_game_and_state` writes without unpickling anything: it checks the text (at
most `MAX_STATE_TEXT` characters, the OpenSpiel sections, this game's name and parameters),
never decodes `__dict__=`, and rebuilds the state by replaying the `history=` line from the
initial state, every entry checked (its player the state's, its action or chance outcome legal
there, at most `max_history_length` entries). Errors are `StateStringError` (a `ValueError`).
"""

from __future__ import annotations

import base64
import difflib
import functools
import pickle
import re
from collections.abc import Mapping

import numpy as np
import pyspiel

from cf_env.core.actions import IllegalActionError, describe
from cf_env.core.config import RULE_FIELDS, SUPPORTED_SETS, ChickenFootConfig, max_players
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from cf_env.core.tiles import tile_tables
from cf_env.viz.render import render_text

GAME_NAME = "python_chicken_foot"

# The game's parameters are the rules: `RULE_FIELDS`, ChickenFootConfig's fields in its order.
# The driver options (`DriverOptions`) drive cf_env's envs, not the game; refused as parameters.
DRIVER_FIELDS = {
    "reward_mode": "OpenSpiel returns are R13's game result (cf_env.envs.openspiel_game)",
    "illegal_action": "an illegal action always raises and leaves the state unchanged",
    "skip_forced": "every decision is a node, one-action ones included",
}
# OpenSpiel parameters cannot be None: 0 stands for the config's None in these fields.
NONE_AS_ZERO = ("hand_size", "num_rounds", "target_score")

_DEFAULTS = ChickenFootConfig()
DEFAULT_PARAMS = {name: 0 if name in NONE_AS_ZERO else getattr(_DEFAULTS, name) for name in RULE_FIELDS}

_CHANCE, _START = -1, -2  # event kinds besides decisions (whose first entry is the seat)
RESAMPLE_TRIES = 500

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Chicken Foot dominoes (cf_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=max(max_players(m) for m in SUPPORTED_SETS),
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMS,
)


# ---------------------------------------------------------------------- parameters
def config_from_params(params: Mapping[str, object] | None) -> ChickenFootConfig:
    """The `ChickenFootConfig` that OpenSpiel game parameters describe (0 = None, see above).
    Raises `ValueError` naming the bad parameter and what is valid."""
    params = dict(params or {})
    for name, why in DRIVER_FIELDS.items():
        if name in params:
            raise ValueError(
                f"{name} is a cf_env env option, not a parameter of {GAME_NAME}: {why}. "
                f"Parameters: {', '.join(RULE_FIELDS)}"
            )
    unknown = sorted(set(params) - set(RULE_FIELDS), key=str)
    if unknown:
        hints = [
            f"{name!r} -> {close[0]!r}"
            for name in map(str, unknown)
            if (close := difflib.get_close_matches(name, RULE_FIELDS, n=1))
        ]
        raise ValueError(
            f"unknown parameter(s) {unknown} of {GAME_NAME}; parameters: {', '.join(RULE_FIELDS)}"
            + (f"; did you mean {', '.join(hints)}?" if hints else "")
        )
    fields = {}
    for name, value in params.items():
        if name in NONE_AS_ZERO and value == 0 and not isinstance(value, bool):
            value = None
        fields[name] = value
    return ChickenFootConfig.from_dict(fields)


def game_parameters(config: ChickenFootConfig) -> dict[str, object]:
    """The OpenSpiel parameters of `config` (the rules: `RULE_FIELDS`, None as 0)."""
    return {name: (0 if getattr(config, name) is None else getattr(config, name)) for name in RULE_FIELDS}


def load_game(config: ChickenFootConfig | None = None) -> pyspiel.Game:
    """`pyspiel.load_game(GAME_NAME, ...)` for `config` (default rules when None)."""
    return pyspiel.load_game(GAME_NAME, game_parameters(config or ChickenFootConfig()))


def max_game_length(cfg: ChickenFootConfig) -> int:
    """An upper bound on the decisions of a game. Per round: at most T-1 placements, one DRAW
    and one PASS per tile the boneyard holds after the deal (R8), and, once the boneyard is
    empty, at most n-1 passes before each placement (R11 ends the round when nobody can place).
    Rounds: `num_rounds`, or with `target_score` at most n * target + 1 (each round adds a point
    to some total, except a 2-player round whose only tile left is a 0-point double-blank)."""
    n, count = cfg.num_players, cfg.num_tiles
    per_round = (count - 1) + 2 * (count - n * cfg.hand_size) + (n - 1) * count
    rounds = cfg.num_rounds if cfg.target_score is None else n * cfg.target_score + 1
    return per_round * rounds


def r13_returns(num_players: int, winners: list[int]) -> list[float]:
    """R13's result as a zero-sum utility: each of the k winners n/(n-1) * (1/k - 1/n), each
    other player -1/(n-1)."""
    n, k = num_players, len(winners)
    scale = n / (n - 1)
    return [scale * ((1.0 / k if seat in winners else 0.0) - 1.0 / n) for seat in range(n)]


# ---------------------------------------------------------------------- the game
class _Shared:
    """What every state of one game shares, read-only: config, tables, encoder, names."""

    def __init__(self, config: ChickenFootConfig):
        self.config = config
        self.tables = tile_tables(config.max_pips)
        self.encoder = Encoder(config)
        self.dealt = config.num_players * config.hand_size
        self.names = [f"{lo}|{hi}" for lo, hi in self.tables.pairs]
        # Each tile's two values as a bitmask (bit v: the tile carries value v).
        self.value_mask = [(1 << lo) | (1 << hi) for lo, hi in self.tables.pairs]
        self.prototype = Engine(config, seed=0)  # never changed: states start from copies

    def __reduce__(self):  # pickled (serialization) by config, rebuilt from the cache
        return (_shared_for, (self.config,))


@functools.lru_cache(maxsize=32)
def _shared_for(config: ChickenFootConfig) -> _Shared:
    return _Shared(config)


class ChickenFootGame(pyspiel.Game):
    """The pyspiel game; `config` is its `ChickenFootConfig`."""

    def __init__(self, params: Mapping[str, object] | None = None):
        params = dict(params or {})
        config = config_from_params(params)
        n = config.num_players
        info = pyspiel.GameInfo(
            num_distinct_actions=config.num_actions,
            max_chance_outcomes=config.num_tiles,
            num_players=n,
            min_utility=-1.0 / (n - 1),
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=max_game_length(config),
        )
        super().__init__(_GAME_TYPE, info, {**DEFAULT_PARAMS, **params})
        self.config = config
        self.shared = _shared_for(config)

    def new_initial_state(self) -> ChickenFootState:
        return ChickenFootState(self)

    def make_py_observer(self, iig_obs_type=None, params=None) -> ChickenFootObserver:
        return ChickenFootObserver(self.shared, iig_obs_type, params)


class ChickenFootState(pyspiel.State):
    """A state: the engine and the current round's events (`_Core`), behind OpenSpiel's API."""

    def __init__(self, game: ChickenFootGame):
        super().__init__(game)
        self._core = _Core.start(game.shared)

    # OpenSpiel's State API.
    def current_player(self) -> int:
        return self._core.current_player()

    def _legal_actions(self, player: int) -> list[int]:
        return self._core.engine.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        pool = self._core.chance_pool()
        p = 1.0 / len(pool)
        return [(tile, p) for tile in pool]

    def _apply_action(self, action: int) -> None:
        if self._core.current_player() == pyspiel.PlayerId.CHANCE:
            self._core.apply_chance(action)
        else:
            self._core.apply_decision(action)

    def _action_to_string(self, player: int, action: int) -> str:
        core = self._core
        if player == pyspiel.PlayerId.CHANCE:
            if not 0 <= action < core.shared.config.num_tiles:
                return f"chance outcome {action} (not a tile id)"
            return f"chance: tile {core.shared.names[action]}"
        return f"player_{player} {describe(core.shared.tables, action)}"

    def is_terminal(self) -> bool:
        return self._core.terminal()

    def returns(self) -> list[float]:
        core = self._core
        if not core.terminal():
            return [0.0] * core.shared.config.num_players
        return r13_returns(core.shared.config.num_players, core.engine.winners)

    def resample_from_infostate(self, player_id: int, probability_sampler) -> ChickenFootState:
        """A state with the same information state for `player_id` (see the module docstring);
        `probability_sampler()` gives the uniform numbers (e.g. a
        `pyspiel.UniformProbabilitySampler`)."""
        n = self._core.shared.config.num_players
        if isinstance(player_id, bool) or not isinstance(player_id, (int, np.integer)) or not 0 <= player_id < n:
            raise ValueError(
                f"resample_from_infostate: player_id must be a seat 0..{n - 1}; got {player_id!r}"
            )
        if not callable(probability_sampler):
            raise ValueError(
                "resample_from_infostate: probability_sampler must be callable, returning a "
                f"number in [0, 1); got {type(probability_sampler).__name__}"
            )
        draws = [_probability(probability_sampler()) for _ in range(2)]
        rng = np.random.default_rng([int(u * 2**32) for u in draws])
        core = self._core.resample(int(player_id), rng)
        # The new state's history is this one's with the current round's chance outcomes
        # replaced. A clone would carry this history, true outcomes and all; OpenSpiel builds a
        # Python state with a given history only by deserializing one (its own format: the
        # history, the move number, the pickled Python attributes).
        history = self.full_history()
        current = len(history) - sum(1 for e in core.events if e[0] != _START)
        tiles = iter([e[1] for e in core.events if e[0] == _CHANCE])
        pairs = [(h.player, h.action) for h in history[:current]] + [
            (h.player, next(tiles) if h.player == pyspiel.PlayerId.CHANCE else h.action)
            for h in history[current:]
        ]
        text = (
            "history=" + ",".join(f"{p}:{a}" for p, a in pairs)
            + f"\nmove_number={self.move_number()}\n__dict__="
            + base64.b64encode(pickle.dumps({"_core": core})).decode("ascii")
        )
        return self.get_game().deserialize_state(text)

    def __str__(self) -> str:
        return self._core.describe()


def _probability(value: object) -> float:
    """A probability sampler's draw as a float in [0, 1), checked before anything is computed
    from it (a str times 2**32 would build a 4 GiB string); ValueError naming what came back."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(
            "resample_from_infostate: probability_sampler() must return a real number in "
            f"[0, 1); got a {type(value).__name__}"
        )
    if not 0 <= value < 1:  # NaN and the infinities fail too; a huge int is compared exactly
        shown = repr(float(value)) if isinstance(value, (float, np.floating)) else "an int other than 0"
        raise ValueError(
            "resample_from_infostate: probability_sampler() must return a real number in [0, 1); "
            f"got {shown}"
        )
    return float(value)


class ChickenFootObserver:
    """OpenSpiel's Python observer protocol (`tensor`, `dict`, `set_from`, `string_from`) over
    our observation vector, or (perfect recall) the information-state string."""

    def __init__(self, shared: _Shared, iig_obs_type=None, params=None):
        if params:
            raise ValueError(f"{GAME_NAME} observers take no parameters; got {dict(params)}")
        kind = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        if kind.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER or not kind.public_info:
            raise ValueError(
                f"{GAME_NAME} observes one player's own view: private_info SINGLE_PLAYER with "
                f"public_info (the default observation, or perfect_recall for the information "
                f"state); got {kind}"
            )
        self._shared = shared
        self._perfect_recall = kind.perfect_recall
        if self._perfect_recall:
            self.tensor = None  # no information-state tensor: strings only
            self.dict = {}
        else:
            layout = shared.encoder.layout
            self.tensor = np.zeros(layout.size, np.float32)
            self.dict = layout.view(self.tensor)

    def set_from(self, state: ChickenFootState, player: int) -> None:
        if self.tensor is None:
            raise ValueError(f"{GAME_NAME} has no information-state tensor; use the string")
        self.tensor[:] = state._core.observation(player)

    def string_from(self, state: ChickenFootState, player: int) -> str:
        if self._perfect_recall:
            return state._core.information_state(player)
        return state._core.observation_string(player)


# ---------------------------------------------------------------------- state core
class _Core:
    """The state proper: the engine, the current round's events and the finished rounds' text.

    `events` lists the current round in order: `(-1, tile, receiver)` for a chance outcome,
    `(-2, start_seat, centre)` where the deal is complete and the start double placed, and
    `(seat, action, playable values, after_draw)` for a decision (values and whether the seat
    had just drawn are what resampling needs to know about voids, R8). `round_start` is the
    engine before the round's deal (never changed; resampling replays the round from it)."""

    __slots__ = ("shared", "engine", "round_start", "events", "dealing", "drawing", "prefix", "plan")

    @classmethod
    def start(cls, shared: _Shared) -> _Core:
        core = cls.__new__(cls)
        core.shared = shared
        core.round_start = shared.prototype
        core.engine = shared.prototype.clone()
        core.events = []
        core.dealing = True  # the first round's deal is to come
        core.drawing = None  # tiles chosen so far for a DRAW whose draws are not all chosen
        core.prefix = ""  # the finished rounds, public
        core.plan = None  # resampling's constraints, kept for repeated calls (see `resample`)
        return core

    def __deepcopy__(self, memo) -> _Core:  # OpenSpiel's clone() deep-copies the state's dict
        other = _Core.__new__(_Core)
        other.shared = self.shared
        other.round_start = self.round_start
        other.engine = self.engine.clone()
        other.events = list(self.events)
        other.dealing = self.dealing
        other.drawing = None if self.drawing is None else list(self.drawing)
        other.prefix = self.prefix
        other.plan = None
        return other

    def __getstate__(self) -> dict:
        return {name: None if name == "plan" else getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    # ------------------------------------------------------------------ node kind
    def terminal(self) -> bool:
        return self.engine.game_over and not self.dealing and self.drawing is None

    def current_player(self) -> int:
        if self.dealing or self.drawing is not None:
            return pyspiel.PlayerId.CHANCE
        if self.engine.game_over:
            return pyspiel.PlayerId.TERMINAL
        return self.engine.current

    def round_tiles(self) -> list[int]:
        return [e[1] for e in self.events if e[0] == _CHANCE]

    def chance_pool(self) -> list[int]:
        """The tiles a chance node may give: those not dealt or drawn yet this round."""
        if self.dealing:
            taken = set(self.round_tiles())
            return [t for t in range(self.shared.config.num_tiles) if t not in taken]
        if self.drawing is None:
            raise ValueError("not a chance node")
        chosen = set(self.drawing)
        return sorted(t for t in self.engine.boneyard if t not in chosen)

    # ------------------------------------------------------------------ transitions
    def apply_chance(self, tile: int) -> None:
        if self.current_player() != pyspiel.PlayerId.CHANCE:
            raise ValueError("apply_chance: not a chance node")
        if isinstance(tile, bool) or not isinstance(tile, (int, np.integer)) or tile not in self.chance_pool():
            raise ValueError(
                f"chance outcome {tile!r} is not a tile left to deal or draw; legal: {self.chance_pool()}"
            )
        tile = int(tile)
        if self.dealing:
            self._deal([tile])
        else:
            self._draw(tile)

    def _deal(self, tiles: list[int]) -> int:
        """Deal `tiles`, the round's next chance outcomes (one at a time in play; a replay gives
        a whole deal at once). Returns how many tiles R5's search has taken beyond them: 0 when
        they complete the deal, more when it needs another outcome, and -1 when the deal was
        already complete before the last of them (only a replay can give too many)."""
        shared = self.shared
        size = shared.config.hand_size
        order = self.round_tiles() + tiles
        first = len(order) - len(tiles)
        self.events += [(_CHANCE, t, k // size) for k, t in enumerate(tiles, first) if k < shared.dealt]
        if len(order) < shared.dealt:  # the hands are still being dealt (R3)
            return 1
        # The hands are dealt: the engine deals the round from the outcomes so far, the rest in
        # a fixed order, and says how many tiles R5's search takes from the boneyard.
        taken = set(order)
        engine = self.engine
        engine.deal_round(order + [t for t in range(shared.config.num_tiles) if t not in taken])
        self.events += [
            (_CHANCE, t, _holder(engine, t)) for k, t in enumerate(tiles, first) if k >= shared.dealt
        ]
        beyond = shared.config.num_tiles - len(engine.boneyard) - len(order)
        if beyond == 0:  # every tile the search took was chosen
            self.dealing = False
            self.events.append((_START, engine.start_seat, engine.center))
        return max(beyond, -1)

    def _draw(self, tile: int) -> None:
        self.drawing.append(tile)
        self.events.append((_CHANCE, tile, self.engine.current))
        if self.shared.config.draw_until_playable:
            # How many tiles one DRAW takes is the engine's to say: a copy draws the chosen
            # tiles and whatever it wants after them, and the tiles it took are counted.
            probe = self.engine.clone()
            probe.set_next_draws(self.drawing)
            before = len(probe.boneyard)
            finished = probe.step(self.shared.config.draw_action)
            # A draw ends the round only by emptying the boneyard (R11: nobody goes out by
            # drawing), so a finished round took every tile.
            if (before if finished else before - len(probe.boneyard)) > len(self.drawing):
                return  # the draw goes on: another chance node
            self.engine = probe
        else:  # R8: one DRAW, one tile
            self.engine.set_next_draws(self.drawing)
            finished = self.engine.step(self.shared.config.draw_action)
        self.drawing = None
        if finished:
            self._round_over(finished[-1])

    def apply_decision(self, action: int) -> None:
        engine = self.engine
        if self.current_player() < 0:
            raise ValueError(f"apply_decision: no player acts at this node (action {action!r})")
        legal = engine.legal_bits()
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or action < 0 or not legal >> int(action) & 1:
            engine.step(action)  # raises IllegalActionError naming the problem; nothing changes
            raise IllegalActionError(f"action {action!r} is not legal")  # (not reached)
        action = int(action)
        self.events.append((engine.current, action, tuple(engine.playable_values()), engine.drawn_tile >= 0))
        if action == self.shared.config.draw_action:
            self.drawing = []  # R8: the tiles drawn are chance outcomes
            return
        finished = engine.step(action)
        if finished:
            self._round_over(finished[-1])

    def _round_over(self, points: list[int]) -> None:
        """R12/R13: the round is scored and becomes public; the next one is to be dealt."""
        index = len(self.engine.scores[0]) - 1
        self.prefix += self.round_text(index, viewer=None) + " = " + " ".join(map(str, points)) + "; "
        self.events = []
        if not self.engine.game_over:
            self.dealing = True
            self.round_start = self.engine.clone()  # before the deal: what resampling replays

    # ------------------------------------------------------------------ views
    def round_text(self, index: int, viewer: int | None) -> str:
        names, parts = self.shared.names, [f"r{index}"]
        for event in self.events:
            if event[0] == _CHANCE:
                _, tile, receiver = event
                parts.append(f"{receiver}+{names[tile] if viewer is None or receiver == viewer else '?'}")
            elif event[0] == _START:
                parts.append(f"start {event[1]} {event[2]}")
            else:
                parts.append(f"{event[0]}:{event[1]}")
        return " ".join(parts)

    def information_state(self, player: int) -> str:
        text = f"p{player} {self.prefix}"
        if self.terminal():
            return text + "end"
        return text + self.round_text(len(self.engine.scores[0]), viewer=player)

    def observation(self, player: int) -> np.ndarray:
        if self.dealing:  # no round on the table yet
            return np.zeros(self.shared.encoder.layout.size, np.float32)
        return self.shared.encoder.observe(self.engine, player)

    def observation_string(self, player: int) -> str:
        vector = self.observation(player)
        shared = self.shared
        count = shared.config.num_tiles
        parts = [f"p{player}"]
        for piece in shared.encoder.layout.pieces:
            values = vector[shared.encoder.layout.slices[piece.name]]
            nonzero = np.flatnonzero(values)
            if not nonzero.size:
                continue
            if piece.size % count == 0 and piece.high == 1:  # tile boards, one row per seat
                items = [
                    (f"{i // count}:" if piece.size > count else "") + shared.names[i % count]
                    for i in nonzero.tolist()
                ]
            else:
                items = [f"{i}={values[i]:g}" for i in nonzero.tolist()]
            parts.append(f"{piece.name}: {' '.join(items)}")
        return "; ".join(parts)

    def describe(self) -> str:
        names = self.shared.names
        chosen = " ".join(f"{e[2]}+{names[e[1]]}" for e in self.events if e[0] == _CHANCE)
        if self.dealing:
            scores = " ".join(map(str, self.engine.totals()))
            return f"dealing round {len(self.engine.scores[0])}: {chosen}\n  totals: {scores}"
        hands = "\n".join(
            f"  player_{s} hand: {' '.join(names[t] for t in self.engine.hand(s))}"
            for s in range(self.shared.config.num_players)
        )
        drawing = "" if self.drawing is None else f"\n  drawing: {' '.join(names[t] for t in self.drawing)}"
        return f"{render_text(self.engine)}\n{hands}\n  chance this round: {chosen}{drawing}"

    # ------------------------------------------------------------------ resampling
    def resample(self, viewer: int, rng: np.random.Generator) -> _Core:
        """A core with the same information state for `viewer` (see the module docstring)."""
        if self.terminal():  # everything is public at the end
            return self.__deepcopy__({})
        # ISMCTS resamples the same state many times: the plan is kept while the round is.
        cached = self.plan
        if cached is not None and cached[0] is self.events and cached[1:3] == (len(self.events), viewer):
            plan = cached[3]
        else:
            plan = _ResamplePlan(self, viewer)
            self.plan = (self.events, len(self.events), viewer, plan)
        for _ in range(RESAMPLE_TRIES):
            tiles = plan.sample(rng)
            if tiles is not None:
                core = self.replay(tiles)
                if core is not None:
                    return core
        raise RuntimeError(
            f"resample_from_infostate: no consistent deal of round {len(self.engine.scores[0])} "
            f"found for player {viewer} in {RESAMPLE_TRIES} tries"
        )

    def replay(self, tiles: list[int]) -> _Core | None:
        """This round replayed from its start with `tiles` as its chance outcomes: the new core
        if every decision is legal and every public event the same, else None."""
        core = _Core.__new__(_Core)
        core.shared, core.round_start, core.prefix = self.shared, self.round_start, self.prefix
        core.engine = self.round_start.clone()
        core.events, core.dealing, core.drawing, core.plan = [], True, None, None
        start = next((k for k, e in enumerate(self.events) if e[0] == _START), None)
        outcomes = iter(tiles)
        try:
            if start is not None:  # the whole deal at once: one deal_round, not one per tile
                dealt = [next(outcomes) for _ in range(start)]
                if len(set(dealt)) != start or core._deal(dealt) != 0:
                    return None
            for event in self.events[0 if start is None else start + 1 :]:
                if event[0] == _CHANCE:
                    if core.current_player() != pyspiel.PlayerId.CHANCE:
                        return None
                    core.apply_chance(next(outcomes))
                elif core.current_player() != event[0]:
                    return None
                else:
                    core.apply_decision(event[1])
                if core.prefix != self.prefix:  # the round ended early (R11)
                    return None
        except (IllegalActionError, ValueError):
            return None
        public = [_public(e) for e in core.events]
        if public != [_public(e) for e in self.events] or (core.drawing is None) != (self.drawing is None):
            return None
        return core


def _public(event: tuple) -> tuple:
    """An event as everybody sees it: a chance outcome without its tile."""
    return (_CHANCE, event[2]) if event[0] == _CHANCE else event


def _holder(engine: Engine, tile: int) -> int:
    """The seat holding `tile`, or the start seat when it is the start double on the table."""
    for seat in range(engine.config.num_players):
        if engine.hands[seat, tile]:
            return seat
    return engine.start_seat


class _ResamplePlan:
    """What `viewer` knows about the current round, as constraints on where each hidden tile can
    have come from; `sample` draws candidate chance outcomes (checked by `_Core.replay`).

    Slots are the round's chance outcomes that another seat received (in event order); a tile
    not in a slot stays in the boneyard. Known to the viewer: its own outcomes, every placement
    (seat, tile, when), the start double, and the playable values at each draw and pass."""

    def __init__(self, core: _Core, viewer: int):
        shared, cfg = core.shared, core.shared.config
        self.mask = shared.value_mask
        events = core.events
        count = cfg.num_tiles
        self.tiles = [e[1] if e[0] == _CHANCE and e[2] == viewer else -1 for e in events]
        known = {t for t in self.tiles if t >= 0}
        self.pool = [t for t in range(count) if t not in known]
        # Chance slots hidden from the viewer: (event index, receiver).
        self.slots = [(i, e[2]) for i, e in enumerate(events) if e[0] == _CHANCE and e[2] != viewer]
        chance_index = [i for i, e in enumerate(events) if e[0] == _CHANCE]
        self.chance_index = chance_index
        deal_slots = set(chance_index[: shared.dealt])

        def values_mask(values) -> int:
            return sum(1 << v for v in values)

        # Decisions: placements, voids (R8: a DRAW, or a PASS with no draw before it, shows the
        # seat held no tile carrying a playable value) and the constraints on drawn tiles.
        placed: dict[int, tuple[int, int]] = {}  # tile -> (seat, event index)
        self.voids: dict[int, list[tuple[int, int]]] = {s: [] for s in range(cfg.num_players)}
        self.fixed: dict[int, int] = {}  # event index of a slot -> the tile it must hold
        self.slot_forbid: dict[int, int] = {}  # slot -> values its tile must not carry
        self.slot_need: dict[int, int] = {}  # slot -> values its tile must carry one of
        two_t = 2 * count
        for i, event in enumerate(events):
            if event[0] < 0:
                continue
            seat, action, values, after_draw = event
            if action < two_t:
                tile = action >> 1
                placed[tile] = (seat, i)
                if after_draw and seat != viewer:  # R8: only the drawn tile may follow a draw
                    self.fixed[self._last_draw(events, i, seat)] = tile
            elif action == cfg.draw_action or not after_draw:
                self.voids[seat].append((i, values_mask(values)))
            if action == cfg.draw_action and seat != viewer:
                self._draw_constraints(core, events, i, values_mask(values))
            if action == cfg.pass_action and after_draw and cfg.must_play_drawn and seat != viewer:
                # must_play_drawn: a drawn tile that fits cannot be passed on.
                slot = self._last_draw(events, i, seat)
                self.slot_forbid[slot] = self.slot_forbid.get(slot, 0) | values_mask(values)
        # The start double is public where it was seen: drawn in R5's search at its slot, or
        # from the start seat's deal. With "lower_double" no hand held a double above the
        # centre (R5 variant): those stay out of the deal.
        self.deal_forbidden: set[int] = set()
        start = next((e for e in events if e[0] == _START), None)
        if start is not None:
            double = int(shared.tables.double_id[start[2]])
            searched = [i for i in chance_index[shared.dealt :] if events[i][1] == double]
            if searched and events[searched[0]][2] != viewer:
                self.fixed[searched[0]] = double
            elif not searched and start[1] != viewer:
                placed[double] = (start[1], events.index(start))
            top = cfg.max_pips - core.engine.round
            self.deal_forbidden = {int(shared.tables.double_id[v]) for v in range(start[2] + 1, top + 1)}
        self.placed = {t: p for t, p in placed.items() if t not in known}
        self.deal_slots = deal_slots
        self._finish()
        self._tables()

    @staticmethod
    def _last_draw(events: list, index: int, seat: int) -> int:
        """The event index of the last tile `seat` drew before the decision at `index`."""
        for j in range(index - 1, -1, -1):
            if events[j][0] == _CHANCE and events[j][2] == seat:
                return j
        raise ValueError("a decision after a draw with no drawn tile before it")

    def _draw_constraints(self, core: _Core, events: list, index: int, values: int) -> None:
        """draw_until_playable: each tile of one DRAW but the last does not fit; the last fits
        unless the boneyard ran out (R8 variant)."""
        cfg = core.shared.config
        if not cfg.draw_until_playable:
            return
        group = []
        for j in range(index + 1, len(events)):
            if events[j][0] != _CHANCE:
                break
            group.append(j)
        complete = not (core.drawing is not None and group and group[-1] == len(events) - 1)
        taken = sum(1 for e in events[: group[-1] + 1] if e[0] == _CHANCE) if group else 0
        for j in group[:-1] if complete else group:
            self.slot_forbid[j] = self.slot_forbid.get(j, 0) | values
        if complete and group and taken < cfg.num_tiles:
            self.slot_need[group[-1]] = values

    def _finish(self) -> None:
        """Per slot, the values a tile kept to the end of the round must not carry: the slot's
        own constraint and every void its receiver showed after it."""
        self.kept_forbid = {}
        for slot, seat in self.slots:
            forbid = self.slot_forbid.get(slot, 0)
            for when, values in self.voids[seat]:
                if when > slot:
                    forbid |= values
            self.kept_forbid[slot] = forbid

    def _kept_candidates(self, slot: int, tiles: list[int]) -> list[int]:
        """The unplaced tiles of `tiles` that `allowed` admits at a free (not fixed) `slot`."""
        mask, forbid, need = self.mask, self.kept_forbid[slot], self.slot_need.get(slot)
        out = [t for t in tiles if not mask[t] & forbid and (need is None or mask[t] & need)]
        if slot in self.deal_slots and self.deal_forbidden:
            out = [t for t in out if t not in self.deal_forbidden]
        return out

    def allowed(self, tile: int, slot: int, seat: int) -> bool:
        """May `tile` be the chance outcome at event `slot`, received by `seat`?"""
        fixed = self.fixed.get(slot)
        if fixed is not None:
            return tile == fixed
        if slot in self.deal_slots and tile in self.deal_forbidden:
            return False
        mask = self.mask[tile]
        need = self.slot_need.get(slot)
        if need is not None and not mask & need:
            return False
        if tile not in self.placed:  # held from the slot on: every later void applies
            return not mask & self.kept_forbid[slot]
        owner, release = self.placed[tile]
        if owner != seat or slot >= release or mask & self.slot_forbid.get(slot, 0):
            return False
        return not any(slot < when < release and mask & values for when, values in self.voids[seat])

    def _tables(self) -> None:
        """What `sample` needs for every try: the free slots, each placed tile's possible slots
        and each free slot's possible unplaced tiles (in pool order)."""
        self.free_slots = [i for i, _ in self.slots if i not in self.fixed]
        fixed_tiles = set(self.fixed.values())
        self.options = {
            t: [i for i, s in self.slots if i not in self.fixed and self.allowed(t, i, s)]
            for t in self.placed
            if t not in fixed_tiles
        }
        unplaced = [t for t in self.pool if t not in self.placed and t not in fixed_tiles]
        self.candidates = {i: self._kept_candidates(i, unplaced) for i in self.free_slots}

    def sample(self, rng: np.random.Generator) -> list[int] | None:
        """Candidate chance outcomes for the whole round (event order), or None if the greedy
        fill ran into a dead end: placed tiles first (they must come from a slot), most
        constrained first, each to a random free slot it allows; then each remaining slot,
        fewest candidates first, a random tile it allows."""
        assigned = dict(self.fixed)
        for t in sorted(self.options, key=lambda t: (len(self.options[t]), rng.random())):
            open_ = [i for i in self.options[t] if i not in assigned]
            if not open_:
                return None
            assigned[open_[int(rng.integers(len(open_)))]] = t
        used = set(assigned.values())
        remaining = [i for i in self.free_slots if i not in assigned]
        for i in sorted(remaining, key=lambda slot: (len(self.candidates[slot]), rng.random())):
            choices = [t for t in self.candidates[i] if t not in used]
            if not choices:
                return None
            assigned[i] = choices[int(rng.integers(len(choices)))]
            used.add(assigned[i])
        return [self.tiles[i] if self.tiles[i] >= 0 else assigned[i] for i in self.chance_index]


# ---------------------------------------------------------------------- loading a state string
# The largest state strings of real games: about 0.3 MB for a default-length double-18 game and
# 8.5 MB for the longest variant measured (double-18, 9 players, to the top target_score: 928
# rounds, 339,000 history entries). Anything longer is refused before it is split or parsed.
MAX_STATE_TEXT = 16 * 2**20
_SERIAL_VERSION = "Version: 1"
_HEADERS = ("[Meta]", "[Game]", "[State]")  # OpenSpiel's sections, in this order
_GAME_STRING = re.compile(r"([A-Za-z0-9_]+)(?:\((.*)\))?")
_VALUE = {  # a parameter's written value, by the type of its default
    bool: re.compile(r"True|False"),
    int: re.compile(r"-?[0-9]{1,18}"),
    str: re.compile(r"[A-Za-z0-9_]{1,64}"),
}
_ENTRY = re.compile(r"(-1|0|[1-9][0-9]{0,8}):(0|[1-9][0-9]{0,8})")


class StateStringError(ValueError):
    """A state string `load_state` refuses; the message names the problem."""


def max_history_length(cfg: ChickenFootConfig) -> int:
    """An upper bound on a state's history: `max_game_length` decisions plus, in every round, at
    most one chance outcome per tile (each tile is dealt or drawn once a round)."""
    rounds = cfg.num_rounds if cfg.target_score is None else cfg.num_players * cfg.target_score + 1
    return max_game_length(cfg) + rounds * cfg.num_tiles


def load_state(text: str) -> tuple[ChickenFootGame, ChickenFootState]:
    """The game and state in `text`, a `pyspiel.serialize_game_and_state` string of this game,
    rebuilt from its game line and `history=` line alone: nothing is unpickled (the `__dict__=`
    line, which OpenSpiel's readers unpickle, is never decoded and may be left out).

    Checked, each failure a `StateStringError` naming it: a `str` of at most `MAX_STATE_TEXT`
    characters, all ASCII; OpenSpiel's sections `[Meta]` (`Version: 1`), `[Game]` (one game
    string of `python_chicken_foot` whose parameters are this game's, with their types and the
    config's validation) and `[State]` (`history=`, `move_number=`, optionally `__dict__=`); at
    most `max_history_length` history entries, each `<player>:<action>` whose player is the
    one to act (-1 at chance nodes) and whose action (chance outcome) is legal there; and
    `move_number` equal to the number of entries."""
    if not isinstance(text, str):
        raise StateStringError(f"load_state: a state string is a str; got {type(text).__name__}")
    if len(text) > MAX_STATE_TEXT:
        raise StateStringError(
            f"load_state: the state string has {len(text):,} characters; at most "
            f"{MAX_STATE_TEXT:,} are read (MAX_STATE_TEXT)"
        )
    if not text.isascii():
        raise StateStringError("load_state: a state string is ASCII text")
    sections = _sections(text)
    if sections["[Meta]"] != [_SERIAL_VERSION]:
        raise StateStringError(
            f"load_state: the [Meta] section must be {_SERIAL_VERSION!r}; "
            f"got {_shown(sections['[Meta]'])}"
        )
    if len(sections["[Game]"]) != 1:
        raise StateStringError(
            "load_state: the [Game] section must be one game string; "
            f"got {len(sections['[Game]'])} lines"
        )
    game = load_game(_game_config(sections["[Game]"][0]))
    history, move_number = _state_lines(sections["[State]"], max_history_length(game.config))
    if move_number != len(history):
        raise StateStringError(
            f"load_state: move_number={move_number} but the history has {len(history)} entries"
        )
    return game, _replay(game, history)


def _shown(lines: list[str]) -> str:
    """Lines of a state string for an error message, cut short."""
    text = "\n".join(lines)
    return repr(text if len(text) <= 60 else text[:60] + "...")


def _sections(text: str) -> dict[str, list[str]]:
    """The lines of each OpenSpiel section, as `DeserializeGameAndState` reads them: blank lines
    and lines starting with '#' skipped, the headers once each and in order."""
    sections: dict[str, list[str]] = {}
    current = None
    for number, line in enumerate(text.split("\n"), 1):
        if not line or line.startswith("#"):
            continue
        if line in _HEADERS:
            expected = _HEADERS[len(sections)] if len(sections) < len(_HEADERS) else None
            if line != expected:
                raise StateStringError(f"load_state: line {number}: {line} is out of place")
            current = sections[line] = []
        elif current is None:
            raise StateStringError(f"load_state: line {number} comes before the [Meta] section")
        else:
            current.append(line)
    missing = [header for header in _HEADERS if header not in sections]
    if missing:
        raise StateStringError(
            f"load_state: no {', '.join(missing)} section; is this a "
            f"pyspiel.serialize_game_and_state string?"
        )
    return sections


def _game_config(line: str) -> ChickenFootConfig:
    """The config a game string `python_chicken_foot(name=value,...)` gives (`DEFAULT_PARAMS`
    types: True/False, integers, words)."""
    match = _GAME_STRING.fullmatch(line)
    if match is None:
        raise StateStringError(
            f"load_state: the game string {_shown([line])} is not name(parameters)"
        )
    if match[1] != GAME_NAME:
        raise StateStringError(
            f"load_state: the game is {match[1]!r}; load_state reads only {GAME_NAME}"
        )
    params: dict[str, object] = {}
    for item in match[2].split(",") if match[2] else []:
        name, sep, value = item.partition("=")
        if not sep:
            raise StateStringError(f"load_state: game parameter {_shown([item])} is not name=value")
        if name in params:
            raise StateStringError(f"load_state: game parameter {name!r} given twice")
        kind = type(DEFAULT_PARAMS[name]) if name in DEFAULT_PARAMS else str
        if not _VALUE[kind].fullmatch(value):
            article = "an" if kind is int else "a"
            raise StateStringError(
                f"load_state: game parameter {name}={_shown([value])} is not {article} {kind.__name__}"
            )
        params[name] = value == "True" if kind is bool else int(value) if kind is int else value
    try:
        return config_from_params(params)
    except ValueError as err:
        raise StateStringError(f"load_state: bad game parameters: {err}") from err


def _state_lines(lines: list[str], limit: int) -> tuple[list[tuple[int, int]], int]:
    """(history as (player, action) pairs, move_number) from the [State] section's lines
    (`history=`, `move_number=`, optionally `__dict__=`, which is not read), at most `limit`
    entries, counted before the line is split."""
    tags = [line[: line.find("=") + 1] or line for line in lines]  # "history=", ...
    if tags not in (["history=", "move_number="], ["history=", "move_number=", "__dict__="]):
        raise StateStringError(
            "load_state: the [State] section must be the lines history=, move_number= and "
            f"(optionally) __dict__=; got {tags[:4]}"
        )
    body = lines[0][len("history="):]
    count = body.count(",") + 1 if body else 0
    if count > limit:
        raise StateStringError(
            f"load_state: the history has {count:,} entries; this game's states have at most "
            f"{limit:,} (max_history_length)"
        )
    history = []
    for index, entry in enumerate(body.split(",") if body else []):
        match = _ENTRY.fullmatch(entry)
        if match is None:
            raise StateStringError(
                f"load_state: history entry {index} {_shown([entry])} is not <player>:<action> "
                "(integers, the player -1 for chance)"
            )
        history.append((int(match[1]), int(match[2])))
    number = lines[1][len("move_number="):]
    if not re.fullmatch(r"0|[1-9][0-9]{0,9}", number):
        raise StateStringError(f"load_state: move_number={_shown([number])} is not a count")
    return history, int(number)


def _replay(game: ChickenFootGame, history: list[tuple[int, int]]) -> ChickenFootState:
    """The state `history` reaches from the initial state, every entry checked before it is
    applied (the player to act, a legal action or chance outcome)."""
    state = game.new_initial_state()
    for index, (player, action) in enumerate(history):
        if state.is_terminal():
            raise StateStringError(
                f"load_state: history entry {index} ({player}:{action}) comes after the end of "
                "the game"
            )
        acting = state.current_player()
        if player != acting:
            who = "chance (-1)" if acting == pyspiel.PlayerId.CHANCE else f"player {acting}"
            raise StateStringError(
                f"load_state: history entry {index} ({player}:{action}) is for player {player}, "
                f"but {who} acts there"
            )
        if acting == pyspiel.PlayerId.CHANCE:
            legal = state._core.chance_pool()
        else:
            legal = state._core.engine.legal_actions()
        if action not in legal:
            what = "chance outcome" if acting == pyspiel.PlayerId.CHANCE else "action"
            raise StateStringError(
                f"load_state: history entry {index} ({player}:{action}): {what} {action} is not "
                f"legal there; legal: {legal}"
            )
        state.apply_action(action)
    return state


def _register() -> None:
    if GAME_NAME not in pyspiel.registered_names():
        pyspiel.register_game(_GAME_TYPE, ChickenFootGame)


_register()

__all__ = [
    "ChickenFootGame",
    "ChickenFootObserver",
    "ChickenFootState",
    "DEFAULT_PARAMS",
    "GAME_NAME",
    "MAX_STATE_TEXT",
    "RULE_FIELDS",
    "StateStringError",
    "config_from_params",
    "game_parameters",
    "load_game",
    "load_state",
    "max_game_length",
    "max_history_length",
    "r13_returns",
]
