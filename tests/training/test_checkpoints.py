"""Hostile checkpoint files (`training.artifacts.checkpoints`): the weights-only loader refuses oversized
or lying `policy.npz` members from the zip directory and `.npy` headers before decompressing
them, bounds `card.json` and pointer sizes, turns JSON nested too deeply into
`CheckpointError`, requires the card's `policy_sha256`, and follows `latest.json` only to a
checkpoint directory beside it. Checkpoints here are written with random weights through the
project's own writer, so no training (and no torch) is needed."""

from __future__ import annotations

import json
import os
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.agents import checkpoint as reader
from cf_env.agents.policies import load_policy
from cf_env.core.observation import observation_layout
from training.artifacts import checkpoints as ckpt

CONFIG = ChickenFootConfig()
HIDDEN = 16


def _checkpoint(folder: Path, seed: int = 0) -> Path:
    """A valid weights-only checkpoint for the default game: one hidden layer of 16 units."""
    sizes = [observation_layout(CONFIG).size, HIDDEN, CONFIG.num_actions]
    rng = np.random.default_rng(seed)
    weights = [(rng.normal(size=(out, inp)), rng.normal(size=out))
               for inp, out in zip(sizes, sizes[1:])]
    card = {"format": ckpt.CHECKPOINT_FORMAT, "steps": 0, "env_config": CONFIG.to_dict(),
            "observation_version": OBSERVATION_VERSION, "observation_size": sizes[0],
            "num_actions": sizes[-1], "activation": "tanh", "net_arch": [HIDDEN]}
    return ckpt.write_weights_checkpoint(folder, weights, card)


def _edit_card(folder: Path, edit) -> None:
    card = json.loads((folder / "card.json").read_text())
    edit(card)
    (folder / "card.json").write_text(json.dumps(card))


def _write_npz(file: Path, members: dict[str, tuple[tuple[int, ...], int]],
               arrays: dict[str, np.ndarray]) -> None:
    """An npz of `arrays` plus `members`: name -> (shape its float32 header declares, number of
    zero data bytes actually written), streamed so that the test itself never holds them."""
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w") as stream:
                np.lib.format.write_array(stream, np.asarray(array))
        for name, (shape, data_bytes) in members.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as stream:
                np.lib.format.write_array_header_1_0(
                    stream, {"descr": "<f4", "fortran_order": False, "shape": shape})
                chunk = bytes(1 << 20)
                for start in range(0, data_bytes, len(chunk)):
                    stream.write(chunk[: min(len(chunk), data_bytes - start)])


def _arrays(folder: Path) -> dict:
    with np.load(folder / "policy.npz") as data:
        return {k: data[k] for k in data.files}


def test_written_checkpoint_loads_and_plays(tmp_path):
    """The fixture itself: what the writer writes passes every new check."""
    folder = _checkpoint(tmp_path / "ckpt")
    policy = load_policy(f"ppo:{folder}", CONFIG, seed=0)
    mask = np.zeros(CONFIG.num_actions, np.int8)
    mask[[3, 50]] = 1
    assert policy.act({"observation": np.zeros(ckpt.read_card(folder)["observation_size"]),
                       "action_mask": mask}) in (3, 50)


# ----------------------------------------------------------- oversized and lying files
def test_oversized_member_is_refused_before_decompressing(tmp_path, monkeypatch):
    """A 64 MiB member of zeros (about 64 KB compressed) declaring a shape the card does not
    have: refused from its header, with no array read and far less than 64 MiB allocated."""
    folder = _checkpoint(tmp_path / "ckpt")
    arrays = _arrays(folder)
    big = (HIDDEN, 1 << 20)  # float32: 64 MiB of data, as the header truthfully says
    _write_npz(folder / "policy.npz", {"W0": (big, 4 * HIDDEN << 20)},
               {k: v for k, v in arrays.items() if k != "W0"})
    assert (folder / "policy.npz").stat().st_size < 1 << 20
    reads = []
    real_read_array = np.lib.format.read_array
    monkeypatch.setattr(np.lib.format, "read_array",
                        lambda *a, **k: reads.append(a) or real_read_array(*a, **k))
    tracemalloc.start()
    try:
        with pytest.raises(ckpt.CheckpointMismatchError,
                           match=r"policy.npz: layer sizes \[1048576, 16, 112\] .* card.json "
                                 r"says \[421, 16, 112\]"):
            ckpt.load_ppo_policy(folder, config=CONFIG)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reads == []  # no member's payload was read, not even the small ones
    assert peak < 8 << 20, f"peak {peak} bytes while refusing a 64 MiB member"


def test_header_that_lies_about_its_size_is_refused(tmp_path):
    """A member whose header declares 128 MiB but whose zip entry holds 1 KiB."""
    folder = _checkpoint(tmp_path / "ckpt")
    arrays = _arrays(folder)
    _write_npz(folder / "policy.npz", {"W0": ((HIDDEN, 1 << 21), 1024)},
               {k: v for k, v in arrays.items() if k != "W0"})
    with pytest.raises(ckpt.CheckpointError,
                       match=r"W0's header declares shape \(16, 2097152\) float32 \(134217728 "
                             r"bytes of data\) but the zip directory gives it 1024"):
        ckpt.load_ppo_policy(folder)


def test_too_many_members_are_refused_unopened(tmp_path, monkeypatch):
    folder = _checkpoint(tmp_path / "ckpt")
    arrays = _arrays(folder)
    extra = {f"x{i}": np.zeros(1, np.float32) for i in range(128)}  # 2 * MAX_LAYERS
    np.savez(folder / "policy.npz", **arrays, **extra)
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open",
                        lambda self, *a, **k: opened.append(a) or real_open(self, *a, **k))
    with pytest.raises(ckpt.CheckpointError, match="132 members; a policy holds at most 128"):
        ckpt.load_weights(folder)
    assert opened == []


def test_policy_file_size_and_declared_total_are_bounded(tmp_path, monkeypatch):
    folder = _checkpoint(tmp_path / "ckpt")
    size = (folder / "policy.npz").stat().st_size
    monkeypatch.setattr(reader, "MAX_POLICY_BYTES", size - 1)
    with pytest.raises(ckpt.CheckpointError, match=f"{size} bytes, over the {size - 1}-byte limit"):
        ckpt.load_weights(folder)
    # Compressed under the limit, but the members would decompress to more than it.
    monkeypatch.setattr(reader, "MAX_POLICY_BYTES", size + 1)
    _write_npz(folder / "policy.npz", {}, {"W0": np.zeros((16, 4096), np.float32),
                                           "b0": np.zeros(16, np.float32)})
    with pytest.raises(ckpt.CheckpointError, match="members would decompress to 262[0-9]+ bytes"):
        ckpt.load_weights(folder)


def test_oversized_card_is_refused_unread(tmp_path):
    folder = _checkpoint(tmp_path / "ckpt")
    _edit_card(folder, lambda c: c.update(notes="x" * ckpt.MAX_CARD_BYTES))
    with pytest.raises(ckpt.CheckpointError,
                       match=f"card.json: not a checkpoint card: larger than the "
                             f"{ckpt.MAX_CARD_BYTES}-byte limit"):
        ckpt.load_ppo_policy(folder)


def test_card_declaring_a_huge_network_is_refused(tmp_path):
    """The card's architecture is what member shapes are checked against, so it is bounded too;
    and its observation_size must be the env config's."""
    folder = _checkpoint(tmp_path / "ckpt")
    _edit_card(folder, lambda c: c.update(net_arch=[1 << 14, 1 << 14]))
    with pytest.raises(ckpt.CheckpointError, match=r"sizes \[421, 16384, 16384, 112\], needs "
                                                   r"1108804032 bytes of weights; the limits are 64 "
                                                   r"layers and 268435456 bytes"):
        ckpt.read_card(folder)
    _edit_card(folder, lambda c: c.update(net_arch=[HIDDEN], observation_size=1 << 20))
    with pytest.raises(ckpt.CheckpointError,
                       match="observation_size 1048576 but env_config's observation has 421"):
        ckpt.read_card(folder)


# ----------------------------------------------- checkpoint pointers and card digests
def _run_with_pointer(tmp_path: Path, path: object) -> Path:
    """A run directory holding checkpoint step_1 and a latest.json whose "path" is `path`."""
    run = tmp_path / "run"
    _checkpoint(run / "checkpoints" / "step_1")
    (run / "checkpoints" / "latest.json").write_text(json.dumps({"path": path}))
    return run


@pytest.mark.parametrize("path", ["..", ".", "", "../../outside", "step_1/../../../outside",
                                  "OUTSIDE_ABSOLUTE", 7])
def test_pointer_cannot_leave_its_folder(tmp_path, path):
    outside = _checkpoint(tmp_path / "outside")  # what an escaping pointer would reach
    if path == "OUTSIDE_ABSOLUTE":
        path = str(outside)
    run = _run_with_pointer(tmp_path, path)
    with pytest.raises(ckpt.CheckpointError, match="latest.json: (path .* is not a single folder "
                                                   "name|not a checkpoint pointer)"):
        ckpt.resolve_checkpoint(run)
    with pytest.raises(ckpt.CheckpointError, match="latest.json"):
        load_policy(f"ppo:{run}", CONFIG)


def test_pointer_through_a_symlink_out_of_the_run_is_refused(tmp_path):
    outside = _checkpoint(tmp_path / "outside")
    run = _run_with_pointer(tmp_path, "step_2")
    os.symlink(outside, run / "checkpoints" / "step_2")
    with pytest.raises(ckpt.CheckpointError, match=r"path 'step_2' leads to .*outside, outside "):
        ckpt.resolve_checkpoint(run)


def test_pointer_cycles_and_chains_are_refused(tmp_path):
    # latest.json -> loop, a symlink to the checkpoints folder itself (whose latest.json -> loop).
    run = _run_with_pointer(tmp_path, "loop")
    os.symlink(run / "checkpoints", run / "checkpoints" / "loop")
    with pytest.raises(ckpt.CheckpointError, match="path 'loop' leads to .* outside"):
        ckpt.resolve_checkpoint(run)
    # latest.json -> sub, a folder holding another pointer: never followed (no chains, no cycles).
    chained = _run_with_pointer(tmp_path / "chain", "sub")
    (chained / "checkpoints" / "sub").mkdir()
    (chained / "checkpoints" / "sub" / "latest.json").write_text('{"path": "step_1"}')
    with pytest.raises(ckpt.CheckpointError, match="names 'sub', but .* is not a checkpoint "
                                                   "directory"):
        ckpt.resolve_checkpoint(chained)
    # A pointer to a checkpoint that is gone.
    with pytest.raises(ckpt.CheckpointError, match="names 'step_9'.*stale or corrupted"):
        ckpt.resolve_checkpoint(_run_with_pointer(tmp_path / "stale", "step_9"))
    # A symlink to a sibling checkpoint stays inside the folder, so it is followed.
    ok = _run_with_pointer(tmp_path / "alias", "newest")
    os.symlink("step_1", ok / "checkpoints" / "newest")
    assert ckpt.resolve_checkpoint(ok) == ok / "checkpoints" / "newest"


def test_deeply_nested_json_is_a_checkpoint_error(tmp_path):
    deep = "[" * 20_000 + "]" * 20_000  # under the size limits, far over the recursion limit
    run = _run_with_pointer(tmp_path, "step_1")
    (run / "checkpoints" / "latest.json").write_text(deep)
    with pytest.raises(ckpt.CheckpointError, match="latest.json: not a checkpoint pointer .*: "
                                                   "JSON nested too deeply"):
        ckpt.resolve_checkpoint(run)
    folder = run / "checkpoints" / "step_1"
    (folder / "card.json").write_text(deep)
    with pytest.raises(ckpt.CheckpointError, match="card.json: .*JSON nested too deeply"):
        ckpt.read_card(folder)
    (run / "checkpoints" / "latest.json").write_text('{"path": "step_1"}' + " " * (1 << 17))
    with pytest.raises(ckpt.CheckpointError, match="latest.json: .*larger than the 65536-byte"):
        ckpt.resolve_checkpoint(run)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c.pop("policy_sha256"), "missing key 'policy_sha256'"),
    (lambda c: c.update(policy_sha256=None), "'policy_sha256' must be str"),
    (lambda c: c.update(policy_sha256="abc"), "policy_sha256 must be 64 lowercase hex digits"),
])
def test_card_without_a_valid_digest_is_refused(tmp_path, edit, message):
    folder = _checkpoint(tmp_path / "ckpt")
    _edit_card(folder, edit)
    with pytest.raises(ckpt.CheckpointError, match=message):
        load_policy(f"ppo:{folder}", CONFIG)
    # A hand-made card handed to load_weights directly is held to the same rule.
    card = json.loads((folder / "card.json").read_text())
    card.pop("policy_sha256", None)
    with pytest.raises(ckpt.CheckpointError, match="gives no policy_sha256"):
        ckpt.load_weights(folder, card)
