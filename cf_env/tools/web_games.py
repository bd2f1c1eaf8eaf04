"""The games of the web app (`cf_env.tools.serve`), without the web: what a browser session can
hold, what each request does to it, and what each response shows. No HTTP here; the app turns
`WebError` into a 4xx response and every view into JSON.

Three kinds of game, each with a `version` (the number of actions applied, or the replay's
frame) that every change must name, so that a stale or replayed request changes nothing:

* `PlayGame`: a human at one seat against policy specs at the others (the arena plays them,
  as in the terminal game `cf_env.tools.play`, whose option rules it shares: a checkpoint's card
  gives the rules). Its `view` is built from the human's hand and public information only:
  the table drawn for that seat, the human's legal moves, public events, and — once a round is
  over — that round's hands and points (R12). The seed and the deal order are never in it
  until the game is over (the record then offered holds the seed).
* `WatchGame`: policies at every seat, stepped one decision at a time; a spectator view, every
  hand shown.
* `ReplayGame`: a game record (`cf_env.viz.record`), stepped back and forth frame by frame.

`GameStore` bounds what the server keeps: at most `max_games` live games, `per_session` per
browser (a browser's oldest game goes when it starts one more), each expiring after `idle_s`
seconds unused; each game's own memory is bounded (the engine, a log of `LOG_LINES` lines, a
replay record no bigger than the request that brought it).
"""

from __future__ import annotations

import argparse
import json
import secrets
import tempfile
import threading
import time
from collections import deque
from itertools import islice
from pathlib import Path

import numpy as np

from cf_env.agents.arena import Arena, PolicyError
from cf_env.core.actions import DRAW, PASS, decode, describe
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.tools.play import resolve_specs
from cf_env.viz.record import (
    RecordError,
    final_of,
    iter_replay,
    make_record,
    read_record,
    record_config,
    round_end_view,
)
from cf_env.viz.render import move_name, round_label, seat_label, tile_text
from cf_env.viz.replay import frame_caption, seat_names
from cf_env.viz.svg import table_svg

LOG_LINES = 60  # public events a view carries (the latest)
NAME_CHARS = 24  # a seat's name in pictures


class WebError(ValueError):
    """A request the app refuses, the game unchanged: `status` is the HTTP status to answer
    (400 malformed, 404 no such game, 409 stale or out of turn, 413 too big, 422 illegal,
    503 the server is full), the message says what is wrong and what is valid."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------------------- request fields
def _int_field(data: dict, name: str, low: int, high: int, default=None):
    value = data.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WebError(400, f"{name} must be an integer {low}..{high} (or left out); "
                            f"got {json.dumps(value)[:40]}")
    return value


def _str_field(data: dict, name: str, default: str, most: int = 400) -> str:
    value = data.get(name, default)
    if not isinstance(value, str) or not value.strip() or len(value) > most:
        raise WebError(400, f"{name} must be a non-empty string of at most {most} characters")
    return value.strip()


def _check_keys(data: dict, allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise WebError(400, f"unknown field(s) {unknown[:5]}; valid: {sorted(allowed)}")


def _rule_options(data: dict) -> dict:
    return {
        "players": _int_field(data, "players", 2, 8),
        "max_pips": _int_field(data, "max_pips", 6, 18),
        "spinner_arms": _int_field(data, "spinner_arms", 4, 6),
        "rounds": _int_field(data, "rounds", 1, 19),
        "seed": _int_field(data, "seed", 0, 2**63 - 1),
    }


RULE_FIELDS = {"players", "max_pips", "spinner_arms", "rounds", "seed", "variants"}
# The rule variants a form may set (`ChickenFootConfig` checks their values).
VARIANTS = ("hand_size", "toes", "draw_until_playable", "must_play_drawn", "double_blank_value",
            "start_search", "target_score", "tie_break")


def _variants(data: dict) -> dict:
    variants = data.get("variants") or {}
    if not isinstance(variants, dict) or len(variants) > len(VARIANTS):
        raise WebError(400, f"variants must be an object of rule variants: {list(VARIANTS)}")
    for name, value in variants.items():
        if name not in VARIANTS:
            raise WebError(400, f"unknown variant {name[:40]!r}; valid: {list(VARIANTS)} "
                                "(players, set, spinner arms and rounds have their own fields)")
        if value is not None and not isinstance(value, (bool, int, str)):
            raise WebError(400, f"variant {name} must be a number, true/false or a word")
    return variants


def _build(opponents: str, seat: int, rules: dict, watch: bool, variants: dict):
    """(config, specs per seat, seed) from the form, by the terminal game's rules (a checkpoint's
    card gives the rules it was trained for); `ValueError`s become 400s naming the problem."""
    args = argparse.Namespace(opponents=opponents, seat=seat, image=None, record=None,
                              **{k: v for k, v in rules.items() if k != "variants"})
    if watch and args.players is None:
        # Watch lists a spec per seat (one seat is the "human" for the terminal game's rules).
        count = len([s for s in opponents.split(",") if s.strip()])
        args.players = count if count > 1 else 4
    try:
        specs = resolve_specs(args)
        config = ChickenFootConfig(
            max_pips=args.max_pips, num_players=args.players, num_rounds=args.rounds,
            spinner_arms=args.spinner_arms, **{**args.card_rules, **variants},
        )
    except (ValueError, OSError, KeyError, TypeError) as err:
        raise WebError(400, str(err).replace("--", "")) from err
    return config, specs, args.seed


def _policies(config, specs_by_seat: list[str | None], seed: int) -> list:
    from cf_env.agents.policies import load_policy

    seeds = np.random.SeedSequence(seed).generate_state(config.num_players)
    policies = []
    for seat, spec in enumerate(specs_by_seat):
        if spec is None:
            policies.append(None)
            continue
        try:
            policies.append(load_policy(spec, config, seed=int(seeds[seat])))
        except Exception as err:  # a bad spec, a missing checkpoint: say which
            raise WebError(400, f"cannot build the policy {spec!r}: {err}") from err
    return policies


def rule_broken(engine: Engine, action: int) -> str:
    """The rule an illegal action of the acting seat breaks, in words (R6-R9), for a reader."""
    cfg, tables = engine.config, engine.tables
    draw = cfg.draw_action
    if not 0 <= action < cfg.num_actions:
        return f"there is no action {action} (0..{cfg.num_actions - 1})"
    if action == draw:
        return ("R8: you may draw only when you cannot place a tile and the boneyard is not "
                "empty")
    if action == draw + 1:
        return "R8: you may pass only after a draw, or when you can neither place nor draw"
    tile = action >> 1
    if tile not in engine.hand(engine.current):
        return f"you do not hold {tile_text(tables.pairs[tile])}"
    if engine.drawn_tile >= 0:
        return "R8: after a draw, only the drawn tile may be placed (or pass)"
    if engine.foot_value >= 0:
        value = engine.foot_value
        return (f"R9: the chicken foot on {value}|{value} gets its toes first: play a tile "
                f"with a {value}")
    if engine.spinner_empty:
        return (f"R7: every arm of the centre {engine.center}|{engine.center} gets a tile "
                f"first: play a tile with a {engine.center}")
    if tables.is_double[tile] and action & 1:
        return "a double is played by its first action id (2t); 2t + 1 is never legal"
    return (f"R6: a tile attaches to an open end of the same value (open: "
            f"{engine.playable_values()})")


# ---------------------------------------------------------------------------- games
class WebGame:
    """What every game of the store has: an id, the session that owns it, a lock, when it was
    last used, and a `version` that each change must name."""

    kind = "?"

    def __init__(self, session: str):
        self.id = secrets.token_urlsafe(9)
        self.session = session
        self.lock = threading.Lock()
        self.used = time.monotonic()

    def check_version(self, data: dict) -> None:
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise WebError(400, f"version must be the integer the last view gave "
                                f"(now {self.version})")
        if version != self.version:
            raise WebError(409, f"stale request: it names version {version}, the game is at "
                                f"version {self.version} (reload the game)")


class TableGame(WebGame):
    """A game the server plays (Play or Watch): the engine, the arena, the public log."""

    def __init__(self, session: str, config, names: list[str], policies: list, seed: int):
        super().__init__(session)
        self.config, self.names, self.seed = config, names, seed
        self.engine = Engine(config, seed)
        self.arena = Arena(self.engine, policies, names, wrap_errors=True)
        self.arena.reset_policies()
        self.log: deque[str] = deque(maxlen=LOG_LINES)
        self.rounds: list[dict] = []  # each finished round: points, hands left, how it ended
        self.last_round_svg: str | None = None
        self.failed: str | None = None
        self.log.append(self._round_start())

    @property
    def version(self) -> int:
        return len(self.engine.history)

    def label(self, seat: int) -> str:
        return seat_label(seat, self.names[seat], NAME_CHARS)

    def _round_start(self) -> str:
        e = self.engine
        sets = "set" if self.label(e.start_seat) == "you" else "sets"
        plays = "play" if self.label(e.current) == "you" else "plays"
        return (f"Round {round_label(e, ' of ')}: {self.label(e.start_seat)} {sets} "
                f"{e.center}|{e.center}; {self.label(e.current)} {plays} first.")

    def apply(self, action: int, reveal_view: bool) -> None:
        """Apply one legal action and log it as the table saw it."""
        e = self.engine
        seat = e.current
        move = decode(e.tables, action)
        if move.kind == DRAW:
            text = "draws a tile"
        elif move.kind == PASS:
            text = "passes"
        else:
            text = move_name(e, action)
        view = round_end_view(e, action)
        finished = e.step(action)
        self.log.append(f"{self.label(seat)}: {text}")
        for points in finished:
            ended = view if view is not None else e  # the last round: the engine keeps it
            self._round_over(ended, points)
            if not e.game_over:
                self.log.append(self._round_start())
        del reveal_view

    def _round_over(self, ended: Engine, points: list[int]) -> None:
        pairs = ended.tables.pairs
        out = [s for s in range(self.config.num_players) if ended.hand_counts[s] == 0]
        how = f"{self.label(out[0])} went out" if out else "nobody could play (blocked)"
        hands = [[tile_text(pairs[t]) for t in ended.hand(s)] for s in range(len(points))]
        self.rounds.append({"round": round_label(ended, " of "), "how": how,
                            "points": list(points), "hands": hands})
        self.log.append(f"Round {round_label(ended, ' of ')} over: {how}. Points (R12): "
                        + ", ".join(f"{self.label(s)} {p}" for s, p in enumerate(points)))
        self.last_round_svg = table_svg(ended, reveal=True, names=self.names,
                                        caption=f"Round {round_label(ended, ' of ')} over")

    def bot_move(self) -> None:
        """The acting seat's policy decides one move; a failing policy ends the game's play."""
        try:
            action = self.arena.decide()
        except PolicyError as err:
            self.failed = str(err)
            raise WebError(409, f"the game cannot go on: {err}") from err
        self.apply(action, False)

    def common(self) -> dict:
        e = self.engine
        totals = e.totals()
        data = {
            "kind": self.kind, "id": self.id, "version": self.version,
            "names": [self.label(s) for s in range(self.config.num_players)],
            "round": round_label(e, " of "), "to_act": None if e.game_over else e.current,
            "scores": [list(r) for r in e.scores], "totals": totals,
            "hand_counts": e.hand_counts, "boneyard": len(e.boneyard),
            "log": list(self.log), "rounds": self.rounds, "last_round_svg": self.last_round_svg,
            "over": e.game_over, "failed": self.failed,
            "rules": {"players": self.config.num_players, "max_pips": self.config.max_pips,
                      "spinner_arms": self.config.spinner_arms,
                      "rounds": self.config.num_rounds,
                      "target_score": self.config.target_score},
        }
        if e.game_over:
            data["winners"] = e.winners
            data["result"] = "Game over. Won by " + ", ".join(self.label(s) for s in e.winners)
            data["record"] = make_record(self.config, self.seed, [a for _r, _s, a in e.history],
                                         final_of(e), self.names)
        return data


class PlayGame(TableGame):
    """A human at `seat` against policies: the view shows only what that seat may see."""

    kind = "play"

    def __init__(self, session: str, data: dict):
        _check_keys(data, RULE_FIELDS | {"opponents", "seat"})
        opponents = _str_field(data, "opponents", "greedy")
        seat = _int_field(data, "seat", 0, 7, 0)
        config, specs, seed = _build(opponents, seat, _rule_options(data), watch=False,
                                     variants=_variants(data))
        others = iter(specs)
        by_seat = [None if s == seat else next(others) for s in range(config.num_players)]
        names = ["you" if s == seat else by_seat[s] for s in range(config.num_players)]
        self.seat = seat
        super().__init__(session, config, names, _policies(config, by_seat, seed), seed)
        self.run_bots()

    def label(self, seat: int) -> str:
        return "you" if seat == self.seat else super().label(seat)

    def run_bots(self) -> None:
        """Opponents move until it is the human's turn or the game is over."""
        e = self.engine
        while not e.game_over and e.current != self.seat and self.failed is None:
            self.bot_move()

    def move(self, data: dict) -> None:
        _check_keys(data, {"action", "version"})
        self.check_version(data)
        e = self.engine
        if e.game_over:
            raise WebError(409, "the game is over: start a new one")
        if self.failed is not None:
            raise WebError(409, f"the game cannot go on: {self.failed}")
        action = data.get("action")
        if isinstance(action, bool) or not isinstance(action, int):
            raise WebError(400, f"action must be an integer action id; got "
                                f"{json.dumps(action)[:40]}")
        problem = e.action_problem(action)
        if problem is not None:
            raise WebError(422, f"illegal move: {rule_broken(e, action)}. {problem}")
        drew = decode(e.tables, action).kind == DRAW
        self.apply(action, False)
        if drew and e.drawn_tile >= 0 and e.current == self.seat:
            self.log.append(f"you drew {tile_text(e.tables.pairs[e.drawn_tile])}")
        self.run_bots()

    def view(self) -> dict:
        e = self.engine
        data = self.common()
        data["seat"] = self.seat
        mine = not e.game_over and e.current == self.seat and self.failed is None
        legal = e.legal_actions() if mine else []
        by_tile: dict[int, list[int]] = {}
        for action in legal:
            if action < e.config.draw_action:
                by_tile.setdefault(action >> 1, []).append(action)
        clicks = {tile: acts[0] for tile, acts in by_tile.items() if len(acts) == 1}
        data["moves"] = [{"action": a, "name": move_name(e, a)} for a in legal]
        data["your_turn"] = mine
        data["svg"] = table_svg(e, None if e.game_over else self.seat, reveal=e.game_over,
                                names=self.names, actions=clicks)
        return data


class WatchGame(TableGame):
    """Policies at every seat, one decision per step; every hand shown (a spectator)."""

    kind = "watch"

    def __init__(self, session: str, data: dict):
        _check_keys(data, RULE_FIELDS | {"players_specs"})
        listed = _str_field(data, "players_specs", "greedy,heuristic,random,greedy")
        specs = [s.strip() for s in listed.split(",")]
        rules = _rule_options(data)
        # The terminal game's rules read seat 0 as the human: give it the first spec too.
        config, others, seed = _build(",".join(specs[1:] or specs), 0,
                                      {**rules, "players": rules["players"] or
                                       (len(specs) if len(specs) > 1 else None)}, watch=True,
                                      variants=_variants(data))
        by_seat = [specs[0], *others]
        super().__init__(session, config, by_seat, _policies(config, by_seat, seed), seed)

    def step(self, data: dict) -> None:
        _check_keys(data, {"version"})
        self.check_version(data)
        if self.engine.game_over:
            raise WebError(409, "the game is over: start a new one")
        if self.failed is not None:
            raise WebError(409, f"the game cannot go on: {self.failed}")
        self.bot_move()

    def view(self) -> dict:
        e = self.engine
        data = self.common()
        data["svg"] = table_svg(e, reveal=True, names=self.names)
        return data


class ReplayGame(WebGame):
    """A game record, frame by frame (`cf_env.viz.record.iter_replay`), every hand shown."""

    kind = "replay"

    def __init__(self, session: str, text: str, game: int | None):
        super().__init__(session)
        with tempfile.TemporaryDirectory() as folder:  # the record reader's checks, bounds too
            path = Path(folder) / "record.json"
            path.write_text(text, encoding="utf-8")
            try:
                self.record = read_record(path, game=game)
                self.frames = sum(1 for _ in iter_replay(self.record))
            except RecordError as err:
                raise WebError(400, f"not a game record this app can replay: {err}") from err
        self.names = seat_names(self.record, NAME_CHARS)  # "player_1 (greedy)"
        players = self.record.get("players")
        self.players = [str(p) for p in players] if players else None  # the pictures' names
        self.config = record_config(self.record)
        self.frame = 0
        self._steps = None  # a live iterator at `_at` (stepping forward is one step)
        self._at = -1
        self._step = None

    @property
    def version(self) -> int:
        return self.frame

    def goto(self, data: dict) -> None:
        _check_keys(data, {"frame", "version"})
        self.check_version(data)
        frame = data.get("frame")
        if isinstance(frame, bool) or not isinstance(frame, int) or not 0 <= frame < self.frames:
            raise WebError(400, f"frame must be an integer 0..{self.frames - 1}")
        self.frame = frame

    def _state(self):
        if self._steps is None or self.frame < self._at:
            self._steps, self._at = iter_replay(self.record), -1
        if self.frame > self._at:
            self._step = next(islice(self._steps, self.frame - self._at - 1, None))
            self._at = self.frame
        return self._step

    def view(self) -> dict:
        step = self._state()
        e = step.engine
        caption = frame_caption(step, self.names)
        move = None
        if step.action is not None:
            move = f"{self.names[step.seat]}: {describe(e.tables, step.action)}"
        return {
            "kind": self.kind, "id": self.id, "version": self.version, "frame": self.frame,
            "frames": self.frames, "names": self.names, "round": round_label(e, " of "),
            "move": move, "caption": caption, "totals": e.totals(), "over": e.game_over,
            "svg": table_svg(e, reveal=True, names=self.players, caption=caption),
        }


# ---------------------------------------------------------------------------- the store
class GameStore:
    """The live games, by id, each owned by one browser session; bounded and expiring."""

    def __init__(self, max_games: int = 64, per_session: int = 4, idle_s: float = 1800.0):
        self.max_games, self.per_session, self.idle_s = max_games, per_session, idle_s
        self.games: dict[str, WebGame] = {}
        self.lock = threading.Lock()

    def sweep(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self.lock:
            for gid in [g.id for g in self.games.values() if now - g.used > self.idle_s]:
                del self.games[gid]

    def reserve(self, session: str) -> None:
        """Room for one more game of `session`: its oldest goes past `per_session`; a full
        server refuses (503)."""
        self.sweep()
        with self.lock:
            own = sorted((g for g in self.games.values() if g.session == session),
                         key=lambda g: g.used)
            for old in own[: max(0, len(own) - self.per_session + 1)]:
                del self.games[old.id]
            if len(self.games) >= self.max_games:
                raise WebError(503, f"the server holds {self.max_games} live games, its "
                                    f"limit: try again when one has ended or expired "
                                    f"({self.idle_s:.0f} s idle)")

    def add(self, game: WebGame) -> WebGame:
        with self.lock:
            if len(self.games) >= self.max_games:
                raise WebError(503, f"the server holds {self.max_games} live games, its limit")
            self.games[game.id] = game
        return game

    def get(self, session: str, gid: str) -> WebGame:
        with self.lock:
            game = self.games.get(gid)
        if game is None or game.session != session:  # another browser's game is not found
            raise WebError(404, f"no game {gid[:40]!r} in this browser session (it ended, "
                                f"expired after {self.idle_s:.0f} s idle, or was never made)")
        game.used = time.monotonic()
        return game


__all__ = ["GameStore", "PlayGame", "ReplayGame", "TableGame", "WatchGame", "WebError", "WebGame"]
