"""The table as SVG: the same picture as the PNG renderer (`cf_env.viz.render_image`), from the
same geometry (`cf_env.viz.image_geometry`: `Layout` places every tile and slot, `fit` scales it
to the table area, `canvas_size` sizes the picture), written as SVG text instead of pixels. The
web app (`cf_env.tools.serve`) draws its tables with it, and the env and the engine show it in
Jupyter (`_repr_svg_`).

What is drawn: every tile of the table with its pips (dots up to double-9, coloured digits
above, as in the PNG), the centre double's gold rim, open ends in orange, a pending chicken foot
in red, the last tile played in blue, empty spinner arms and owed toes as dashed slots, arm
labels; beside the table a panel with the round, whose turn it is, the boneyard's size, each
seat's name, tile count and total, and the hands that may be shown: `viewer`'s only, or every
seat's with `reveal` (a finished round or game, or a spectator). Nothing else of the hidden
state is read: a picture for `viewer` depends only on that seat's hand and public information.

Every tile carries ``data-tile="<tile id>"``; a hand tile that `actions` maps to one legal
action carries ``data-action="<action id>"`` too (the web app makes it clickable).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from cf_env.viz.image_geometry import (
    HALF,
    MARGIN_PX,
    MAX_TILE_PX,
    Item,
    Layout,
    canvas_size,
    fit,
    table_px,
)
from cf_env.viz.image_paint import (
    BACKGROUND,
    CENTRE,
    CONNECT,
    DIM,
    DOTS,
    FOOT,
    LAST,
    OPEN,
    PIP_COLOURS,
    TABLE_LINE,
    TEXT,
    TILE,
    TILE_EDGE,
)
from cf_env.viz.render import round_label, seat_label

HAND_TILE = 44  # pixels: the length of a hand tile in the panel


def _rgb(colour: tuple[int, int, int]) -> str:
    red, green, blue = colour
    return f"#{red:02x}{green:02x}{blue:02x}"


def _points(points) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


class _Writer:
    """Turns placed items (table units) into SVG elements: `px` pixels per unit, origin (ox, oy)."""

    def __init__(self, px: float, ox: float, oy: float, max_pips: int):
        self.px, self.ox, self.oy = px, ox, oy
        self.dots = max_pips <= 9 and px * HALF >= 18
        self.parts: list[str] = []

    def pt(self, x: float, y: float) -> tuple[float, float]:
        return (self.ox + x * self.px, self.oy + y * self.px)

    def poly(self, corners, **attrs) -> str:
        extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
        return f'<polygon points="{_points(self.pt(x, y) for x, y in corners)}"{extra}/>'

    def halo(self, item: Item, colour, grow: float, shift: float = 0.0, along=None) -> str:
        ux, uy = math.sin(item.angle), -math.cos(item.angle)
        bigger = Item(item.x + ux * shift, item.y + uy * shift, item.angle,
                      (along if along is not None else item.along) + grow, item.across + grow)
        return self.poly(bigger.corners(), fill=_rgb(colour))

    def tile(self, item: Item, tile: int | None = None) -> None:
        flags, out = item.flags, []
        if "centre" in flags:
            out.append(self.halo(item, CENTRE, 0.24))
        if "pending" in flags:
            out.append(self.halo(item, FOOT, 0.22))
        elif "open" in flags:  # only the open (outer) half glows
            out.append(self.halo(item, OPEN, 0.16, item.along / 4, item.along / 2))
        if "last" in flags:
            out.append(self.halo(item, LAST, 0.12))
        line = max(1.0, self.px / 40)
        out.append(self.poly(item.corners(), fill=_rgb(TILE), stroke=_rgb(TILE_EDGE),
                             stroke_width=f"{line:.1f}"))
        ux, uy = math.sin(item.angle), -math.cos(item.angle)
        vx, vy = -uy, ux
        if item.along >= item.across:  # halves inner/outer along the ray
            a, b = item.along / 4, item.across / 2 * 0.88
            halves = [(-a * ux, -a * uy), (a * ux, a * uy)]
            d0, d1 = (item.x - b * vx, item.y - b * vy), (item.x + b * vx, item.y + b * vy)
        else:  # a crosswise double: halves side by side across the ray
            a, b = item.across / 4, item.along / 2 * 0.88
            halves = [(-a * vx, -a * vy), (a * vx, a * vy)]
            d0, d1 = (item.x - b * ux, item.y - b * uy), (item.x + b * ux, item.y + b * uy)
        (x0, y0), (x1, y1) = self.pt(*d0), self.pt(*d1)
        out.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" '
                   f'stroke="{_rgb(TILE_EDGE)}" stroke-width="{line:.1f}"/>')
        assert item.values is not None
        for (dx, dy), value in zip(halves, item.values):
            out.append(self.pips(item.x + dx, item.y + dy, item.angle, value))
        name = " ".join(sorted(f for f in flags if ":" not in f))
        values = f"{item.values[0]}|{item.values[1]}"
        data = f' data-tile="{tile}"' if tile is not None else ""
        self.parts.append(f'<g class="tile {name}"{data} data-values="{values}">'
                          + "".join(out) + "</g>")

    def pips(self, x: float, y: float, angle: float, value: int) -> str:
        colour = _rgb(PIP_COLOURS[value % len(PIP_COLOURS)])
        if self.dots:
            ux, uy = math.sin(angle), -math.cos(angle)
            vx, vy = -uy, ux
            step = HALF * 0.29
            radius = max(1.5, self.px * HALF * 0.085)
            out = []
            for c, r in DOTS[value]:
                cx, cy = self.pt(x + step * (c * vx + r * ux), y + step * (c * vy + r * uy))
                out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius:.1f}" '
                           f'fill="{colour}"/>')
            return "".join(out)
        if not value:
            return ""
        cx, cy = self.pt(x, y)
        size = max(6.0, self.px * HALF * 0.7)
        return (f'<text x="{cx:.1f}" y="{cy:.1f}" font-size="{size:.0f}" fill="{colour}" '
                f'text-anchor="middle" dominant-baseline="central" font-weight="bold">'
                f"{value}</text>")

    def slot(self, item: Item) -> None:
        kind = next((f for f in ("toe", "spinner", "end") if f in item.flags), "end")
        value = next(int(f[6:]) for f in item.flags if f.startswith("value:"))
        colour = _rgb(FOOT if kind == "toe" else OPEN)
        dash = max(3.0, self.px / 10)
        cx, cy = self.pt(item.x, item.y)
        self.parts.append(
            f'<g class="slot {kind}">'
            + self.poly(item.corners(), fill="none", stroke=colour,
                        stroke_width=f"{max(2.0, self.px / 40 + 1):.1f}",
                        stroke_dasharray=f"{dash:.1f}")
            + f'<text x="{cx:.1f}" y="{cy:.1f}" font-size="{max(8.0, self.px * 0.3):.0f}" '
            f'fill="{colour}" text-anchor="middle" dominant-baseline="central">{value}</text></g>'
        )

    def label(self, item: Item) -> None:
        """An arm's label beside its first tile (clockwise side)."""
        ux, uy = math.sin(item.angle), -math.cos(item.angle)
        vx, vy = -uy, ux
        clear = item.across / 2 + 0.25
        cx, cy = self.pt(item.x + clear * vx, item.y + clear * vy)
        self.parts.append(
            f'<text class="arm-label" x="{cx:.1f}" y="{cy:.1f}" '
            f'font-size="{max(10.0, self.px * 0.24):.0f}" fill="{_rgb(DIM)}" '
            f'text-anchor="middle" dominant-baseline="central">{escape(item.label)}</text>'
        )


def _hand_tile(x: float, y: float, pair: tuple[int, int], tile: int, action: int | None,
               max_pips: int) -> str:
    """A hand tile, upright, `HAND_TILE` px long, its top-left corner at (x, y)."""
    w, h = HAND_TILE / 2, HAND_TILE
    writer = _Writer(HAND_TILE, x + w / 2, y + h / 2, max_pips)
    writer.dots = max_pips <= 9
    item = Item(0.0, 0.0, 0.0, 1.0, HALF, (pair[0], pair[1]))
    writer.tile(item, tile)
    body = writer.parts[0]
    if action is None:
        return body
    return (f'<g class="move" data-action="{action}" role="button" tabindex="0" '
            f'style="cursor:pointer"><title>play {pair[0]}|{pair[1]}</title>'
            f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="{w + 6:.1f}" height="{h + 6:.1f}" '
            f'rx="3" fill="{_rgb(OPEN)}" opacity="0.55"/>{body}</g>')


def table_svg(
    engine,
    viewer: int | None = None,
    *,
    reveal: bool = False,
    names: Sequence[str] | None = None,
    caption: str | None = None,
    actions: Mapping[int, int] | None = None,
    scale: float = 1.0,
) -> str:
    """The table of `engine` as an SVG document (a string): the table area and the panel.

    `viewer`: the seat whose hand is drawn (None: none), or every seat's with `reveal`;
    `names`: one per seat (default ``player_N``); `caption` replaces the whose-turn line;
    `actions`: tile id -> the legal action a click on that hand tile makes (the web app's).
    """
    cfg = engine.config
    n = cfg.num_players
    if viewer is not None and not (isinstance(viewer, int) and 0 <= viewer < n):
        raise ValueError(f"viewer must be None or a seat 0..{n - 1}; got {viewer!r}")
    if names is not None and len(names) != n:
        raise ValueError(f"names must list {n} names, one per seat; got {len(names)}")
    width, height = canvas_size(cfg, scale)
    table = table_px(cfg, scale)
    layout = Layout(engine)
    px, ox, oy = fit(layout.items, table, MAX_TILE_PX * scale, MARGIN_PX * scale)
    writer = _Writer(px, ox, oy, cfg.max_pips)
    for x0, y0, x1, y1 in layout.links:
        (a, b), (c, d) = writer.pt(x0, y0), writer.pt(x1, y1)
        writer.parts.append(f'<line x1="{a:.1f}" y1="{b:.1f}" x2="{c:.1f}" y2="{d:.1f}" '
                            f'stroke="{_rgb(CONNECT)}" stroke-width="{max(1.0, px / 40):.1f}"/>')
    for item in layout.items:
        if item.label:
            writer.label(item)
    tiles = _item_tiles(engine, layout.items)
    for item, tile in zip(layout.items, tiles):
        if item.values is None:
            writer.slot(item)
        else:
            writer.tile(item, tile)
    panel = _panel(engine, viewer, reveal, names, caption, actions or {}, table, width, height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="cf-table" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="DejaVu Sans, Verdana, sans-serif">'
        f'<rect width="{width}" height="{height}" fill="{_rgb(BACKGROUND)}"/>'
        + "".join(writer.parts)
        + f'<line x1="{table}" y1="0" x2="{table}" y2="{height}" stroke="{_rgb(TABLE_LINE)}" '
        f'stroke-width="2"/>' + panel + "</svg>"
    )


def _item_tiles(engine, items: list[Item]) -> list[int | None]:
    """The tile id of each placed item (None for a slot): items hold only the values."""
    tables = engine.tables
    lookup = {tuple(sorted(map(int, tables.pairs[t]))): t for t in range(len(tables.pairs))}
    return [None if item.values is None else lookup[tuple(sorted(item.values))] for item in items]


def _panel(engine, viewer, reveal, names, caption, actions, left, width, height) -> str:
    cfg, tables = engine.config, engine.tables
    x, y, parts = left + 16, 30, []

    def text(value: str, size: int = 15, colour=TEXT, weight: str = "normal") -> None:
        nonlocal y
        parts.append(f'<text x="{x}" y="{y}" font-size="{size}" fill="{_rgb(colour)}" '
                     f'font-weight="{weight}">{escape(value)}</text>')
        y += size + 8

    text(f"Round {round_label(engine, ' of ')}", 18, weight="bold")
    if engine.game_over:
        text("Game over", 17, CENTRE, "bold")
    if caption is not None:
        text(caption)
    elif not engine.game_over:
        text(f"To act: {seat_label(engine.current, names[engine.current] if names else None, 20)}")
    text(f"Centre {engine.center}|{engine.center}   boneyard {len(engine.boneyard)}", 14, DIM)
    if engine.foot_value >= 0:
        text(f"Chicken foot on {engine.foot_value}: {engine.toes_left} toe(s) owed", 14, FOOT)
    elif engine.spinner_empty:
        text(f"{engine.spinner_empty} empty spinner arm(s): fill first", 14, OPEN)
    totals = engine.totals()
    y += 6
    hands_shown = range(cfg.num_players) if reveal else ([viewer] if viewer is not None else [])
    room = width - x - 12
    per_row = max(1, int(room // (HAND_TILE / 2 + 5)))
    for seat in range(cfg.num_players):
        label = seat_label(seat, names[seat] if names else None, 20)
        colour = LAST if seat == engine.current and not engine.game_over else TEXT
        text(f"{label}: {engine.hand_counts[seat]} tiles, total {totals[seat]}", 14, colour)
        if seat in hands_shown:
            hand = engine.hand(seat)
            for k, tile in enumerate(hand):
                col, row = k % per_row, k // per_row
                parts.append(_hand_tile(x + col * (HAND_TILE / 2 + 5),
                                        y - 8 + row * (HAND_TILE + 8),
                                        tuple(int(v) for v in tables.pairs[tile]), tile,
                                        actions.get(tile) if seat == viewer else None,
                                        cfg.max_pips))
            rows = (len(hand) + per_row - 1) // per_row
            y += rows * (HAND_TILE + 8) + 4
    if engine.game_over and engine.winners:
        who = ", ".join(seat_label(s, names[s] if names else None, 20) for s in engine.winners)
        text(f"Winner: {who}", 15, CENTRE, "bold")
    del height
    return "".join(parts)


def engine_svg(engine) -> str:
    """The picture Jupyter shows for an engine or an env (`_repr_svg_`): the acting seat's hand
    while the game is on, every hand once it is over."""
    if engine.game_over:
        return table_svg(engine, reveal=True)
    return table_svg(engine, viewer=engine.current)


__all__ = ["engine_svg", "table_svg"]
