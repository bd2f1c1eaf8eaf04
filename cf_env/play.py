"""`python -m cf_env.play`: play Chicken Foot in the terminal against bots or trained agents.

    python -m cf_env.play --opponents ppo:checkpoints/ppo-4p-d9,greedy,heuristic
    python -m cf_env.play --opponents greedy --players 4 --rounds 3 --image table.png

You sit in seat ``--seat`` (default 0); the other seats are filled from ``--opponents``, a
comma-separated list of policy specs (`cf_env.policies.load_policy`: random, greedy, heuristic,
ismcts:<iterations>, ppo:<checkpoint>, module:factory) — one spec per opponent, or a single spec
for all of them. Without ``--players`` there is one opponent per spec. Opponents act on their
own observations, built exactly as the env builds them.

On your turn the table, your hand and your legal moves are shown as a numbered list; type a
number (``q`` quits, ``t`` shows the table again). When you have exactly one legal move
(a forced draw or pass) it is made for you. ``--image PATH`` rewrites a PNG of the table after
every move; ``--record PATH`` saves the game (`cf_env.record`) for `python -m cf_env.replay`.

Exit codes: 0 the game ended, or you quit (``q`` or end of input); 1 an opponent failed
(an error or an illegal action); 2 bad arguments; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

import numpy as np

from .actions import DRAW, PASS, decode
from .config import ChickenFootConfig
from .engine import Engine
from .observation import Encoder
from .record import final_of, make_record, round_end_view, save_record
from .render import arm_labels, move_name, render_text, tile_text

QUIT = ("q", "quit", "exit")
SHOW = ("t", "table", "?", "h", "help")


class Quit(Exception):
    """The player asked to stop (q, or end of input)."""


class OpponentError(Exception):
    """An opponent policy raised or returned an illegal action."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.play",
        description="Play Chicken Foot in the terminal against bots or trained agents.",
    )
    parser.add_argument(
        "--opponents",
        default="greedy",
        help="comma-separated policy specs, one per opponent or one for all (default greedy)",
    )
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--players", type=int, default=None, help="players incl. you")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default max-pips + 1)")
    parser.add_argument("--max-pips", type=int, default=9, help="double-N set (6, 9, 12, 15, 18)")
    parser.add_argument("--spinner-arms", type=int, default=4, help="4 (cross) or 6 (star)")
    parser.add_argument("--seed", type=int, default=None, help="engine seed (default: random)")
    parser.add_argument("--image", default=None, help="write the table PNG here after each move")
    parser.add_argument("--record", default=None, help="save the game record (JSON) here")
    return parser.parse_args(argv)


class Game:
    """One terminal game: the engine, the opponents and the console."""

    def __init__(self, args: argparse.Namespace, specs: list[str], out: TextIO, inp: TextIO):
        from .policies import load_policy

        self.out, self.inp = out, inp
        isatty = getattr(inp, "isatty", None)
        self.echo = bool(isatty and isatty())  # a terminal echoes what the player types
        self.args = args
        self.config = ChickenFootConfig(
            max_pips=args.max_pips,
            num_players=args.players,
            num_rounds=args.rounds,
            spinner_arms=args.spinner_arms,
        )
        self.seat = args.seat
        self.seed = args.seed
        self.engine = Engine(self.config, self.seed)
        self.encoder = Encoder(self.config)
        # Opponent seeds come from the game seed: the same --seed replays the same game.
        seeds = np.random.SeedSequence(self.seed).generate_state(self.config.num_players)
        self.names = ["you"] * self.config.num_players
        self.policies = {}
        others = [s for s in range(self.config.num_players) if s != self.seat]
        for seat, spec in zip(others, specs):
            self.policies[seat] = load_policy(spec, self.config, seed=int(seeds[seat]))
            self.names[seat] = spec
        for policy in self.policies.values():
            reset = getattr(policy, "reset", None)
            if callable(reset):
                reset()
        self.actions: list[int] = []

    # -------------------------------------------------------------------------- output
    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def who(self, seat: int) -> str:
        return "you" if seat == self.seat else f"player_{seat} ({self.names[seat]})"

    def intro(self) -> None:
        cfg = self.config
        self.say(
            f"Chicken Foot: double-{cfg.max_pips} set, {cfg.num_players} players, "
            f"{cfg.num_rounds} round(s), {cfg.spinner_arms} spinner arms, seed {self.seed}"
        )
        for seat in range(cfg.num_players):
            self.say(f"  seat {seat}: {self.who(seat)}")
        self.say("Type the number of a move; q quits, t shows the table again.")
        self.round_start()

    def round_start(self) -> None:
        e = self.engine
        self.say()
        self.say(
            f"=== Round {e.round + 1} of {self.config.num_rounds}: "
            f"{self.who(e.start_seat)} {'set' if e.start_seat == self.seat else 'sets'} "
            f"{e.center}|{e.center} in the centre; "
            f"{self.who(e.current)} {'go' if e.current == self.seat else 'goes'} first ==="
        )

    def show_table(self) -> None:
        self.say()
        self.say(render_text(self.engine, viewer=self.seat))

    def round_end(self, points: list[int], view: Engine | None) -> None:
        e = view if view is not None else self.engine
        self.say(render_text(e, viewer=self.seat))
        out = [s for s in range(self.config.num_players) if e.hand_counts[s] == 0]
        how = f"{self.who(out[0])} went out" if out else "nobody can play (blocked)"
        self.say(f"--- Round over: {how}. Points this round (lower is better):")
        totals = self.engine.totals()
        for seat in range(self.config.num_players):
            self.say(f"    {self.who(seat):<28} {points[seat]:>4}   total {totals[seat]:>5}")

    def standings(self) -> None:
        e = self.engine
        totals = e.totals()
        self.say()
        self.say("=== Final standings (lowest total wins; R13 breaks ties) ===")
        order = sorted(
            range(self.config.num_players), key=lambda s: (s not in e.winners, totals[s])
        )
        for rank, seat in enumerate(order, start=1):
            mark = "  WINNER" if seat in e.winners else ""
            rounds = " ".join(str(p) for p in e.scores[seat])
            self.say(f"  {rank}. {self.who(seat):<28} {totals[seat]:>5}   rounds: {rounds}{mark}")
        self.say("You win!" if self.seat in e.winners else "Better luck next time.")

    def write_image(self) -> None:
        if self.args.image:
            from .render_image import save_png  # Pillow only when pictures are asked for

            save_png(self.engine, self.args.image, viewer=self.seat)

    # -------------------------------------------------------------------------- turns
    def human_action(self) -> int:
        e = self.engine
        legal = e.legal_actions()
        labels = arm_labels(e)
        names = [move_name(e, a, labels) for a in legal]
        if len(legal) == 1:
            self.say(f"(your only move) {names[0]}")
            return legal[0]
        self.show_table()
        self.say("Your moves:")
        for number, name in enumerate(names, start=1):
            self.say(f"  {number:>2}. {name}")
        while True:
            self.out.write(f"your move [1-{len(legal)}, q quits, t table]: ")
            self.out.flush()
            line = self.inp.readline()
            if not line:
                self.say()
                raise Quit("end of input")
            if not self.echo:  # piped input: show the answer so the transcript reads well
                self.out.write(line if line.endswith("\n") else line + "\n")
            text = line.strip().lower()
            if not text:
                continue
            if text in QUIT:
                raise Quit("you quit")
            if text in SHOW:
                self.show_table()
                for number, name in enumerate(names, start=1):
                    self.say(f"  {number:>2}. {name}")
                continue
            try:
                number = int(text)
            except ValueError:
                self.say(f"  {line.strip()!r} is not a move number: type 1-{len(legal)}, or q")
                continue
            if not 1 <= number <= len(legal):
                self.say(f"  there is no move {number}: type 1-{len(legal)}, or q")
                continue
            return legal[number - 1]

    def opponent_action(self, seat: int) -> int:
        e = self.engine
        obs = {"observation": self.encoder.observe(e, seat), "action_mask": e.legal_action_mask()}
        try:
            action = self.policies[seat].act(obs)
        except Exception as err:  # a user's policy may fail in any way; report, never trace
            raise OpponentError(f"{self.who(seat)} failed: {type(err).__name__}: {err}") from err
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise OpponentError(f"{self.who(seat)} returned {action!r}, not an action id")
        action = int(action)
        if not (0 <= action < self.config.num_actions and obs["action_mask"][action]):
            raise OpponentError(f"{self.who(seat)} chose illegal action {action}")
        return action

    def announce(self, seat: int, action: int) -> None:
        e = self.engine
        move = decode(e.tables, action)
        if seat == self.seat:
            return
        if move.kind == DRAW:
            self.say(f"{self.who(seat)} draws a tile")
        elif move.kind == PASS:
            self.say(f"{self.who(seat)} passes")
        else:
            self.say(f"{self.who(seat)}: {move_name(e, action)}")

    def play(self) -> None:
        e = self.engine
        self.intro()
        self.write_image()
        while not e.game_over:
            seat = e.current
            action = self.human_action() if seat == self.seat else self.opponent_action(seat)
            self.announce(seat, action)
            view = round_end_view(e, action)
            finished = e.step(action)
            self.actions.append(action)
            if seat == self.seat and decode(e.tables, action).kind == DRAW and e.drawn_tile >= 0:
                self.say(f"you drew {tile_text(e.tables.pairs[e.drawn_tile])}")
            for points in finished:
                self.round_end(points, view)
                if not e.game_over:
                    self.round_start()
            self.write_image()
        self.standings()

    def save(self) -> None:
        if self.args.record:
            record = make_record(
                self.config, self.seed, self.actions, final_of(self.engine), self.names
            )
            save_record(self.args.record, record)
            self.say(f"game record saved to {self.args.record}")


def _specs(args: argparse.Namespace) -> list[str]:
    specs = [s.strip() for s in args.opponents.split(",")]
    if any(not s for s in specs):
        raise ValueError(f"--opponents has an empty spec: {args.opponents!r}")
    if args.players is None:
        args.players = len(specs) + 1
    if args.players < 2:
        raise ValueError(f"--players must be at least 2; got {args.players}")
    if len(specs) == 1:
        specs = specs * (args.players - 1)
    if len(specs) != args.players - 1:
        raise ValueError(
            f"--opponents lists {len(specs)} specs for {args.players - 1} opponents: "
            "give one spec per opponent, or a single spec for all"
        )
    if not 0 <= args.seat < args.players:
        raise ValueError(f"--seat must be 0..{args.players - 1}; got {args.seat}")
    if args.seed is None:
        args.seed = int(np.random.SeedSequence().entropy % 2**63)
    elif args.seed < 0:
        raise ValueError(f"--seed must be >= 0; got {args.seed}")
    return specs


def main(
    argv: list[str] | None = None, *, out: TextIO | None = None, inp: TextIO | None = None
) -> int:
    out = out if out is not None else sys.stdout
    inp = inp if inp is not None else sys.stdin
    game = None
    try:
        args = parse_args(argv)
        try:
            specs = _specs(args)
            game = Game(args, specs, out, inp)
        except Exception as err:  # bad options or an opponent that cannot be built: no traceback
            print(f"error: {err}", file=sys.stderr)
            return 2
        try:
            game.play()
        except Quit as why:
            out.write(f"Game abandoned ({why}).\n")
        except OpponentError as err:
            print(f"error: {err}", file=sys.stderr)
            game.save()
            return 1
        game.save()
        out.flush()
        return 0
    except KeyboardInterrupt:
        try:
            out.write("\ninterrupted\n")
            if game is not None:
                game.save()
            out.flush()
        except (KeyboardInterrupt, OSError):
            pass
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the final flush, as the Python docs advise.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
