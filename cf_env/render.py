"""Text pictures of a game: the table, hand sizes, scores, and (optionally) one player's hand."""

from __future__ import annotations


def tile_text(pair: tuple[int, int]) -> str:
    return f"{pair[0]}|{pair[1]}"


def render_text(engine, viewer: int | None = None) -> str:
    """The table as text. `viewer` is the seat whose hand is shown; None shows no hand."""
    cfg, tables = engine.config, engine.tables
    lines = [
        f"round {engine.round + 1}/{cfg.num_rounds}  centre {engine.center}|{engine.center}"
        f"  boneyard {len(engine.boneyard)}"
        + ("  GAME OVER" if engine.game_over else f"  to act: player_{engine.current}")
    ]
    for index, arm in enumerate(engine.arms):
        if arm.parent == -1:
            root = "centre"
        else:
            root = f"foot on arm {arm.parent}"
        chain = " ".join(f"[{a}|{tables.other_end(t, a)}]" for t, a in arm.tiles) or "(no tiles)"
        tip = "closed (foot)" if arm.tip < 0 and arm.tiles else f"open {arm.tip}"
        lines.append(f"  arm {index} from {root}: {chain}  -> {tip}")
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
