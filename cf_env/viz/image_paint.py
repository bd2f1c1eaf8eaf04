"""The pixels of the table picture: colours, pip faces (dots up to double-9 while tiles are large
enough, coloured digits otherwise), and `Painter`, which draws the tiles, dashed slots and arm
labels that `cf_env.viz.image_geometry` placed. Only Pillow's bundled default font is used.
"""

from __future__ import annotations

import math
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from cf_env.viz.image_geometry import HALF, Item, bbox, convex_overlap

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
def load_font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's bundled default font at `size` pixels (at least 6)."""
    size = max(6, int(size))
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 (or no FreeType): the fixed bitmap font
        return ImageFont.load_default()


@lru_cache(maxsize=1024)
def glyph_mask(text: str, size: int) -> tuple[Image.Image, int, int]:
    """A text's mask and its offset from the centre point (anchor "mm")."""
    font = load_font(size)
    left, top, right, bottom = font.getbbox(text, anchor="mm")
    mask = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
    ImageDraw.Draw(mask).text((-left, -top), text, fill=255, font=font, anchor="mm")
    return mask, left, top



class Painter:
    """Draws placed items (`image_geometry.Item`) on `draw`: `px` pixels per tile unit, the
    table's origin at pixel (ox, oy)."""

    def __init__(self, draw: ImageDraw.ImageDraw, px: float, ox: float, oy: float, max_pips: int):
        self.draw, self.px, self.ox, self.oy = draw, px, ox, oy
        self.dots = max_pips <= 9 and px * HALF >= 18
        # Two-digit values must fit a half (a HALF×HALF square): about 0.7 of its side.
        self.digit_size = max(6, int(px * HALF * 0.7))
        self.label_font = load_font(max(10, px * 0.24))
        self.line = max(1, round(px / 40))

    def pt(self, x: float, y: float) -> tuple[float, float]:
        return (self.ox + x * self.px, self.oy + y * self.px)

    def poly(self, points, **kw) -> None:
        self.draw.polygon([self.pt(x, y) for x, y in points], **kw)

    def halo(self, item: Item, colour, grow: float) -> None:
        bigger = Item(item.x, item.y, item.angle, item.along + grow, item.across + grow)
        self.poly(bigger.corners(), fill=colour)

    def tile(self, item: Item) -> None:
        flags = item.flags
        if "centre" in flags:
            self.halo(item, CENTRE, 0.24)
        if "pending" in flags:
            self.halo(item, FOOT, 0.22)
        elif "open" in flags:
            # Only the open half glows: shift a half-sized halo to the outer end.
            ux, uy = math.sin(item.angle), -math.cos(item.angle)
            off = item.along / 4
            outer = Item(
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
        mask, left, top = glyph_mask(text, self.digit_size)
        self.draw.bitmap((round(at[0] + left), round(at[1] + top)), mask, fill=colour)

    def slot(self, item: Item) -> None:
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

    def labels(self, items: list[Item]) -> None:
        """Each arm's label beside its first tile, on whichever side is free of tiles and of
        other labels (tried: clockwise side, anticlockwise side, a little in or out); an arm
        whose surroundings are all taken goes without a label rather than hide a tile."""
        boxes = [bbox(item.corners()) for item in items]
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
            if x0 < bx1 and bx0 < x1 and y0 < by1 and by0 < y1 and convex_overlap(rect, quad):
                return False
        return True

