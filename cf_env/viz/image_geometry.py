"""Where the table picture puts things, in tile units, with no drawing: the canvas size, the
tree layout of the arms (`Layout`, `table_layout`) and its fit to the pixels of the table area
(`fit`). `cf_env.viz.image_paint` draws what this module places.

The table is a tree: spinner arms start at the centre double (R7: a cross for 4 arms, a star for
6); an arm that ends in a chicken-foot double (R9) has its toes as children. Every arm is a
straight ray *from the centre* and every subtree owns an angular range (the spinner arms split
the full turn evenly, a foot splits its arm's range among its toes). A tile at radius r needs an
angle of about its width / r, so a subtree fits its range once it starts far enough out; toes
that do not fit are pushed outwards (and joined to their double by a thin line). Because every
tile lies inside its own range, no two tiles overlap however long the arms grow. The whole
layout is then scaled to the table area.

The canvas size depends only on the config (bigger sets get a bigger table area), so every frame
of a game has the same size (video recorders need that); tiles shrink only when a table would
not fit at the largest tile size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cf_env.core.actions import PLAY, decode
from cf_env.viz.render import arm_labels

# Geometry in tile units: a tile is 1 long and HALF wide (each half a HALF×HALF square).
HALF = 0.5
GAP = 0.07  # between consecutive tiles of an arm
SIDE_GAP = 0.18  # between neighbouring arms (room for the open-end glow)
HUB = 0.62  # radius where spinner arms start (clears the corners of the centre double)
TOE_LEAN = 0.6  # radians the outer toes of a foot lean away from their arm's direction

MAX_TILE_PX = 64  # tile length in pixels when everything fits
PANEL_PX = 330
MARGIN_PX = 16


def canvas_size(config, scale: float = 1.0) -> tuple[int, int]:
    """(width, height) in pixels of every picture of a game under `config`."""
    table = table_px(config, scale)
    return table + int(PANEL_PX * panel_scale(scale)), table


def panel_scale(scale: float) -> float:
    """The side panel's scale (its text, lines and width) for a picture at `scale`: the same
    above 1, shrinking only as the square root below it, so that text stays readable in small
    pictures (a GIF's 0.6 gives 13 px text, not 10), and at most 1.3 × `scale`, so that the
    panel of the smallest pictures still fits their height."""
    return max(scale, min(math.sqrt(scale), 1.3 * scale))


def table_px(config, scale: float) -> int:
    """Side of the square table area in pixels."""
    # About 80 px per pip value of the set: 960 for double-9, 1440 for double-15.
    return int(80 * (config.max_pips + 3) * scale)




@dataclass
class Node:
    """An arm of the tree, or a dashed slot (an empty spinner arm, an owed toe, a bare end)."""

    arm: int  # index into engine.arms; -1 for a slot
    tiles: list[tuple[int, int]]  # (tile id, attached value), inner end first
    foot: bool = False  # the last tile is a chicken-foot double (drawn crosswise)
    slot: str = ""  # "spinner", "toe" or "end" for a slot
    value: int = -1  # a slot's required value
    children: list[Node] = field(default_factory=list)


@dataclass
class Item:
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


def _pieces(node: Node) -> list[tuple[float, float]]:
    """(along, across) of each rectangle of an arm, inner first."""
    if not node.tiles:
        return [(1.0, HALF)]
    pieces = [(1.0, HALF)] * len(node.tiles)
    if node.foot:
        pieces[-1] = (HALF, 1.0)  # R9: the double lies crosswise
    return pieces


def _need(node: Node, r0: float) -> float:
    """The angle the subtree needs when its first tile starts at radius r0 (packed tightly)."""
    radius, need = r0, 0.0
    for along, across in _pieces(node):
        need = max(need, _angle_needed(across, radius))
        radius += along + GAP
    if node.children:
        need = max(need, sum(_need(child, radius) for child in node.children))
    return need


class Layout:
    """Places every tile of the engine's table; see the module docstring for the method.

    `items`: every rectangle (the centre double first); `links`: lines from a foot's double
    to toes pushed outwards, in table units."""

    def __init__(self, engine):
        self.engine = engine
        self.arms = engine.arms  # a new list at each read: read once
        self.items: list[Item] = []
        self.links: list[tuple[float, float, float, float]] = []
        self.labels = arm_labels(engine)
        self.last_tile = _last_played(engine)
        self.roots = self._tree()
        # The centre double, horizontal.
        centre = engine.center
        self.items.append(Item(0.0, 0.0, 0.0, 1.0, HALF, (centre, centre), frozenset({"centre"})))
        count = max(len(self.roots), 1)
        width = 2 * math.pi / count
        for index, root in enumerate(self.roots):
            theta = index * width  # arm A points north, then clockwise: a cross or a star
            self._place(root, HUB, theta - width / 2, theta + width / 2, theta, theta)

    def _tree(self) -> list[Node]:
        engine, tables = self.engine, self.engine.tables
        nodes = []
        for index, arm in enumerate(self.arms):
            foot = bool(arm.tiles) and arm.tip < 0 and bool(tables.is_double[arm.tiles[-1][0]])
            if arm.tiles:
                nodes.append(Node(index, list(arm.tiles), foot))
            else:  # a bare open end (a snapshot restored without its layout)
                nodes.append(Node(index, [], slot="end", value=arm.tip))
        roots = []
        for index, arm in enumerate(self.arms):
            parent = arm.parent
            (roots if parent < 0 else nodes[parent].children).append(nodes[index])
        roots += [Node(-1, [], slot="spinner", value=engine.center)] * engine.spinner_empty
        if engine.foot_value >= 0 and 0 <= engine.foot_arm < len(nodes):
            owed = [Node(-1, [], slot="toe", value=engine.foot_value)] * engine.toes_left
            nodes[engine.foot_arm].children += owed
        for node in nodes:
            node.children = _middle_out(node.children)
        return roots

    def _place(
        self, node: Node, r0: float, lo: float, hi: float, theta: float, direction: float
    ) -> None:
        """Lay `node` from polar (r0, theta) along `direction`, its subtree inside [lo, hi]."""
        engine = self.engine
        pieces = _pieces(node)
        ux, uy = math.sin(direction), -math.cos(direction)
        sx, sy = r0 * math.sin(theta), -r0 * math.cos(theta)
        arm = self.arms[node.arm] if node.arm >= 0 else None
        label = self.labels[node.arm] if node.arm >= 0 else ""
        run = 0.0
        for k, (along, across) in enumerate(pieces):
            x, y = sx + ux * (run + along / 2), sy + uy * (run + along / 2)
            run += along + GAP
            if not node.tiles:
                flags = frozenset({node.slot, f"value:{node.value}"})
                self.items.append(Item(x, y, direction, along, across, None, flags, label))
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
                Item(
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


def _line_margin(node: Node, r0: float) -> float:
    """Half the angle the arm's own tiles need when laid radially from radius r0."""
    radius, margin = r0, 0.0
    for along, across in _pieces(node):
        margin = max(margin, _angle_needed(across, radius) / 2)
        radius += along + GAP
    return margin


def _line_fits(
    node: Node, r0: float, theta: float, direction: float, lo: float, hi: float
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
        for item in Layout(engine).items
    ]


def _middle_out(children: list[Node]) -> list[Node]:
    """Toes in angular order, the first played in the middle, the next alternating sides."""
    order: list[Node] = []
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



def bbox(points) -> tuple[float, float, float, float]:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def convex_overlap(a, b) -> bool:
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


def fit(items: list[Item], size: int, most: float, margin: float) -> tuple[float, float, float]:
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

