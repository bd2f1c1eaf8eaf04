"""Text pictures of a game: the table, hand sizes, scores, (optionally) one player's hand, and
readable names for arms and moves.

Arm labels are shared by every picture and by the play CLI: the spinner arms of the centre double
are `A`, `B`, `C`, … in the order they were filled (R7), and the toes of a chicken foot (R9) that
closes arm `B` are `B.1`, `B.2`, `B.3` in the order they were played (so `B.2.1` is a toe of a
foot on toe `B.2`).

Round labels are shared too: `round_number` counts the rounds of the whole game from 1 (in a game
to a target score, where the countdown of doubles restarts, `engine.round` alone cannot), and
`round_label` shows it as "3/10", or "13 (game to 300)" in a game to a target score.
"""

from __future__ import annotations

from pathlib import PurePath

from cf_env.core.actions import DRAW, PASS, decode

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tile_text(pair: tuple[int, int]) -> str:
    return f"{pair[0]}|{pair[1]}"


def _spinner_label(index: int) -> str:
    # Only a snapshot restored without its layout has more than 26 centre arms.
    return _LETTERS[index] if index < len(_LETTERS) else f"Z{index - len(_LETTERS) + 1}"


def arm_labels(engine) -> list[str]:
    """A label per `engine.arms` entry: "A".. for spinner arms, "<parent>.<k>" for toes."""
    labels: list[str] = []
    spinner = 0
    toes: dict[int, int] = {}
    for arm in engine.arms:
        if arm.parent < 0:
            labels.append(_spinner_label(spinner))
            spinner += 1
        else:
            toes[arm.parent] = toes.get(arm.parent, 0) + 1
            labels.append(f"{labels[arm.parent]}.{toes[arm.parent]}")
    return labels


def move_name(engine, action: int, labels: list[str] | None = None) -> str:
    """A readable name for one of the acting seat's legal actions, saying where the tile goes.

    "play 9|4 as toe 2 of 3 on the 9|9 chicken foot", "play 9|3 on an empty spinner arm of the
    9|9 (arm C)", "play 3|5 on the 3 end of arm B.1", "draw from the boneyard (12 left)", "pass".
    The place is the engine's `placement` (R6: the oldest open end of that value).
    """
    tables = engine.tables
    move = decode(tables, action)
    if move.kind == DRAW:
        return f"draw from the boneyard ({len(engine.boneyard)} left)"
    if move.kind == PASS:
        return "pass (keep the drawn tile)" if engine.drawn_tile >= 0 else "pass"
    tile = f"{move.attached}|{move.free_end}"
    foot = "  -- chicken foot!" if tables.is_double[move.tile] else ""
    try:
        where = engine.placement(action)  # the engine's own decision (R6, R7, R9)
    except ValueError:  # not playable now: no place to name
        return f"play {tile} on a {move.attached}{foot}"
    labels = arm_labels(engine) if labels is None else labels
    if where.rule == "R9":  # a toe on the pending foot
        on = labels[where.parent] if 0 <= where.parent < len(labels) else "?"
        value = engine.foot_value
        return (
            f"play {tile} as toe {where.toe} of {engine.config.toes} on the {value}|{value} "
            f"chicken foot (arm {on}.{where.toe})"
        )
    if where.rule == "R7":  # an empty arm of the centre double
        new = _spinner_label(sum(1 for arm in engine.arms if arm.parent < 0))
        return (
            f"play {tile} on an empty spinner arm of the {engine.center}|{engine.center} "
            f"(arm {new}){foot}"
        )
    kind = "toe" if where.parent >= 0 else "arm"  # R6: the oldest open end of that value
    return f"play {tile} on the {move.attached} end of {kind} {labels[where.arm]}{foot}"


def round_number(engine) -> int:
    """The round on the table, counted from 1 over the whole game.

    With fixed rounds it is `round + 1`. With `target_score` the countdown of doubles restarts
    after the double-blank, so `round` is only the place in it (R4); the count comes from the
    rounds scored (`len(scores[0])`): a round in play is the next one, a finished round (at the
    game's end, or a `record.round_end_view`) the last one scored — whichever of the two is at
    `round` in the countdown (they differ: a countdown has at least 7 rounds).
    """
    cfg = engine.config
    if cfg.target_score is None:
        return engine.round + 1
    scored = len(engine.scores[0])
    return scored + 1 if scored % cfg.num_rounds == engine.round else scored


def round_label(engine, of: str = "/") -> str:
    """The round as labels show it: "3/10" (`of` joins the round and the count; " of " gives
    "3 of 10"); in a game to a target score, whose rounds are not counted in advance, the round
    and the target: "13 (game to 300)"."""
    if engine.config.target_score is not None:
        return f"{round_number(engine)} (game to {engine.config.target_score})"
    return f"{round_number(engine)}{of}{engine.config.num_rounds}"


def render_text(engine, viewer: int | None = None) -> str:
    """The table as text. `viewer` is the seat whose hand is shown; None shows no hand."""
    cfg, tables = engine.config, engine.tables
    labels = arm_labels(engine)
    lines = [
        f"round {round_label(engine)}  centre {engine.center}|{engine.center}"
        f"  boneyard {len(engine.boneyard)}"
        + ("  GAME OVER" if engine.game_over else f"  to act: player_{engine.current}")
    ]
    for index, arm in enumerate(engine.arms):
        root = "centre" if arm.parent == -1 else f"foot on arm {labels[arm.parent]}"
        chain = " ".join(f"[{a}|{tables.other_end(t, a)}]" for t, a in arm.tiles) or "(no tiles)"
        tip = "closed (foot)" if arm.tip < 0 and arm.tiles else f"open {arm.tip}"
        lines.append(f"  arm {labels[index]} from {root}: {chain}  -> {tip}")
    if engine.spinner_empty:
        lines.append(f"  empty spinner arms: {engine.spinner_empty} (R7: fill these first)")
    if engine.foot_value >= 0:
        lines.append(
            f"  CHICKEN FOOT on {engine.foot_value}: {engine.toes_left} toe(s) owed (R9)"
        )
    totals = engine.totals()
    lines.append(
        "  players: "
        + ", ".join(
            f"player_{s} {engine.hand_counts[s]} tiles/{totals[s]} pts" for s in range(cfg.num_players)
        )
    )
    if viewer is not None:
        hand = " ".join(tile_text(tables.pairs[t]) for t in engine.hand(viewer))
        lines.append(f"  player_{viewer} hand: {hand}")
        if engine.drawn_tile >= 0 and engine.current == viewer:
            lines.append(f"  just drew: {tile_text(tables.pairs[engine.drawn_tile])}")
    if engine.game_over:
        lines.append(f"  winners: {', '.join(f'player_{s}' for s in engine.winners)}")
    return "\n".join(lines)


PANEL_NAME = 20  # characters of a player's name shown in a picture's panel


def short_name(name: str, most: int = PANEL_NAME) -> str:
    """A player name short enough for a picture's panel ("ppo:runs/x/ckpt" -> "ppo:ckpt")."""
    kind, _, arg = name.partition(":")
    if len(name) > most and kind == "ppo" and arg:
        name = f"ppo:{PurePath(arg).name}"
    return name if len(name) <= most else name[: most - 1] + "…"


def seat_label(seat: int, name: str | None, most: int | None = None) -> str:
    """How pictures and replays name a seat: "player_1 (greedy)", or "player_1" without a name;
    `most` shortens the name (`short_name`). The seat number keeps seats that play the same
    spec apart (three copies of one checkpoint)."""
    if not name:
        return f"player_{seat}"
    return f"player_{seat} ({short_name(name, most) if most else name})"
