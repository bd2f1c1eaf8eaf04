"""`python -m cf_env.tools.play`: play Chicken Foot in the terminal against bots or trained agents.

    python -m cf_env.tools.play --opponents ppo:checkpoints/ppo-4p-d9,greedy,heuristic
    python -m cf_env.tools.play --opponents greedy --players 4 --rounds 3 --image table.png

You sit in seat ``--seat`` (default 0); the other seats are filled from ``--opponents``, a
comma-separated list of policy specs (`cf_env.agents.policies.load_policy`: random, greedy, heuristic,
ismcts:<iterations>, guided:<checkpoint>:<iterations>, ppo:<checkpoint>, module:factory) — one
spec per opponent, or a single spec for all of them. Without ``--players`` there is one
opponent per spec. Opponents are played by the arena (`cf_env.agents.arena`), on their own
observations, built exactly as the env builds them, and asked every move, forced ones too.

A checkpoint plays only the game it was trained for, so with a ``ppo:`` or ``guided:`` opponent
the rules come from its card (``card.json``: players, set, spinner arms, hand size and every
variant): options left out are taken from it, and ``--players``/``--max-pips``/
``--spinner-arms`` that contradict it (or ``--rounds`` above its rounds; any other ``--rounds``
when the card plays to a target score) exit 2 with an error naming both values. ``--record``
and ``--image`` paths are checked before the game starts. In a game to a target score (a card's
variant) rounds are counted, not "r of N" — the countdown of start doubles restarts after the
double-blank — and the end names the round in which a total passed the target.

On your turn the table, your hand and your legal moves are shown as a numbered list; type a
number (``q`` quits, ``t`` shows the table again). When you have exactly one legal move
(a forced draw or pass) it is made for you. When nobody was dealt a round's start double, the
search for it (R5, or the card's `start_search` variant) is announced with how many tiles each
seat drew, or which lower double started instead. At the end of each round
everyone's remaining hand is shown with the points it scores (R12). ``--image PATH`` rewrites a
PNG of the table after every move; ``--record PATH`` saves the game (`cf_env.viz.record`) for
`python -m cf_env.viz.replay`.

Exit codes: 0 the game ended, or you quit (``q`` or end of input); 1 an opponent failed
(an error or an illegal action; a bot raising `SystemExit` or `KeyboardInterrupt` has failed
too), or the record could not be written; 2 bad arguments; 130 interrupted (your Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from cf_env.agents.arena import Arena, IllegalPolicyActionError, PolicyError, user_interrupts
from cf_env.core.actions import DRAW, PASS, decode
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.tools.cli import HelpFormatter, limit_threads
from cf_env.viz.record import RecordError, final_of, make_record, round_end_view, save_record
from cf_env.viz.render import (
    PANEL_NAME,
    arm_labels,
    move_name,
    render_text,
    round_label,
    round_number,
    seat_label,
    tile_text,
)

QUIT = ("q", "quit", "exit")
SHOW = ("t", "table", "?", "h", "help")
# Options that set a rule a checkpoint's card also sets: argparse dest -> config field.
RULE_OPTIONS = {
    "players": "num_players",
    "max_pips": "max_pips",
    "spinner_arms": "spinner_arms",
    "rounds": "num_rounds",
}
DEFAULTS = {"max_pips": 9, "spinner_arms": 4}  # without a card (and one player per spec)


class Quit(Exception):
    """The player asked to stop (q, or end of input)."""


class OpponentError(Exception):
    """An opponent policy raised or returned an illegal action."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.tools.play",
        description="Play Chicken Foot in the terminal against bots or trained agents.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--opponents",
        default="greedy",
        help="comma-separated policy specs, one per opponent or one for all",
    )
    parser.add_argument("--seat", type=int, default=0, help="your seat")
    parser.add_argument(
        "--players", type=int, default=None,
        help="players incl. you (default: a checkpoint's card, else one per spec + you)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None,
        help="rounds (default: a checkpoint's card, else max-pips + 1)",
    )
    parser.add_argument(
        "--max-pips", type=int, default=None,
        help="double-N set, 6, 9, 12, 15 or 18 (default: a checkpoint's card, else 9)",
    )
    parser.add_argument(
        "--spinner-arms", type=int, default=None,
        help="4 (cross) or 6 (star) (default: a checkpoint's card, else 4)",
    )
    parser.add_argument("--seed", type=int, default=None, help="engine seed (default: random)")
    parser.add_argument("--image", default=None,
                        help="write the table PNG here after each move (default: none)")
    parser.add_argument("--record", default=None,
                        help="save the game record (JSON) here (default: none)")
    return parser.parse_args(argv)


class Game:
    """One terminal game: the engine, the opponents and the console."""

    def __init__(self, args: argparse.Namespace, specs: list[str], out: TextIO, inp: TextIO):
        from cf_env.agents.policies import load_policy

        self.out, self.inp = out, inp
        isatty = getattr(inp, "isatty", None)
        self.echo = bool(isatty and isatty())  # a terminal echoes what the player types
        self.args = args
        self.config = ChickenFootConfig(
            max_pips=args.max_pips,
            num_players=args.players,
            num_rounds=args.rounds,
            spinner_arms=args.spinner_arms,
            **args.card_rules,  # a checkpoint's other rules (hand size, variants), if any
        )
        self.seat = args.seat
        self.seed = args.seed
        self.engine = Engine(self.config, self.seed)
        # Opponent seeds come from the game seed: the same --seed replays the same game.
        seeds = np.random.SeedSequence(self.seed).generate_state(self.config.num_players)
        self.names = ["you"] * self.config.num_players
        policies = [None] * self.config.num_players  # the human's seat has none
        others = [s for s in range(self.config.num_players) if s != self.seat]
        for seat, spec in zip(others, specs):
            policies[seat] = load_policy(spec, self.config, seed=int(seeds[seat]))
            self.names[seat] = spec
        # Opponents are asked even their forced moves, as they always were here: a policy's RNG
        # moves as before, so a --seed replays the games it did. Whatever a bot raises (SystemExit
        # too) is its failure (PolicyError); your Ctrl-C is not (`user_interrupts` in `main`).
        self.arena = Arena(self.engine, policies, self.names, ask_forced=True, wrap_errors=True)
        self.arena.reset_policies()
        self.actions: list[int] = []
        # Score tables pad names to the longest, so long specs (ppo:<path>) keep columns aligned.
        self.width = max(len(self.who(seat)) for seat in range(self.config.num_players))

    # -------------------------------------------------------------------------- output
    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def who(self, seat: int) -> str:
        return "you" if seat == self.seat else f"player_{seat} ({self.names[seat]})"

    def intro(self) -> None:
        cfg = self.config
        if cfg.target_score is None:
            length = f"{cfg.num_rounds} round(s)"
        else:  # (a card's variant: the countdown of doubles restarts until a total passes it)
            length = f"rounds until a total passes {cfg.target_score}"
        self.say(
            f"Chicken Foot: double-{cfg.max_pips} set, {cfg.num_players} players, "
            f"{length}, {cfg.spinner_arms} spinner arms, seed {self.seed}"
        )
        for seat in range(cfg.num_players):
            self.say(f"  seat {seat}: {self.who(seat)}")
        if self.args.card_spec:
            self.say(
                f"  (rules from the card of {self.args.card_spec}, the game it was trained for)"
            )
        self.say("Type the number of a move; q quits, t shows the table again.")
        self.round_start()

    def round_start(self) -> None:
        e = self.engine
        self.say()
        self.announce_search()
        self.say(
            f"=== Round {round_label(e, ' of ')}: "
            f"{self.who(e.start_seat)} {'set' if e.start_seat == self.seat else 'sets'} "
            f"{e.center}|{e.center} in the centre; "
            f"{self.who(e.current)} {'go' if e.current == self.seat else 'goes'} first ==="
        )

    def announce_search(self) -> None:
        """R5: when nobody was dealt the start double, seats drew until it came up — in turn,
        or (variant "all_draw") all at once — or (variant "lower_double") a lower double started.

        The engine does the search inside the deal; what each seat drew is read back from the
        hand sizes (the finder also placed the double), so a human knows why their hand grew.
        """
        e, cfg = self.engine, self.config
        n, size = cfg.num_players, cfg.hand_size
        due = cfg.max_pips - e.round  # R4: this round's double; a lower centre is the variant's
        if e.center < due:
            self.say(
                f"Nobody was dealt the {due}|{due}: the highest lower double dealt, "
                f"{e.center}|{e.center}, starts the round (R5 variant lower_double)."
            )
            return
        drawn = [e.hand_counts[s] - size + (s == e.start_seat) for s in range(n)]
        if not any(drawn):
            return
        draws = ", ".join(f"{self.who(s)} drew {drawn[s]}" for s in range(n) if drawn[s])
        how = (
            "all drew one tile at a time, together,"
            if cfg.start_search == "all_draw"
            else "drew from the boneyard in turn"
        )
        rule = "R5 variant all_draw" if cfg.start_search == "all_draw" else "R5"
        self.say(
            f"Nobody was dealt the {e.center}|{e.center}: the players {how} until it came up, "
            f"keeping what they drew ({rule}): {draws}."
        )

    def show_table(self) -> None:
        self.say()
        self.say(render_text(self.engine, viewer=self.seat))

    def round_end(self, points: list[int], view: Engine | None) -> None:
        e = view if view is not None else self.engine
        self.say(render_text(e, viewer=self.seat))
        out = [s for s in range(self.config.num_players) if e.hand_counts[s] == 0]
        how = f"{self.who(out[0])} went out" if out else "nobody can play (blocked)"
        self.say(f"--- Round over: {how}. Points this round (lower is better), hands left (R12):")
        totals = self.engine.totals()
        pairs = e.tables.pairs
        for seat in range(self.config.num_players):
            hand = " ".join(tile_text(pairs[t]) for t in e.hand(seat)) or "(out)"
            self.say(
                f"    {self.who(seat):<{self.width}} {points[seat]:>4}   total {totals[seat]:>5}"
                f"   {hand}"
            )

    def standings(self) -> None:
        e = self.engine
        totals = e.totals()
        self.say()
        if self.config.target_score is not None:
            self.say(
                f"A total passed {self.config.target_score} in round {round_number(e)}: "
                "the game is over."
            )
        self.say("=== Final standings (lowest total wins; R13 breaks ties) ===")
        order = sorted(
            range(self.config.num_players), key=lambda s: (s not in e.winners, totals[s])
        )
        for rank, seat in enumerate(order, start=1):
            mark = "  WINNER" if seat in e.winners else ""
            rounds = " ".join(str(p) for p in e.scores[seat])
            name = f"{self.who(seat):<{self.width}}"
            self.say(f"  {rank}. {name} {totals[seat]:>5}   rounds: {rounds}{mark}")
        self.say("You win!" if self.seat in e.winners else "Better luck next time.")

    def write_image(self) -> None:
        """Rewrite `--image`: the table from the human's seat with the players' names; once the
        game is over, every hand is shown (R12 scores them), as replay's last frame does."""
        if self.args.image:
            from cf_env.viz.render_image import save_png  # Pillow only when pictures are asked for

            # "player_1 (ppo:selfplay-4p-d9)": the seat tells apart opponents of one spec.
            names = [seat_label(s, name, PANEL_NAME) for s, name in enumerate(self.names)]
            save_png(self.engine, self.args.image, viewer=self.seat, names=names,
                     reveal=self.engine.game_over)

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
        """The opponent's move, from the arena (which checks it)."""
        try:
            return self.arena.decide()
        except IllegalPolicyActionError as err:
            who = self.who(seat)
            if err.action is None:
                raise OpponentError(f"{who} returned {err.answer}, not an action id") from err
            raise OpponentError(f"{who} chose illegal action {err.action}") from err
        except PolicyError as err:  # it raised: anything, SystemExit and KeyboardInterrupt too
            raise OpponentError(f"{self.who(seat)} failed: {err.error}") from err
        except Exception as err:  # a user's policy may fail in any way; report, never trace
            raise OpponentError(f"{self.who(seat)} failed: {type(err).__name__}: {err}") from err

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

    def save(self) -> bool:
        """Write the record if one was asked for; False (and an error line) if it failed."""
        if self.args.record:
            try:
                record = make_record(
                    self.config, self.seed, self.actions, final_of(self.engine), self.names
                )
                save_record(self.args.record, record)
            except OSError as err:  # checked before the game, but a disk can fill up meanwhile
                print(f"error: cannot write --record {self.args.record!r}: {err}", file=sys.stderr)
                return False
            except RecordError as err:  # a target game past the records' cap on rounds
                print(f"error: cannot record this game: {err}", file=sys.stderr)
                return False
            self.say(f"game record saved to {self.args.record}")
        return True


def _card_rules(specs: list[str]) -> tuple[str, dict] | None:
    """(spec, rules) from the card of the first opponent playing a checkpoint (``ppo:``,
    ``guided:``), or None without one.

    The rules are every rule the checkpoint was trained with (`ChickenFootConfig.from_dict`
    drops the driver options old cards also name, `cf_env.agents.checkpoint.NEUTRAL_FIELDS`).
    Other checkpoint opponents are checked against the resulting config when they load.
    """
    from cf_env.agents.checkpoint import read_card
    from cf_env.agents.policies import spec_checkpoint

    for spec in specs:
        path = spec_checkpoint(spec)
        if path:
            return spec, ChickenFootConfig.from_dict(read_card(path)["env_config"]).to_dict()
    return None


def _apply_card(args: argparse.Namespace, specs: list[str]) -> None:
    """Fill the rule options left out from a checkpoint's card; refuse ones that contradict it."""
    args.card_spec, args.card_rules = None, {}
    card = _card_rules(specs)
    if card is None:
        for dest, value in {**DEFAULTS, "players": len(specs) + 1}.items():
            if getattr(args, dest) is None:
                setattr(args, dest, value)
        return
    spec, rules = card
    # A game to a target score has no number of rounds to shorten (its countdown restarts).
    fewer = rules.get("target_score") is None
    for dest, field in RULE_OPTIONS.items():
        given, trained = getattr(args, dest), rules.pop(field)
        if given is None:
            setattr(args, dest, trained)
        elif field == "num_rounds" and not fewer and given != trained:
            raise ValueError(
                f"--rounds {given} contradicts {spec}: its card plays rounds until a total passes "
                f"target_score {rules['target_score']} (leave --rounds out)"
            )
        elif given != trained and not (field == "num_rounds" and 1 <= given < trained):
            option = "--" + dest.replace("_", "-")
            # (A shorter game is fine: round r of it is round r of the trained one.)
            limit = f"at most {trained}" if field == "num_rounds" else str(trained)
            raise ValueError(
                f"{option} {given} contradicts {spec}: its card says {field} {trained}, and a "
                f"checkpoint plays only the game it was trained for ({option} {limit}, or leave "
                f"{option} out to take it from the card)"
            )
    args.card_spec, args.card_rules = spec, rules


def _check_writable(option: str, path: str | None) -> None:
    """Refuse an output path that cannot be written, before the game (not after it)."""
    if path is None:
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise ValueError(f"{option} {path!r} is a folder; give a file name, e.g. {path}/game.json")
    if not folder.is_dir():
        raise ValueError(f"{option} {path!r}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ValueError(f"{option} {path!r}: not writable (check the folder's permissions)")


def resolve_specs(args: argparse.Namespace) -> list[str]:
    """The opponent specs, one per opponent; fills the options left to defaults or to a card
    (the web app, `cf_env.tools.web_games`, builds its games by the same rules)."""
    specs = [s.strip() for s in args.opponents.split(",")]
    if any(not s for s in specs):
        raise ValueError(f"--opponents has an empty spec: {args.opponents!r}")
    _check_writable("--record", args.record)
    _check_writable("--image", args.image)
    _apply_card(args, specs)
    if args.players < 2:
        raise ValueError(f"--players must be at least 2; got {args.players}")
    if len(specs) == 1:
        specs = specs * (args.players - 1)
    if len(specs) != args.players - 1:
        card = args.card_spec
        source = f" ({args.players} players, from the card of {card})" if card else ""
        raise ValueError(
            f"--opponents lists {len(specs)} specs for {args.players - 1} opponents{source}: "
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
    limit_threads()
    try:
        args = parse_args(argv)
        try:
            specs = resolve_specs(args)
            game = Game(args, specs, out, inp)
        except Exception as err:  # bad options or an opponent that cannot be built: no traceback
            print(f"error: {err}", file=sys.stderr)
            return 2
        try:
            with user_interrupts():  # a real Ctrl-C: UserInterrupt, which the arena lets through
                game.play()
        except Quit as why:
            out.write(f"Game abandoned ({why}).\n")
        except OpponentError as err:
            print(f"error: {err}", file=sys.stderr)
            game.save()
            return 1
        saved = game.save()
        out.flush()
        return 0 if saved else 1
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
