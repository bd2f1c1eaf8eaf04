"""Checkpoints: writing them atomically, checking them against an env, and playing them.

A checkpoint is a directory:

| file | what | needed for |
|---|---|---|
| `card.json` | format, steps, env config, `OBSERVATION_VERSION`, sizes, network, provenance | everything |
| `policy.npz` | the actor's weights as plain arrays (`W0, b0, W1, b1, …`, loaded without pickle) | playing |
| `model.zip` | the full sb3-contrib `MaskablePPO` (value net, optimiser state) | resuming training |

Playing a checkpoint (`ppo:<path>` specs, `load_ppo_policy`) needs only the card and the numpy
weights: no torch, no pickle, and a forward pass in tens of microseconds. `<path>` may be a
checkpoint directory, its `model.zip`/`card.json`, a run directory (its latest checkpoint) or a
run's `checkpoints/` folder.

Atomicity: a checkpoint is written into a fresh temporary directory, which is renamed into place
(`step_<N>/`, a name that did not exist) only when complete; the run's `latest.json` / `best.json`
pointers are then replaced with `os.replace`. A crash at any moment leaves the previous pointer
naming a complete checkpoint.

Compatibility (`check_compatible`): a checkpoint plays only in an env with the same rules and
observation encoding. Every `ChickenFootConfig` field must match except `reward_mode`,
`skip_forced` and `illegal_action` (they change neither the game nor the observation) and
`num_rounds` where the env plays fewer rounds than the checkpoint was trained on: round r of a
shorter game is the same position as round r of the longer one, so the observation's one-hot
`round` piece is zero-padded. Anything else raises `CheckpointMismatchError` naming the field.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.observation import observation_layout

CHECKPOINT_FORMAT = 1
# Fields that change neither the rules of play nor the observation; a checkpoint ignores them.
NEUTRAL_FIELDS = ("reward_mode", "skip_forced", "illegal_action")
ACTIVATIONS = ("tanh", "relu")


class CheckpointMismatchError(ValueError):
    """The checkpoint was trained for another game config or observation encoding."""


# ---------------------------------------------------------------------------------- locating
def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """The checkpoint directory `path` names (see the module docstring for accepted forms)."""
    p = Path(path)
    if p.is_file() and p.name in ("model.zip", "card.json", "policy.npz"):
        p = p.parent
    if (p / "card.json").is_file():
        return p
    for pointer in (p / "latest.json", p / "checkpoints" / "latest.json"):
        if pointer.is_file():
            name = json.loads(pointer.read_text())["path"]
            return resolve_checkpoint(pointer.parent / name)
    raise FileNotFoundError(
        f"no checkpoint at {str(path)!r}: expected a directory with card.json, a model.zip, or a "
        "run directory with checkpoints/latest.json"
    )


def read_card(path: str | os.PathLike) -> dict:
    directory = resolve_checkpoint(path)
    card = json.loads((directory / "card.json").read_text())
    if card.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointMismatchError(
            f"{directory}: checkpoint format {card.get('format')!r}; this code reads format "
            f"{CHECKPOINT_FORMAT}"
        )
    return card


# ---------------------------------------------------------------------------------- compatibility
def check_compatible(card: Mapping, config: ChickenFootConfig, *, strict: bool = False) -> None:
    """Raise `CheckpointMismatchError` naming every field in which `config` differs from `card`.

    `strict=True` (used when resuming training) requires every config field to match.
    """
    problems = []
    if card["observation_version"] != OBSERVATION_VERSION:
        problems.append(
            f"observation_version: checkpoint {card['observation_version']} vs env "
            f"{OBSERVATION_VERSION}"
        )
    theirs = ChickenFootConfig.from_dict(card["env_config"]).to_dict()
    ours = config.to_dict()
    for name in ours:
        if ours[name] == theirs[name] or (not strict and name in NEUTRAL_FIELDS):
            continue
        if not strict and name == "num_rounds" and ours[name] < theirs[name]:
            continue  # the observation is padded (module docstring)
        problems.append(f"{name}: checkpoint {theirs[name]!r} vs env {ours[name]!r}")
    if problems:
        raise CheckpointMismatchError(
            "checkpoint was trained for a different game or observation encoding — "
            + "; ".join(problems)
        )


def _round_padder(card: Mapping, config: ChickenFootConfig):
    """A function mapping the env's observation to the checkpoint's (identity when equal)."""
    trained = ChickenFootConfig.from_dict(card["env_config"])
    if trained.num_rounds == config.num_rounds:
        return None
    piece = observation_layout(config).slices["round"]
    extra = trained.num_rounds - config.num_rounds

    def pad(vector: np.ndarray) -> np.ndarray:
        return np.concatenate(
            [vector[: piece.stop], np.zeros(extra, vector.dtype), vector[piece.stop :]]
        )

    return pad


# ---------------------------------------------------------------------------------- playing
class NumpyPolicy:
    """The actor network in numpy: masked logits, then argmax (default) or a sample.

    Only legal actions are ever chosen: illegal logits are set to -inf before the choice.
    """

    def __init__(
        self,
        weights: list[tuple[np.ndarray, np.ndarray]],
        activation: str,
        deterministic: bool = True,
        seed: int | None = None,
        adapt=None,
    ):
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}; got {activation!r}")
        self.weights = weights
        self.activation = np.tanh if activation == "tanh" else (lambda x: np.maximum(x, 0.0))
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        self.adapt = adapt

    def logits(self, vector: np.ndarray) -> np.ndarray:
        x = np.asarray(vector, dtype=np.float32)
        if self.adapt is not None:
            x = self.adapt(x)
        for W, b in self.weights[:-1]:
            x = self.activation(W @ x + b)
        W, b = self.weights[-1]
        return W @ x + b

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        mask = np.asarray(observation["action_mask"]).astype(bool)
        if not mask.any():
            raise ValueError("NumpyPolicy.act: the action mask allows no action")
        logits = np.where(mask, self.logits(observation["observation"]), -np.inf)
        if self.deterministic:
            return int(np.argmax(logits))
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        return int(self.rng.choice(probs.size, p=probs))


def load_weights(directory: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    with np.load(directory / "policy.npz", allow_pickle=False) as data:
        layers = len([k for k in data.files if k.startswith("W")])
        return [(data[f"W{i}"].astype(np.float32), data[f"b{i}"].astype(np.float32))
                for i in range(layers)]


def load_ppo_policy(
    path: str | os.PathLike,
    config: ChickenFootConfig | None = None,
    seed: int | None = None,
    deterministic: bool = True,
) -> NumpyPolicy:
    """A policy playing checkpoint `path` (greedy over legal actions unless `deterministic=False`).

    With `config`, raises `CheckpointMismatchError` unless the checkpoint fits that env.
    """
    directory = resolve_checkpoint(path)
    card = read_card(directory)
    adapt = None
    if config is not None:
        check_compatible(card, config)
        adapt = _round_padder(card, config)
    weights = load_weights(directory)
    if weights[0][0].shape[1] != card["observation_size"]:
        raise CheckpointMismatchError(
            f"{directory}: policy.npz takes {weights[0][0].shape[1]} inputs but the card says "
            f"observation_size {card['observation_size']}"
        )
    return NumpyPolicy(weights, card["activation"], deterministic=deterministic, seed=seed,
                       adapt=adapt)


# ---------------------------------------------------------------------------------- writing
def actor_weights(model) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (W, b) pairs of a MaskablePPO MlpPolicy's actor: hidden layers, then action_net."""
    import torch

    policy = model.policy
    linears = [m for m in policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
    linears.append(policy.action_net)
    return [
        (lin.weight.detach().cpu().numpy().copy(), lin.bias.detach().cpu().numpy().copy())
        for lin in linears
    ]


def make_card(model, config: ChickenFootConfig, activation: str, **extra) -> dict:
    layout = observation_layout(config)
    card = {
        "format": CHECKPOINT_FORMAT,
        "kind": "sb3-contrib MaskablePPO, MlpPolicy",
        "steps": int(model.num_timesteps),
        "env_config": config.to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "observation_size": layout.size,
        "num_actions": config.num_actions,
        "activation": activation,
        "net_arch": [w.shape[0] for w, _ in actor_weights(model)[:-1]],
    }
    card.update(extra)
    return card


def write_checkpoint(
    directory: str | os.PathLike, model, card: dict, *, with_model: bool = True
) -> Path:
    """Write a complete checkpoint to `directory` (which must not exist yet), atomically."""
    target = Path(directory)
    if target.exists():
        raise FileExistsError(f"{target} exists; checkpoints are never overwritten in place")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        arrays = {}
        for i, (W, b) in enumerate(actor_weights(model)):
            arrays[f"W{i}"], arrays[f"b{i}"] = W, b
        np.savez(tmp / "policy.npz", **arrays)
        if with_model:
            model.save(tmp / "model.zip")
        (tmp / "card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
        _fsync_dir(tmp)
        os.rename(tmp, target)  # atomic: target did not exist
        _fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def write_pointer(folder: Path, name: str, target: Path, **info) -> None:
    """Point `folder/<name>.json` at checkpoint `target` (temp file + os.replace)."""
    data = {"path": target.name, **info}
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".json", dir=folder)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(data, indent=2) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, folder / f"{name}.json")


def save_run_checkpoint(folder: str | os.PathLike, model, card: dict, *, best: bool = False) -> Path:
    """Write `step_<N>/` in a run's checkpoint folder and move `latest` (and `best`) to it.

    Older step folders that no pointer names are removed afterwards (the previous latest is kept
    until the new one is in place).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"step_{int(model.num_timesteps):09d}"
    if not target.exists():
        write_checkpoint(target, model, card)
    write_pointer(folder, "latest", target, steps=int(model.num_timesteps))
    if best:
        write_pointer(folder, "best", target, steps=int(model.num_timesteps), **card.get("best", {}))
    _prune(folder)
    return target


def _prune(folder: Path) -> None:
    keep = set()
    for name in ("latest", "best"):
        pointer = folder / f"{name}.json"
        if pointer.is_file():
            keep.add(json.loads(pointer.read_text())["path"])
    for child in folder.iterdir():
        if child.is_dir() and child.name.startswith("step_") and child.name not in keep:
            shutil.rmtree(child, ignore_errors=True)
        elif child.name.startswith(".step_"):  # a temp dir left by a crashed write
            shutil.rmtree(child, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
