"""`python -m cf_env.viz.replay RECORD [--game K] [--out game.gif | --out frames/ | --out table.png]`.

Re-simulates a game record (see `record.py`) and prints each round's points and the winners,
exiting 1 if the record does not replay to its recorded result. RECORD is a record file or a
JSON-lines file of records (`training.evaluate --record`), from which ``--game K`` (1-based: the
K-th line) picks one. With ``--out game.gif`` it renders every state (the opening deal, then each
action; the finished table of each round is shown before the next deal) into an animated GIF;
with ``--out table.png`` one picture, of the state after ``--step N`` actions (default: the end);
with ``--out frames/`` (a folder: an existing one, a trailing slash, or a name without a suffix)
one PNG per state into it (``turn_0000.png``, …). Any other suffix (``x.jpg``) is refused, not
taken for a folder. Every picture names the seats as the record does ("player_1 (greedy)");
``--viewer SEAT`` also draws that seat's hand, and the frames at the end of each round and of the
game draw every hand that is left with the points it scores (R12). ``--scale`` is 0.25..2
(`render_image.SCALES`: smaller tiles are unreadable; larger frames make GIFs of a whole game
gigabytes in memory). In a game to a target score rounds are counted, not "r of N".

Exit codes: 0 replayed (and rendered), 1 the record is invalid or does not replay, 2 bad arguments
(a record path with no file, a ``--step`` past the record's end included).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cf_env.core import atomic
from cf_env.core.engine import Engine
from cf_env.viz.record import (
    RecordError,
    iter_replay,
    read_record,
    record_config,
    replay_engine,
)
from cf_env.viz.render import PANEL_NAME, move_name, round_label, round_number, seat_label
from cf_env.viz.render_image import SCALES, render_image

OUT_KINDS = "game.gif (an animation), table.png (one picture) or a folder (one PNG per state)"


def seat_names(record: dict, most: int | None = None) -> list[str]:
    """How seats are named: "player_1 (greedy)" when the record names the players, else
    "player_1"; `most` shortens each name to that many characters (for pictures)."""
    n = record_config(record).num_players
    names = record.get("players") or [None] * n
    return [seat_label(s, names[s], most) for s in range(n)]


def frame_caption(step, names: list[str]) -> str | None:
    """The panel's status line at the end of a round or of the game (None otherwise, when the
    panel says whose turn it is); those frames also draw every hand left (`reveal`), under a
    line with the points it scores (R12)."""
    engine = step.engine
    if not step.round_over:
        return None
    text = f"Round {round_label(engine, ' of ')} over."
    if engine.game_over:
        text += f" GAME OVER, won by {', '.join(names[s] for s in engine.winners)}."
    return text


def render_step(step, names: list[str], *, viewer: int | None = None, scale: float = 1.0):
    """The picture of one replayed state: the record's names; every hand at a round's end."""
    caption = frame_caption(step, names)
    return render_image(
        step.engine, viewer, scale=scale, caption=caption, names=names, reveal=step.round_over
    )


def frames(record: dict, *, viewer: int | None = None, scale: float = 1.0, rounds=None):
    """(PIL image, step) for every state of the recorded game (optionally only some rounds,
    numbered as `render.round_number` counts them)."""
    names = seat_names(record, most=PANEL_NAME)
    for step in iter_replay(record):
        if rounds is not None and round_number(step.engine) not in rounds:
            continue
        yield render_step(step, names, viewer=viewer, scale=scale), step


def write_gif(
    record: dict, path, *, viewer=None, scale: float = 0.6, ms: int = 700, rounds=None
) -> int:
    """Render the game into an animated GIF; returns the number of frames."""
    images = []
    for image, step in frames(record, viewer=viewer, scale=scale, rounds=rounds):
        # Dwell on the end of each round; an adaptive palette keeps the 19 pip colours apart.
        images.append((image.convert("P", palette=1, colors=128), 4 if step.round_over else 1))
    if not images:
        raise RecordError("no frames to write (is --rounds outside the game?)")
    first = images[0][0]
    with atomic.atomic_path(path) as temporary:
        first.save(
            temporary,
            format="GIF",
            save_all=True,
            append_images=[image for image, _ in images[1:]],
            duration=[ms * hold for _, hold in images],
            loop=0,
            disposal=1,
        )
    return len(images)


def write_pngs(record: dict, folder, *, viewer=None, scale: float = 1.0, rounds=None) -> int:
    """Render the game as one PNG per state into `folder`; returns the number of files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for image, _step in frames(record, viewer=viewer, scale=scale, rounds=rounds):
        image.save(folder / f"turn_{count:04d}.png", format="PNG")
        count += 1
    return count


def write_png(record: dict, path, step: int | None = None, *, viewer=None, scale=1.0) -> None:
    """Write one picture: the state after `step` actions (None: the end of the record)."""
    total = len(record["actions"])
    if step is None:
        step = total
    if not 0 <= step <= total:
        raise RecordError(f"--step must be 0..{total} (the record has {total} actions); got {step}")
    names = seat_names(record, most=PANEL_NAME)
    shown = None
    for state in iter_replay(record):
        if state.index > step:
            break
        shown = state  # the last state after `step` actions: the live engine, not a round's end
    with atomic.atomic_path(path) as temporary:
        render_step(shown, names, viewer=viewer, scale=scale).save(temporary, format="PNG")


def _rounds(text: str | None) -> set[int] | None:
    if text is None:
        return None
    try:
        return {int(part) for part in text.split(",") if part.strip()}
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"--rounds takes round numbers like 1,2,5; got {text!r}"
        ) from err


def summary(record: dict) -> list[str]:
    """Human-readable lines: who played, each round's points, the winners."""
    engine = replay_engine(record)
    n = engine.config.num_players
    names = record.get("players") or [f"player_{s}" for s in range(n)]
    lines = [f"{len(record['actions'])} actions, seed {record['seed']}, {n} players"]
    if record.get("players"):
        lines[0] += ": " + ", ".join(f"player_{s} = {name}" for s, name in enumerate(names))
    for rnd in range(len(engine.scores[0])):
        points = ", ".join(f"player_{s} {engine.scores[s][rnd]}" for s in range(n))
        lines.append(f"round {rnd + 1}: {points}")
    if engine.game_over:
        totals = engine.totals()
        lines.append("totals: " + ", ".join(f"player_{s} {totals[s]}" for s in range(n)))
        lines.append("winners: " + ", ".join(seat_names(record)[s] for s in engine.winners))
    else:
        lines.append(f"unfinished: stopped in round {round_number(engine)}")
    return lines


def out_kind(out: str) -> str:
    """What `--out` asks for: "gif", "png" or "folder"; ValueError for any other suffix."""
    path = Path(out)
    if out.endswith(("/", "\\")) or path.is_dir():
        return "folder"
    suffix = path.suffix.lower()
    if suffix in (".gif", ".png"):
        return suffix[1:]
    if suffix:
        # A typo'd or unsupported picture format must not silently become a folder of PNGs.
        raise ValueError(f"--out {out!r}: cannot write {suffix} files; give {OUT_KINDS}")
    return "folder"


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in `--help`, except where the help says it in words (`cf_env.tools.cli`'s
    formatter does the same for the tools, a layer this module cannot import)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.viz.replay", description=__doc__.split("\n\n")[0],
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "record", help="a game record (JSON) from cf_env.tools.play, or a JSON-lines file of them"
    )
    parser.add_argument(
        "--game", type=int, default=None,
        help="in a JSON-lines file: the K-th game (1-based; default: the file's one game)",
    )
    parser.add_argument("--out", help=f"{OUT_KINDS} (default: print the summary only)")
    parser.add_argument("--viewer", type=int, default=None,
                        help="also draw this seat's hand (default: hands only at round ends)")
    parser.add_argument(
        "--scale",
        type=float,
        default=None,
        help=f"picture size {SCALES[0]}..{SCALES[1]} (default: GIF 0.6, PNG 1.0)",
    )
    parser.add_argument("--ms", type=int, default=700, help="GIF milliseconds per state")
    parser.add_argument("--rounds", type=_rounds, default=None,
                        help="only these rounds, e.g. 1,2 (default: every round)")
    parser.add_argument("--step", type=int, default=None,
                        help="with a .png --out: after N actions (default: the end)")
    parser.add_argument("--moves", action="store_true", help="print every move")
    args = parser.parse_args(argv)
    low, high = SCALES
    if args.scale is not None and not low <= args.scale <= high:  # (NaN fails this too)
        parser.error(f"--scale must be {low}..{high}; got {args.scale}")
    if args.ms < 20:
        parser.error(f"--ms must be at least 20; got {args.ms}")
    if args.game is not None and args.game < 1:
        parser.error(f"--game counts from 1 (the first line); got {args.game}")
    try:
        kind = out_kind(args.out) if args.out else None
    except ValueError as err:
        parser.error(str(err))
    if args.step is not None and kind != "png":
        parser.error("--step picks the state drawn into a .png --out; give --out table.png")
    if not Path(args.record).is_file():  # a path typed wrong is a bad argument, not a bad record
        parser.error(f"no record file at {args.record!r}")
    try:
        record = read_record(args.record, args.game)
        players = record_config(record).num_players
        if args.viewer is not None and not 0 <= args.viewer < players:
            parser.error(f"--viewer must be a seat 0..{players - 1}; got {args.viewer}")
        total = len(record["actions"])
        if args.step is not None and not 0 <= args.step <= total:
            parser.error(f"--step must be 0..{total} (the record has {total} actions); "
                         f"got {args.step}")
        for line in summary(record):
            print(line)
        if args.moves:
            for line in _move_lines(record):
                print(line)
        if kind == "png":
            write_png(record, args.out, args.step, viewer=args.viewer, scale=args.scale or 1.0)
            done = len(record["actions"]) if args.step is None else args.step
            print(f"wrote the table after {done} action(s) to {args.out}")
        elif kind is not None:
            if kind == "gif":
                count = write_gif(
                    record,
                    args.out,
                    viewer=args.viewer,
                    scale=args.scale or 0.6,
                    ms=args.ms,
                    rounds=args.rounds,
                )
            else:
                count = write_pngs(
                    record,
                    args.out,
                    viewer=args.viewer,
                    scale=args.scale or 1.0,
                    rounds=args.rounds,
                )
            print(f"wrote {count} frames to {args.out}")
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: cannot write {args.out!r}: {err}", file=sys.stderr)
        return 1
    return 0


def _move_lines(record: dict) -> list[str]:
    engine = Engine(record_config(record), record["seed"])
    names = seat_names(record)
    lines = []
    for index, action in enumerate(record["actions"]):
        name = move_name(engine, action)
        number = round_number(engine)
        lines.append(f"  {index:4d}  round {number}  {names[engine.current]}: {name}")
        engine.step(action)
    return lines


if __name__ == "__main__":
    sys.exit(main())
