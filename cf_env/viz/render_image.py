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

How: `cf_env.viz.image_geometry` places every tile and slot in tile units (the layout method
is described there) and sizes the canvas, which depends only on the config so that every frame of
a game has the same size; `cf_env.viz.image_paint` turns what was placed into pixels (pips, glows,
dashed slots, arm labels); `cf_env.viz.image_panel` draws the side panel. This module checks the
arguments and puts the three together.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from cf_env.core import atomic
from cf_env.viz.image_geometry import (
    MARGIN_PX,
    MAX_TILE_PX,
    Layout,
    Piece,
    canvas_size,
    fit,
    panel_scale,
    table_layout,
    table_px,
)
from cf_env.viz.image_paint import BACKGROUND, CONNECT, TABLE_LINE, Painter
from cf_env.viz.image_panel import Seats, draw_panel

SCALES = (0.25, 2.0)  # the valid `scale` range (see the module docstring)


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
    (one per seat) replace the `player_N` labels; `scale` (0.25..2) multiplies every size (the
    side panel's below 1 only by its square root, `panel_scale`: readable text in small frames);
    `caption` (e.g. "round 2 over") replaces the whose-turn line. Bad arguments raise
    `ValueError` before anything is drawn."""
    cfg = engine.config
    _check_arguments(cfg, viewer, scale, names, reveal)
    width, height = canvas_size(cfg, scale)
    table = table_px(cfg, scale)
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    layout = Layout(engine)
    px, ox, oy = fit(layout.items, table, MAX_TILE_PX * scale, MARGIN_PX * scale)
    painter = Painter(draw, px, ox, oy, cfg.max_pips)
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
    seats = Seats(names, viewer)
    draw_panel(draw, engine, seats, table, width, height, panel_scale(scale), caption,
               bool(reveal))
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
    with atomic.atomic_path(path) as temporary:
        image.save(temporary, format="PNG")


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



__all__ = [
    "SCALES",
    "Piece",
    "canvas_size",
    "render_image",
    "render_rgb",
    "save_png",
    "table_layout",
]
