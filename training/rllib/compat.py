"""The Ray-free half of the RLlib integration: observation keys, seeds, policy export.

`training.rllib.trainer` trains on RLlib; this module holds the pieces that do not need Ray, so that
they can be imported, tested and used (e.g. to play an exported policy) without it:

* **Key adapter.** Our env observes `{"observation", "action_mask" (int8)}` (PettingZoo classic);
  RLlib's action-masking RLModule (new API stack,
  `ray.rllib.examples.rl_modules.classes.action_masking_rlm`) expects
  `{"observations", "action_mask"}` and takes `log(action_mask)`, which needs a float mask.
  `to_rllib_observation` / `from_rllib_observation` translate one observation each way;
  `RLlibKeysWrapper` is a PettingZoo AEC wrapper applying the first to every `observe`.
  Nothing else changes: the mask still comes from `Engine.legal_action_mask()` (the one source
  of legality), an illegal action still raises in the engine (never replaced, never penalised).
* **Seeds.** RLlib seeds sub-env `i` of env runner `w` with `seed + w + i`, so runner 1's first env
  would replay runner 0's second env's deals. `runner_env_seed` mixes the runner index back in
  (numpy `SeedSequence` spawn keys), making every (runner, sub-env) stream distinct.
* **Bots.** `make_bot` builds a seat's bot from its spec and refuses bots with per-game state
  (a batched RLlib module cannot tell games apart); `bot_seed` gives each (runner, seat) its
  own stream.
* **Export.** `export_policy` writes a trained RLlib module's actor (MLP encoder + policy head)
  in the project's weights-only checkpoint format (`training.artifacts.checkpoints`: `card.json` +
  `policy.npz`), so `ppo:<export dir>` (and `training.evaluation.evaluate`) plays it with numpy
  only, masked argmax over the same logits RLlib computed. Only the export itself needs torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from gymnasium import spaces
from pettingzoo.utils import BaseWrapper

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.agents.policies import load_policy
from cf_env.core.observation import observation_layout
from training.artifacts.checkpoints import ACTIVATIONS, CHECKPOINT_FORMAT, write_weights_checkpoint

RLLIB_OBS_KEY = "observations"  # the key RLlib's action-masking RLModule reads
MASK_KEY = "action_mask"
ENV_OBS_KEY = "observation"  # the key our env (PettingZoo classic) writes


# ----------------------------------------------------------------------------- key adapter
def to_rllib_observation(observation: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`{"observation", "action_mask"}` -> `{"observations", "action_mask" (float32 0/1)}`."""
    missing = {ENV_OBS_KEY, MASK_KEY} - set(observation)
    if missing:
        raise KeyError(
            f"an env observation needs keys {ENV_OBS_KEY!r} and {MASK_KEY!r}; missing "
            f"{sorted(missing)} in {sorted(observation)}"
        )
    return {
        RLLIB_OBS_KEY: np.asarray(observation[ENV_OBS_KEY], dtype=np.float32),
        # float: the RLModule masks with log(mask), and torch has no log of int8 tensors.
        MASK_KEY: np.asarray(observation[MASK_KEY], dtype=np.float32),
    }


def from_rllib_observation(observation: Mapping[str, object]) -> dict[str, np.ndarray]:
    """The inverse: RLlib's keys back to the env's (mask int8), for bots inside RLlib."""
    missing = {RLLIB_OBS_KEY, MASK_KEY} - set(observation)
    if missing:
        raise KeyError(
            f"an RLlib observation needs keys {RLLIB_OBS_KEY!r} and {MASK_KEY!r}; missing "
            f"{sorted(missing)} in {sorted(observation)}"
        )
    mask = np.asarray(observation[MASK_KEY])
    if not np.isin(mask, (0, 1)).all():
        raise ValueError(f"action_mask must hold only 0 and 1; got values {np.unique(mask)}")
    return {
        ENV_OBS_KEY: np.asarray(observation[RLLIB_OBS_KEY], dtype=np.float32),
        MASK_KEY: mask.astype(np.int8),
    }


def to_rllib_space(space: spaces.Dict) -> spaces.Dict:
    """The observation space with RLlib's keys (same bounds; the mask as a float32 box)."""
    if not isinstance(space, spaces.Dict) or set(space.spaces) != {ENV_OBS_KEY, MASK_KEY}:
        raise ValueError(
            f"expected a Dict space with keys {ENV_OBS_KEY!r} and {MASK_KEY!r}; got {space!r}"
        )
    mask = space[MASK_KEY]
    return spaces.Dict(
        {
            RLLIB_OBS_KEY: space[ENV_OBS_KEY],
            MASK_KEY: spaces.Box(0.0, 1.0, mask.shape, np.float32),
        }
    )


class RLlibKeysWrapper(BaseWrapper):
    """A PettingZoo AEC wrapper whose observations carry RLlib's keys (see module docstring)."""

    def __init__(self, env):
        super().__init__(env)
        self._spaces = {a: to_rllib_space(env.observation_space(a)) for a in env.possible_agents}

    def observation_space(self, agent):
        return self._spaces[agent]

    def observe(self, agent):
        return to_rllib_observation(self.env.observe(agent))


# ----------------------------------------------------------------------------- seeds
def runner_env_seed(seed: int, worker_index: int) -> int:
    """A 63-bit env seed for RLlib's per-sub-env `seed` on env runner `worker_index`.

    RLlib passes `config.seed + worker_index + vector_index`; mixing `worker_index` in again as a
    spawn key makes (seed + w + i, w) -> seed injective in (w, i) for a fixed `config.seed`.
    """
    for name, value in (("seed", seed), ("worker_index", worker_index)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a non-negative int; got {value!r}")
    state = np.random.SeedSequence(int(seed), spawn_key=(int(worker_index),)).generate_state(
        2, np.uint32
    )
    return (int(state[0]) << 31) ^ int(state[1])


# ----------------------------------------------------------------------------- bots
def make_bot(spec: str, rules: ChickenFootConfig, seed: int, where: str = "bot"):
    """A bot from its spec; refuses policies with per-game state (they need `reset()` calls)."""
    try:
        policy = load_policy(spec, rules, seed)
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(f"{where}: {err}") from err
    if callable(getattr(policy, "reset", None)):
        raise ValueError(
            f"{where}: policy {spec!r} keeps per-game state (it has reset()); a batched RLlib "
            "module cannot tell games apart, so use a stateless bot (random, greedy, ppo:<path>)"
        )
    return policy


def bot_seed(seed: int, worker_index: int, seat: int) -> int:
    """The seed of the bot on `seat` in env runner `worker_index` (each its own stream)."""
    state = np.random.SeedSequence(seed, spawn_key=(2, worker_index, seat)).generate_state(1)
    return int(state[0])


# ----------------------------------------------------------------------------- export
EXPORT_KIND = "ray-rllib PPO (new API stack), action-masking RLModule actor (encoder + pi head)"


def actor_layers(module) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """The actor of an RLlib PPO torch RLModule as (W, b) pairs, and its hidden activation.

    Supports RLlib's default MLP model (`DefaultModelConfig`: shared or separate encoders, any
    `fcnet_hiddens`/`head_fcnet_hiddens`, one activation for all hidden layers, no layer norm,
    no LSTM). Anything else raises `ValueError` naming what it found.
    """
    import torch

    encoder = getattr(module, "encoder", None)
    actor = getattr(encoder, "actor_encoder", None) or getattr(encoder, "encoder", None)
    pi = getattr(module, "pi", None)
    try:
        stacks = [actor.net.mlp, pi.net.mlp]
    except AttributeError as err:
        raise ValueError(
            f"cannot export {type(module).__name__}: expected RLlib's default MLP actor "
            "(encoder.<actor_>encoder.net.mlp and pi.net.mlp); set model.use_lstm false and "
            "keep DefaultModelConfig's MLP"
        ) from err
    names = {torch.nn.Tanh: "tanh", torch.nn.ReLU: "relu"}
    layers, activations, pending = [], set(), None
    for stack in stacks:
        for layer in stack:
            if isinstance(layer, torch.nn.Linear):
                if pending is False:
                    raise ValueError("cannot export: two Linear layers without an activation")
                W = layer.weight.detach().cpu().numpy().astype(np.float32).copy()
                if layer.bias is None:
                    b = np.zeros(W.shape[0], np.float32)
                else:
                    b = layer.bias.detach().cpu().numpy().astype(np.float32).copy()
                layers.append((W, b))
                pending = False
            elif type(layer) in names:
                activations.add(names[type(layer)])
                pending = True
            else:
                raise ValueError(
                    f"cannot export layer {layer!r}: the project's policy format holds Linear "
                    f"layers with one activation among {ACTIVATIONS} (no layer norm, no LSTM)"
                )
    if pending is not False or not layers:
        raise ValueError("cannot export: the actor must end with a Linear layer (the logits)")
    if len(activations) > 1:
        raise ValueError(
            f"cannot export: hidden layers mix activations {sorted(activations)}; use one "
            "activation (fcnet_activation == head_fcnet_activation)"
        )
    for (W, _), (W_next, _) in zip(layers, layers[1:]):
        if W_next.shape[1] != W.shape[0]:
            raise ValueError(f"cannot export: layer shapes {W.shape} -> {W_next.shape} do not chain")
    return layers, (activations.pop() if activations else "tanh")


def export_policy(
    directory: str | os.PathLike,
    module,
    config: ChickenFootConfig,
    *,
    steps: int,
    **extra,
) -> Path:
    """Write `module`'s actor to the new checkpoint directory `directory`, atomically.

    The result is a `training.artifacts.checkpoints` checkpoint without `model.zip` (RLlib's own
    checkpoint, in the run's `rllib/` folder, is the one to resume from). Raises
    `FileExistsError` if `directory` exists and `ValueError` if the module does not fit `config`.
    """
    layers, activation = actor_layers(module)
    size = observation_layout(config).size
    if layers[0][0].shape[1] != size or layers[-1][0].shape[0] != config.num_actions:
        raise ValueError(
            f"module maps {layers[0][0].shape[1]} inputs to {layers[-1][0].shape[0]} logits; "
            f"this game needs {size} -> {config.num_actions} (was it trained on another config?)"
        )
    card = {
        "format": CHECKPOINT_FORMAT,
        "kind": EXPORT_KIND,
        "steps": int(steps),
        "env_config": config.to_dict(),
        "observation_version": OBSERVATION_VERSION,
        "observation_size": size,
        "num_actions": config.num_actions,
        "activation": activation,
        "net_arch": [W.shape[0] for W, _ in layers[:-1]],
        **extra,
    }
    return write_weights_checkpoint(directory, layers, card)


__all__ = [
    "EXPORT_KIND",
    "MASK_KEY",
    "RLLIB_OBS_KEY",
    "RLlibKeysWrapper",
    "actor_layers",
    "bot_seed",
    "export_policy",
    "from_rllib_observation",
    "make_bot",
    "runner_env_seed",
    "to_rllib_observation",
    "to_rllib_space",
]
