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
  engine applied, including those it took itself under ``skip_forced`` — so a replay runs
  without ``skip_forced`` (a driver option, never part of ``config``) and applies them one by
  one (forced moves draw nothing from the RNG, so the deals are the same). Records written
  before the driver options left the rules also hold ``reward_mode``, ``skip_forced`` and
  ``illegal_action`` in ``config``; a reader drops them.
* ``final.scores`` is ``engine.scores`` (per seat, the points of each round, R12); ``winners`` the
  R13 winners. ``final`` is null when the game was stopped before its end.
* Version history: 1 — first version. A reader rejects a newer version with a clear message.

**Files.** A record file holds one record (as `save_record` writes it). A *JSON-lines* file holds
several: one record object per line (blank lines ignored), game K (1-based) on the K-th line —
what `training.evaluate --record` writes. `read_record(path, game=K)` reads one game of either
kind, `read_records(path)` every game.

**Bounds.** A reader trusts nothing in a file: bytes that are not UTF-8, JSON nested deeper than a
record nests (`MAX_DEPTH`), numbers with more than `MAX_DIGITS` digits, NaN/Infinity, floats or
out-of-range ints where ints are expected, and more actions than a game of the record's config can
hold (`max_actions`) all raise `RecordError` naming the problem — never a bare `ValueError`,
`RecursionError` or a multi-megabyte message. A game to a `target_score` has no fixed number of
rounds: `max_rounds` bounds them (and caps them, documented, where a round can score nothing).

`write_record` / `record_from_engine` make records, `read_record` / `validate_record` check them,
`replay_engine` re-simulates one (raising `RecordError` if an action is illegal or the result
differs), and `iter_replay` yields every state of the game for rendering, including the finished
table of each round before the next deal.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cf_env.core import atomic
from cf_env.core.actions import IllegalActionError
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.tiles import tile_tables
from cf_env.viz.render import round_label, round_number

FORMAT = "chickenfoot-record"
VERSION = 1
# A record nests at most four containers deep: the record, `final`, `final.scores`, a score row.
MAX_DEPTH = 4
# Longest integer literal a reader parses: 2**128 (the largest seed) has 39 digits. Longer
# literals are refused before Python converts them (a 10**10000 would cost time, then break
# every message that prints it).
MAX_DIGITS = 40
SEED_LIMIT = 2**128  # seeds are 0 <= seed < 2**128: the entropy numpy's SeedSequence keeps
COUNT_LIMIT = 2**63  # scores and seat numbers: non-negative and below 2**63 (an int64)
# A target game whose rounds can score 0 has no bound on its rounds (`max_rounds`): a record may
# hold this many times the rounds that scoring rounds can fill. Reaching it takes more rounds
# that score nothing than rounds that score, each about 1 in 250: no real game comes near.
ZERO_ROUND_FACTOR = 2


class RecordError(ValueError):
    """A game record that is malformed, from an unknown version, or does not replay."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    """A non-negative int below `COUNT_LIMIT` (points, seats)."""
    return _is_int(value) and 0 <= value < COUNT_LIMIT


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict = 3, 8, 6
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 30


def _show(value: object) -> str:
    """A short repr for error messages: a broken record may hold huge or deeply nested values."""
    if _is_int(value) and value.bit_length() > 128:
        return f"<an int of {value.bit_length()} bits>"  # repr() itself fails past 4300 digits
    try:
        return _SHORT.repr(value)
    except (ValueError, RecursionError):
        return f"<a {type(value).__name__}>"


def least_round_points(config: ChickenFootConfig) -> int:
    """The fewest points one round can add to the sum of all totals (R12).

    A round ends when a player goes out (every other player still holds a tile: a hand that
    emptied would have ended the round) or when nobody can play (everyone holds one), so at least
    n-1 players hold at least one tile each, all different: the sum of the n-1 lowest-scoring
    tiles of the set. It is 0 only with two players and `double_blank_value` 0 — the loser left
    holding the 0|0 alone, which random play reaches (about 1 round in 250 on double-6).
    """
    points = sorted(tile_tables(config.max_pips).points(config.double_blank_value).tolist())
    return sum(points[: config.num_players - 1])


def max_rounds(config: ChickenFootConfig) -> int:
    """The most rounds a game under `config` can take (what a record's `final.scores` may hold).

    `num_rounds` (R4) — or, with `target_score`, a bound: every round but the last ends with all
    totals at most the target, so the rounds before the last add at most n × target points, each
    at least `least_round_points` m: at most n·target // m + 1 rounds. When m is 0 no number of
    rounds is certain (rounds that score nothing never bring the target closer); records then
    allow `ZERO_ROUND_FACTOR` times the n·target + 1 rounds that scoring rounds can fill, and a
    longer one is refused as a `RecordError` that says so.
    """
    target = config.target_score
    if target is None:
        return config.num_rounds
    least = least_round_points(config)
    if least == 0:
        return ZERO_ROUND_FACTOR * (config.num_players * target + 1)
    return config.num_players * target // least + 1


def max_actions(config: ChickenFootConfig) -> int:
    """The most actions a game under `config` can take; a longer record is refused unread.

    Per round: at most T placements (T tiles) and T draws (each takes a boneyard tile), at most
    one pass per draw (keeping the drawn tile, R8), and at most n-1 passes in a row with an empty
    boneyard before a placement (n passes mean nobody can play: R11 ends the round) — at most
    3T + (n-1)(T+1) <= (n+2)(T+1) actions; times `max_rounds`. Random play reaches about 56% of
    this in a game of fixed rounds (a target game's bound on its rounds is far looser).
    """
    return max_rounds(config) * (config.num_players + 2) * (config.num_tiles + 1)


def _too_long(config: ChickenFootConfig) -> str:
    """Why `max_rounds` is what it is, for the errors that refuse a longer record."""
    if config.target_score is None:
        return f"{config.num_rounds} round(s)"
    rounds = max_rounds(config)
    if least_round_points(config) == 0:
        return (
            f"{rounds} rounds: a round can score 0 here (2 players, double_blank_value 0), so no "
            f"number of rounds is certain and records are capped at {ZERO_ROUND_FACTOR} × "
            f"(players × target_score + 1)"
        )
    return f"{rounds} rounds before a total passes target_score {config.target_score}"


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
        "actions": _plain_ints(list(actions)),
        "final": None if final is None else _final_dict(final),
    }
    if players is not None:
        record["players"] = list(players)
    return validate_record(record)


def _plain_ints(value: object) -> object:
    """numpy integers as Python ints (one list level deep). Anything else is left as it is for
    `validate_record` to judge: int() would truncate a float or fail on NaN."""
    if isinstance(value, (list, tuple)):
        return [int(v) if isinstance(v, np.integer) else v for v in value]
    return int(value) if isinstance(value, np.integer) else value


def _final_dict(final) -> dict:
    if isinstance(final, dict):
        scores = final.get("scores", [])
        return {
            "scores": [_plain_ints(row) for row in scores]
            if isinstance(scores, (list, tuple))
            else scores,
            "winners": _plain_ints(final.get("winners", [])),
        }
    raise RecordError(
        f"final must be None or {{'scores': ..., 'winners': ...}}; got {_show(final)}"
    )


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
    atomic.write_text(path, "{\n" + body + "\n}\n")


def _refuse_digits(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise RecordError(
            f"holds a number with {len(text.lstrip('-'))} digits; no field of a record needs more "
            f"than {MAX_DIGITS}"
        )
    return int(text)


def _refuse_constant(name: str) -> None:
    raise RecordError(f"holds {name}, which is not a JSON number (a record holds only ints)")


def _parse(text: str, where: str) -> object:
    """One JSON value, with the reader's bounds (module docstring); `where` names it in errors."""
    try:
        data = json.loads(text, parse_int=_refuse_digits, parse_constant=_refuse_constant)
    except RecordError as err:
        raise RecordError(f"{where} {err}") from None
    except RecursionError:
        raise RecordError(
            f"{where} is nested too deeply to be a record (a record nests {MAX_DEPTH} levels)"
        ) from None
    except ValueError as err:  # JSONDecodeError, or a number Python refuses to convert
        raise RecordError(f"{where} is not JSON: {err}") from None
    return data


def _read_text(path) -> str:
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise RecordError(f"cannot read record {str(path)!r}: {err.strerror or err}") from err
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecordError(
            f"record {str(path)!r} is not UTF-8 text (byte {err.start}: {err.reason}); records "
            "are UTF-8 JSON"
        ) from None


def _games(text: str) -> list[tuple[int, str]] | None:
    """For a JSON-lines file, (line number, text) of each game; None for a one-record file.

    Decided by the layout alone, so that one bad line cannot change how the file is read: a
    JSON-lines file has more than one non-blank line and its first one is a whole object (a
    record file written by `save_record` opens with a line holding only "{").
    """
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) > 1 and lines[0][1].strip().startswith("{") and lines[0][1].strip().endswith("}"):
        return lines
    return None


def _game(path, games: list[tuple[int, str]], game: object) -> dict:
    if not (_is_int(game) and 1 <= game <= len(games)):
        raise RecordError(
            f"{str(path)!r} holds {len(games)} games (one per line); choose one with game=1.."
            f"{len(games)} (`python -m cf_env.viz.replay FILE --game K`); got {_show(game)}"
        )
    number, line = games[game - 1]
    where = f"game {game} of {str(path)!r} (line {number})"
    try:
        return validate_record(_parse(line, where))
    except RecordError as err:
        if str(err).startswith(where):
            raise
        raise RecordError(f"{where}: {err}") from None


def read_record(path, game: int | None = None) -> dict:
    """Read and validate one record. Raises `RecordError` saying what is wrong.

    `path` is a record file or a JSON-lines file of records (module docstring); in the latter,
    `game` (1-based) picks the line, and is required when the file holds more than one game.
    """
    text = _read_text(path)
    games = _games(text)
    if games is None:
        if not (game is None or (_is_int(game) and game == 1)):
            raise RecordError(
                f"record {str(path)!r} holds one game; game must be 1 or None, got {_show(game)}"
            )
        return validate_record(_parse(text, f"record {str(path)!r}"))
    return _game(path, games, game)


def read_records(path) -> list[dict]:
    """Every record in a record file (one) or a JSON-lines file (one per line), validated."""
    text = _read_text(path)
    games = _games(text)
    if games is None:
        return [validate_record(_parse(text, f"record {str(path)!r}"))]
    return [_game(path, games, game) for game in range(1, len(games) + 1)]


def _depth(value: object, limit: int) -> int:
    """How deep containers nest in `value`, counted no further than limit + 1 (so cheap)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def validate_record(data: object) -> dict:
    """Check a record's structure (not yet its replay) and return it with its fields in order."""
    if not isinstance(data, dict):
        raise RecordError(f"a record is a JSON object; got {type(data).__name__}")
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise RecordError(
            f"record nests lists/objects more than {MAX_DEPTH} deep; a record nests at most "
            f"{MAX_DEPTH} (the record, final, final.scores, a score row)"
        )
    if data.get("format") != FORMAT:
        raise RecordError(
            f"not a game record: format is {_show(data.get('format'))}, expected {FORMAT!r}"
        )
    version = data.get("version")
    if not _is_int(version) or version < 1:
        raise RecordError(f"record version must be a positive int; got {_show(version)}")
    if version > VERSION:
        raise RecordError(
            f"record version {_show(version)} is newer than this reader (version {VERSION}); "
            "update chickenfoot to replay it"
        )
    required = ("config", "seed", "actions", "final")
    missing = [key for key in required if key not in data]
    if missing:
        raise RecordError(f"record is missing field(s) {missing}; a record has {list(required)}")
    known = {"format", "version", *required, "players"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise RecordError(
            f"record has unknown field(s) {_show(unknown)}; valid fields: {sorted(known)}"
        )
    if not isinstance(data["config"], dict):
        raise RecordError("record config must be an object of ChickenFootConfig fields")
    try:
        config = ChickenFootConfig.from_dict(data["config"])
    except (TypeError, ValueError) as err:
        raise RecordError(f"record config is invalid: {err}") from err
    seed = data["seed"]
    if not _is_int(seed) or not 0 <= seed < SEED_LIMIT:
        raise RecordError(
            f"record seed must be a non-negative int below 2**128 (the engine seed); got "
            f"{_show(seed)}"
        )
    actions = data["actions"]
    if not isinstance(actions, list):
        raise RecordError(f"record actions must be a list of ints; got {type(actions).__name__}")
    most = max_actions(config)
    if len(actions) > most:
        raise RecordError(
            f"record has {len(actions)} actions; a game of this config holds at most {most} "
            f"({_too_long(config)} of at most (players + 2) × (tiles + 1) actions)"
        )
    for index, action in enumerate(actions):
        if not _is_int(action) or not 0 <= action < config.num_actions:
            raise RecordError(
                f"record action #{index} is {_show(action)}; actions are ints "
                f"0..{config.num_actions - 1}"
            )
    n = config.num_players
    final = data["final"]
    if final is not None:
        if not isinstance(final, dict) or set(final) != {"scores", "winners"}:
            raise RecordError(
                f"record final must be null or {{'scores', 'winners'}}; got {_show(final)}"
            )
        scores, winners = final["scores"], final["winners"]
        rounds = max_rounds(config)
        if (
            not isinstance(scores, list)
            or len(scores) != n
            or not all(
                isinstance(row, list) and len(row) <= rounds and all(map(_is_count, row))
                for row in scores
            )
        ):
            raise RecordError(
                f"record final scores must list {n} seats' round points (up to {rounds} "
                f"non-negative ints each: {_too_long(config)}); got {_show(scores)}"
            )
        if (
            not isinstance(winners, list)
            or len(winners) > n
            or not all(_is_count(s) and s < n for s in winners)
        ):
            raise RecordError(
                f"record final winners must be seats 0..{n - 1}; got {_show(winners)}"
            )
    players = data.get("players")
    if players is not None and (
        not isinstance(players, list)
        or len(players) != n
        or not all(isinstance(p, str) for p in players)
    ):
        raise RecordError(
            f"record players must list {n} names (one per seat); got {_show(players)}"
        )
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
    """The record's rules: the config a replay runs under. The engine replays without
    `skip_forced` (its default): the record lists forced actions too, applied one by one."""
    return ChickenFootConfig.from_dict(record["config"])


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
    engine = Engine(record_config(record), record["seed"])
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
    engine = Engine(record_config(record), record["seed"])
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
        target = engine.config.target_score
        where = f"round {round_label(engine, ' of ')}"
        if target is not None:
            where = f"round {round_number(engine)}, totals {engine.totals()} none past {target}"
        raise RecordError(
            f"the record claims a finished game, but its {len(record['actions'])} actions end in "
            f"{where}"
        )
    if final["scores"] != engine.scores or sorted(final["winners"]) != sorted(engine.winners):
        raise RecordError(
            f"the replay does not reach the recorded result: recorded scores {final['scores']} "
            f"winners {final['winners']}, replayed scores {engine.scores} winners {engine.winners}"
        )


def round_end_view(engine: Engine, action: int) -> Engine | None:
    """If `action` ends a round after which another is dealt, a copy of the engine showing that
    round's finished table (hands, arms, this round's points) instead of the next deal; else
    None — also for the game's last round (R4's last, or with `target_score` the round in which a
    total passed it), whose table the engine itself keeps at the end of the game.

    The copy is stepped with `auto_deal` off, so it stops between rounds (`Engine.deal_next`).
    """
    if engine.action_problem(action) is not None:  # malformed, illegal, or the game is over
        return None
    view = engine.clone()
    view.auto_deal = False
    # Whether the game ends is the engine's to say (`_end_round`): not known before the step.
    view.step(int(action))
    return view if view.between_rounds else None


__all__ = [
    "FORMAT",
    "VERSION",
    "RecordError",
    "ReplayStep",
    "engine_actions",
    "final_of",
    "iter_replay",
    "make_record",
    "least_round_points",
    "max_actions",
    "max_rounds",
    "read_record",
    "read_records",
    "record_config",
    "record_from_engine",
    "replay_engine",
    "round_end_view",
    "save_record",
    "write_record",
]
