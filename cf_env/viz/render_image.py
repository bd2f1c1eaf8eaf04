"""Pictures of the table (`render_mode="rgb_array"`): `render_rgb(engine, viewer)` draws it with
Pillow and returns an ``H×W×3 uint8`` array; `render_image` returns the `PIL.Image`.

What is drawn: the start double in the middle with its spinner arms (a cross for 4 arms, a star
for 6; R7), every arm's tiles with their pips, each chicken foot (R9) as a double laid crosswise
with its toes fanning away from the centre, empty spinner arms and owed toes as dashed slots, open
ends outlined in orange, a pending foot in red, the last tile played in blue; beside the table
the round, whose turn it is, the boneyard size, every player's hand size and score, and — only
for `viewer` — that player's hand, or with `reveal=True` every seat's hand and the points it
scores (R12; for finished rounds and games). Seats are called `player_N`, or by `names` (one per
seat, shortened to fit the panel). Arm labels (A, B, B.2, …) and the round ("Round 3 of 10", or
"Round 13 (game to 300)" with a target score) are those of `render.arm_labels` and `round_label`.
`scale` is 0.25..2 (`SCALES`): below it hand tiles are unreadable specks, above it one frame of a
double-18 table is over 40 MB.

Layout. The table is a tree: spinner arms start at the centre double; an arm that ends in a
chicken-foot double has its toes as children. Every arm is a straight ray *from the centre* and
every subtree owns an angular range (the spinner arms split the full turn evenly, a foot splits
its arm's range among its toes). A tile at radius r needs an angle of about its width / r, so a
subtree fits its range once it starts far enough out; toes that do not fit are pushed outwards
(and joined to their double by a thin line). Because every tile lies inside its own range, no two
tiles overlap however long the arms grow. The whole layout is then scaled to the table area.

The canvas size depends only on the config (bigger sets get a bigger table area), so every frame
of a game has the same size (video recorders need that); tiles shrink only when a table would
not fit at the largest tile size. Pips are dots up to double-9 while tiles are large enough, and
coloured digits otherwise. Only Pillow's bundled default font is used.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from cf_env.core.actions import PLAY, decode
from cf_env.viz.render import arm_labels, round_label

# Geometry in tile units: a tile is 1 long and HALF wide (each half a HALF×HALF square).
HALF = 0.5
GAP = 0.07  # between consecutive tiles of an arm
SIDE_GAP = 0.18  # between neighbouring arms (room for the open-end glow)
HUB = 0.62  # radius where spinner arms start (clears the corners of the centre double)
TOE_LEAN = 0.6  # radians the outer toes of a foot lean away from their arm's direction

MAX_TILE_PX = 64  # tile length in pixels when everything fits
PANEL_PX = 330
MARGIN_PX = 16
SCALES = (0.25, 2.0)  # the valid `scale` range (see the module docstring)

BACKGROUND = (22, 92, 56)  # card-table green
TABLE_LINE = (48, 122, 84)
TILE = (250, 246, 232)
TILE_EDGE = (40, 40, 40)
TEXT = (240, 240, 240)
DIM = (170, 200, 180)
OPEN = (255, 166, 0)
FOOT = (230, 40, 40)
LAST = (60, 140, 255)
CONNECT = (205, 225, 210)
CENTRE = (212, 175, 55)  # the start double's gold rim

# Pip colours per value, as real double-12+ sets colour their pips; 0 (blank) is never drawn.
PIP_COLOURS = (
    (120, 120, 120),
    (30, 110, 200),
    (30, 140, 60),
    (200, 40, 40),
    (120, 60, 20),
    (20, 20, 20),
    (220, 120, 0),
    (140, 40, 160),
    (0, 130, 130),
    (40, 40, 120),
    (170, 20, 90),
    (90, 110, 20),
    (200, 60, 150),
    (70, 70, 70),
    (0, 90, 160),
    (150, 90, 0),
    (100, 0, 0),
    (0, 100, 60),
    (80, 0, 140),
)

# Dot patterns on a 3×3 grid (column, row in -1..1), the usual domino faces.
_GRID = [(c, r) for r in (-1, 0, 1) for c in (-1, 0, 1)]
DOTS = {
    0: [],
    1: [(0, 0)],
    2: [(-1, -1), (1, 1)],
    3: [(-1, -1), (0, 0), (1, 1)],
    4: [(-1, -1), (1, -1), (-1, 1), (1, 1)],
    5: [(-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)],
    6: [(-1, -1), (-1, 0), (-1, 1), (1, -1), (1, 0), (1, 1)],
    7: [(-1, -1), (-1, 0), (-1, 1), (0, 0), (1, -1), (1, 0), (1, 1)],
    8: [p for p in _GRID if p != (0, 0)],
    9: _GRID,
}


@lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    size = max(6, int(size))
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 (or no FreeType): the fixed bitmap font
        return ImageFont.load_default()


@lru_cache(maxsize=1024)
def _glyph(text: str, size: int) -> tuple[Image.Image, int, int]:
    """A text's mask and its offset from the centre point (anchor "mm")."""
    font = _font(size)
    left, top, right, bottom = font.getbbox(text, anchor="mm")
    mask = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
    ImageDraw.Draw(mask).text((-left, -top), text, fill=255, font=font, anchor="mm")
    return mask, left, top


def canvas_size(config, scale: float = 1.0) -> tuple[int, int]:
    """(width, height) in pixels of every picture of a game under `config`."""
    table = _table_px(config, scale)
    return table + int(PANEL_PX * scale), table


def _table_px(config, scale: float) -> int:
    # About 80 px per pip value of the set: 960 for double-9, 1440 for double-15.
    return int(80 * (config.max_pips + 3) * scale)


# ---------------------------------------------------------------------------------- layout
@dataclass
class _Node:
    """An arm of the tree, or a dashed slot (an empty spinner arm, an owed toe, a bare end)."""

    arm: int  # index into engine.arms; -1 for a slot
    tiles: list[tuple[int, int]]  # (tile id, attached value), inner end first
    foot: bool = False  # the last tile is a chicken-foot double (drawn crosswise)
    slot: str = ""  # "spinner", "toe" or "end" for a slot
    value: int = -1  # a slot's required value
    children: list[_Node] = field(default_factory=list)


@dataclass
class _Item:
    """One drawn rectangle in table units: centre, ray direction, extents along/across it."""

    x: float
    y: float
    angle: float  # radians clockwise from north (image y grows downwards)
    along: float
    across: float
    values: tuple[int, int] | None = None  # (inner, outer) halves; None for a slot
    flags: frozenset[str] = frozenset()
    label: str = ""

    def corners(self) -> list[tuple[float, float]]:
        ux, uy = math.sin(self.angle), -math.cos(self.angle)
        vx, vy = -uy, ux
        a, b = self.along / 2, self.across / 2
        return [
            (self.x + sx * a * ux + sy * b * vx, self.y + sx * a * uy + sy * b * vy)
            for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))
        ]


def _angle_needed(across: float, radius: float) -> float:
    return 2 * math.atan((across + SIDE_GAP) / 2 / max(radius, 1e-6))


def _pieces(node: _Node) -> list[tuple[float, float]]:
    """(along, across) of each rectangle of an arm, inner first."""
    if not node.tiles:
        return [(1.0, HALF)]
    pieces = [(1.0, HALF)] * len(node.tiles)
    if node.foot:
        pieces[-1] = (HALF, 1.0)  # R9: the double lies crosswise
    return pieces


def _need(node: _Node, r0: float) -> float:
    """The angle the subtree needs when its first tile starts at radius r0 (packed tightly)."""
    radius, need = r0, 0.0
    for along, across in _pieces(node):
        need = max(need, _angle_needed(across, radius))
        radius += along + GAP
    if node.children:
        need = max(need, sum(_need(child, radius) for child in node.children))
    return need


class _Layout:
    """Places every tile of the engine's table; see the module docstring for the method."""

    def __init__(self, engine):
        self.engine = engine
        self.items: list[_Item] = []
        self.links: list[tuple[float, float, float, float]] = []
        self.labels = arm_labels(engine)
        self.last_tile = _last_played(engine)
        self.roots = self._tree()
        # The centre double, horizontal.
        centre = engine.center
        self.items.append(_Item(0.0, 0.0, 0.0, 1.0, HALF, (centre, centre), frozenset({"centre"})))
        count = max(len(self.roots), 1)
        width = 2 * math.pi / count
        for index, root in enumerate(self.roots):
            theta = index * width  # arm A points north, then clockwise: a cross or a star
            self._place(root, HUB, theta - width / 2, theta + width / 2, theta, theta)

    def _tree(self) -> list[_Node]:
        engine, tables = self.engine, self.engine.tables
        nodes = []
        for index, arm in enumerate(engine.arms):
            foot = bool(arm.tiles) and arm.tip < 0 and bool(tables.is_double[arm.tiles[-1][0]])
            if arm.tiles:
                nodes.append(_Node(index, list(arm.tiles), foot))
            else:  # a bare open end (a snapshot restored without its layout)
                nodes.append(_Node(index, [], slot="end", value=arm.tip))
        roots = []
        for index, arm in enumerate(engine.arms):
            parent = arm.parent
            (roots if parent < 0 else nodes[parent].children).append(nodes[index])
        roots += [_Node(-1, [], slot="spinner", value=engine.center)] * engine.spinner_empty
        if engine.foot_value >= 0 and 0 <= engine.foot_arm < len(nodes):
            owed = [_Node(-1, [], slot="toe", value=engine.foot_value)] * engine.toes_left
            nodes[engine.foot_arm].children += owed
        for node in nodes:
            node.children = _middle_out(node.children)
        return roots

    def _place(
        self, node: _Node, r0: float, lo: float, hi: float, theta: float, direction: float
    ) -> None:
        """Lay `node` from polar (r0, theta) along `direction`, its subtree inside [lo, hi]."""
        engine = self.engine
        pieces = _pieces(node)
        ux, uy = math.sin(direction), -math.cos(direction)
        sx, sy = r0 * math.sin(theta), -r0 * math.cos(theta)
        arm = engine.arms[node.arm] if node.arm >= 0 else None
        label = self.labels[node.arm] if node.arm >= 0 else ""
        run = 0.0
        for k, (along, across) in enumerate(pieces):
            x, y = sx + ux * (run + along / 2), sy + uy * (run + along / 2)
            run += along + GAP
            if not node.tiles:
                flags = frozenset({node.slot, f"value:{node.value}"})
                self.items.append(_Item(x, y, direction, along, across, None, flags, label))
                continue
            tile, attached = node.tiles[k]
            values = (attached, engine.tables.other_end(tile, attached))
            flags = set()
            last = k == len(pieces) - 1
            if last and arm is not None and arm.tip >= 0:
                flags.add("open")
            if last and node.foot:
                flags.add("foot")
                if engine.foot_value >= 0 and node.arm == engine.foot_arm:
                    flags.add("pending")
            if tile == self.last_tile:
                flags.add("last")
            self.items.append(
                _Item(
                    x,
                    y,
                    direction,
                    along,
                    across,
                    values,
                    frozenset(flags),
                    label if k == 0 else "",
                )
            )
        if not node.children:
            return
        # The toes start beyond the double's farthest corner (a leaning toe may dip inwards by
        # half its width times sin(TOE_LEAN)), so nothing of the arm can touch them.
        ex, ey = sx + ux * (run - GAP), sy + uy * (run - GAP)
        reach = max(math.hypot(x, y) for x, y in self.items[-1].corners())
        start = reach + GAP + HALF / 2 * math.sin(TOE_LEAN)
        needs = [_need(child, start) for child in node.children]
        while sum(needs) > (hi - lo) * 0.999:  # push the toes outwards until they fit
            start *= 1.05
            needs = [_need(child, start) for child in node.children]
        # Each toe gets the angle it needs, packed around the double; whatever is left of the
        # arm's range goes to the outermost toes, which lean out into it.
        end_angle = math.atan2(ex, -ey)
        end_angle += 2 * math.pi * round((theta - end_angle) / (2 * math.pi))
        edges = [min(max(end_angle - sum(needs) / 2, lo), hi - sum(needs))]
        for need in needs:
            edges.append(edges[-1] + need)
        edges[0], edges[-1] = lo, hi
        count = len(node.children)
        for k, child in enumerate(node.children):
            a, b = edges[k], edges[k + 1]
            # Start as close to the double as the child's own tiles allow (radially laid).
            margin = _line_margin(child, start)
            child_theta = min(max(end_angle, a + margin), b - margin)
            # Fan: outer toes lean outwards as far as their range allows (the feet's look).
            lean = TOE_LEAN * (2 * k / (count - 1) - 1) if count > 1 else 0.0
            child_dir = child_theta
            for factor in (1.0, 0.66, 0.33):
                want = min(max(direction + lean * factor, a), b)
                if _line_fits(child, start, child_theta, want, a, b):
                    child_dir = want
                    break
            self._place(child, start, a, b, child_theta, child_dir)
            cx, cy = math.sin(child_theta) * start, -math.cos(child_theta) * start
            # The link leaves the double's side nearest the toe.
            vx, vy = -uy, ux
            side = max(-0.4, min(0.4, (cx - ex) * vx + (cy - ey) * vy))
            lx, ly = ex + side * vx, ey + side * vy
            if math.hypot(cx - lx, cy - ly) > 0.15:
                self.links.append((lx, ly, cx, cy))


def _line_margin(node: _Node, r0: float) -> float:
    """Half the angle the arm's own tiles need when laid radially from radius r0."""
    radius, margin = r0, 0.0
    for along, across in _pieces(node):
        margin = max(margin, _angle_needed(across, radius) / 2)
        radius += along + GAP
    return margin


def _line_fits(
    node: _Node, r0: float, theta: float, direction: float, lo: float, hi: float
) -> bool:
    """Whether the arm's own tiles, laid from (r0, theta) along `direction`, stay in [lo, hi]."""
    ux, uy = math.sin(direction), -math.cos(direction)
    sx, sy = r0 * math.sin(theta), -r0 * math.cos(theta)
    run = 0.0
    for along, across in _pieces(node):
        for at in (run, run + along):  # both ends of the piece
            x, y = sx + ux * at, sy + uy * at
            radius, angle = math.hypot(x, y), math.atan2(x, -y)
            # Compare angles on the branch of theta (ranges may cross the -pi/pi seam).
            angle += 2 * math.pi * round((theta - angle) / (2 * math.pi))
            half = _angle_needed(across, radius) / 2
            if not lo + half <= angle <= hi - half:
                return False
        run += along + GAP
    return True


@dataclass(frozen=True)
class Piece:
    """A placed rectangle of the picture, in tile units (a tile is 1 long, 0.5 wide).

    `values` are the (inner, outer) halves of a tile, None for a dashed slot; `flags` name what
    it is ("centre", "open", "foot", "pending", "last"; slots: "spinner", "toe", "end").
    """

    corners: tuple[tuple[float, float], ...]
    angle: float
    values: tuple[int, int] | None
    flags: frozenset[str]
    label: str


def table_layout(engine) -> list[Piece]:
    """Where the picture puts every tile and slot (for tests and tools; no drawing)."""
    return [
        Piece(tuple(item.corners()), item.angle, item.values, item.flags, item.label)
        for item in _Layout(engine).items
    ]


def _middle_out(children: list[_Node]) -> list[_Node]:
    """Toes in angular order, the first played in the middle, the next alternating sides."""
    order: list[_Node] = []
    for k, child in enumerate(children):
        if k % 2:
            order.insert(0, child)
        else:
            order.append(child)
    return order


def _last_played(engine) -> int:
    """The tile the last action of this round put on the table, or -1."""
    if not engine.history:
        return -1
    rnd, _seat, action = engine.history[-1]
    if rnd != engine.round:
        return -1
    move = decode(engine.tables, action)
    return move.tile if move.kind == PLAY else -1


# --------------------------------------------------------------------------------- drawing
class _Painter:
    def __init__(self, draw: ImageDraw.ImageDraw, px: float, ox: float, oy: float, max_pips: int):
        self.draw, self.px, self.ox, self.oy = draw, px, ox, oy
        self.dots = max_pips <= 9 and px * HALF >= 18
        # Two-digit values must fit a half (a HALF×HALF square): about 0.7 of its side.
        self.digit_size = max(6, int(px * HALF * 0.7))
        self.label_font = _font(max(10, px * 0.24))
        self.line = max(1, round(px / 40))

    def pt(self, x: float, y: float) -> tuple[float, float]:
        return (self.ox + x * self.px, self.oy + y * self.px)

    def poly(self, points, **kw) -> None:
        self.draw.polygon([self.pt(x, y) for x, y in points], **kw)

    def halo(self, item: _Item, colour, grow: float) -> None:
        bigger = _Item(item.x, item.y, item.angle, item.along + grow, item.across + grow)
        self.poly(bigger.corners(), fill=colour)

    def tile(self, item: _Item) -> None:
        flags = item.flags
        if "centre" in flags:
            self.halo(item, CENTRE, 0.24)
        if "pending" in flags:
            self.halo(item, FOOT, 0.22)
        elif "open" in flags:
            # Only the open half glows: shift a half-sized halo to the outer end.
            ux, uy = math.sin(item.angle), -math.cos(item.angle)
            off = item.along / 4
            outer = _Item(
                item.x + ux * off, item.y + uy * off, item.angle, item.along / 2, item.across
            )
            self.halo(outer, OPEN, 0.16)
        if "last" in flags:
            self.halo(item, LAST, 0.12)
        self.poly(item.corners(), fill=TILE, outline=TILE_EDGE, width=self.line)
        ux, uy = math.sin(item.angle), -math.cos(item.angle)
        vx, vy = -uy, ux
        if item.along >= item.across:  # halves inner/outer along the ray
            a = item.along / 4
            halves = [(-a * ux, -a * uy), (a * ux, a * uy)]
            div = [(-item.across / 2, 0.0), (item.across / 2, 0.0)]
            d0 = (item.x + div[0][0] * vx, item.y + div[0][0] * vy)
            d1 = (item.x + div[1][0] * vx, item.y + div[1][0] * vy)
        else:  # a crosswise double: halves side by side across the ray
            b = item.across / 4
            halves = [(-b * vx, -b * vy), (b * vx, b * vy)]
            d0 = (item.x - item.along / 2 * ux, item.y - item.along / 2 * uy)
            d1 = (item.x + item.along / 2 * ux, item.y + item.along / 2 * uy)
        inset = 0.06
        d0 = (d0[0] + (item.x - d0[0]) * inset * 2, d0[1] + (item.y - d0[1]) * inset * 2)
        d1 = (d1[0] + (item.x - d1[0]) * inset * 2, d1[1] + (item.y - d1[1]) * inset * 2)
        self.draw.line([self.pt(*d0), self.pt(*d1)], fill=TILE_EDGE, width=self.line)
        assert item.values is not None
        for (dx, dy), value in zip(halves, item.values):
            self.pips(item.x + dx, item.y + dy, item.angle, value)

    def pips(self, x: float, y: float, angle: float, value: int) -> None:
        colour = PIP_COLOURS[value % len(PIP_COLOURS)]
        if self.dots:
            ux, uy = math.sin(angle), -math.cos(angle)
            vx, vy = -uy, ux
            step = HALF * 0.29
            radius = max(1.5, self.px * HALF * 0.085)
            for c, r in DOTS[value]:
                px, py = self.pt(x + step * (c * vx + r * ux), y + step * (c * vy + r * uy))
                self.draw.ellipse([px - radius, py - radius, px + radius, py + radius], fill=colour)
        elif value:
            self.glyph(self.pt(x, y), str(value), colour)

    def glyph(self, at: tuple[float, float], text: str, colour) -> None:
        """Centred text from a cache of rendered masks (text is most of a frame's cost)."""
        mask, left, top = _glyph(text, self.digit_size)
        self.draw.bitmap((round(at[0] + left), round(at[1] + top)), mask, fill=colour)

    def slot(self, item: _Item) -> None:
        kind = next((f for f in ("toe", "spinner", "end") if f in item.flags), "end")
        value = next(int(f[6:]) for f in item.flags if f.startswith("value:"))
        colour = FOOT if kind == "toe" else OPEN
        corners = [self.pt(x, y) for x, y in item.corners()]
        for (x0, y0), (x1, y1) in zip(corners, corners[1:] + corners[:1]):
            self._dashed(x0, y0, x1, y1, colour)
        cx, cy = self.pt(item.x, item.y)
        self.glyph((cx, cy), str(value), colour)

    def _dashed(self, x0: float, y0: float, x1: float, y1: float, colour) -> None:
        length = math.hypot(x1 - x0, y1 - y0)
        dash = max(3.0, self.px / 10)
        steps = max(1, int(length / dash))
        for k in range(0, steps, 2):
            t0, t1 = k / steps, min(1.0, (k + 1) / steps)
            self.draw.line(
                [
                    (x0 + (x1 - x0) * t0, y0 + (y1 - y0) * t0),
                    (x0 + (x1 - x0) * t1, y0 + (y1 - y0) * t1),
                ],
                fill=colour,
                width=max(2, self.line + 1),
            )

    def labels(self, items: list[_Item]) -> None:
        """Each arm's label beside its first tile, on whichever side is free of tiles and of
        other labels (tried: clockwise side, anticlockwise side, a little in or out); an arm
        whose surroundings are all taken goes without a label rather than hide a tile."""
        boxes = [_bbox(item.corners()) for item in items]
        quads = [item.corners() for item in items]
        placed: list[tuple[float, float, float, float]] = []
        font, px = self.label_font, self.px
        for item in items:
            if not item.label:
                continue
            w = font.getlength(item.label) / px + 0.08
            h = font.size / px + 0.04 if hasattr(font, "size") else 0.3
            ux, uy = math.sin(item.angle), -math.cos(item.angle)
            vx, vy = -uy, ux
            clear = item.across / 2 + 0.06 + (w * abs(vx) + h * abs(vy)) / 2
            for side in (1, -1):
                for shift in (0.0, 0.3, -0.3, 0.6):
                    cx = item.x + side * clear * vx + shift * ux
                    cy = item.y + side * clear * vy + shift * uy
                    box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                    if self._free(box, boxes, quads, placed):
                        placed.append(box)
                        self.draw.text(
                            self.pt(cx, cy), item.label, fill=DIM, font=font, anchor="mm"
                        )
                        break
                else:
                    continue
                break

    @staticmethod
    def _free(box, boxes, quads, placed) -> bool:
        x0, y0, x1, y1 = box
        for bx0, by0, bx1, by1 in placed:
            if x0 < bx1 and bx0 < x1 and y0 < by1 and by0 < y1:
                return False
        rect = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        for (bx0, by0, bx1, by1), quad in zip(boxes, quads):
            if x0 < bx1 and bx0 < x1 and y0 < by1 and by0 < y1 and _convex_overlap(rect, quad):
                return False
        return True


def _bbox(points) -> tuple[float, float, float, float]:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def _convex_overlap(a, b) -> bool:
    """Separating-axis test for two convex polygons."""
    for poly in (a, b):
        for k in range(len(poly)):
            (x0, y0), (x1, y1) = poly[k], poly[(k + 1) % len(poly)]
            nx, ny = y1 - y0, x0 - x1
            da = [nx * x + ny * y for x, y in a]
            db = [nx * x + ny * y for x, y in b]
            if max(da) <= min(db) or max(db) <= min(da):
                return False
    return True


def _fit(items: list[_Item], size: int, most: float, margin: float) -> tuple[float, float, float]:
    """Pixels per tile unit and the origin, so that everything fits a size×size square."""
    xs, ys = [0.0], [0.0]
    for item in items:
        for x, y in item.corners():
            xs.append(x)
            ys.append(y)
    room = size - 2 * margin
    # Labels stick out by about 0.45 units; keep them on the canvas.
    pad = 0.5
    centred = max(max(map(abs, xs)), max(map(abs, ys))) + pad
    px = room / (2 * centred)
    if px >= most:
        return most, size / 2, size / 2
    # Too big to centre the start double: fit the bounding box instead (larger tiles).
    x0, x1, y0, y1 = min(xs) - pad, max(xs) + pad, min(ys) - pad, max(ys) + pad
    px = min(most, room / max(x1 - x0, y1 - y0))
    return px, size / 2 - (x0 + x1) / 2 * px, size / 2 - (y0 + y1) / 2 * px


def render_image(
    engine,
    viewer: int | None = None,
    *,
    scale: float = 1.0,
    caption: str | None = None,
    names: Sequence[str] | None = None,
    reveal: bool = False,
) -> Image.Image:
    """The table as a `PIL.Image` (RGB). `viewer` is the only seat whose hand is drawn, unless
    `reveal` draws every seat's hand (a finished round or game: R12 scores them all); `names`
    (one per seat) replace the `player_N` labels; `scale` (0.25..2) multiplies every size;
    `caption` (e.g. "round 2 over") replaces the whose-turn line. Bad arguments raise
    `ValueError` before anything is drawn."""
    cfg = engine.config
    _check_arguments(cfg, viewer, scale, names, reveal)
    width, height = canvas_size(cfg, scale)
    table = _table_px(cfg, scale)
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    layout = _Layout(engine)
    px, ox, oy = _fit(layout.items, table, MAX_TILE_PX * scale, MARGIN_PX * scale)
    painter = _Painter(draw, px, ox, oy, cfg.max_pips)
    for x0, y0, x1, y1 in layout.links:
        draw.line(
            [painter.pt(x0, y0), painter.pt(x1, y1)], fill=CONNECT, width=max(1, painter.line)
        )
    painter.labels(layout.items)
    for item in layout.items:
        if item.values is None:
            painter.slot(item)
        else:
            painter.tile(item)
    draw.line([(table, 0), (table, height)], fill=TABLE_LINE, width=2)
    seats = _Seats(names, viewer)
    _panel(draw, engine, seats, table, width, height, scale, caption, bool(reveal))
    return image


def render_rgb(
    engine,
    viewer: int | None = None,
    *,
    scale: float = 1.0,
    caption: str | None = None,
    names: Sequence[str] | None = None,
    reveal: bool = False,
) -> np.ndarray:
    """The table as an ``H×W×3 uint8`` array (the env's ``render_mode="rgb_array"``)."""
    image = render_image(engine, viewer, scale=scale, caption=caption, names=names, reveal=reveal)
    # Faster than np.asarray(image); bytearray makes the array writable.
    flat = np.frombuffer(bytearray(image.tobytes()), dtype=np.uint8)
    return flat.reshape(image.height, image.width, 3)


def save_png(
    engine,
    path,
    viewer: int | None = None,
    *,
    scale: float = 1.0,
    caption: str | None = None,
    names: Sequence[str] | None = None,
    reveal: bool = False,
) -> None:
    """Write the table picture to `path` as PNG."""
    image = render_image(engine, viewer, scale=scale, caption=caption, names=names, reveal=reveal)
    image.save(path, format="PNG")


def _check_arguments(cfg, viewer, scale, names, reveal) -> None:
    n = cfg.num_players
    if viewer is not None and not (isinstance(viewer, (int, np.integer)) and 0 <= viewer < n):
        raise ValueError(f"viewer must be None or a seat 0..{n - 1}; got {viewer!r}")
    low, high = SCALES
    if (
        isinstance(scale, bool)
        or not isinstance(scale, (int, float, np.integer, np.floating))
        or not low <= scale <= high  # (NaN fails this too)
    ):
        raise ValueError(
            f"scale must be a number {low}..{high} (smaller hand tiles are unreadable, larger "
            f"frames huge); got {scale!r}"
        )
    if names is not None:
        if isinstance(names, str) or not isinstance(names, Sequence) or len(names) != n:
            raise ValueError(
                f"names must list {n} strings, one per seat (or be None for player_0.."
                f"player_{n - 1}); got {reprlib.repr(names)}"
            )
        for seat, name in enumerate(names):
            if not isinstance(name, str):
                raise ValueError(f"names[{seat}] must be a string; got {reprlib.repr(name)}")
    if not isinstance(reveal, (bool, np.bool_)):
        raise ValueError(f"reveal must be True or False; got {reprlib.repr(reveal)}")


# ----------------------------------------------------------------------------------- panel
class _Seats:
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


def _panel(draw, engine, seats: _Seats, left: int, width, height, scale, caption, reveal) -> None:
    """The side panel: round, whose turn, boneyard, every player's tiles and score, a hand (the
    viewer's) or every hand (`reveal`)."""
    cfg = engine.config
    viewer = seats.viewer
    pad = int(14 * scale)
    x, y = left + pad, pad
    room = width - x - pad
    big, normal, small = _font(26 * scale), _font(17 * scale), _font(14 * scale)
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


def _last_action_text(engine, seats: _Seats, font, room: float) -> str:
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
    painter = _Painter(draw, length, 0, 0, engine.config.max_pips)
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
        painter.tile(_Item(cx / length, cy / length, 0.0, 1.0, HALF, (lo, hi), flags))
    return y + math.ceil(len(tiles) / per_row) * (length + gap)


def _all_hands(draw, engine, seats: _Seats, x, y, room_w, room_h, scale, font) -> None:
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


__all__ = [
    "SCALES",
    "Piece",
    "canvas_size",
    "render_image",
    "render_rgb",
    "save_png",
    "table_layout",
]
