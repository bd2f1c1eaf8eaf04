"""`python -m cf_env.replay RECORD [--out game.gif | --out frames/ | --out table.png]`.

Re-simulates a game record (see `record.py`) and prints each round's points and the winners,
exiting 1 if the record does not replay to its recorded result. With ``--out game.gif`` it
renders every state (the opening deal, then each action; the finished table of each round is
shown before the next deal) into an animated GIF; with ``--out table.png`` one picture, of the
state after ``--step N`` actions (default: the end); with any other ``--out`` one PNG per state
into that folder (``turn_0000.png``, …). ``--viewer SEAT`` also draws that seat's hand.

Exit codes: 0 replayed (and rendered), 1 the record is invalid or does not replay, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .engine import Engine
from .record import (
    RecordError,
    iter_replay,
    read_record,
    record_config,
    replay_config,
    replay_engine,
)
from .render import move_name


def _caption(step, total_rounds: int) -> str | None:
    engine = step.engine
    if step.round_over and not engine.game_over:
        points = ", ".join(f"p{seat} {pts}" for seat, pts in enumerate(step.points))
        return f"Round {engine.round + 1} of {total_rounds} over: {points}"
    return None


def frames(record: dict, *, viewer: int | None = None, scale: float = 1.0, rounds=None):
    """(PIL image, step) for every state of the recorded game (optionally only some rounds)."""
    from .render_image import render_image  # Pillow is needed only for pictures

    total = record_config(record).num_rounds
    for step in iter_replay(record):
        if rounds is not None and step.engine.round + 1 not in rounds:
            continue
        caption = _caption(step, total)
        yield render_image(step.engine, viewer, scale=scale, caption=caption), step


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
    first.save(
        path,
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
    from .render_image import save_png

    total = len(record["actions"])
    if step is None:
        step = total
    if not 0 <= step <= total:
        raise RecordError(f"--step must be 0..{total} (the record has {total} actions); got {step}")
    engine = Engine(replay_config(record), record["seed"])
    for action in record["actions"][:step]:
        engine.step(action)
    save_png(engine, path, viewer, scale=scale)


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
        lines.append("winners: " + ", ".join(f"player_{s}" for s in engine.winners))
    else:
        lines.append(f"unfinished: stopped in round {engine.round + 1}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.replay", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("record", help="a game record (JSON) written by cf_env.play or evaluate")
    parser.add_argument(
        "--out", help="game.gif for an animation, or a folder for one PNG per state"
    )
    parser.add_argument("--viewer", type=int, default=None, help="also draw this seat's hand")
    parser.add_argument("--scale", type=float, default=None, help="picture size (GIF 0.6, PNG 1.0)")
    parser.add_argument("--ms", type=int, default=700, help="GIF milliseconds per state (700)")
    parser.add_argument("--rounds", type=_rounds, default=None, help="only these rounds, e.g. 1,2")
    parser.add_argument("--step", type=int, default=None, help="with a .png --out: after N actions")
    parser.add_argument("--moves", action="store_true", help="print every move")
    args = parser.parse_args(argv)
    if args.scale is not None and not args.scale > 0:
        parser.error(f"--scale must be > 0; got {args.scale}")
    if args.ms < 20:
        parser.error(f"--ms must be at least 20; got {args.ms}")
    try:
        record = read_record(args.record)
        players = record_config(record).num_players
        if args.viewer is not None and not 0 <= args.viewer < players:
            parser.error(f"--viewer must be a seat 0..{players - 1}; got {args.viewer}")
        for line in summary(record):
            print(line)
        if args.moves:
            for line in _move_lines(record):
                print(line)
        if args.out and args.out.lower().endswith(".png"):
            write_png(record, args.out, args.step, viewer=args.viewer, scale=args.scale or 1.0)
            done = len(record["actions"]) if args.step is None else args.step
            print(f"wrote the table after {done} action(s) to {args.out}")
        elif args.out:
            if args.out.lower().endswith(".gif"):
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
    engine = Engine(replay_config(record), record["seed"])
    lines = []
    for index, action in enumerate(record["actions"]):
        name = move_name(engine, action)
        lines.append(f"  {index:4d}  round {engine.round + 1}  player_{engine.current}: {name}")
        engine.step(action)
    return lines


if __name__ == "__main__":
    sys.exit(main())
