"""Game records: the versioned JSON format that stores a whole game, and its re-simulation.

A record holds what is needed to replay a game exactly — the rules, the engine seed and every
action — plus the result, so a replay can prove it reached the same end::

    {
      "format": "chickenfoot-record",
      "version": 1,
      "config": {...},              # ChickenFootConfig.to_dict(): every rule and variant
      "seed": 1234,                 # the seed given to Engine(config, seed) / Engine.reset(seed)
      "actions": [12, 110, ...],    # every action the engine applied, in order (engine.history)
      "final": {"scores": [[...], ...], "winners": [0]},   # or null for an unfinished game
      "players": ["you", "greedy", ...]                     # optional: who sat in each seat
    }

* ``actions`` are action ids of the public codec (`actions.py`). They are *every* action the
  engine applied, including those it took itself under ``skip_forced`` — so a replay turns
  ``skip_forced`` off and applies them one by one (forced moves draw nothing from the RNG, so the
  deals are the same).
* ``final.scores`` is ``engine.scores`` (per seat, the points of each round, R12); ``winners`` the
  R13 winners. ``final`` is null when the game was stopped before its end.
* Version history: 1 — first version. A reader rejects a newer version with a clear message.

`write_record` / `record_from_engine` make records, `read_record` / `validate_record` check them,
`replay_engine` re-simulates one (raising `RecordError` if an action is illegal or the result
differs), and `iter_replay` yields every state of the game for rendering, including the finished
table of each round before the next deal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .config import ChickenFootConfig
from .engine import Engine, IllegalActionError

FORMAT = "chickenfoot-record"
VERSION = 1


class RecordError(ValueError):
    """A game record that is malformed, from an unknown version, or does not replay."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def make_record(
    config: ChickenFootConfig,
    seed: int,
    actions: Sequence[int],
    final: dict | None = None,
    players: Sequence[str] | None = None,
) -> dict:
    """A validated record dict (see the module docstring for the fields)."""
    if not isinstance(config, ChickenFootConfig):
        raise RecordError(f"config must be a ChickenFootConfig; got {type(config).__name__}")
    record = {
        "format": FORMAT,
        "version": VERSION,
        "config": config.to_dict(),
        "seed": seed,
        "actions": [int(a) if not isinstance(a, bool) else a for a in actions],
        "final": None if final is None else _final_dict(final),
    }
    if players is not None:
        record["players"] = list(players)
    return validate_record(record)


def _final_dict(final) -> dict:
    if isinstance(final, dict):
        return {
            "scores": [[int(x) for x in row] for row in final.get("scores", [])],
            "winners": [int(s) for s in final.get("winners", [])],
        }
    raise RecordError(f"final must be None or {{'scores': ..., 'winners': ...}}; got {final!r}")


def final_of(engine: Engine) -> dict | None:
    """The `final` entry for an engine: its scores and winners once the game is over, else None."""
    if not engine.game_over:
        return None
    return {
        "scores": [list(map(int, row)) for row in engine.scores],
        "winners": list(engine.winners),
    }


def engine_actions(engine: Engine) -> list[int]:
    """Every action the engine applied this game, in order (what a record's `actions` holds)."""
    return [int(action) for _round, _seat, action in engine.history]


def record_from_engine(
    engine: Engine, seed: int | None = None, players: Sequence[str] | None = None
) -> dict:
    """A record of the game an engine has played since `reset(seed)`.

    `seed` defaults to `engine.seed` where the engine keeps it; without either this raises,
    because a record without the engine's seed cannot be replayed.
    """
    if seed is None:
        seed = getattr(engine, "seed", None)
    if seed is None:
        raise RecordError(
            "the engine's seed is unknown: pass seed= (the value given to Engine(config, seed) "
            "or Engine.reset(seed))"
        )
    return make_record(engine.config, seed, engine_actions(engine), final_of(engine), players)


def write_record(
    path,
    config: ChickenFootConfig,
    seed: int,
    actions: Sequence[int],
    final: dict | None = None,
    players: Sequence[str] | None = None,
) -> dict:
    """Validate and write a record as JSON to `path`; returns the record dict."""
    record = make_record(config, seed, actions, final, players)
    save_record(path, record)
    return record


def save_record(path, record: dict) -> None:
    """Write an already-built record (validated again) as readable JSON, one field per line."""
    record = validate_record(record)
    body = ",\n".join(
        f"  {json.dumps(key)}: {json.dumps(value, separators=(', ', ': '))}"
        for key, value in record.items()
    )
    Path(path).write_text("{\n" + body + "\n}\n", encoding="utf-8")


def read_record(path) -> dict:
    """Read and validate a record file. Raises `RecordError` saying what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise RecordError(f"cannot read record {str(path)!r}: {err.strerror or err}") from err
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"record {str(path)!r} is not JSON: {err}") from err
    return validate_record(data)


def validate_record(data: object) -> dict:
    """Check a record's structure (not yet its replay) and return it with its fields in order."""
    if not isinstance(data, dict):
        raise RecordError(f"a record is a JSON object; got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise RecordError(
            f"not a game record: format is {data.get('format')!r}, expected {FORMAT!r}"
        )
    version = data.get("version")
    if not _is_int(version) or version < 1:
        raise RecordError(f"record version must be a positive int; got {version!r}")
    if version > VERSION:
        raise RecordError(
            f"record version {version} is newer than this reader (version {VERSION}); "
            "update chickenfoot to replay it"
        )
    required = ("config", "seed", "actions", "final")
    missing = [key for key in required if key not in data]
    if missing:
        raise RecordError(f"record is missing field(s) {missing}; a record has {list(required)}")
    known = {"format", "version", *required, "players"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise RecordError(f"record has unknown field(s) {unknown}; valid fields: {sorted(known)}")
    if not isinstance(data["config"], dict):
        raise RecordError("record config must be an object of ChickenFootConfig fields")
    try:
        config = ChickenFootConfig.from_dict(data["config"])
    except (TypeError, ValueError) as err:
        raise RecordError(f"record config is invalid: {err}") from err
    seed = data["seed"]
    if not _is_int(seed) or seed < 0:
        raise RecordError(f"record seed must be a non-negative int (the engine seed); got {seed!r}")
    actions = data["actions"]
    if not isinstance(actions, list):
        raise RecordError(f"record actions must be a list of ints; got {type(actions).__name__}")
    for index, action in enumerate(actions):
        if not _is_int(action) or not 0 <= action < config.num_actions:
            raise RecordError(
                f"record action #{index} is {action!r}; actions are ints 0..{config.num_actions - 1}"
            )
    n = config.num_players
    final = data["final"]
    if final is not None:
        if not isinstance(final, dict) or set(final) != {"scores", "winners"}:
            raise RecordError(
                f"record final must be null or {{'scores', 'winners'}}; got {final!r}"
            )
        scores, winners = final["scores"], final["winners"]
        if (
            not isinstance(scores, list)
            or len(scores) != n
            or not all(isinstance(row, list) and all(_is_int(x) for x in row) for row in scores)
        ):
            raise RecordError(
                f"record final scores must list {n} seats' round points; got {scores!r}"
            )
        if not isinstance(winners, list) or not all(_is_int(s) and 0 <= s < n for s in winners):
            raise RecordError(f"record final winners must be seats 0..{n - 1}; got {winners!r}")
    players = data.get("players")
    if players is not None and (
        not isinstance(players, list)
        or len(players) != n
        or not all(isinstance(p, str) for p in players)
    ):
        raise RecordError(f"record players must list {n} names (one per seat); got {players!r}")
    out = {
        "format": FORMAT,
        "version": version,
        "config": config.to_dict(),
        "seed": seed,
        "actions": list(actions),
        "final": final,
    }
    if players is not None:
        out["players"] = list(players)
    return out


def record_config(record: dict) -> ChickenFootConfig:
    return ChickenFootConfig.from_dict(record["config"])


def replay_config(record: dict) -> ChickenFootConfig:
    """The config a replay runs under: the record's, with `skip_forced` off."""
    # The record lists forced actions too; replaying them one by one needs skip_forced off.
    return record_config(record).replace(skip_forced=False)


@dataclass
class ReplayStep:
    """One state of a replayed game.

    `index` counts the actions applied so far; `action`/`seat` are the action just applied and
    who made it (None/-1 for the opening state). `engine` is the live engine (read it before the
    next step) — or, when `round_over` is set, a copy showing the finished round's table before
    the next deal. `points` are that round's points per seat when `round_over`.
    """

    index: int
    seat: int
    action: int | None
    engine: Engine
    round_over: bool = False
    points: list[int] | None = None


def iter_replay(record: dict) -> Iterator[ReplayStep]:
    """Every state of the recorded game: the opening deal, then the state after each action
    (with an extra `round_over` state showing the finished table whenever a round ends).
    Raises `RecordError` at the first illegal action and if the result differs from `final`."""
    record = validate_record(record)
    engine = Engine(replay_config(record), record["seed"])
    yield ReplayStep(0, -1, None, engine)
    for index, action in enumerate(record["actions"], start=1):
        seat = engine.current
        if engine.game_over:
            raise RecordError(
                f"record action #{index - 1} ({action}) comes after the end of the game"
            )
        view = round_end_view(engine, action)
        try:
            finished = engine.step(action)
        except IllegalActionError as err:
            raise RecordError(f"record action #{index - 1} does not replay: {err}") from err
        if view is not None:
            yield ReplayStep(index, seat, action, view, True, finished[0])
        last = bool(finished) and engine.game_over
        yield ReplayStep(index, seat, action, engine, last, finished[-1] if last else None)
    _check_final(record, engine)


def replay_engine(record: dict) -> Engine:
    """Re-simulate a record; returns the engine at its end (checked against `final`)."""
    record = validate_record(record)
    engine = Engine(replay_config(record), record["seed"])
    for index, action in enumerate(record["actions"]):
        if engine.game_over:
            raise RecordError(f"record action #{index} ({action}) comes after the end of the game")
        try:
            engine.step(action)
        except IllegalActionError as err:
            raise RecordError(f"record action #{index} does not replay: {err}") from err
    _check_final(record, engine)
    return engine


def _check_final(record: dict, engine: Engine) -> None:
    final = record["final"]
    if final is None:
        return
    if not engine.game_over:
        raise RecordError(
            f"the record claims a finished game, but its {len(record['actions'])} actions end in "
            f"round {engine.round + 1} of {engine.config.num_rounds}"
        )
    if final["scores"] != engine.scores or sorted(final["winners"]) != sorted(engine.winners):
        raise RecordError(
            f"the replay does not reach the recorded result: recorded scores {final['scores']} "
            f"winners {final['winners']}, replayed scores {engine.scores} winners {engine.winners}"
        )


class _NoDealEngine(Engine):
    """An engine whose round end does not deal the next round (`_start_round` is the deal)."""

    __slots__ = ()

    def _start_round(self) -> None:
        pass


def round_end_view(engine: Engine, action: int) -> Engine | None:
    """If `action` ends a round that is not the last, a copy of the engine showing that round's
    finished table (hands, arms, this round's points) instead of the next deal; else None.

    The engine deals the next round inside `step`, so the copy is stepped with its deal
    switched off (`_NoDealEngine`), then shows its own round again.
    """
    if engine.game_over:
        return None
    if engine.round + 1 >= engine.config.num_rounds:
        return None  # the last round: the engine keeps its table at the end of the game
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        return None
    action = int(action)
    mask = engine.legal_action_mask()
    if not (0 <= action < mask.size and mask[action]):
        return None
    view = engine.clone()
    view.__class__ = _NoDealEngine  # same slots, so the copy keeps its state
    if not view._apply(action):
        return None
    view.round -= 1  # _end_round counted the next round, whose deal was skipped
    return view


__all__ = [
    "FORMAT",
    "VERSION",
    "RecordError",
    "ReplayStep",
    "engine_actions",
    "final_of",
    "iter_replay",
    "make_record",
    "read_record",
    "record_config",
    "record_from_engine",
    "replay_config",
    "replay_engine",
    "round_end_view",
    "save_record",
    "write_record",
]
