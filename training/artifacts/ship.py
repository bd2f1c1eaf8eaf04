"""`python -m training.ship <run-dir> <dest>`: package a run's checkpoint as a shipped agent.

Copies the run's chosen checkpoint (`--which best|latest`) to `<dest>/` in the weights-only format
(card.json, policy.npz, and for a self-play run with a privileged critic value.npz, the value head
`lookahead:` search reads; never model.zip, which unpickles on load: see
`training.artifacts.export`), evaluates it with `training.evaluation.evaluate` against each baseline
— the bot on every other seat, duplicate deals with seat rotation — over single rounds and over full
games, draws the learning curve, and writes the card: `card.json` (the checkpoint card plus
`training` and `evaluation` sections) and `card.md` (the same for people). `--full-games` names the
baselines also played over full games (full games cost ten rounds each: the default is all three),
`--also` adds single-round lineups against other specs (an older agent, say).

    python -m training.ship runs/ppo-4p-d9 checkpoints/ppo-4p-d9 --deals 2000 --workers 2
    python -m training.ship runs/selfplay-4p-d9 checkpoints/selfplay-4p-d9 --deals 2000 \
        --workers 2 --full-games heuristic --also ppo:checkpoints/ppo-4p-d9

Everything is checked before the evaluations start (`check_ship`): the run directory, its
`run.json`, the pointer and the checkpoint it names (card and weights, by building the policy
once), every evaluation's settings, and the destination. `<dest>` may be new, empty, or (with
`--force`) an earlier shipped agent (a folder with `card.json`), which is replaced; any other
existing path is refused, and so is a destination inside the run directory (or holding it).
The agent's folders are made 0755 and its files 0644 (`publish_modes`). The new agent is
built in a staging sibling of `<dest>` and swapped into place whole when complete
(`cf_env.core.atomic.replace_dir`), so a ship killed at any instant leaves the earlier agent
or the new one; the next ship removes a killed ship's staging folder and renames back an agent
that an older ship left aside (`.<dest>.old-…`). A problem found by the checks prints one
``error:`` line and exits 2; anything later is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import difflib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cf_env import ChickenFootConfig
from cf_env.core import atomic
from cf_env.tools.cli import HelpFormatter, limit_threads
from training.artifacts import checkpoints as ckpt
from training.artifacts import model_card
from training.config import config_from_dict
from training.evaluation.evaluate import evaluate, fail, plan_evaluation
from training.evaluation.plot import load_evals, plot_run

BASELINES = ("random", "greedy", "heuristic")


@dataclass(frozen=True)
class ShipPlan:
    """A checked ship (`check_ship`): where from, where to, and the evaluation settings."""

    run_dir: Path
    dest: Path
    which: str
    source: Path  # the checkpoint directory the run's pointer names
    info: dict  # the run's run.json
    deals: int
    workers: int
    seed: int
    full_games: tuple[str, ...] = BASELINES  # baselines also evaluated over full games
    also: tuple[str, ...] = ()  # further opponent specs, single rounds (e.g. an older agent)
    hardware: str = "2 CPU cores"  # where the run trained, for the card

    def lineups(self) -> list[tuple[str, bool]]:
        """(opponent spec, single_round) for every evaluation, in the card's order."""
        return ([(bot, True) for bot in BASELINES] + [(spec, True) for spec in self.also]
                + [(bot, False) for bot in self.full_games])


def _pick(run_dir: Path, which: str) -> Path:
    pointer = run_dir / "checkpoints" / f"{which}.json"
    if not pointer.is_file():
        other = "latest" if which == "best" else "best"
        raise FileNotFoundError(f"{pointer} does not exist; is {run_dir} a training run? "
                                f"(try --which {other})")
    return ckpt.read_pointer(pointer)  # bounded, and only a checkpoint folder beside it


def _run_info(run_dir: Path) -> dict:
    """run.json, checked for what the card's `training` section reads from it."""
    path = run_dir / "run.json"
    try:
        info = json.loads(path.read_text())
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err} (a training run has one)") from None
    except ValueError as err:
        raise ValueError(f"{path} is not valid JSON ({err})") from None
    sessions = info.get("sessions") if isinstance(info, dict) else None
    if not isinstance(sessions, list) or not all(
        isinstance(s, dict) and isinstance(s.get("argv"), list) for s in sessions
    ) or "packages" not in info:
        raise ValueError(f"{path}: expected an object with 'packages' and 'sessions' "
                         "[{'argv': [...]}, ...], as training.ppo writes it")
    return info


def _recover_dest(dest: Path) -> None:
    """Undo what a killed ship left beside `dest` (`atomic.recover_dir`), including an agent
    that a ship before this version moved to `.<dest>.old-<random>` and never moved back."""
    atomic.recover_dir(dest)
    aside = sorted(dest.parent.glob(f".{dest.name}.old-*")) if dest.parent.is_dir() else []
    if not dest.exists() and len(aside) == 1 and (aside[0] / "card.json").is_file():
        aside[0].rename(dest)
        print(f"restored {dest} from {aside[0].name}, where an interrupted ship had left it")


def _check_dest(run_dir: Path, dest: Path, force: bool = False) -> None:
    run, target = run_dir.resolve(), dest.resolve()
    if target == run or run in target.parents or target in run.parents:
        raise ValueError(f"destination {dest} would overlap the run directory {run_dir}; ship to "
                         "a folder outside it, e.g. checkpoints/<name>")
    if dest.exists() or dest.is_symlink():
        if not dest.is_dir() or dest.is_symlink():
            raise ValueError(f"destination {dest} exists and is not a folder; give a new folder "
                             "or an earlier shipped agent's folder")
        if any(dest.iterdir()) and not (dest / "card.json").is_file():
            raise ValueError(f"destination {dest} exists and is not a shipped agent (no "
                             "card.json); refusing to replace it: give a new or empty folder")
        if any(dest.iterdir()) and not force:
            raise ValueError(f"destination {dest} holds a shipped agent already; pass --force to "
                             "replace it, or give a new folder")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent):  # where the new agent is built
            pass
    except OSError as err:
        raise ValueError(f"cannot write beside {dest}: {err.strerror or err}") from None


def check_ship(run_dir: str | Path, dest: str | Path, which: str = "latest", deals: int = 2000,
               workers: int = 1, seed: int = 1, full_games: tuple[str, ...] = BASELINES,
               also: tuple[str, ...] = (), hardware: str = "2 CPU cores",
               force: bool = False) -> ShipPlan:
    """Check everything `ship` needs before its long work; `ValueError`/`OSError` say what is
    wrong (see the module docstring)."""
    run_dir, dest = Path(run_dir), Path(dest)
    if which not in ("best", "latest"):
        raise ValueError(f"which must be 'best' or 'latest'; got {which!r}")
    unknown = [bot for bot in full_games if bot not in BASELINES]
    if unknown:
        near = [match for bot in unknown for match in difflib.get_close_matches(bot, BASELINES, 1)]
        raise ValueError(f"--full-games takes baselines from {list(BASELINES)}; got {unknown}"
                         + (f"; did you mean {', '.join(map(repr, near))}?" if near else ""))
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} does not exist (expected runs/<name>)")
    _recover_dest(dest)  # first: an agent a killed ship left aside is put back whatever follows
    source = _pick(run_dir, which)
    card = ckpt.read_card(source)
    config = ChickenFootConfig.from_dict(card["env_config"])
    info = _run_info(run_dir)
    load_evals(run_dir)  # the learning curve's log: a damaged one is refused before the work
    plan = ShipPlan(run_dir, dest, which, source, info, deals, workers, seed, tuple(full_games),
                    tuple(also), hardware)
    # Builds the policies once per evaluation: bad weights or a bad spec fail here.
    for opponent, single_round in plan.lineups():
        plan_evaluation([f"ppo:{source}", opponent], config, deals, seed, workers, single_round)
    _check_dest(run_dir, dest, force)
    return plan


def ship(run_dir: Path, dest: Path, which: str, deals: int, workers: int, seed: int, **more) -> dict:
    """Check (`check_ship`), then ship; returns the card written to `dest/card.json`."""
    return run_ship(check_ship(run_dir, dest, which, deals, workers, seed, **more))


def run_ship(plan: ShipPlan) -> dict:
    """Build the shipped agent in a temporary sibling of `plan.dest`, then swap it into place."""
    dest = plan.dest
    staging = atomic.staging_dir(dest, "shipping")
    try:
        card = _build(plan, staging)
        publish_modes(staging)
        atomic.replace_dir(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # left only if something failed
    print(f"shipped {dest}/ ({', '.join(sorted(p.name for p in dest.iterdir()))}); play it as "
          f"ppo:{dest}", flush=True)
    return card


def publish_modes(folder: Path) -> None:
    """Folders 0755 and files 0644 under `folder`, itself included: a shipped agent is for
    everyone to read, whatever modes the temporary files and folders it was built from had
    (`tempfile` makes them 0600 and 0700)."""
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def _build(plan: ShipPlan, folder: Path) -> dict:
    for name in ("card.json", "policy.npz"):  # weights only: a shipped agent holds no pickle
        shutil.copy2(plan.source / name, folder / name)
    card = ckpt.read_card(folder)
    config = ChickenFootConfig.from_dict(card["env_config"])
    value = _value_head(plan, folder, card)
    if value is not None:
        card["value"] = value
    card["training"] = {
        "run": plan.run_dir.name,
        "checkpoint": f"{plan.which} ({plan.source.name})",
        "commands": ["python -m training.ppo " + " ".join(session["argv"])
                     for session in plan.info["sessions"]],
        "steps": card["steps"],
        "wall_time_s": card.get("wall_time_s"),
        "hardware": plan.hardware,
        "packages": plan.info["packages"],
    }
    evaluation = {"deals": plan.deals, "seed": plan.seed,
                  "method": "training.evaluate, duplicate deals, each deal replayed with seats "
                  "rotated; 95% CI over deals (Wilson for win rates)",
                  "results": []}
    agent = f"ppo:{folder}"
    for bot, single_round in plan.lineups():
        started = time.perf_counter()
        result = evaluate([agent, bot], config, plan.deals, seed=plan.seed,
                          workers=plan.workers, single_round=single_round)
        me, diff = result["policies"][0], result["differences"][0]
        evaluation["results"].append({
            "opponents": f"{config.num_players - 1}× {bot}",
            "single_round": single_round,
            "win_rate": me["win_rate"],
            "round_score": me["round_score"],
            "rank": me["rank"],
            "win_rate_minus_opponent": diff["win_rate"],
            "seconds": round(time.perf_counter() - started, 1),
        })
        print(f"{'round' if single_round else 'game '} vs {config.num_players - 1}× {bot}: win "
              f"{_pct(me['win_rate'])} (parity {1 / config.num_players:.0%})", flush=True)
    card["evaluation"] = evaluation
    (folder / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    plot_run(plan.run_dir, folder / "learning_curve.png")
    (folder / "card.md").write_text(card_markdown(card, plan.dest))
    return card


def _value_head(plan: ShipPlan, folder: Path, card: dict) -> dict | None:
    """Write `value.npz` from the checkpoint's `trainer.pt` when its critic is privileged (the
    value head `lookahead:` search reads); None for MaskablePPO runs and the ablation's
    observation-only critic."""
    trainer = plan.source / "trainer.pt"
    train = config_from_dict(card["train_config"]) if "train_config" in card else None
    if not trainer.is_file() or train is None or not train.selfplay.privileged_critic:
        return None
    reward = {"reward_mode": train.options().reward_mode, "win_bonus": train.selfplay.win_bonus,
              "episode": train.env.episode}
    return ckpt.write_value_head(folder, trainer, card["activation"], reward)


def _pct(ci: dict) -> str:
    return f"{ci['mean']:.1%} [{ci['ci_low']:.1%}, {ci['ci_high']:.1%}]"


def card_markdown(card: dict, dest: Path) -> str:
    """The agent's `card.md`: its model card (`training.artifacts.model_card`)."""
    return model_card.render(card, dest)[0]


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m training.ship", description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("run_dir", help="a run directory written by python -m training.ppo")
    parser.add_argument("dest", help="the shipped agent's folder, e.g. checkpoints/<name>")
    parser.add_argument("--which", choices=("best", "latest"), default="latest",
                        help="the run's checkpoint to ship")
    parser.add_argument("--deals", type=int, default=2000, help="duplicate deals per evaluation")
    parser.add_argument("--workers", type=int, default=1, help="evaluation worker processes")
    parser.add_argument("--seed", type=int, default=1, help="the evaluations' seed")
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier shipped agent at dest (without it, refused)")
    parser.add_argument("--full-games", default=",".join(BASELINES), metavar="BOT[,BOT]",
                        help="baselines also evaluated over full games")
    parser.add_argument("--also", default="", metavar="SPEC[,SPEC]",
                        help="further opponents, single rounds (e.g. ppo:checkpoints/ppo-4p-d9)")
    parser.add_argument("--hardware", default="2 CPU cores",
                        help="where the run trained, as the card should say it")
    args = parser.parse_args(argv)
    limit_threads()
    try:
        plan = check_ship(args.run_dir, args.dest, args.which, args.deals, args.workers, args.seed,
                          full_games=_names(args.full_games), also=_names(args.also),
                          hardware=args.hardware, force=args.force)
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError
        fail(err, 2)
    return run_ship(plan)
