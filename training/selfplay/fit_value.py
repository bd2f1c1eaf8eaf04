"""Fit a value head for a shipped actor by policy evaluation: `python -m training.fit_value <ckpt>`.

`lookahead:` search (`cf_env.agents.lookahead`) scores positions with a checkpoint's value head.
A self-play run's own critic can be shipped as one (`training.artifacts.ship`), but (a) a run keeps
`trainer.pt`, and so its critic, only for its latest and best checkpoints, so an agent shipped
from another step has none; and (b) that critic learned values for games against the run's
opponent pool (bots and frozen snapshots in `selfplay.pool_share` of the seats), while a search
that models every other seat as the actor wants values for games among copies of the actor.

This command fits the privileged critic (observation + hidden tiles, `Encoder.privileged`) for pure
self-play of the checkpoint's **frozen** actor: `training.selfplay.collector.Collector` with pool
share 0 (every seat samples from the actor, as in training; for the shipped agent the samples differ
from its argmax in about one decision in ten, which keeps positions after other moves in the data),
Monte Carlo returns of the reward the card names (the zero-sum round reward plus the run's
`win_bonus`, discounted by `ppo.gamma` per decision as in training), mean-squared error, Adam,
`--epochs` passes over each fresh rollout. It starts from `--init` (a `trainer.pt` or a checkpoint
with a value head; default: the checkpoint's own value head if it has one) or from a fresh network.
It writes `value.npz` and the card's `value` entry into the checkpoint (`fit` in the entry records
how; the checkpoint folder is swapped whole, so the head and the card that names its digest never
disagree), then regenerates `card.md`.

    python -m training.fit_value checkpoints/selfplay-4p-d9 \\
        --init runs/selfplay-4p-d9-wb3/checkpoints/step_032006144/trainer.pt --decisions 4000000
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

from cf_env import ChickenFootConfig
from cf_env.agents.checkpoint import (
    VALUE_FILE,
    CheckpointError,
    load_value_head,
    load_weights,
    read_card,
    resolve_checkpoint,
)
from cf_env.core import atomic
from cf_env.tools.cli import HelpFormatter
from training.artifacts import checkpoints as ckpt
from training.artifacts.ship import card_markdown
from training.config import config_from_dict
from training.selfplay.collection import build_networks, collector_kwargs
from training.selfplay.collector import Collector, compute_gae
from training.selfplay.learner import update_autocast

# Upper bounds of the sizes the command allocates (a rollout is games x rollout_steps rows).
FIT_LIMITS = {"decisions": 10**10, "games": 1 << 14, "rollout_steps": 1 << 12, "epochs": 1000,
              "batch_size": 1 << 20}


def _load_linear_layers(module: torch.nn.Sequential, layers: list[tuple[np.ndarray, np.ndarray]],
                        what: str) -> None:
    linears = [m for m in module if isinstance(m, torch.nn.Linear)]
    shapes = [tuple(m.weight.shape) for m in linears]
    if [tuple(W.shape) for W, _ in layers] != shapes:
        raise CheckpointError(f"{what}: layer shapes {[W.shape for W, _ in layers]}; the "
                              f"card's network has {shapes}")
    with torch.no_grad():
        for m, (W, b) in zip(linears, layers):
            m.weight.copy_(torch.from_numpy(np.asarray(W, np.float32)))
            m.bias.copy_(torch.from_numpy(np.asarray(b, np.float32)))


def _initial_critic(critic: torch.nn.Sequential, init: str | None, checkpoint: Path) -> str:
    """Load the starting weights into `critic`; return what they were, for the card."""
    if init is None and (checkpoint / VALUE_FILE).is_file():
        init = str(checkpoint)
    if init is None or init == "fresh":
        return "fresh"
    path = Path(init)
    if path.is_file():  # a self-play trainer.pt
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "critic" not in state:
            raise CheckpointError(f"--init {path}: not a self-play trainer state (no 'critic')")
        critic.load_state_dict(state["critic"])
        return str(path)
    directory = resolve_checkpoint(path)
    rules = ChickenFootConfig.from_dict(read_card(directory)["env_config"])
    head = load_value_head(directory, rules)  # validated and digest-checked; its own rules: no
    _load_linear_layers(critic, [(W.T, b) for W, b in head.layers],  # columns dropped
                        str(directory / VALUE_FILE))
    return str(directory)


def fit(checkpoint: str | Path, *, decisions: int, games: int = 256, rollout_steps: int = 32,
        epochs: int = 2, batch_size: int = 1024, learning_rate: float = 1e-4, seed: int = 0,
        init: str | None = None, command: str | None = None, log=print) -> dict:
    """Fit and write the value head of `checkpoint` (module docstring); returns its card entry."""
    directory = resolve_checkpoint(checkpoint)
    card = read_card(directory)
    if "train_config" not in card or card.get("algo") != "selfplay":
        raise CheckpointError(f"{directory}: not a self-play checkpoint (the card has no self-play "
                              "train_config: the reward and the networks come from it)")
    config = config_from_dict(card["train_config"])
    if not config.selfplay.privileged_critic:
        raise CheckpointError(f"{directory}: trained with an observation-only critic; a value "
                              "head for search reads the privileged vector")
    if config.env.episode != "round":
        raise CheckpointError(f"{directory}: env.episode {config.env.episode!r}; search needs "
                              "per-round values")
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(seed)
    actor, critic = build_networks(config)
    _load_linear_layers(actor, load_weights(directory, card), str(directory / "policy.npz"))
    started_from = _initial_critic(critic, init, directory)
    kwargs = {**collector_kwargs(config), "pool_share": 0.0}
    collector = Collector(config.rules(), games, seed=seed, **kwargs)
    optimizer = torch.optim.Adam(critic.parameters(), lr=learning_rate, eps=1e-5)
    generator = torch.Generator().manual_seed(seed)
    autocast = update_autocast(config.selfplay.update_dtype)
    gamma = config.ppo.gamma
    done, started, history = 0, time.time(), []
    while done < decisions:
        roll = collector.collect(actor, critic, rollout_steps)
        # Open chains at the rollout's end bootstrap from the critic being fitted (as PPO's
        # returns do); lambda 1 makes every other return the plain discounted outcome.
        compute_gae(roll, gamma, 1.0)
        x, target = torch.from_numpy(roll.state), torch.from_numpy(roll.returns)
        before = float(np.mean((roll.value - roll.returns) ** 2))
        for _ in range(epochs):
            order = torch.randperm(len(target), generator=generator)
            for start in range(0, len(target), batch_size):
                idx = order[start : start + batch_size]
                with autocast:
                    value = critic(x[idx]).float().squeeze(1)
                loss = 0.5 * ((value - target[idx]) ** 2).mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        done += len(target)
        history.append(before)
        if len(history) == 1 or len(history) % 20 == 0:
            var = float(np.var(roll.returns))
            log(f"{done:,} decisions: mean squared error {np.mean(history[-20:]):.4f} before "
                f"fitting each rollout (returns' variance {var:.4f}), {time.time() - started:.0f} s")
    reward = {"reward_mode": config.options().reward_mode, "win_bonus": config.selfplay.win_bonus,
              "episode": config.env.episode}
    # The new head and the card naming its digest change together: the checkpoint is copied,
    # changed in the copy, and swapped into place whole (a kill leaves the old one or the new).
    staging = atomic.staging_dir(directory, "fitting")
    try:
        # (tmp*: the scratch folder an earlier version could leave inside a checkpoint)
        shutil.copytree(directory, staging, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("tmp*"))
        entry = ckpt.write_value_arrays(staging, critic.state_dict(), card["activation"], reward)
        entry["fit"] = {
            "method": "policy evaluation: pure self-play of the frozen actor (pool share 0), "
                      "Monte Carlo returns, mean-squared error (training.selfplay.fit_value)",
            "decisions": done, "games": games, "rollout_steps": rollout_steps, "epochs": epochs,
            "batch_size": batch_size, "learning_rate": learning_rate, "seed": seed,
            "init": started_from, "first_mse": history[0],
            "last_mse": float(np.mean(history[-20:])),
            "wall_time_s": round(time.time() - started, 1),
        }
        if command is not None:
            entry["fit"]["command"] = command
        card["value"] = entry
        (staging / "card.json").write_text(json.dumps(card, indent=2) + "\n")
        if "training" in card and "evaluation" in card:  # a shipped agent: card.md names the head
            (staging / "card.md").write_text(card_markdown(card, directory))
        atomic.replace_dir(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # left only if something failed
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.fit_value",
                                     description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("checkpoint", help="a self-play checkpoint folder (or run directory)")
    parser.add_argument("--decisions", type=int, default=4_000_000,
                        help="learner decisions collected and fitted on (default 4,000,000)")
    parser.add_argument("--games", type=int, default=256, help="games stepped together")
    parser.add_argument("--rollout-steps", type=int, default=32,
                        help="batched steps per rollout (games x steps decisions each)")
    parser.add_argument("--epochs", type=int, default=2, help="passes over each rollout")
    parser.add_argument("--batch-size", type=int, default=1024, help="minibatch size")
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="Adam step size")
    parser.add_argument("--seed", type=int, default=0, help="seeds the games and the fit")
    parser.add_argument("--init", default=None,
                        help="start from a trainer.pt, a checkpoint with a value head, or 'fresh' "
                             "(default: the checkpoint's own value head, else fresh)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    for name, most in FIT_LIMITS.items():
        if not 1 <= getattr(args, name) <= most:
            parser.error(f"--{name.replace('_', '-')} must be in 1..{most:,}")
    if not args.learning_rate > 0:
        parser.error("--learning-rate must be > 0")
    try:
        entry = fit(args.checkpoint, decisions=args.decisions, games=args.games,
                    rollout_steps=args.rollout_steps, epochs=args.epochs,
                    batch_size=args.batch_size, learning_rate=args.learning_rate, seed=args.seed,
                    init=args.init, command=" ".join(["python -m training.fit_value", *argv]))
    except (CheckpointError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    fitted = entry["fit"]
    print(f"wrote {Path(args.checkpoint) / VALUE_FILE} ({fitted['decisions']:,} decisions; mean "
          f"squared error on a fresh rollout {fitted['first_mse']:.4f} at the start, "
          f"{fitted['last_mse']:.4f} over the last 20)")
    return 0
