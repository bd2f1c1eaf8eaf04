"""Weights-only checkpoints, read side: locating, validating and playing them (`ppo:<path>`).

Writing them is `training.checkpoints`' job; nothing here imports `training` or torch, so a shipped
checkpoint plays with numpy alone. A checkpoint is a directory:

| file | what | needed for |
|---|---|---|
| `card.json` | format, steps, env config, `OBSERVATION_VERSION`, sizes, network, provenance | everything |
| `policy.npz` | the actor's weights as plain arrays (`W0, b0, W1, b1, …`, loaded without pickle) | playing |
| `value.npz` | optional: the privileged critic's weights (`W0, b0, …`), described by the card's `value` entry | `lookahead:` search (`load_value_head`) |
| `model.zip` | the full sb3-contrib `MaskablePPO` (value net, optimiser state) | resuming training (`algo: maskable_ppo`) |
| `trainer.pt` | self-play trainer state: actor, critic, optimiser, counters, pool (`torch.save` of plain state dicts, read with `weights_only=True`) | resuming training (`algo: selfplay`) |

Playing a checkpoint (`ppo:<path>` specs, `load_ppo_policy`) needs only the card and the numpy
weights: no torch, no pickle, and a forward pass (`NumpyPolicy`) in tens of microseconds. `<path>`
may be a checkpoint directory, its `card.json`/`policy.npz`/`model.zip`, a run directory (its
latest checkpoint) or a run's `checkpoints/` folder.

Security: an SB3 `model.zip` unpickles Python objects when loaded, so loading an untrusted one can
run arbitrary code. Nothing here ever loads one as a policy: a path naming a zip (or a directory)
without `policy.npz` beside a `card.json` raises `PickleRefusedError`, which says to convert a zip
*you trust* with `python -m training.export --allow-pickle`. `policy.npz` is read with
`allow_pickle=False` (object arrays are refused) and validated (`load_weights`); `card.json` is
plain JSON, validated by `read_card`, and must carry the `policy_sha256` that `policy.npz` is
checked against. Any unreadable, truncated or inconsistent file raises `CheckpointError` naming
the file and the problem. (`training.ppo --resume` does unpickle the run's own `model.zip`: the
run directory is one your own training process wrote.)

Bounded reading: a checkpoint may come from someone else, so no file makes a reader allocate much
more than a genuine checkpoint would. `card.json` and pointers are read only up to
`MAX_CARD_BYTES` / `MAX_POINTER_BYTES`, and JSON nested too deeply to parse is a
`CheckpointError`, not a `RecursionError`. `policy.npz` is checked from its zip directory and the
members' `.npy` headers before any array is decompressed: at most `2 * MAX_LAYERS` members, named
`W<i>`/`b<i>`, float dtypes, each member's size in the zip directory equal to the size its header
declares, the declared total within `MAX_POLICY_BYTES`, and (with a card) every shape the one the
card's layer sizes imply (`read_card` ties `observation_size` and `num_actions` to the env config
and bounds the architecture). A pointer (`latest.json`, `best.json`) may name only a checkpoint
directory beside it: one folder name, no `.`/`..`/absolute path, no symlink leading elsewhere, and
never another pointer (so pointer chains and cycles cannot occur).

Value head (optional; self-play agents shipped by `training.ship` carry one): the card's `value`
entry describes `value.npz`, the critic trained beside the actor. It reads the observation, then
the privileged vector (`cf_env.core.observation.privileged_layout`: the opponents' hands and the
boneyard), so it values *full-information* positions: a search plays it on determinizations,
never on the real game. The entry: `sha256` (of value.npz), `net_arch`, `activation`, `inputs`
(`["observation", "privileged"]`) and `reward` — `reward_mode`, `win_bonus` and `episode`, the
reward it predicts the return of (a search must score a finished round on the same scale).
`load_value_head` validates the entry and the file as strictly as the policy's.

Compatibility (`check_compatible`): a checkpoint plays only in an env with the same rules and
observation encoding. A card's `env_config` holds the rules (`ChickenFootConfig.to_dict()`);
cards written before the driver options left the rules also hold `reward_mode`, `skip_forced`
and `illegal_action`, which are read and ignored (`NEUTRAL_FIELDS`: they change neither the game
nor the observation). Every rule must match except `num_rounds` where the env plays fewer rounds
than the checkpoint was trained on: round r of a shorter game is the same position as round r of
the longer one, so the observation's one-hot `round` piece is zero-padded. Anything else raises
`CheckpointMismatchError` naming the field.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cf_env.core.config import OPTION_FIELDS, REWARD_MODES, ChickenFootConfig
from cf_env.core.observation import OBSERVATION_VERSION, observation_layout, privileged_layout

CHECKPOINT_FORMAT = 1
# The driver options, which old cards' env_config still names: they change neither the rules of
# play nor the observation, and `ChickenFootConfig.from_dict` drops them.
NEUTRAL_FIELDS = OPTION_FIELDS
ACTIVATIONS = ("tanh", "relu")
# Read limits (module docstring, "Bounded reading"), each far above what training writes: the
# shipped card is ~8 KB, a pointer ~100 bytes, and the biggest env (double-18, 8 players: 2,147
# inputs) with a 1024x1024 network needs ~15 MB of float32 weights.
MAX_CARD_BYTES = 1 << 20
MAX_POINTER_BYTES = 1 << 16
MAX_LAYERS = 64  # (W, b) pairs, so policy.npz holds at most 2 * MAX_LAYERS members
MAX_POLICY_BYTES = 1 << 28  # policy.npz on disk, and the total its arrays declare (256 MiB)


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, truncated, corrupted or inconsistent."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """No checkpoint where a path points (a `CheckpointError`, and a `FileNotFoundError` for the
    callers that have always caught that)."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint was trained for another game config or observation encoding."""


class PickleRefusedError(CheckpointError):
    """Loading this as a policy would unpickle an SB3 zip; an explicit opt-in is needed."""


PICKLE_WARNING = (
    "an SB3 .zip unpickles Python objects when loaded, so loading an untrusted one can run "
    "arbitrary code on this machine"
)
# Keys every card must hold, with the type each must have (checked by `read_card`).
CARD_KEYS = {
    "format": int,
    "steps": int,
    "env_config": dict,
    "observation_version": int,
    "observation_size": int,
    "num_actions": int,
    "activation": str,
    "net_arch": list,
    "policy_sha256": str,
}


# ---------------------------------------------------------------------------------- locating
def _refuse_pickle(path: Path, why: str) -> PickleRefusedError:
    return PickleRefusedError(
        f"{path}: {why}. Refusing to load it as a policy: {PICKLE_WARNING}. If you trust the "
        f"file, convert it once to the weights-only format with `python -m training.export "
        f"{path} <out-dir> --allow-pickle` (a bare zip also needs the env config: --set or "
        f"--config-json) and play `ppo:<out-dir>`"
    )


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """The checkpoint directory `path` names (see the module docstring for accepted forms).

    Raises `CheckpointNotFoundError` (a `CheckpointError` and a `FileNotFoundError`) when nothing
    is there, `PickleRefusedError` for a bare SB3 zip and
    `CheckpointError` for a bad `latest.json` pointer (`read_pointer`).
    """
    p = Path(path)
    if p.is_file() and p.name in ("model.zip", "card.json", "policy.npz"):
        p = p.parent
    elif p.is_file() and p.suffix == ".zip":
        raise _refuse_pickle(p, "this is an SB3 zip, not a weights-only checkpoint")
    if (p / "card.json").is_file():
        return p
    for pointer in (p / "latest.json", p / "checkpoints" / "latest.json"):
        if pointer.is_file():
            return read_pointer(pointer)
    if (p / "model.zip").is_file():
        raise _refuse_pickle(p / "model.zip", "no card.json / policy.npz beside this SB3 zip")
    raise CheckpointNotFoundError(
        f"no checkpoint at {str(path)!r}: expected a directory with card.json and policy.npz, or "
        "a run directory with checkpoints/latest.json"
    )


def read_pointer(pointer: str | os.PathLike) -> Path:
    """The checkpoint directory a run's pointer file (`latest.json`, `best.json`) names.

    A pointer is `{"path": "<name>", ...}` (`write_pointer`) naming a checkpoint directory beside
    it. Raises `CheckpointError` naming the pointer for anything else: bad or oversized JSON, a
    path that is not one folder name (`.`, `..`, absolute, with separators), a name whose real
    path is not directly inside the pointer's folder (a symlink out of the run), or a target
    without `card.json` (missing, or a folder holding another pointer: chains and cycles).
    """
    pointer = Path(pointer)
    expected = 'expected JSON {"path": "step_<N>"} naming a checkpoint directory beside it'
    data = read_json(pointer, MAX_POINTER_BYTES, f"not a checkpoint pointer ({expected})")
    name = data.get("path") if isinstance(data, dict) else None
    if not isinstance(name, str):
        raise CheckpointError(f"{pointer}: not a checkpoint pointer ({expected}); got "
                              f"{json.dumps(data)[:80]}")
    if name in ("", ".", "..") or "\0" in name or Path(name).name != name:
        raise CheckpointError(
            f"{pointer}: path {name!r} is not a single folder name; a pointer may name only a "
            f"checkpoint directory beside it ({expected})"
        )
    target = pointer.parent / name
    real = target.resolve()
    if real.parent != pointer.parent.resolve():
        raise CheckpointError(
            f"{pointer}: path {name!r} leads to {real}, outside {pointer.parent.resolve()} (a "
            "symlink?); a pointer may name only a checkpoint directory inside its own folder"
        )
    if not (target / "card.json").is_file():
        raise CheckpointError(
            f"{pointer}: names {name!r}, but {target} is not a checkpoint directory (no card.json; "
            "a pointer never names another pointer's folder); the pointer is stale or corrupted"
        )
    return target


def read_json(file: str | os.PathLike, limit: int, what: str):
    """The JSON value in `file`, read only up to `limit` bytes.

    `CheckpointError` naming the file, prefixed with `what`, when the file is unreadable, larger
    than `limit`, not UTF-8 JSON, or nested too deeply for the parser (a `RecursionError` in
    `json`, which is not a `ValueError` and would escape every caller's error handling).
    """
    try:
        with open(file, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise CheckpointError(f"{file}: {what}: unreadable ({exc})") from None
    if len(data) > limit:
        raise CheckpointError(f"{file}: {what}: larger than the {limit}-byte limit (refused unread)")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{file}: {what}: not valid JSON ({exc})") from None
    except RecursionError:
        raise CheckpointError(f"{file}: {what}: JSON nested too deeply to parse") from None


def layer_sizes(card: Mapping) -> list[int]:
    """The network's layer sizes a card declares: inputs, hidden layers, actions."""
    return [card["observation_size"], *card["net_arch"], card["num_actions"]]


def read_card(path: str | os.PathLike) -> dict:
    """The validated card of checkpoint `path`; `CheckpointError` naming card.json if it is bad."""
    directory = resolve_checkpoint(path)
    file = directory / "card.json"
    card = read_json(file, MAX_CARD_BYTES, "not a checkpoint card")
    if not isinstance(card, dict):
        raise CheckpointError(f"{file}: expected a JSON object, got {type(card).__name__}")
    if card.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointMismatchError(
            f"{file}: checkpoint format {card.get('format')!r}; this code reads format "
            f"{CHECKPOINT_FORMAT}"
        )
    for key, kind in CARD_KEYS.items():
        if key not in card:
            raise CheckpointError(f"{file}: missing key {key!r} (a card needs {sorted(CARD_KEYS)})")
        value = card[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise CheckpointError(
                f"{file}: {key!r} must be {kind.__name__}, got {type(value).__name__} {value!r}"
            )
    if card["activation"] not in ACTIVATIONS:
        raise CheckpointError(
            f"{file}: activation must be one of {ACTIVATIONS}; got {card['activation']!r}"
        )
    if len(card["policy_sha256"]) != 64 or not set(card["policy_sha256"]) <= set("0123456789abcdef"):
        raise CheckpointError(f"{file}: policy_sha256 must be 64 lowercase hex digits (the sha256 "
                              f"of policy.npz); got {card['policy_sha256'][:80]!r}")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in card["net_arch"]):
        raise CheckpointError(f"{file}: net_arch must be a list of positive ints; got "
                              f"{card['net_arch']!r}")
    try:
        config = ChickenFootConfig.from_dict(card["env_config"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{file}: env_config is not a valid ChickenFootConfig: {exc}"
        ) from None
    if card["num_actions"] != config.num_actions:
        raise CheckpointError(f"{file}: num_actions {card['num_actions']} but env_config has "
                              f"{config.num_actions} actions")
    # Only this code's observation version has a layout to compare with; another version is
    # refused by `check_compatible` wherever an env config is given.
    if card["observation_version"] == OBSERVATION_VERSION:
        size = observation_layout(config).size
        if card["observation_size"] != size:
            raise CheckpointError(f"{file}: observation_size {card['observation_size']} but "
                                  f"env_config's observation has {size} values")
    sizes = layer_sizes(card)
    declared = 4 * sum(a * b + b for a, b in zip(sizes, sizes[1:]))  # float32 W and b
    if len(sizes) - 1 > MAX_LAYERS or declared > MAX_POLICY_BYTES:
        raise CheckpointError(
            f"{file}: a network of {len(sizes) - 1} layers, sizes {sizes[:10]}"
            f"{'…' if len(sizes) > 10 else ''}, needs {declared} "
            f"bytes of weights; the limits are {MAX_LAYERS} layers and {MAX_POLICY_BYTES} bytes"
        )
    return card


# ---------------------------------------------------------------------------------- compatibility
def check_compatible(card: Mapping, config: ChickenFootConfig, *, strict: bool = False) -> None:
    """Raise `CheckpointMismatchError` naming every field in which `config` differs from `card`.

    `strict=True` (used when resuming training) requires every rule to match.
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
        if ours[name] == theirs[name]:
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

    pad.inserted = range(piece.stop, piece.stop + extra)  # the zero inputs it adds (batches drop them)
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
        self._transposed: list[tuple[np.ndarray, np.ndarray]] | None = None  # for batches

    def logits(self, vector: np.ndarray) -> np.ndarray:
        """The network's logits: (A,) for one observation (D,), or (B, A) for a batch (B, D).

        A batch is one matrix product per layer (row i equals the single row's logits up to the
        float rounding of a matrix product against a matrix-vector one, so an argmax can differ
        only at a near-tie); the transposed weights it multiplies are made once, at the first
        batch."""
        x = np.asarray(vector, dtype=np.float32)
        if x.ndim == 2:
            return self._batch_logits(x)
        if x.ndim != 1:
            raise ValueError(f"NumpyPolicy.logits takes one observation (D,) or a batch (B, D); "
                             f"got shape {x.shape}")
        if self.adapt is not None:
            x = self.adapt(x)
        for W, b in self.weights[:-1]:
            x = self.activation(W @ x + b)
        W, b = self.weights[-1]
        return W @ x + b

    def _batch_logits(self, x: np.ndarray) -> np.ndarray:
        if self._transposed is None:
            self._transposed = [(np.ascontiguousarray(W.T), b) for W, b in self.weights]
            inserted = getattr(self.adapt, "inserted", None)  # `_round_padder`'s zero inputs
            if inserted is not None:  # they multiply zeros: drop their weights once instead
                W0, b0 = self._transposed[0]
                self._transposed[0] = (np.ascontiguousarray(np.delete(W0, list(inserted), 0)), b0)
        if self.adapt is not None and getattr(self.adapt, "inserted", None) is None:
            x = np.stack([self.adapt(row) for row in x]) if len(x) else x
        if x.shape[1] != self._transposed[0][0].shape[0]:
            raise ValueError(f"NumpyPolicy.logits: rows of {x.shape[1]} values; the network "
                             f"reads {self._transposed[0][0].shape[0]}")
        tanh = self.activation is np.tanh
        for W, b in self._transposed[:-1]:
            x = x @ W
            x += b  # in place: the same sums as `x @ W + b`, one array fewer per layer
            if tanh:
                np.tanh(x, out=x)
            else:
                np.maximum(x, 0.0, out=x)
        W, b = self._transposed[-1]
        x = x @ W
        x += b
        return x

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The actions of a deterministic policy for a batch: the argmax of each row's masked
        logits (`logits` of the (B, D) batch), (B,) int64. Each mask (B, A) must allow an
        action. A sampling policy (`deterministic=False`) is refused: its draws from `rng`
        would not be those of `act` called row by row."""
        if not self.deterministic:
            raise ValueError("NumpyPolicy.act_batch plays the argmax only; this policy samples "
                             "(deterministic=False): call act() per observation")
        masks = np.asarray(masks).astype(bool, copy=False)
        if masks.ndim != 2 or not masks.any(axis=1).all():
            raise ValueError("NumpyPolicy.act_batch: masks must be (B, A), each row allowing an "
                             "action")
        logits = self.logits(observations)
        logits[~masks] = -np.inf
        return logits.argmax(axis=1)

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


def load_weights(
    directory: str | os.PathLike, card: Mapping | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (W, b) layers in `directory/policy.npz`, validated (against `card` when given).

    Never unpickles (`allow_pickle=False`). Raises `CheckpointError` naming policy.npz for a
    missing, oversized, truncated or garbage file, missing/extra/misnamed arrays, non-float dtypes,
    shapes that do not chain (or do not match the card's sizes), and non-finite values. Everything
    but the values is checked from the zip directory and the `.npy` headers before any array is
    decompressed (`_declared_arrays`). With a card, its `policy_sha256` must match the file.
    """
    file = Path(directory) / "policy.npz"
    if not file.is_file():
        if (Path(directory) / "model.zip").is_file():
            raise _refuse_pickle(Path(directory), "policy.npz is missing; only the SB3 model.zip "
                                 "is here")
        raise CheckpointError(f"{file}: missing (a checkpoint needs card.json and policy.npz)")
    if card is not None and "policy_sha256" not in card:  # a hand-made card may lack it
        raise CheckpointError(f"{file}: the card gives no policy_sha256 to check it against")
    return _read_layers(
        file,
        None if card is None else layer_sizes(card),
        None if card is None else card["policy_sha256"],
        "(observation_size, net_arch…, num_actions)",
    )


def _read_layers(file: Path, sizes: list[int] | None, sha256: str | None,
                 sizes_from: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The validated (W, b) layers of an MLP weights file (`load_weights`, `load_value_head`):
    with `sizes`, its layer sizes must be those; with `sha256`, its digest must be that."""
    if file.stat().st_size > MAX_POLICY_BYTES:
        raise CheckpointError(f"{file}: {file.stat().st_size} bytes, over the {MAX_POLICY_BYTES}"
                              "-byte limit for a network (refused unread)")
    try:
        with zipfile.ZipFile(file) as archive:
            declared = _declared_arrays(file, archive)
            layers = len(declared) // 2
            _check_layer_shapes(file, declared, layers, sizes, sizes_from)
            arrays = {}
            for name, (info, _, _) in declared.items():
                with archive.open(info) as stream:
                    arrays[name] = np.lib.format.read_array(stream, allow_pickle=False)
    except CheckpointError:
        raise
    except Exception as exc:  # zipfile/numpy/OS errors all mean "this file is not a good npz"
        with open(file, "rb") as handle:
            if handle.read(6) == np.lib.format.MAGIC_PREFIX:
                raise CheckpointError(f"{file}: a single .npy array, not an .npz archive") from None
        raise CheckpointError(
            f"{file}: cannot be read as an .npz of plain arrays (truncated, corrupted, or holding "
            f"pickled objects): {type(exc).__name__}: {exc}"
        ) from None
    weights = []
    for i in range(layers):
        for name in (f"W{i}", f"b{i}"):
            if not np.isfinite(arrays[name]).all():
                raise CheckpointError(f"{file}: {name} holds NaN or infinite values")
        weights.append((arrays[f"W{i}"].astype(np.float32), arrays[f"b{i}"].astype(np.float32)))
    # Last, so a damaged file is reported by what is wrong with it rather than by its digest.
    if sha256 is not None:
        digest = sha256_file(file)
        if digest != sha256:
            raise CheckpointError(
                f"{file}: sha256 {digest[:16]}… differs from card.json's "
                f"{str(sha256)[:16]}… (truncated, corrupted or replaced)"
            )
    return weights


def _declared_arrays(file: Path, archive: zipfile.ZipFile) -> dict:
    """{array name: (zip member, shape, dtype)} from the zip directory and the members' `.npy`
    headers, decompressing nothing past the headers.

    Checks the member count, the names (`W<i>`/`b<i>` for i < number of W's, as `np.load` names
    them), float dtypes, 2-D W and 1-D b, that each member's size in the zip directory is exactly
    its header plus the data its shape declares, and the declared total (`MAX_POLICY_BYTES`).
    """
    infos = archive.infolist()
    if len(infos) > 2 * MAX_LAYERS:
        raise CheckpointError(f"{file}: {len(infos)} members; a policy holds at most "
                              f"{2 * MAX_LAYERS} (W<i> and b<i> for up to {MAX_LAYERS} layers)")
    names = [info.filename.removesuffix(".npy") for info in infos]
    layers = sum(1 for name in names if name.startswith("W"))
    expected = {f"{p}{i}" for i in range(layers) for p in "Wb"}
    if layers == 0 or set(names) != expected or len(names) != len(expected):
        duplicated = sorted({name for name in names if names.count(name) > 1})
        raise CheckpointError(
            f"{file}: expected arrays W0, b0, …, W{max(layers - 1, 0)}, b{max(layers - 1, 0)}; "
            f"missing {sorted(expected - set(names))}, unexpected "
            f"{sorted(set(names) - expected)}" + (f", duplicated {duplicated}" if duplicated else "")
        )
    total = sum(info.file_size for info in infos)
    if total > MAX_POLICY_BYTES:
        raise CheckpointError(f"{file}: its members would decompress to {total} bytes, over the "
                              f"{MAX_POLICY_BYTES}-byte limit for a policy (refused unread)")
    declared = {}
    for name, info in zip(names, infos):
        with archive.open(info) as stream:
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
            else:
                raise CheckpointError(f"{file}: {name} is .npy format {version}; expected 1.0 or "
                                      "2.0 (plain arrays)")
            header = stream.tell()
        if dtype.hasobject:
            raise CheckpointError(f"{file}: {name} holds pickled objects (dtype {dtype}); only "
                                  "plain float arrays are read, never pickles")
        if dtype.kind != "f":
            raise CheckpointError(f"{file}: {name} has dtype {dtype}; expected floats")
        ndim = 2 if name.startswith("W") else 1
        if len(shape) != ndim:
            raise CheckpointError(f"{file}: {name} has shape {shape}; expected {ndim}-D")
        data = math.prod(shape) * dtype.itemsize
        if info.file_size != header + data:
            raise CheckpointError(
                f"{file}: {name}'s header declares shape {shape} {dtype} ({data} bytes of data) "
                f"but the zip directory gives it {info.file_size - header} (corrupted or crafted)"
            )
        declared[name] = (info, shape, dtype)
    return declared


def _check_layer_shapes(file: Path, declared: dict, layers: int, sizes: list[int] | None,
                        sizes_from: str) -> None:
    """Raise `CheckpointError` unless the declared shapes chain into an MLP (and, with `sizes`,
    have exactly those layer sizes: `CheckpointMismatchError`)."""
    for i in range(layers):
        W, b = declared[f"W{i}"][1], declared[f"b{i}"][1]
        if b[0] != W[0]:
            raise CheckpointError(f"{file}: b{i} has shape {b} but W{i} has {W}")
        if i and W[1] != declared[f"W{i - 1}"][1][0]:
            raise CheckpointError(
                f"{file}: W{i} takes {W[1]} inputs but layer {i - 1} gives "
                f"{declared[f'W{i - 1}'][1][0]}"
            )
    if sizes is not None:
        found = [declared["W0"][1][1]] + [declared[f"W{i}"][1][0] for i in range(layers)]
        if found != list(sizes):
            raise CheckpointMismatchError(
                f"{file}: layer sizes {found} (inputs, hidden…, outputs) but card.json says "
                f"{list(sizes)} {sizes_from}"
            )


def load_ppo_policy(
    path: str | os.PathLike,
    config: ChickenFootConfig | None = None,
    seed: int | None = None,
    deterministic: bool = True,
) -> NumpyPolicy:
    """A policy playing checkpoint `path` (greedy over legal actions unless `deterministic=False`).

    Reads only card.json and policy.npz (never a pickle). With `config`, raises
    `CheckpointMismatchError` unless the checkpoint fits that env; `CheckpointError` for a bad
    file, `PickleRefusedError` for a path with only an SB3 zip.
    """
    directory = resolve_checkpoint(path)
    card = read_card(directory)
    adapt = None
    if config is not None:
        check_compatible(card, config)
        adapt = _round_padder(card, config)
    weights = load_weights(directory, card)
    return NumpyPolicy(weights, card["activation"], deterministic=deterministic, seed=seed,
                       adapt=adapt)


# ---------------------------------------------------------------------------------- value heads
VALUE_FILE = "value.npz"
VALUE_INPUTS = ["observation", "privileged"]
VALUE_KEYS = {"sha256": str, "net_arch": list, "activation": str, "inputs": list, "reward": dict}
REWARD_KEYS = {"reward_mode": str, "win_bonus": (int, float), "episode": str}
MAX_WIN_BONUS = 1000.0  # far above any trained bonus (the shipped agent's: 3)


class ValueHead:
    """A shipped critic in numpy: `values(observations, privileged)` for a batch of rows.

    The observation rows are the env's (fewer rounds than the checkpoint's: the round piece's
    padding columns are dropped from the first layer once, which is exact since they would
    multiply zeros). `reward` is the card's: what the values are the expected return of."""

    def __init__(self, weights: list[tuple[np.ndarray, np.ndarray]], activation: str,
                 reward: Mapping, drop_columns: range = range(0)):
        W0, b0 = weights[0]
        if len(drop_columns):
            W0 = np.delete(W0, list(drop_columns), axis=1)
        self.layers = [(np.ascontiguousarray(W.T), b) for W, b in [(W0, b0), *weights[1:]]]
        self.activation = np.tanh if activation == "tanh" else (lambda x: np.maximum(x, 0.0))
        self.reward = dict(reward)
        self.input_size = self.layers[0][0].shape[0]

    def values(self, rows: np.ndarray) -> np.ndarray:
        """Values of `rows` (B, observation + privileged), float32 in, (B,) out."""
        return mlp_forward(self.layers, self.activation, rows)[:, 0]


def mlp_forward(layers: list[tuple[np.ndarray, np.ndarray]], activation, rows: np.ndarray
                ) -> np.ndarray:
    """An MLP over a batch: `rows` (B, inputs) through `layers` of (W (in, out), b), `activation`
    between them, none after the last; (B, outputs)."""
    x = rows
    for W, b in layers[:-1]:
        x = activation(x @ W + b)
    W, b = layers[-1]
    return x @ W + b


def value_entry(card: Mapping, file: Path) -> dict:
    """The card's validated `value` entry; `CheckpointError` naming `file` when absent or bad."""
    entry = card.get("value")
    if entry is None:
        raise CheckpointError(
            f"{file}: this checkpoint has no value head (no `value` entry, no {VALUE_FILE}); "
            "lookahead search needs one: ship a self-play run's checkpoint with training.ship, "
            "which writes it from the run's trainer.pt"
        )
    if not isinstance(entry, dict):
        raise CheckpointError(f"{file}: 'value' must be an object, got {type(entry).__name__}")
    for keys, where in ((VALUE_KEYS, entry), (REWARD_KEYS, entry.get("reward", {}))):
        for key, kind in keys.items():
            if not isinstance(where, dict) or key not in where:
                raise CheckpointError(f"{file}: the value entry is missing {key!r} (it needs "
                                      f"{sorted(VALUE_KEYS)}, reward {sorted(REWARD_KEYS)})")
            if not isinstance(where[key], kind) or isinstance(where[key], bool):
                raise CheckpointError(f"{file}: value {key!r} has the wrong type: "
                                      f"{type(where[key]).__name__} {where[key]!r}")
    if entry["inputs"] != VALUE_INPUTS:
        raise CheckpointError(f"{file}: value inputs {entry['inputs']!r}; this code reads "
                              f"{VALUE_INPUTS}")
    if entry["activation"] not in ACTIVATIONS:
        raise CheckpointError(f"{file}: value activation must be one of {ACTIVATIONS}; got "
                              f"{entry['activation']!r}")
    arch = entry["net_arch"]
    if not arch or len(arch) >= MAX_LAYERS or not all(
            isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 1 << 14 for n in arch):
        raise CheckpointError(f"{file}: value net_arch must be a list of positive ints; got "
                              f"{arch!r}")
    reward = entry["reward"]
    if reward["reward_mode"] not in REWARD_MODES:
        raise CheckpointError(f"{file}: value reward_mode must be one of {list(REWARD_MODES)}; got "
                              f"{reward['reward_mode']!r}")
    if not math.isfinite(reward["win_bonus"]) or abs(reward["win_bonus"]) > MAX_WIN_BONUS:
        raise CheckpointError(f"{file}: value win_bonus must be a finite number in "
                              f"[-{MAX_WIN_BONUS:g}, {MAX_WIN_BONUS:g}]; got {reward['win_bonus']!r}")
    if entry["reward"]["episode"] != "round":
        raise CheckpointError(f"{file}: the value head predicts {entry['reward']['episode']!r} "
                              "returns; search stops at the round's end, so it needs 'round'")
    return entry


def load_value_head(path: str | os.PathLike, config: ChickenFootConfig) -> ValueHead:
    """The value head of checkpoint `path` for an env of `config` (`check_compatible` first).

    `CheckpointError` when the checkpoint has none or its entry or file is bad (the same
    bounded, pickle-free reading as `load_weights`)."""
    directory = resolve_checkpoint(path)
    card = read_card(directory)
    check_compatible(card, config)
    entry = value_entry(card, directory / "card.json")
    trained = ChickenFootConfig.from_dict(card["env_config"])
    sizes = [card["observation_size"] + privileged_layout(trained).size, *entry["net_arch"], 1]
    file = directory / VALUE_FILE
    if not file.is_file():
        raise CheckpointError(f"{file}: missing, but card.json has a value entry")
    weights = _read_layers(file, sizes, entry["sha256"],
                           "(observation_size + privileged, value net_arch…, 1)")
    drop = range(0)
    if trained.num_rounds != config.num_rounds:  # as `_round_padder`, folded into the weights
        stop = observation_layout(config).slices["round"].stop
        drop = range(stop, stop + trained.num_rounds - config.num_rounds)
    return ValueHead(weights, entry["activation"], entry["reward"], drop)


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ppo_policy(config: ChickenFootConfig, seed: int | None = None, arg: str = "") -> NumpyPolicy:
    """The `ppo:<checkpoint>` spec's factory (`cf_env.agents.policies`): `load_ppo_policy(arg)`."""
    return load_ppo_policy(arg, config=config, seed=seed)
