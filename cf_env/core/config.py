"""The rules and variants of one Chicken Foot game, and apart from them how a driver runs it.

Every size in the package (tile count, action count, observation length) is derived from a
`ChickenFootConfig`; variants are fields here, never copies of code. Rule numbers (R1–R13)
refer to `docs/rules.md`.

`DriverOptions` holds what is not a rule: how the envs pay rewards (`reward_mode`), whether the
engine takes one-action decisions itself (`skip_forced`) and what an illegal action does
(`illegal_action`). Snapshots, checkpoints and records store and compare the rules only.
Users give both as one flat set of keywords (`cf_env.env(...)`, training YAML `env.rules`);
`split_options` separates them.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

SUPPORTED_SETS = (6, 9, 12, 15, 18)  # R1
REWARD_MODES = ("score", "zero_sum", "win")
ILLEGAL_ACTION_MODES = ("raise", "penalize")
TIE_BREAKS = ("r13", "none")
# R5 and its published variants: how the round's start double is found when nobody holds it.
START_SEARCHES = ("turns", "all_draw", "lower_double")

# Default hand size per set and player count (see "Hand size" in docs/rules.md). Double-9 follows the
# seeds (7 each, 6 for eight players); the other sets are our documented choice: as large as the
# published tables go while leaving a boneyard of at least a fifth of the set.
_HAND_TABLE: dict[int, dict[int, int]] = {
    6: {2: 7, 3: 7, 4: 5},
    9: {**dict.fromkeys(range(2, 8), 7), 8: 6},
    12: {**dict.fromkeys(range(2, 5), 12), 5: 11, 6: 11, 7: 9, 8: 9, 9: 8, 10: 7},
    15: {**dict.fromkeys(range(2, 6), 15), 6: 14, 7: 12, 8: 12, 9: 11, 10: 10, 11: 9, 12: 9},
    18: {
        **dict.fromkeys(range(2, 6), 18),
        **dict.fromkeys(range(6, 9), 15),
        **dict.fromkeys(range(9, 13), 12),
        13: 11,
        14: 10,
    },
}


def num_tiles(max_pips: int) -> int:
    """R1: a double-N set holds (N+1)(N+2)/2 tiles."""
    return (max_pips + 1) * (max_pips + 2) // 2


def max_players(max_pips: int) -> int:
    """The most players the default hand table seats on a double-`max_pips` set."""
    return max(_HAND_TABLE[max_pips])


def default_hand_size(max_pips: int, num_players: int) -> int:
    return _HAND_TABLE[max_pips][num_players]


def set_points(max_pips: int, double_blank_value: int) -> int:
    """R12: the points of the whole set, the most one round can put in the hands. Each value
    appears on N+2 halves, so the pips sum to N·T; the double-blank adds its configured value."""
    return max_pips * num_tiles(max_pips) + double_blank_value


def max_double_blank_value(max_pips: int) -> int:
    """The largest `double_blank_value`: 2 × points_scale (20 × max_pips), so one tile never
    outweighs two reward units. It covers every published value (0, 25, 50, 100) on every set."""
    return 20 * max_pips


def max_target_score(max_pips: int, double_blank_value: int) -> int:
    """The largest `target_score`. A game to a target ends in the round a total passes it, so a
    total reaches at most target + one round's points; the observation's `scores` piece is
    bounded by `num_rounds` (= max_pips + 1) rounds' points, which this keeps it within."""
    return max_pips * set_points(max_pips, double_blank_value)


def _check_int(name: str, value: object) -> int:
    # bool is an int subclass; `num_players=True` is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    return value


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value  # type: ignore[return-value]


def _checked_rounds(num_rounds: int | None, max_pips: int, target_score: int | None) -> int:
    """`num_rounds` (default: one per double, R4) checked against the set and the target."""
    rounds = _check_int("num_rounds", num_rounds if num_rounds is not None else max_pips + 1)
    if target_score is not None and rounds != max_pips + 1:
        raise ValueError(
            f"num_rounds must be left unset (or {max_pips + 1}) with target_score: the game "
            f"plays until a total passes the target, the countdown of {max_pips + 1} doubles "
            f"restarting after the double-blank; got {rounds}"
        )
    if not 1 <= rounds <= max_pips + 1:
        raise ValueError(
            f"num_rounds must be 1..{max_pips + 1} (R4: one round per double, counting down); "
            f"got {rounds}"
        )
    return rounds


@dataclass(frozen=True)
class ChickenFootConfig:
    """Rules and variants of a game. Invalid combinations raise `ValueError` on construction.

    `hand_size` and `num_rounds` may be left as None and are then filled from the defaults.
    """

    max_pips: int = 9
    """R1: the set is double-`max_pips`; one of 6, 9, 12, 15, 18."""
    num_players: int = 4
    """R2: seats, clockwise in index order; 2 up to `max_players(max_pips)`."""
    hand_size: int | None = None
    """R3: tiles dealt to each player; None takes the documented default table."""
    num_rounds: int | None = None
    """R4: rounds in a game, counting down from double-`max_pips`; None plays all max_pips+1.
    With `target_score` it is the length of the countdown (max_pips+1), which then restarts."""
    spinner_arms: int = 4
    """R7: arms on the centre double; 4 (Maltese cross) or 6 ("double chicken foot")."""
    toes: int = 3
    """R9: toes that must be played on a chicken-foot double before play goes elsewhere."""
    draw_until_playable: bool = False
    """R8 variant: one DRAW keeps drawing until a playable tile comes or the boneyard is empty."""
    must_play_drawn: bool = False
    """R8 variant: a playable drawn tile must be played (PASS is then illegal)."""
    double_blank_value: int = 50
    """R12: points the double-blank counts in a hand at the end of a round (0..20 × max_pips)."""
    start_search: str = "turns"
    """R5 when nobody holds the start double: "turns" (seats draw in turn until it appears),
    "all_draw" (every seat draws one tile at once, repeated until it appears) or
    "lower_double" (the highest lower double someone holds starts the round instead)."""
    target_score: int | None = None
    """R4/R13 variant: None plays `num_rounds` rounds; an int plays rounds (the countdown of
    doubles restarting after the double-blank) until a total passes it; lowest total wins."""
    tie_break: str = "r13"
    """R13: "r13" breaks ties by zero rounds then lowest non-zero round; "none" shares the win."""

    # Derived sizes, filled in __post_init__.
    num_tiles: int = field(init=False, repr=False, compare=False)
    num_actions: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        max_pips = _check_int("max_pips", self.max_pips)
        if max_pips not in SUPPORTED_SETS:
            raise ValueError(f"max_pips must be one of {SUPPORTED_SETS} (R1); got {max_pips}")
        players = _check_int("num_players", self.num_players)
        top = max_players(max_pips)
        if not 2 <= players <= top:
            raise ValueError(
                f"num_players must be 2..{top} on a double-{max_pips} set; got {players}"
                + (" (a bigger set seats more)" if players > top else "")
            )
        tiles = num_tiles(max_pips)
        hand = self.hand_size
        if hand is None:
            hand = default_hand_size(max_pips, players)
        hand = _check_int("hand_size", hand)
        # Dealing must leave at least one tile to search for the start double with (R5), and every
        # player must still hold a tile after the start double is placed.
        most = (tiles - 1) // players
        if not 2 <= hand <= most:
            raise ValueError(
                f"hand_size must be 2..{most} for {players} players on a double-{max_pips} set "
                f"({tiles} tiles, at least one left in the boneyard); got {hand}"
            )
        rounds = _checked_rounds(self.num_rounds, max_pips, self.target_score)
        arms = _check_int("spinner_arms", self.spinner_arms)
        if arms not in (4, 6):
            raise ValueError(f"spinner_arms must be 4 or 6 (R7 and its variant); got {arms}")
        toes = _check_int("toes", self.toes)
        if not 1 <= toes <= max_pips:
            raise ValueError(f"toes must be 1..{max_pips} (R9 plays 3); got {toes}")
        _check_bool("draw_until_playable", self.draw_until_playable)
        _check_bool("must_play_drawn", self.must_play_drawn)
        blank = _check_int("double_blank_value", self.double_blank_value)
        top_blank = max_double_blank_value(max_pips)
        if not 0 <= blank <= top_blank:
            raise ValueError(
                f"double_blank_value must be 0..{top_blank} on a double-{max_pips} set (R12 "
                f"counts 50; at most 2 × points_scale); got {blank}"
            )
        _check_choice("start_search", self.start_search, START_SEARCHES)
        if self.target_score is not None:
            target = _check_int("target_score", self.target_score)
            top_target = max_target_score(max_pips, blank)
            if not 1 <= target <= top_target:
                raise ValueError(
                    f"target_score must be None or 1..{top_target} on a double-{max_pips} set "
                    f"with double_blank_value {blank} (max_pips × the set's points); got {target}"
                )
        _check_choice("tie_break", self.tie_break, TIE_BREAKS)

        set_ = object.__setattr__  # frozen: fill resolved defaults and derived sizes once
        set_(self, "_defaulted", tuple(k for k in ("hand_size", "num_rounds") if getattr(self, k) is None))
        set_(self, "hand_size", hand)
        set_(self, "num_rounds", rounds)
        set_(self, "num_tiles", tiles)
        set_(self, "num_actions", 2 * tiles + 2)

    @property
    def draw_action(self) -> int:
        return 2 * self.num_tiles

    @property
    def pass_action(self) -> int:
        return 2 * self.num_tiles + 1

    @property
    def points_scale(self) -> float:
        """Points per unit of reward and of the observation's score pieces (10 × max_pips)."""
        return 10.0 * self.max_pips

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: say where the driver options went (they moved
        # out of the rules into `DriverOptions`).
        if name in OPTION_FIELDS:
            raise AttributeError(
                f"{name!r} is a driver option, not a rule: read it from the env's `options` "
                "(cf_env.core.config.DriverOptions)"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict:
        """The constructor fields (the rules), resolved (JSON-serialisable)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    @classmethod
    def from_dict(cls, data: Mapping) -> ChickenFootConfig:
        """The rules `data` names. Configs stored before the driver options left the rules (old
        checkpoint cards, snapshots, records) also name them: those are checked as
        `DriverOptions` checks them and dropped. Any other unknown key raises `ValueError`."""
        _check_known(data)
        if any(name in data for name in OPTION_FIELDS):
            DriverOptions(**{k: data[k] for k in OPTION_FIELDS if k in data})
            data = {k: v for k, v in data.items() if k not in OPTION_FIELDS}
        return cls(**data)

    def replace(self, **changes) -> ChickenFootConfig:
        """A copy with `changes` (rules only); fields that were left to their defaults are
        derived again."""
        options = [name for name in OPTION_FIELDS if name in changes]
        if options:
            raise ValueError(
                f"{', '.join(options)}: driver option(s), not rules; give them to the env or to "
                "DriverOptions"
            )
        fields = self.to_dict()
        for name in self._defaulted:
            fields[name] = None
        return ChickenFootConfig.from_dict({**fields, **changes})


@dataclass(frozen=True)
class DriverOptions:
    """How a driver (env, soak, search) runs a game; not rules: a position, a snapshot, a
    checkpoint is the same under any of them. Invalid values raise `ValueError`."""

    reward_mode: str = "zero_sum"
    """Rewards: "score" (-own points), "zero_sum" (others' mean - own), "win" (game result)."""
    skip_forced: bool = False
    """When True the engine takes every decision that has exactly one legal action itself."""
    illegal_action: str = "raise"
    """"raise": an illegal action raises and changes nothing; "penalize": PettingZoo semantics."""

    def __post_init__(self) -> None:
        _check_bool("skip_forced", self.skip_forced)
        _check_choice("reward_mode", self.reward_mode, REWARD_MODES)
        _check_choice("illegal_action", self.illegal_action, ILLEGAL_ACTION_MODES)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def replace(self, **changes) -> DriverOptions:
        """A copy with `changes`, validated like the constructor (as `ChickenFootConfig.replace`)."""
        return dataclasses.replace(self, **changes)


RULE_FIELDS = tuple(f.name for f in dataclasses.fields(ChickenFootConfig) if f.init)
OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(DriverOptions))


def _check_known(data: Mapping) -> None:
    """`ValueError` for keys that are neither rules nor driver options, with the nearest names."""
    known = sorted(RULE_FIELDS + OPTION_FIELDS)
    unknown = set(data) - set(known)
    if unknown:
        # A misspelt keyword is the commonest config mistake: suggest the nearest fields.
        hints = [
            f"{name!r} -> {close[0]!r}"
            for name in sorted(map(str, unknown))
            if (close := difflib.get_close_matches(name, known, n=1))
        ]
        raise ValueError(
            f"unknown config field(s) {sorted(unknown, key=str)}; valid fields: {known}"
            + (f"; did you mean {', '.join(hints)}?" if hints else "")
        )


def split_options(
    fields: Mapping | None = None, rules: ChickenFootConfig | None = None
) -> tuple[ChickenFootConfig, DriverOptions]:
    """The rules and the driver options one flat mapping of keywords names (what `cf_env.env()`,
    training YAML `env.rules` and the CLIs take). With `rules`, the mapping's rule fields change
    those (`ChickenFootConfig.replace`). Unknown keys raise `ValueError` listing the valid ones;
    rules are checked before options."""
    fields = dict(fields or {})
    _check_known(fields)
    options = {name: fields.pop(name) for name in OPTION_FIELDS if name in fields}
    if rules is None:
        rules = ChickenFootConfig.from_dict(fields)
    elif fields:
        rules = rules.replace(**fields)
    return rules, DriverOptions(**options)
