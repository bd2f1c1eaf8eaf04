"""The side panel of the table picture (text, hands, legend): round, whose turn, boneyard, every
player's tiles and score, the viewer's hand or every hand with its points (R12), and the legend.
Seats are called `player_N`, or by the caller's names shortened to fit (`Seats`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cf_env.core.actions import PLAY, decode
from cf_env.viz.image_geometry import HALF, Item
from cf_env.viz.image_paint import DIM, FOOT, LAST, OPEN, TEXT, Painter, load_font
from cf_env.viz.render import round_label


class Seats:
    """How the panel names seats: `player_N` (the default labels, never shortened), or the
    caller's names, shortened to the room a line or a table cell leaves. Names equal to the
    defaults (a record without player names) draw exactly the default picture."""

    def __init__(self, names: Sequence[str] | None, viewer: int | None):
        self.names: list[str] | None = None
        if names is not None and list(names) != [f"player_{s}" for s in range(len(names))]:
            # Control characters would break a line or draw as boxes: show them as "?".
            self.names = ["".join(c if c.isprintable() else "?" for c in n) for n in names]
        self.viewer = viewer

    def __call__(self, seat: int, font=None, room: float | None = None) -> str:
        you = " (you)" if seat == self.viewer else ""
        if self.names is None:
            return f"player_{seat}{you}"
        name = self.names[seat]
        if name == "you" or name.endswith("(you)"):  # a name that says it already (cf_env.tools.play's)
            you = ""
        if font is not None and room is not None:
            name = _shorten(name, font, room - font.getlength(you))
        return name + you

    def fits(self, seat: int, font, room: float) -> bool:
        return self.names is None or font.getlength(self(seat)) <= room


def _shorten(text: str, font, room: float) -> str:
    """`text`, or its longest prefix that fits `room` pixels with "…" appended."""
    if font.getlength(text) <= room:
        return text
    lo, hi = 0, len(text)  # binary search: names may be long, measuring text is not free
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if font.getlength(text[:mid].rstrip() + "…") <= room:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"


def draw_panel(draw, engine, seats: Seats, left: int, width, height, scale, caption, reveal) -> None:
    """The side panel: round, whose turn, boneyard, every player's tiles and score, a hand (the
    viewer's) or every hand (`reveal`)."""
    cfg = engine.config
    viewer = seats.viewer
    pad = int(14 * scale)
    x, y = left + pad, pad
    room = width - x - pad
    big, normal, small = load_font(26 * scale), load_font(17 * scale), load_font(14 * scale)
    line = int(23 * scale)

    def text(s: str, font=normal, fill=TEXT) -> None:
        nonlocal y
        for part in _wrap(s, font, room):
            draw.text((x, y), part, fill=fill, font=font)
            y += int(34 * scale) if font is big else line

    text("Chicken Foot", big)
    # "Round 3 of 10", or in a game to a target score "Round 13 (game to 300)".
    text(f"Round {round_label(engine, ' of ')}   centre {engine.center}|{engine.center}")
    text(f"Boneyard: {len(engine.boneyard)} tiles")
    live = not engine.game_over and not caption
    if caption:
        text(caption, fill=OPEN)
    elif engine.game_over:
        won = ", ".join(seats(s, normal, room) for s in engine.winners)
        text("GAME OVER - won by " + won, fill=OPEN)
    else:
        head = "To play: "
        text(head + seats(engine.current, normal, room - normal.getlength(head)), fill=OPEN)
    if engine.spinner_empty and live:
        text(f"Spinner: {engine.spinner_empty} arm(s) empty (R7)", small, DIM)
    if engine.foot_value >= 0 and live:
        v = engine.foot_value
        text(f"Chicken foot on {v}|{v}: {engine.toes_left} toe(s) owed (R9)", small, FOOT)
    last = _last_action_text(engine, seats, small, room)
    if last:
        text(last, small, DIM)
    y += line // 2
    # Given names get the room the narrow tiles/score columns leave; the defaults keep theirs.
    stops = (16, 150, 205) if seats.names is None else (16, 190, 250)
    columns = tuple(x + int(stop * scale) for stop in stops)
    for column, head in zip(columns, ("player", "tiles", "score")):
        draw.text((column, y), head, fill=DIM, font=small)
    y += line
    totals = engine.totals()
    cell = columns[1] - columns[0] - int(8 * scale)
    for seat in range(cfg.num_players):
        acting = live and seat == engine.current
        fill = OPEN if acting or (engine.game_over and seat in engine.winners) else TEXT
        if acting:
            draw.text((x, y), ">", fill=fill, font=normal)
        # A name too long for the cell drops to the small font before it is shortened.
        font = normal if seats.fits(seat, normal, cell) else small
        cells = (seats(seat, font, cell), str(engine.hand_counts[seat]), str(totals[seat]))
        for column, value, cell_font in zip(columns, cells, (font, normal, normal)):
            draw.text((column, y), value, fill=fill, font=cell_font)
        y += line
    legend = int(3 * 19 * scale) + int(10 * scale)
    if reveal:
        y += line // 2
        _all_hands(draw, engine, seats, x, y, room, height - y - pad - legend, scale, normal)
    elif viewer is not None:
        y += line // 2
        text(f"{seats(viewer, normal, room - normal.getlength(' hand:'))} hand:")
        tiles = engine.hand(viewer)
        if not tiles:
            draw.text((x, y), "(empty)", fill=DIM, font=small)
        else:
            size = _hand_size([len(tiles)], room, height - y - pad - legend, 0, scale)
            _hand(draw, engine, viewer, x, y, size)
    # The legend, at the bottom.
    step = int(19 * scale)
    y = height - pad - 3 * step
    legend_rows = (
        (OPEN, "open end / empty arm"),
        (FOOT, "chicken foot: toes owed"),
        (LAST, "last tile"),
    )
    for colour, what in legend_rows:
        draw.rectangle([x, y + 3, x + int(12 * scale), y + int(15 * scale)], fill=colour)
        draw.text((x + int(20 * scale), y), what, fill=DIM, font=small)
        y += step


def _wrap(text: str, font, room: float) -> list[str]:
    """Split a panel line at spaces so that each part fits `room` pixels."""
    parts, current = [], ""
    for word in text.split(" "):
        trial = f"{current} {word}" if current else word
        if current and font.getlength(trial) > room:
            parts.append(current)
            current = word
        else:
            current = trial
    return parts + [current]


def _last_action_text(engine, seats: Seats, font, room: float) -> str:
    if not engine.history:
        return ""
    rnd, seat, action = engine.history[-1]
    if rnd != engine.round and not engine.game_over:
        return ""
    move = decode(engine.tables, action)
    if move.kind == PLAY:
        what = f"played {move.attached}|{move.free_end}"
    else:
        what = "drew" if move.kind == "draw" else "passed"
    # The name gets what the rest leaves of one line.
    who = seats(seat, font, room - font.getlength(f"last:  {what}"))
    return f"last: {who} {what}"


@dataclass(frozen=True)
class _HandSize:
    length: int  # tile length in pixels
    gap: int
    per_row: int


def _hand_size(
    counts: list[int], room_w: int, room_h: int, label_h: int, scale: float
) -> _HandSize:
    """The largest tile size (up to 44 px long at scale 1) at which hands of `counts` tiles, each
    under a `label_h` label line, fit room_w × room_h; the smallest size when none does."""
    # (The loop always runs: scale >= SCALES[0] makes int(44 * scale) >= 11.)
    for length in range(int(44 * scale), 9, -2):
        gap = max(3, length // 8)
        per_row = max(1, int((room_w + gap) // (length / 2 + gap)))
        rows = sum(label_h + math.ceil(count / per_row) * (length + gap) for count in counts)
        if rows <= room_h:
            break
    return _HandSize(length, gap, per_row)


def _hand(draw, engine, seat: int, x: int, y: int, size: _HandSize) -> int:
    """A seat's tiles, upright, wrapped to the panel; the tile just drawn glows blue. Returns
    the y below them."""
    tiles = engine.hand(seat)
    length, gap, per_row = size.length, size.gap, size.per_row
    w = length / 2
    painter = Painter(draw, length, 0, 0, engine.config.max_pips)
    for k, tile in enumerate(tiles):
        row, col = divmod(k, per_row)
        cx = x + col * (w + gap) + w / 2
        cy = y + row * (length + gap) + length / 2
        lo, hi = engine.tables.pairs[tile]
        flags = (
            frozenset({"last"})
            if tile == engine.drawn_tile and engine.current == seat
            else frozenset()
        )
        painter.tile(Item(cx / length, cy / length, 0.0, 1.0, HALF, (lo, hi), flags))
    return y + math.ceil(len(tiles) / per_row) * (length + gap)


def _all_hands(draw, engine, seats: Seats, x, y, room_w, room_h, scale, font) -> None:
    """Every seat's hand under a line with its name and the points it scores (R12: the pips
    left, the double-blank counting `double_blank_value`); "out" for an empty hand."""
    line = int(23 * scale)
    hands = [engine.hand(seat) for seat in range(engine.config.num_players)]
    size = _hand_size([len(tiles) for tiles in hands], room_w, room_h, line, scale)
    for seat, tiles in enumerate(hands):
        points = int(engine.points[tiles].sum()) if tiles else 0
        tail = f": {points} points" if tiles else ": out"
        name = seats(seat, font, room_w - font.getlength(tail))
        draw.text((x, y), name + tail, fill=TEXT, font=font)
        y = _hand(draw, engine, seat, x, y + line, size)

