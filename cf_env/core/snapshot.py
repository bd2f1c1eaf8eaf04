"""The snapshot format: an engine's state as a JSON-serialisable dict, and its validated restore.

`snapshot(engine)` writes every key of `SNAPSHOT_KEYS` (the public contract: what a position
is) plus the extras an exact continuation needs (config: the rules only, seed, layout,
knowledge, history, RNG).
`read(config, tables, snap)` checks a snapshot against the rules before any engine takes it:
every field's type, every tile in exactly one place (R1, R3), a table the rules can lay out
(R5-R10), scores and winners that R4/R12/R13 give; anything else raises `SnapshotError` naming
the field. It returns a `Position`, the validated values under the engine's public names, which
`Engine.restore` takes whole and from which it derives its caches (so this module reads no
engine internals, and does not import the engine). `Engine.snapshot()` / `Engine.restore()` are
thin methods over these two.

`read` fills the Position in named steps (`_load`): the format (version, keys, container types,
config), the round (R4, R5), the tiles (R1, R3), the table and its arms (R6-R10), the drawn tile
(R8), the scores (R4, R12, R13) and the knowledge (voids, played tiles, history, seed, RNG).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from cf_env.core.config import OPTION_FIELDS, ChickenFootConfig
from cf_env.core.layout import Arm
from cf_env.core.scoring import r13_winners
from cf_env.core.tiles import TileTables

# 2: the AEC env's snapshot adds the rewards pending for its agents (`rewards`,
# `cumulative_rewards`); a game restored without `arms` snapshots without them too. chickenfoot
# 0.1.0 wrote version 2; version 1 (before it) is no longer read (0.2.0). A hand-built snapshot
# without a version is read as the current one.
SNAPSHOT_VERSION = 2
SNAPSHOT_VERSIONS = (2,)

# Keys every snapshot holds (public contract) and the extras needed for an exact restore.
SNAPSHOT_KEYS = (
    "max_pips",
    "num_players",
    "round",
    "num_rounds",
    "center",
    "current",
    "hands",
    "boneyard",
    "table",
    "open_ends",
    "spinner_arms_empty",
    "foot",
    "drawn_tile",
    "scores",
    "game_over",
    "winners",
)


class SnapshotError(ValueError):
    """A snapshot that cannot be restored. The game state is unchanged."""


def snapshot(engine) -> dict:
    """A JSON-serialisable dict from which `restore` continues exactly (keys: SNAPSHOT_KEYS+).
    A snapshot holds a round in play or a finished game (`Engine.snapshot` refuses the time
    between rounds)."""
    pairs = engine.tables.pairs

    def tiles(ids) -> list[list[int]]:
        return [list(pairs[t]) for t in ids]

    snap = {
        "version": SNAPSHOT_VERSION,
        "max_pips": engine.config.max_pips,
        "num_players": engine.config.num_players,
        "round": engine.round,
        "num_rounds": engine.config.num_rounds,
        "center": engine.center,
        "current": engine.current,
        "hands": [tiles(np.flatnonzero(h)) for h in engine.hands],
        "boneyard": tiles(reversed(engine.boneyard)),
        "table": tiles(np.flatnonzero(engine.on_table)),
        "open_ends": [v for v, c in enumerate(engine.open_count) for _ in range(c)],
        "spinner_arms_empty": engine.spinner_empty,
        "foot": None
        if engine.foot_value < 0
        else {"double": engine.foot_value, "toes_left": engine.toes_left},
        "drawn_tile": None if engine.drawn_tile < 0 else list(pairs[engine.drawn_tile]),
        "scores": [list(s) for s in engine.scores],
        "game_over": engine.game_over,
        "winners": list(engine.winners),
        # Extras for an exact continuation.
        "config": engine.config.to_dict(),  # the rules; driver options are no part of a position
        "seed": engine.seed,
        "start_seat": engine.start_seat,
        "arms": [
            {"parent": a.parent, "tiles": [[v, engine.tables.other_end(t, v)] for t, v in a.tiles]}
            for a in engine.arms
        ],
        "foot_arm": engine.foot_arm,
        "voids": [np.flatnonzero(v).tolist() for v in engine.voids],
        "played_by": [tiles(np.flatnonzero(p)) for p in engine.played_by],
        "history": [list(h) for h in engine.history],
        "rng": _jsonable_rng_state(engine.rng.bit_generator.state),
    }
    if engine.synthetic_arms:
        # Restored without a layout: the arms are stand-ins that only carry the open ends,
        # so they are left out again (restore rebuilds them from `open_ends`).
        del snap["arms"], snap["foot_arm"]
    return snap


def read(config: ChickenFootConfig, tables: TileTables, snap: dict) -> Position:
    """The position `snap` holds, checked against the rules of `config` (module docstring).
    Raises `SnapshotError` naming the field if it is invalid; nothing else changes."""
    draft = _Draft(config, tables)
    try:
        _load(draft, snap)
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as err:
        raise SnapshotError(f"invalid snapshot: {err!r}") from err
    return Position(**{f.name: getattr(draft, f.name) for f in dataclasses.fields(Position)})


@dataclasses.dataclass(frozen=True, eq=False)
class Position:
    """A snapshot's position once `read` has checked it: what an `Engine` takes in `restore`
    (`kernel.write_position` writes it into a game), under the engine's public names. The 0/1
    boards are bool arrays (read-only); `synthetic_arms`: the snapshot had no layout, so `arms`
    are stand-ins, one per open end."""

    round: int
    center: int
    current: int
    start_seat: int
    drawn_tile: int  # -1: none (R8)
    foot_value: int  # -1: no foot pending (R9)
    toes_left: int
    foot_arm: int
    spinner_empty: int
    game_over: bool
    between_rounds: bool
    hand_counts: list[int]
    boneyard: list[int]  # the next tile drawn is the last
    open_count: list[int]  # per value (R6)
    arms: list[Arm]
    synthetic_arms: bool
    scores: list[list[int]]  # per seat, every finished round's points (R12)
    winners: list[int]  # R13, once game_over
    history: list[tuple[int, int, int]]  # (round, seat, action)
    deal_order: tuple[int, ...] | None
    seed: int | None
    rng: np.random.Generator | None  # None: the snapshot had no "rng"; the loader keeps its own
    hands: np.ndarray  # (players, tiles) bool
    on_table: np.ndarray  # (tiles,) bool
    played_by: np.ndarray  # (players, tiles) bool
    voids: np.ndarray  # (players, values) bool

    def __post_init__(self) -> None:
        for board in (self.hands, self.on_table, self.played_by, self.voids):
            board.flags.writeable = False


class _Draft:
    """A Position while `read` fills it in, field by field (`_load`)."""

    def __init__(self, config: ChickenFootConfig, tables: TileTables):
        self.config, self.tables = config, tables
        n, count, values = config.num_players, config.num_tiles, config.max_pips + 1
        self.hands = np.zeros((n, count), bool)
        self.on_table = np.zeros(count, bool)
        self.played_by = np.zeros((n, count), bool)
        self.voids = np.zeros((n, values), bool)
        self.synthetic_arms = False

    def totals(self) -> list[int]:
        return [sum(rounds) for rounds in self.scores]


def _jsonable_rng_state(state: dict) -> dict:
    return {k: (_jsonable_rng_state(v) if isinstance(v, dict) else v) for k, v in state.items()}


def _load(position: _Draft, snap: dict) -> None:
    """Fill a Position from a snapshot, validating every field against the rules."""
    foot_arm = _check_format(position.config, snap)
    _load_round(position, snap)
    start, table = _load_tiles(position, snap)
    _load_table(position, snap, foot_arm, start, table)
    _load_drawn_tile(position, snap)
    _load_scores(position, snap)
    _load_knowledge(position, snap, start)
    if position.game_over:
        position.drawn_tile = -1
    position.synthetic_arms = "arms" not in snap


def _seat(value: object, what: str, n: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        raise SnapshotError(f"{what} must be a seat 0..{n - 1}; got {value!r}")
    return value


def _tile(position: _Draft, pair: object, what: str) -> int:
    top = position.config.max_pips
    if (
        not isinstance(pair, (list, tuple))
        or len(pair) != 2
        or not all(isinstance(p, int) and not isinstance(p, bool) and 0 <= p <= top for p in pair)
    ):
        raise SnapshotError(f"{what}: {pair!r} is not a tile [a, b] with 0 <= a, b <= {top}")
    return int(position.tables.tile_id[pair[0], pair[1]])


def _value(v: object, what: str, top: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
        raise SnapshotError(f"{what} must be a pip value 0..{top}; got {v!r}")
    return v


def _check_format(cfg: ChickenFootConfig, snap: dict) -> int:
    """The snapshot's version, keys and container types, and that it was taken under this
    engine's config. Returns its `foot_arm` (-1 when absent)."""
    n, top = cfg.num_players, cfg.max_pips
    if not isinstance(snap, dict):
        raise SnapshotError(f"a snapshot is a dict; got {type(snap).__name__}")
    version = snap.get("version", SNAPSHOT_VERSION)
    if version == 1 and not isinstance(version, bool):
        raise SnapshotError(
            "snapshot version 1 was written before chickenfoot 0.1.0 and is no longer read "
            "(chickenfoot 0.2.0 reads version 2); restore it with chickenfoot 0.1.0 and take a "
            "new snapshot there")
    if isinstance(version, bool) or version not in SNAPSHOT_VERSIONS:
        raise SnapshotError(
            f"snapshot version {version!r} is not one this engine reads ({SNAPSHOT_VERSIONS}); "
            "a newer chickenfoot wrote it, or it is not a snapshot"
        )
    missing = [k for k in SNAPSHOT_KEYS if k not in snap]
    if missing:
        raise SnapshotError(f"snapshot is missing key(s) {missing}")
    # Container types first, so that a wrong type is named rather than failing deep inside.
    lists = ("hands", "boneyard", "table", "open_ends", "scores", "winners")
    extras = ("arms", "voids", "played_by", "history")
    for key in lists + tuple(k for k in extras if k in snap):
        if not isinstance(snap[key], list):
            raise SnapshotError(f"{key} must be a list; got {type(snap[key]).__name__}")
    if "config" in snap and not isinstance(snap["config"], dict):
        raise SnapshotError(f"config must be a dict of config fields; got {snap['config']!r}")
    if not isinstance(snap["game_over"], bool):
        raise SnapshotError(f"game_over must be true or false; got {snap['game_over']!r}")
    for key in ("voids", "played_by"):
        if key in snap and len(snap[key]) != n:
            raise SnapshotError(f"{key} must list {n} seats; got {len(snap[key])}")
    foot_arm = snap.get("foot_arm", -1)
    if isinstance(foot_arm, bool) or not isinstance(foot_arm, int):
        raise SnapshotError(f"foot_arm must be an int; got {foot_arm!r}")
    if "config" in snap:
        # The rules only: snapshots written before the driver options left the rules also
        # hold reward_mode, skip_forced and illegal_action, which say nothing about the position.
        rules = {k: v for k, v in snap["config"].items() if k not in OPTION_FIELDS}
        theirs = ChickenFootConfig.from_dict(rules).to_dict()
        ours = cfg.to_dict()
        diff = [k for k in ours if ours[k] != theirs[k]]
        if diff:
            detail = ", ".join(f"{k}: snapshot {theirs[k]!r} vs engine {ours[k]!r}" for k in diff)
            raise SnapshotError(f"snapshot was taken under another config ({detail})")
    for key, want in (("max_pips", top), ("num_players", n), ("num_rounds", cfg.num_rounds)):
        if snap[key] != want:
            raise SnapshotError(f"snapshot {key} is {snap[key]!r}; this engine has {want}")
    return foot_arm


def _load_round(position: _Draft, snap: dict) -> None:
    """The round, its centre double (R4; R5's `lower_double` variant), the seat to act and the
    seat that placed the start double."""
    cfg = position.config
    n, top = cfg.num_players, cfg.max_pips
    rnd = snap["round"]
    if isinstance(rnd, bool) or not isinstance(rnd, int) or not 0 <= rnd < cfg.num_rounds:
        raise SnapshotError(f"round must be 0..{cfg.num_rounds - 1}; got {rnd!r}")
    position.round = rnd
    position.center = top - rnd  # R4
    if cfg.start_search == "lower_double":  # the variant may start with any lower double
        center = snap["center"]
        if isinstance(center, bool) or not isinstance(center, int) or not 0 <= center <= top - rnd:
            raise SnapshotError(
                f"center must be 0..{top - rnd} in round {rnd} (R4, R5 start_search "
                f"'lower_double'); got {center!r}"
            )
        position.center = center
    elif snap["center"] != position.center:
        raise SnapshotError(f"center must be {position.center} in round {rnd} (R4); got {snap['center']!r}")
    position.current = _seat(snap["current"], "current", n)
    position.start_seat = _seat(snap.get("start_seat", (position.current - 1) % n), "start_seat", n)


def _load_tiles(position: _Draft, snap: dict) -> tuple[int, list[int]]:
    """Hands, boneyard and table: every tile in exactly one place (R1, R3), the start double on
    the table (R5). Returns the start double's id and the table's tile ids."""
    cfg, tables = position.config, position.tables
    n, count = cfg.num_players, cfg.num_tiles
    where: dict[int, str] = {}

    def claim(ids: list[int], place: str) -> None:
        for t in ids:
            if t in where:
                pair = list(tables.pairs[t])
                raise SnapshotError(f"tile {pair} appears twice ({where[t]} and {place})")
            where[t] = place

    if not isinstance(snap["hands"], list) or len(snap["hands"]) != n:
        raise SnapshotError(f"hands must list {n} hands")
    for s, hand in enumerate(snap["hands"]):
        if not isinstance(hand, list):
            raise SnapshotError(f"hands[{s}] must be a list of tiles; got {hand!r}")
        ids = [_tile(position, p, f"hands[{s}]") for p in hand]
        claim(ids, f"hand {s}")
        position.hands[s, ids] = True
    position.hand_counts = [int(h.sum()) for h in position.hands]
    bone = [_tile(position, p, "boneyard") for p in snap["boneyard"]]
    claim(bone, "boneyard")
    position.boneyard = bone[::-1]
    table = [_tile(position, p, "table") for p in snap["table"]]
    claim(table, "table")
    if len(where) != count:
        lost = [list(tables.pairs[t]) for t in range(count) if t not in where]
        raise SnapshotError(f"tiles missing from hands, boneyard and table: {lost}")
    position.on_table[table] = True
    start = int(tables.double_id[position.center])
    if not position.on_table[start]:
        raise SnapshotError(f"the start double {[position.center] * 2} must be on the table (R5)")
    return start, table


def _load_table(position: _Draft, snap: dict, foot_arm: int, start: int, table: list[int]) -> None:
    """The open ends, the empty spinner arms (R7), the pending foot (R9) and the layout: rebuilt
    from "arms" when given (and checked against the rules state), else one synthetic arm per
    open end (enough for the rules, which only need the counts)."""
    cfg, tables = position.config, position.tables
    top = cfg.max_pips
    position.arms = []
    position.open_count = [0] * (top + 1)
    foot = snap["foot"]
    if foot is not None:
        if not isinstance(foot, dict) or not {"double", "toes_left"} <= set(foot):
            raise SnapshotError(f"foot must be null or {{'double': d, 'toes_left': k}}; got {foot!r}")
        toes = foot["toes_left"]
        if isinstance(toes, bool) or not isinstance(toes, int) or not 1 <= toes <= cfg.toes:
            raise SnapshotError(f"foot toes_left must be 1..{cfg.toes}; got {toes!r}")
        if not position.on_table[tables.double_id[_value(foot["double"], "foot double", top)]]:
            raise SnapshotError("the foot's double must be on the table")
    position.foot_value = -1 if foot is None else foot["double"]
    position.toes_left = 0 if foot is None else foot["toes_left"]
    empty = snap["spinner_arms_empty"]
    if isinstance(empty, bool) or not isinstance(empty, int) or not 0 <= empty <= cfg.spinner_arms:
        raise SnapshotError(f"spinner_arms_empty must be 0..{cfg.spinner_arms}; got {empty!r}")
    position.spinner_empty = empty
    open_ends = sorted(_value(v, "open_ends", top) for v in snap["open_ends"])
    if "arms" in snap:
        _load_arms(position, snap["arms"], foot_arm, start, table)
        derived = sorted(v for v, c in enumerate(position.open_count) for _ in range(c))
        if derived != open_ends:
            raise SnapshotError(f"open_ends {open_ends} disagree with the arms (which give {derived})")
    else:
        _check_open_ends(position, table, open_ends)
        position.foot_arm = -1
        for v in open_ends:
            position.arms.append(Arm(-1, [], v))
            position.open_count[v] += 1
    if position.foot_value >= 0 and position.spinner_empty:
        raise SnapshotError("a foot cannot be pending while spinner arms are empty (R7, R9)")


def _load_drawn_tile(position: _Draft, snap: dict) -> None:
    """R8: a tile just drawn is in the acting seat's hand."""
    drawn = snap["drawn_tile"]
    position.drawn_tile = -1 if drawn is None else _tile(position, drawn, "drawn_tile")
    if drawn is not None and not position.hands[position.current, position.drawn_tile]:
        raise SnapshotError(f"drawn_tile {drawn} is not in the hand of seat {position.current}")


def _load_scores(position: _Draft, snap: dict) -> None:
    """Scores of the finished rounds (R4, R12; the `target_score` variant), hand sizes the
    rules can produce, and the winners (R13)."""
    cfg = position.config
    n, rnd = cfg.num_players, position.round
    scores = snap["scores"]
    if not isinstance(scores, list) or len(scores) != n:
        raise SnapshotError(f"scores must list {n} seats")
    position.game_over = snap["game_over"]
    position.between_rounds = False
    if cfg.target_score is None and position.game_over and rnd != cfg.num_rounds - 1:
        raise SnapshotError(
            f"game_over is true in round {rnd}, but a game ends after its last round "
            f"{cfg.num_rounds - 1} (R4)"
        )
    played = rnd + 1 if position.game_over else rnd
    most = max_round_points(cfg, position.tables)
    for s, rows in enumerate(scores):
        if not isinstance(rows, list):
            raise SnapshotError(f"scores[{s}] must list {played} finished round(s); got {rows!r}")
        if cfg.target_score is not None:  # the countdown restarts: round = rounds played mod N+1
            if len(rows) % cfg.num_rounds != played % cfg.num_rounds or len(rows) != len(scores[0]):
                raise SnapshotError(
                    f"scores[{s}] must list as many rounds as every seat, a number that is "
                    f"{played % cfg.num_rounds} mod {cfg.num_rounds} in round {rnd}; got {rows!r}"
                )
        elif len(rows) != played:
            raise SnapshotError(f"scores[{s}] must list {played} finished round(s); got {rows!r}")
        if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= most
                   for x in rows):
            raise SnapshotError(
                f"scores[{s}] must hold ints in 0..{most} (R12: a round scores at most the "
                f"points of every tile but the start double); got {rows!r}")
    position.scores = [list(rows) for rows in scores]
    if cfg.target_score is not None:
        _check_target(position)
    _check_hands(position)
    position.winners = r13_winners(position.scores, position.config.tie_break) if position.game_over else []
    if sorted(snap["winners"]) != position.winners:
        raise SnapshotError(f"winners {snap['winners']!r} disagree with R13 ({position.winners})")


def _load_knowledge(position: _Draft, snap: dict, start: int) -> None:
    """What the game revealed and how it goes on: voids, who played which tile, the history,
    the seed and the RNG state."""
    cfg, tables = position.config, position.tables
    n, top = cfg.num_players, cfg.max_pips
    for s, vals in enumerate(snap.get("voids", [[]] * n)):
        position.voids[s, [_value(v, "voids", top) for v in vals]] = True
    for s, pairs in enumerate(snap.get("played_by", [[]] * n)):
        if not isinstance(pairs, list):
            raise SnapshotError(f"played_by[{s}] must be a list of tiles; got {pairs!r}")
        ids = [_tile(position, p, "played_by") for p in pairs]
        if not position.on_table[ids].all():
            raise SnapshotError("played_by names a tile that is not on the table")
        if start in ids:
            raise SnapshotError(f"played_by[{s}] names the start double, which no seat plays (R5)")
        twice = [list(tables.pairs[t]) for t in ids if position.played_by[:, t].any()]
        if twice or len(set(ids)) != len(ids):
            raise SnapshotError(f"played_by[{s}] names tile(s) {twice or pairs} another entry names too")
        position.played_by[s, ids] = True  # (it may leave tiles out: positions built by hand)
    for h in snap.get("history", []):
        if not (
            isinstance(h, list)
            and len(h) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) for x in h)
            and 0 <= h[0] < cfg.num_rounds and 0 <= h[1] < n and 0 <= h[2] < cfg.num_actions
        ):
            raise SnapshotError(
                f"history entries are [round 0..{cfg.num_rounds - 1}, seat 0..{n - 1}, action "
                f"0..{cfg.num_actions - 1}]; got {h!r}")
    position.history = [tuple(h) for h in snap.get("history", [])]
    position.deal_order = None  # a snapshot does not say how its round was shuffled
    seed = snap.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise SnapshotError(f"seed must be null or a non-negative int; got {seed!r}")
    position.seed = seed
    # Without an "rng" the engine (or batch game) that restores it keeps dealing from its own
    # RNG: a fresh, unseeded one here would make the same seed and snapshot play differently.
    position.rng = None
    if "rng" in snap:
        check_rng_state(snap["rng"], "rng")
        rng = np.random.default_rng()
        try:
            rng.bit_generator.state = snap["rng"]
        except (TypeError, ValueError, KeyError, OverflowError) as err:
            raise SnapshotError(f"rng state is not a valid {type(rng.bit_generator).__name__} state") from err
        position.rng = rng


def check_rng_state(state: object, what: str) -> None:
    """The engine's RNG state as `Generator.bit_generator.state` gives it for PCG64: 128-bit
    state and increment, a 32-bit buffered value."""
    rng_fields = {"bit_generator", "state", "has_uint32", "uinteger"}
    ok = (
        isinstance(state, dict) and set(state) == rng_fields
        and state["bit_generator"] == "PCG64"
        and isinstance(state["state"], dict) and set(state["state"]) == {"state", "inc"}
        and all(_int_in(v, 2**128) for v in state["state"].values())
        and _int_in(state["has_uint32"], 2) and _int_in(state["uinteger"], 2**32)
    )
    if not ok:
        raise SnapshotError(
            (f"{what} must be a PCG64 state " + "{'bit_generator': 'PCG64', 'state': {'state': s, "
             "'inc': i}, 'has_uint32': 0 or 1, 'uinteger': u} with s, i in [0, 2**128) and u in "
             f"[0, 2**32); got {state!r}")[:400])


def _int_in(value: object, stop: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < stop


def max_round_points(config: ChickenFootConfig, tables: TileTables) -> int:
    """The most points one seat can score in a round (R12): every tile but the start double,
    whose points are at least the cheapest double's."""
    points = tables.points(config.double_blank_value)
    return int(points.sum() - points[tables.double_id].min())


def _check_target(position: _Draft) -> None:
    """Variant target_score: the game runs while no total passes the target, and ends in the
    round in which one does."""
    target, totals = position.config.target_score, position.totals()
    if not position.game_over and max(totals) > target:
        raise SnapshotError(
            f"totals {totals} pass target_score {target}, so the game is over; game_over is false"
        )
    if position.game_over:
        before = [t - rows[-1] for t, rows in zip(totals, position.scores)] if position.scores[0] else totals
        if max(totals) <= target or max(before) > target:
            raise SnapshotError(
                f"game_over is true, but a game to target_score {target} ends in the round in "
                f"which a total first passes it; totals {totals}, before the last round {before}"
            )


def _check_hands(position: _Draft) -> None:
    """Hand sizes the rules can produce. A round ends as soon as a hand empties (R11). A hand
    grows past the deal (R3) only by tiles drawn from the boneyard (R5's search, R8), so the
    hands' excess over `hand_size` is at most the tiles that have left the boneyard.
    (A boneyard larger than the deal leaves is accepted: scenario positions with short hands.)"""
    cfg = position.config
    size = cfg.hand_size
    if not position.game_over:
        empty = [s for s, c in enumerate(position.hand_counts) if c == 0]
        if empty:
            raise SnapshotError(
                f"hands{empty} empty while the round runs, but a round ends as soon as a hand "
                "empties (R11)"
            )
    drawn = max(0, cfg.num_tiles - cfg.num_players * size - len(position.boneyard))
    excess = sum(max(0, c - size) for c in position.hand_counts)
    if excess > drawn:
        raise SnapshotError(
            f"hand sizes {position.hand_counts} exceed the deal of {size} by {excess} tiles, but only "
            f"{drawn} have left the boneyard (R3, R5, R8: a hand grows only by drawing)"
        )


def _check_open_ends(position: _Draft, table: list[int], open_ends: list[int]) -> None:
    """Without a layout, `open_ends` must be what the table's tiles can show (necessary
    conditions, exact for the count). Each non-double tile leaves one open end of a value it
    carries or covers one; each other double on the table is a chicken foot (R9: the only double
    that attaches to a value v is (v, v)) whose toes each open one end; the centre offers
    `spinner_arms` (R7). So the open ends number (filled spinner arms) + (toes − 1) × (feet)
    − (toes still owed), at most as many of a value as non-double table tiles carry it, and per
    value with the parity those counts give."""
    cfg, tables = position.config, position.tables
    center, values = position.center, cfg.max_pips + 1
    start = int(tables.double_id[center])
    owed = position.toes_left if position.foot_value >= 0 else 0
    filled = cfg.spinner_arms - position.spinner_empty
    carriers, feet = [0] * values, [0] * values
    for t in table:
        if t == start:
            continue
        lo, hi = tables.pairs[t]
        if lo == hi:
            feet[lo] += 1
        else:
            carriers[lo] += 1
            carriers[hi] += 1
    if position.spinner_empty and len(table) != 1 + filled:
        raise SnapshotError(
            f"spinner_arms_empty is {position.spinner_empty}, so the table holds the start double "
            f"and one tile per filled arm ({1 + filled} tiles, R7); it holds {len(table)}"
        )
    want = filled + (cfg.toes - 1) * sum(feet) - owed
    counts = [open_ends.count(v) for v in range(values)]
    bad = [
        v
        for v in range(values)
        if counts[v] > carriers[v]
        or (counts[v] - (v == center) * filled - carriers[v] - (cfg.toes - 1) * feet[v]
            + (v == position.foot_value) * owed) % 2
    ]
    if len(open_ends) != want or bad:
        raise SnapshotError(
            f"open_ends {open_ends} cannot arise from the table: {filled} filled spinner arm(s), "
            f"{sum(feet)} chicken foot double(s) and {owed} toe(s) owed give {want} open ends"
            + (f"; value(s) {bad} disagree with the tiles that carry them" if bad else "")
        )


def _load_arms(position: _Draft, arms: list, foot_arm: int, start: int, table: list[int]) -> None:
    tables, cfg = position.tables, position.config
    most = cfg.spinner_arms + cfg.toes * (cfg.max_pips + 1)  # kernel.max_arms
    if len(arms) > most:
        raise SnapshotError(f"arms lists {len(arms)} arms; a round of this config lays at most "
                            f"{most} (R7's spinner arms and R9's toes)")
    placed: set[int] = set()
    spinner = 0
    for index, spec in enumerate(arms):
        if not isinstance(spec, dict) or not {"parent", "tiles"} <= set(spec):
            raise SnapshotError(f"arm {index} must be {{'parent': p, 'tiles': [...]}}; got {spec!r}")
        parent = spec["parent"]
        if parent == -1:
            spinner += 1
            anchor = position.center
        elif isinstance(parent, int) and 0 <= parent < index and position.arms[parent].tip == -1:
            anchor = tables.pairs[position.arms[parent].tiles[-1][0]][0]
        else:
            raise SnapshotError(f"arm {index}: parent {parent!r} is not an earlier closed foot arm")
        arm = Arm(parent)
        expected = anchor
        if not isinstance(spec["tiles"], list):
            raise SnapshotError(f"arm {index}: tiles must be a list; got {spec['tiles']!r}")
        for pair in spec["tiles"]:
            t = _tile(position, pair, f"arm {index}")
            if pair[0] != expected:
                raise SnapshotError(f"arm {index}: tile {pair!r} does not match open end {expected}")
            if t in placed or t == start:
                raise SnapshotError(f"arm {index}: tile {pair} is placed twice")
            placed.add(t)
            arm.tiles.append((t, pair[0]))
            expected = pair[1]
        closed = bool(arm.tiles) and tables.is_double[arm.tiles[-1][0]]
        arm.tip = -1 if closed or not arm.tiles else expected
        position.arms.append(arm)
        if arm.tip >= 0:
            position.open_count[arm.tip] += 1
    if placed | {start} != set(table):
        raise SnapshotError("the arms do not hold exactly the table's tiles")
    if cfg.spinner_arms - spinner != position.spinner_empty:
        raise SnapshotError(
            f"spinner_arms_empty is {position.spinner_empty} but the arms fill {spinner} of {cfg.spinner_arms}"
        )
    position.foot_arm = foot_arm if position.foot_value >= 0 else -1
    for index, arm in enumerate(position.arms):  # R9: every other chicken foot has all its toes
        if arm.tiles and tables.is_double[arm.tiles[-1][0]] and index != position.foot_arm:
            toes = sum(1 for a in position.arms if a.parent == index)
            if toes != cfg.toes:
                raise SnapshotError(
                    f"arm {index} ends in a chicken-foot double with {toes} of {cfg.toes} toes, "
                    f"so a foot must be pending (R9); the snapshot's foot says otherwise"
                )
    if position.foot_value >= 0:
        toes = sum(1 for a in position.arms if a.parent == foot_arm)
        if not (0 <= foot_arm < len(position.arms)) or cfg.toes - toes != position.toes_left:
            raise SnapshotError("foot disagrees with the arms (its double or its toes left)")
