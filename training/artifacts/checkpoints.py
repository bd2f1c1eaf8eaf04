"""Checkpoints, write side: writing them atomically (`step_<N>/` and the run's pointers).

The format, and reading, validating and playing a checkpoint, are `cf_env.agents.checkpoint`'s
(numpy only: a shipped checkpoint plays without `training`); its names are re-exported here, so
`training.artifacts.checkpoints` is the whole checkpoint API for trainers and tools. This module
adds what needs a trainer: the actor's weights of an SB3 model, its card, and the writers.
`model.zip` (sb3-contrib `MaskablePPO`) and `trainer.pt` (self-play trainer state) are written
beside `card.json` and `policy.npz` for resuming training; `write_value_head` turns a `trainer.pt`'s
privileged critic into the shipped `value.npz` (`training.artifacts.ship` calls it).

Atomicity (`cf_env.core.atomic`): a checkpoint is written into a staging folder, which is renamed
into place (`step_<N>/`) only when complete; the run's `latest.json` / `best.json` pointers are
then replaced whole. A kill at any instant leaves the previous pointer naming a complete
checkpoint. A `step_<N>/` that no pointer names (a kill between the rename and the pointer) is
removed before the next checkpoint is written, so a resumed run never takes it for its own.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from cf_env.agents.checkpoint import (  # noqa: F401  (the reader, re-exported: module docstring)
    ACTIVATIONS,
    CARD_KEYS,
    CHECKPOINT_FORMAT,
    MAX_CARD_BYTES,
    MAX_LAYERS,
    MAX_POINTER_BYTES,
    MAX_POLICY_BYTES,
    NEUTRAL_FIELDS,
    PICKLE_WARNING,
    CheckpointError,
    CheckpointMismatchError,
    NumpyPolicy,
    PickleRefusedError,
    ValueHead,
    check_compatible,
    layer_sizes,
    load_ppo_policy,
    load_value_head,
    load_weights,
    read_card,
    read_json,
    read_pointer,
    resolve_checkpoint,
    sha256_file,
    value_entry,
)
from cf_env.core import atomic
from cf_env.core.config import ChickenFootConfig
from cf_env.core.observation import OBSERVATION_VERSION, observation_layout


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
    directory: str | os.PathLike, model, card: dict, *, with_model: bool = True,
    replace: bool = False,
) -> Path:
    """Write a training checkpoint atomically: the actor's weights and card, plus (unless
    `with_model` is False) the full SB3 `model.zip` that `--resume` needs."""
    if not replace:
        _refuse_existing(Path(directory))
    writers = {"model.zip": model.save} if with_model else {}
    return write_weights_checkpoint(directory, actor_weights(model), card, writers=writers,
                                    replace=replace)


def _refuse_existing(target: Path) -> None:
    if target.exists():
        raise FileExistsError(f"{target} exists; checkpoints are never overwritten in place")


def write_weights_checkpoint(
    directory: str | os.PathLike,
    weights: list[tuple[np.ndarray, np.ndarray]],
    card: dict,
    *,
    extra_files: Mapping[str, str | os.PathLike] | None = None,
    writers: Mapping[str, Callable[[Path], object]] | None = None,
    replace: bool = False,
) -> Path:
    """Write a checkpoint (card.json + policy.npz [+ `extra_files` copied, + files made by
    `writers`, each called with its path]), atomically.

    `card["policy_sha256"]` is set to the written policy.npz's digest. Everything is written into
    a staging sibling that takes `directory`'s place when complete; `directory` must not exist
    unless `replace` is true (then the old folder is swapped out whole: `atomic.replace_dir`).
    """
    target = Path(directory)
    if not replace:
        _refuse_existing(target)
    tmp = atomic.staging_dir(target, "writing")
    try:
        arrays = {}
        for i, (W, b) in enumerate(weights):
            arrays[f"W{i}"] = np.asarray(W, dtype=np.float32)
            arrays[f"b{i}"] = np.asarray(b, dtype=np.float32)
        np.savez(tmp / "policy.npz", **arrays)
        card = {**card, "policy_sha256": sha256_file(tmp / "policy.npz")}
        (tmp / "card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
        for name, source in (extra_files or {}).items():
            shutil.copy2(source, tmp / name)
        for name, write in (writers or {}).items():
            write(tmp / name)
        atomic.replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def write_value_head(folder: str | os.PathLike, trainer_file: str | os.PathLike,
                     activation: str, reward: Mapping) -> dict:
    """Write the privileged critic held in a self-play `trainer_file` as `folder/value.npz`;
    return the card's `value` entry for it (`cf_env.agents.checkpoint`, "Value head").

    `reward` is the reward the critic was trained on: `reward_mode`, `win_bonus`, `episode`."""
    import torch  # the write side only: reading a value head needs numpy alone

    state = torch.load(trainer_file, map_location="cpu", weights_only=True)["critic"]
    return write_value_arrays(folder, state, activation, reward)


def write_value_arrays(folder: str | os.PathLike, state: Mapping, activation: str,
                       reward: Mapping) -> dict:
    """`write_value_head` from a critic's state dict (`<layer>.weight` / `<layer>.bias` tensors)."""
    layers = sorted({int(key.split(".")[0]) for key in state})
    arrays = {}
    for i, k in enumerate(layers):
        arrays[f"W{i}"] = state[f"{k}.weight"].detach().numpy().astype(np.float32)
        arrays[f"b{i}"] = state[f"{k}.bias"].detach().numpy().astype(np.float32)
    file = Path(folder) / "value.npz"
    np.savez(file, **arrays)
    return {"sha256": sha256_file(file),
            "net_arch": [int(arrays[f"b{i}"].shape[0]) for i in range(len(layers) - 1)],
            "activation": activation,
            "inputs": ["observation", "privileged"],
            "reward": {"reward_mode": str(reward["reward_mode"]),
                       "win_bonus": float(reward["win_bonus"]), "episode": str(reward["episode"])}}


def write_pointer(folder: Path, name: str, target: Path, **info) -> None:
    """Point `folder/<name>.json` at checkpoint `target` (temp file + os.replace)."""
    atomic.write_json(folder / f"{name}.json", {"path": target.name, **info})


def save_run_checkpoint(folder: str | os.PathLike, model, card: dict, *, best: bool = False) -> Path:
    """Write an SB3 model's `step_<N>/` in a run's checkpoint folder (`save_checkpoint_as_latest`)."""
    return save_checkpoint_as_latest(
        folder, int(model.num_timesteps), lambda target: write_checkpoint(target, model, card),
        best=best, best_info=card.get("best", {}),
    )


def save_checkpoint_as_latest(folder: str | os.PathLike, steps: int,
                              write: Callable[[Path], object], *, best: bool = False,
                              best_info: Mapping | None = None) -> Path:
    """Write `step_<N>/` in a run's checkpoint folder with `write(target)` (an atomic writer:
    `write_checkpoint`, `write_weights_checkpoint`) and move `latest` (and `best`) to it.

    Any trainer's checkpoints go through here. Step folders that no pointer names are removed
    before (what a killed session wrote but never pointed at) and after (the previous latest,
    kept until the new one is in place). A `step_<N>/` that a pointer names already holds this
    session's weights at that step (a second save at the same step) and is kept.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _prune(folder)
    target = folder / f"step_{int(steps):09d}"
    if not target.exists():
        write(target)
    write_pointer(folder, "latest", target, steps=int(steps))
    if best:
        write_pointer(folder, "best", target, steps=int(steps), **dict(best_info or {}))
    _prune(folder)
    return target


def _prune(folder: Path) -> None:
    keep = set()
    for name in ("latest", "best"):
        if (folder / f"{name}.json").is_file():
            try:
                keep.add(read_pointer(folder / f"{name}.json").name)
            except CheckpointError:
                continue  # a pointer to nothing protects nothing
    for child in folder.iterdir():
        stale = child.is_dir() and child.name.startswith("step_") and child.name not in keep
        if stale:
            shutil.rmtree(child, ignore_errors=True)
    atomic.clear_leftovers(folder)  # staging folders of killed writers
