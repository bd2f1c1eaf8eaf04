"""`python -m training.export <source> <out>`: write a self-contained, weights-only checkpoint.

    python -m training.export runs/ppo-4p-d9 exports/ppo-4p-d9            # a run: its latest
    python -m training.export runs/ppo-4p-d9/checkpoints/step_000512 out  # one checkpoint
    python -m training.export downloaded.zip out --allow-pickle --set num_players=3

`<out>` (which must not exist; written atomically) holds `card.json` — format, env config,
`OBSERVATION_VERSION`, `network` (layer sizes, activation, how actions are chosen), `training`
summary, `exported` provenance and the `policy_sha256` of — `policy.npz`: the actor's (W, b)
layers as plain float32 arrays, read with `allow_pickle=False`. A checkpoint directory's
`card.md` and `learning_curve.png` are copied too. No `model.zip`: the export plays (`ppo:<out>`,
evaluation, `cf_env.tools.play`) but cannot resume training.

`<source>` may be a run directory, a run's `checkpoints/` folder, or a checkpoint directory; those
are read without unpickling anything. A bare SB3 `MaskablePPO` zip (or a directory holding only
`model.zip`) is read only with `--allow-pickle`: an SB3 zip unpickles Python objects when loaded,
so an untrusted one can run arbitrary code — use the flag only on files you trust (your own
runs). Its env config comes from `--config-json` / `--set field=value`, or from a sibling
`card.json`. Config flags given with any source must agree with the source's card
(`CheckpointMismatchError` names the field). The written checkpoint is re-loaded and checked to
pick the same actions as the source (for a zip: the same logits as the torch policy).

What is read stays inside the folders given: every file an export reads or copies (card.json,
policy.npz, model.zip found in a folder, card.md, learning_curve.png, and a run's run.json and
evals.jsonl) must have its real path inside the real path of the folder it is found in — the
source folder, or the run folder above a checkpoint — so a symlink in a downloaded folder cannot
make the export read, or copy into the output you share, a file from elsewhere on this machine
(`CheckpointError`). JSON is read through `checkpoints.read_json` (size-bounded, no
`RecursionError`). Every refusal is a `ValueError`, so the command prints one `error:` line and
exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.core.observation import observation_layout
from cf_env.tools.cli import HelpFormatter
from training.artifacts import checkpoints as ckpt
from training.config import load_yaml_text

DOC_FILES = ("card.md", "learning_curve.png")  # human-readable extras copied from a checkpoint


# ---------------------------------------------------------------------------------- config
def config_from_args(config_json: str | None, sets: list[str]) -> dict | None:
    """The env-config fields given on the command line (None when none were)."""
    if config_json is None and not sets:
        return None
    fields: dict = {}
    if config_json is not None:
        text = Path(config_json).read_text() if Path(config_json).is_file() else config_json
        try:
            fields = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"--config-json: neither a JSON file nor JSON text ({exc})") from None
        if not isinstance(fields, dict):
            raise ValueError("--config-json must be a JSON object of ChickenFootConfig fields")
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--set expects field=value (a ChickenFootConfig field); got {item!r}")
        try:
            fields[name.strip()] = load_yaml_text(value)
        except Exception as err:  # noqa: BLE001 — yaml's errors: one line naming the field
            raise ValueError(f"--set {name.strip()}: {value!r} is not a YAML value ({err})") from None
    return fields


def _check_given(card_config: dict, given: dict | None, where: str) -> ChickenFootConfig:
    config = ChickenFootConfig.from_dict(card_config)
    if given is not None:
        wanted = ChickenFootConfig.from_dict({**card_config, **given})
        problems = [f"{name}: checkpoint {config.to_dict()[name]!r} vs given {value!r}"
                    for name, value in wanted.to_dict().items() if config.to_dict()[name] != value]
        if problems:
            raise ckpt.CheckpointMismatchError(
                f"{where}: the env config given on the command line differs from the card — "
                + "; ".join(problems)
            )
    return config


# ---------------------------------------------------------------------------------- sources
def _inside(path: Path, folder: Path) -> Path:
    """`path`, after checking that its real path lies inside `folder`'s (module docstring)."""
    real, top = path.resolve(), folder.resolve()
    if not real.is_relative_to(top):
        raise ckpt.CheckpointError(
            f"{path} leads to {real}, outside {top} (a symlink?); export reads only files inside "
            "the folder it is given. Copy the file in instead if you trust it"
        )
    return path


def _last_json_line(path: Path):
    """The JSON value on the last line of `path`, reading at most its final 64 KiB."""
    with open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, 2) - (1 << 16)))
        lines = handle.read().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError) as exc:  # a RecursionError is no ValueError: convert it
        raise ckpt.CheckpointError(f"{path}: last line is not valid JSON ({exc!r:.200})") from None


def _training_summary(card: dict, run_dir: Path | None) -> dict:
    if isinstance(card.get("training"), dict):
        return card["training"]  # a shipped card already has one
    summary = {key: card[key] for key in ("steps", "wall_time_s", "episode", "git", "kind",
                                          "train_config") if key in card}
    if run_dir is not None and (run_dir / "run.json").is_file():
        info = ckpt.read_json(_inside(run_dir / "run.json", run_dir), ckpt.MAX_CARD_BYTES,
                              "not a run's run.json")
        if not isinstance(info, dict):
            raise ckpt.CheckpointError(f"{run_dir / 'run.json'}: expected a JSON object")
        summary["run"] = run_dir.name
        summary["commands"] = ["python -m training.ppo " + " ".join(s.get("argv", []))
                               for s in info.get("sessions", [])]
        summary["packages"] = info.get("packages")
    if run_dir is not None and (run_dir / "evals.jsonl").is_file():
        last = _last_json_line(_inside(run_dir / "evals.jsonl", run_dir))
        if last is not None:
            summary["last_eval"] = last
    return summary


def _run_dir_of(source: Path, checkpoint: Path) -> Path | None:
    for candidate in (source, checkpoint.parent.parent):
        if (candidate / "run.json").is_file():
            return candidate
    return None


def from_checkpoint(source: Path, given: dict | None):
    """(weights, card, extra files, reference policy) from a run or checkpoint directory."""
    directory = ckpt.resolve_checkpoint(source)
    # Everything read below must really lie inside the folder given (module docstring).
    root = source if source.is_dir() else source.parent
    for path in [directory] + [directory / name for name in ("card.json", "policy.npz")]:
        _inside(path, root)
    card = ckpt.read_card(directory)
    _check_given(card["env_config"], given, str(directory / "card.json"))
    weights = ckpt.load_weights(directory, card)
    card = {**card, "training": _training_summary(card, _run_dir_of(source, directory))}
    extra = {name: _inside(directory / name, root) for name in DOC_FILES
             if (directory / name).is_file()}
    reference = ckpt.NumpyPolicy(weights, card["activation"])
    return weights, card, extra, reference, f"checkpoint {directory}"


def _activation_of(model) -> str:
    import torch

    fn = model.policy.activation_fn
    for name, cls in (("tanh", torch.nn.Tanh), ("relu", torch.nn.ReLU)):
        if fn is cls:
            return name
    raise ckpt.CheckpointError(
        f"the model's activation {fn!r} is not one the numpy policy runs ({ckpt.ACTIVATIONS})"
    )


def from_pickled_zip(zip_path: Path, given: dict | None):
    """(weights, card, extra files, reference, provenance) from an SB3 zip. UNPICKLES the file."""
    from sb3_contrib import MaskablePPO

    sibling = zip_path.parent / "card.json"
    sibling_card = (ckpt.read_card(_inside(sibling, zip_path.parent).parent)
                    if sibling.is_file() else None)
    if sibling_card is not None:
        config = _check_given(sibling_card["env_config"], given, str(sibling))
    elif given is not None:
        config = ChickenFootConfig.from_dict(given)
    else:
        raise ValueError(
            f"{zip_path}: a bare SB3 zip does not record the game it was trained for; give the "
            "env config with --config-json '{...}' or --set field=value (ChickenFootConfig "
            "fields; defaults otherwise), e.g. --set num_players=4 --set max_pips=9"
        )
    try:
        model = MaskablePPO.load(zip_path, device="cpu")  # the unpickling the flag allowed
    except Exception as exc:
        raise ckpt.CheckpointError(
            f"{zip_path}: cannot be loaded as an sb3-contrib MaskablePPO zip: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    size = observation_layout(config).size
    got = {"observation_size": int(np.prod(model.observation_space.shape)),
           "num_actions": int(model.action_space.n)}
    want = {"observation_size": size, "num_actions": config.num_actions}
    problems = [f"{k}: zip {got[k]} vs config {want[k]}" for k in got if got[k] != want[k]]
    if problems:
        raise ckpt.CheckpointMismatchError(
            f"{zip_path}: the model does not fit env config {config.to_dict()} — "
            + "; ".join(problems)
        )
    try:
        weights = ckpt.actor_weights(model)
    except (AttributeError, TypeError) as exc:
        raise ckpt.CheckpointError(
            f"{zip_path}: not an MlpPolicy with a separate actor network ({exc})"
        ) from None
    activation = _activation_of(model)
    card = ckpt.make_card(model, config, activation)
    if sibling_card is not None:
        card = {**sibling_card, **card}
    card["training"] = _training_summary(sibling_card or card, None)
    extra = {name: _inside(zip_path.parent / name, zip_path.parent) for name in DOC_FILES
             if sibling_card is not None and (zip_path.parent / name).is_file()}
    return weights, card, extra, _TorchReference(model), f"SB3 zip {zip_path} (--allow-pickle)"


class _TorchReference:
    """The torch actor's logits, to check the numpy export against."""

    def __init__(self, model):
        self.model = model

    def logits(self, vector: np.ndarray) -> np.ndarray:
        import torch

        policy = self.model.policy
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(vector, np.float32)[None])
            features = policy.extract_features(x, policy.pi_features_extractor)
            latent = policy.mlp_extractor.forward_actor(features)
            return policy.action_net(latent)[0].numpy()


# ---------------------------------------------------------------------------------- export
def _pickled_zip(source: Path) -> Path | None:
    """The SB3 zip `source` would have to be read from, or None for a weights-only source."""
    folder = source.parent if source.is_file() else source
    if source.is_file() and source.name != "model.zip" and source.suffix == ".zip":
        return source
    if (folder / "card.json").is_file() and (folder / "policy.npz").is_file():
        return None
    if any((folder / p).is_file() for p in ("latest.json", "checkpoints/latest.json")):
        return None
    return folder / "model.zip" if (folder / "model.zip").is_file() else None


def export(source: str | Path, out: str | Path, *, allow_pickle: bool = False,
           config: dict | None = None, check_vectors: int = 64) -> Path:
    """Write the weights-only checkpoint for `source` to `out` (see the module docstring)."""
    source, out = Path(source), Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; choose a new output directory")
    zip_path = _pickled_zip(source)
    if zip_path is not None:
        if not allow_pickle:
            raise ckpt.PickleRefusedError(
                f"{zip_path}: exporting from an SB3 zip needs --allow-pickle: "
                f"{ckpt.PICKLE_WARNING}. Pass it only for a file you trust (e.g. your own run)"
            )
        if zip_path != source:  # a model.zip found in the folder given, not a file named
            _inside(zip_path, zip_path.parent)
        weights, card, extra, reference, origin = from_pickled_zip(zip_path, config)
    else:
        weights, card, extra, reference, origin = from_checkpoint(source, config)
    layers = [weights[0][0].shape[1]] + [W.shape[0] for W, _ in weights]
    card.update({
        "observation_version": card.get("observation_version", OBSERVATION_VERSION),
        "network": {
            "type": "mlp",
            "layer_sizes": layers,
            "activation": card["activation"],
            "arrays": "policy.npz: W<i> (out, in) and b<i> (out,) float32, i = 0.."
                      f"{len(weights) - 1}; hidden = activation(W @ x + b), last layer linear",
            "output": "logits over the action codec (cf_env.core.actions); illegal actions masked to "
                      "-inf; argmax (or a sample)",
        },
        "exported": {"from": origin, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                     "by": "python -m training.export"},
    })
    target = ckpt.write_weights_checkpoint(out, weights, card, extra_files=extra)
    try:
        _verify(target, reference, card, check_vectors)
    except BaseException:
        import shutil

        shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def _verify(target: Path, reference, card: dict, count: int) -> None:
    """Re-load the export and check it gives the source's logits (and so actions)."""
    loaded = ckpt.load_ppo_policy(target)
    rng = np.random.default_rng(0)
    vectors = rng.integers(0, 2, size=(count, card["observation_size"])).astype(np.float32)
    for vector in vectors:
        ours, theirs = loaded.logits(vector), np.asarray(reference.logits(vector))
        if not np.allclose(ours, theirs, atol=1e-4, rtol=1e-4) or ours.argmax() != theirs.argmax():
            raise ckpt.CheckpointError(
                f"{target}: the exported policy's logits differ from the source's (max abs "
                f"difference {np.abs(ours - theirs).max():.3g}); unsupported network layout?"
            )


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(
        prog="python -m training.export",
        description="Write a weights-only checkpoint (card.json + policy.npz, no pickle) from a "
                    "run directory, a checkpoint directory, or (with --allow-pickle) an SB3 zip.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("source", help="run directory, checkpoint directory, or SB3 .zip")
    parser.add_argument("out", help="output checkpoint directory (must not exist)")
    parser.add_argument(
        "--allow-pickle", action="store_true",
        help="allow reading an SB3 .zip. DANGER: an SB3 zip unpickles Python objects when loaded, "
             "so an untrusted one can run arbitrary code on this machine; use only for files "
             "you trust",
    )
    parser.add_argument("--config-json", help="env config (ChickenFootConfig fields) as JSON text "
                        "or a JSON file; needed for a bare zip without a sibling card.json")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="one env-config field (repeatable); checked against the source card")
    args = parser.parse_args(argv)
    try:
        given = config_from_args(args.config_json, args.set)
        target = export(args.source, args.out, allow_pickle=args.allow_pickle, config=given)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"wrote {target} ({', '.join(sorted(p.name for p in target.iterdir()))})")
    return target
