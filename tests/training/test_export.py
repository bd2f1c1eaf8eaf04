"""Checkpoint safety (`training.artifacts.export`, `training.artifacts.checkpoints`): weights-only exports act exactly
like their source; SB3 zips (which unpickle on load) are read only with `--allow-pickle`;
truncated, corrupted or inconsistent checkpoint files raise `CheckpointError` naming the file and
the problem; mismatched configs raise `CheckpointMismatchError` naming the field; the shipped
agent holds only safe files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

try:  # pytest.importorskip's skip, written so that the imports below may follow it
    import yaml  # noqa: F401  (training.artifacts.export and training.ppo read YAML)
except ImportError as missing:
    pytest.skip(f"{missing}: needs the train extra: pip install -e '.[train]'", allow_module_level=True)

from cf_env import ChickenFootConfig
from cf_env.agents.policies import load_policy
from cf_env.envs.env import raw_env
from training import ppo
from training.artifacts import checkpoints as ckpt
from training.artifacts import export as ex

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs" / "smoke.yaml")
SHIPPED = ROOT / "checkpoints" / "ppo-4p-d9"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> Path:
    """An SB3 (MaskablePPO) smoke run: the one learner whose checkpoints hold a pickled zip."""
    runs = tmp_path_factory.mktemp("runs")
    ppo.main(["--config", SMOKE, "--set", f"runs_dir={runs}", "--set", "run_name=smoke",
              "--set", "total_steps=256", "--set", "algo=maskable_ppo"])
    return runs / "smoke"


@pytest.fixture(scope="module")
def observations() -> list[dict]:
    """Observations from real positions of a default game (legal-action masks included)."""
    env = raw_env()
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    seen = []
    for _agent in env.agent_iter(max_iter=120):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        seen.append({k: np.array(v) for k, v in obs.items()})
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return seen


def _bare_zip(smoke_run: Path, folder: Path) -> Path:
    """The smoke run's SB3 zip alone, as if downloaded (no card, no policy.npz beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(ckpt.resolve_checkpoint(smoke_run) / "model.zip",
                             folder / "agent.zip"))


# ------------------------------------------------------------------------------ exporting
@pytest.mark.slow
def test_export_of_a_run_acts_like_the_run(smoke_run, observations, tmp_path):
    source = ckpt.load_ppo_policy(smoke_run)
    out = ex.main([str(smoke_run), str(tmp_path / "out")])
    assert sorted(p.name for p in out.iterdir()) == ["card.json", "policy.npz"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dir left
    exported = load_policy(f"ppo:{out}", ChickenFootConfig(), seed=0)
    assert [exported.act(o) for o in observations] == [source.act(o) for o in observations]
    card = json.loads((out / "card.json").read_text())
    assert card["network"]["layer_sizes"] == [card["observation_size"], 16, card["num_actions"]]
    assert card["policy_sha256"] == ckpt.sha256_file(out / "policy.npz")
    assert card["training"]["run"] == "smoke" and card["training"]["commands"]
    assert card["env_config"] == ChickenFootConfig().to_dict()
    # A checkpoint directory is a source too; an existing output is never overwritten.
    again = ex.export(ckpt.resolve_checkpoint(smoke_run), tmp_path / "again")
    assert ckpt.read_card(again)["steps"] == card["steps"]
    with pytest.raises(FileExistsError, match="exists"):
        ex.export(smoke_run, out)


@pytest.mark.slow
def test_export_of_a_zip_with_allow_pickle_acts_like_the_torch_model(
    smoke_run, observations, tmp_path
):
    from sb3_contrib import MaskablePPO

    bare = _bare_zip(smoke_run, tmp_path / "download")
    out = ex.main([str(bare), str(tmp_path / "out"), "--allow-pickle", "--set", "num_players=4",
                   "--set", "max_pips=9"])
    model = MaskablePPO.load(bare, device="cpu")
    exported = ckpt.load_ppo_policy(out, config=ChickenFootConfig())
    for obs in observations:
        expected, _ = model.predict(obs["observation"], action_masks=obs["action_mask"] == 1,
                                    deterministic=True)
        assert exported.act(obs) == int(expected)
    assert "--allow-pickle" in ckpt.read_card(out)["exported"]["from"]


@pytest.mark.slow
def test_zip_without_allow_pickle_is_refused_saying_why(smoke_run, tmp_path, capsys):
    bare = _bare_zip(smoke_run, tmp_path / "download")
    with pytest.raises(ckpt.PickleRefusedError, match="--allow-pickle.*arbitrary code"):
        ex.export(bare, tmp_path / "out")
    with pytest.raises(SystemExit):
        ex.main([str(bare), str(tmp_path / "out")])
    assert "arbitrary code" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    # Playing it is refused too, pointing at the export command.
    with pytest.raises(ckpt.PickleRefusedError, match="training.export .*--allow-pickle"):
        load_policy(f"ppo:{bare}", ChickenFootConfig())
    # So is a checkpoint folder that lost its policy.npz (only the pickled model remains).
    folder = tmp_path / "ckpt"
    shutil.copytree(ckpt.resolve_checkpoint(smoke_run), folder)
    (folder / "policy.npz").unlink()
    with pytest.raises(ckpt.PickleRefusedError, match="policy.npz is missing"):
        ckpt.load_ppo_policy(folder)
    # With the flag, the sibling card supplies the env config.
    ckpt.load_ppo_policy(ex.export(folder, tmp_path / "fixed", allow_pickle=True))


@pytest.mark.slow
def test_bare_zip_needs_an_env_config(smoke_run, tmp_path):
    bare = _bare_zip(smoke_run, tmp_path / "download")
    with pytest.raises(ValueError, match="--config-json .*--set"):
        ex.export(bare, tmp_path / "out", allow_pickle=True)
    out = ex.export(bare, tmp_path / "out", allow_pickle=True,
                    config=ex.config_from_args('{"num_players": 4}', []))
    assert ckpt.read_card(out)["env_config"]["num_players"] == 4


# ------------------------------------------------------------------------------ mismatches
@pytest.mark.slow
@pytest.mark.parametrize(("setting", "field"), [("num_players=3", "num_players"),
                                                ("must_play_drawn=true", "must_play_drawn")])
def test_export_with_a_mismatched_config_names_the_field(smoke_run, tmp_path, setting, field):
    with pytest.raises(ckpt.CheckpointMismatchError, match=f"{field}: checkpoint"):
        ex.export(smoke_run, tmp_path / "out", config=ex.config_from_args(None, [setting]))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_zip_for_another_game_names_the_size(smoke_run, tmp_path):
    bare = _bare_zip(smoke_run, tmp_path / "download")
    with pytest.raises(ckpt.CheckpointMismatchError, match="observation_size: zip"):
        ex.export(bare, tmp_path / "out", allow_pickle=True, config={"max_pips": 6})


@pytest.mark.slow
def test_exported_checkpoint_in_another_env_names_the_field(smoke_run, tmp_path):
    out = ex.export(smoke_run, tmp_path / "out")
    with pytest.raises(ckpt.CheckpointMismatchError, match="hand_size: checkpoint 7 vs env 5"):
        load_policy(f"ppo:{out}", ChickenFootConfig(hand_size=5))


# ------------------------------------------------------------------------------ corruption
def _arrays(folder: Path) -> dict:
    with np.load(folder / "policy.npz") as data:
        return {k: data[k] for k in data.files}


def _rewrite(folder: Path, **changes) -> None:
    arrays = {**_arrays(folder), **changes}
    np.savez(folder / "policy.npz", **{k: v for k, v in arrays.items() if v is not None})


NPZ_CORRUPTIONS = {
    "truncated": (lambda f: (f / "policy.npz").write_bytes((f / "policy.npz").read_bytes()[:300]),
                  "cannot be read as an .npz"),
    "garbage": (lambda f: (f / "policy.npz").write_bytes(b"\x00not a zip" * 50),
                "cannot be read as an .npz"),
    "empty": (lambda f: (f / "policy.npz").write_bytes(b""), "cannot be read as an .npz"),
    "missing array": (lambda f: _rewrite(f, b1=None), r"missing \['b1'\]"),
    "extra array": (lambda f: _rewrite(f, extra=np.zeros(3)), r"unexpected \['extra'\]"),
    "wrong shape": (lambda f: _rewrite(f, W1=np.zeros((112, 15), np.float32)),
                    "W1 takes 15 inputs but layer 0 gives 16"),
    "bias shape": (lambda f: _rewrite(f, b0=np.zeros(17, np.float32)), "b0 has shape"),
    "not a matrix": (lambda f: _rewrite(f, W0=np.zeros(5, np.float32)), "W0 has shape"),
    "wrong dtype": (lambda f: _rewrite(f, W0=_arrays(f)["W0"].astype(np.int32)),
                    "W0 has dtype int32"),
    "NaN": (lambda f: _rewrite(f, b1=np.full_like(_arrays(f)["b1"], np.nan)),
            "b1 holds NaN"),
    "pickled object": (lambda f: np.savez(f / "policy.npz", **{**_arrays(f),
                                           "W0": np.array([{"x": 1}], dtype=object)}),
                       "pickled objects"),
    "sizes differ from card": (lambda f: _rewrite(f, W0=np.zeros((16, 10), np.float32)),
                               "layer sizes .* but card.json says"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NPZ_CORRUPTIONS))
def test_corrupted_policy_npz_is_a_clear_error(smoke_run, tmp_path, name):
    folder = tmp_path / "ckpt"
    shutil.copytree(ckpt.resolve_checkpoint(smoke_run), folder)
    corrupt, message = NPZ_CORRUPTIONS[name]
    corrupt(folder)
    with pytest.raises(ckpt.CheckpointError, match=message) as info:
        load_policy(f"ppo:{folder}", ChickenFootConfig())
    assert "policy.npz" in str(info.value)
    with pytest.raises(ckpt.CheckpointError, match="policy.npz"):  # export refuses it too
        ex.export(folder, tmp_path / "out")


def _edit_card(folder: Path, edit) -> None:
    card = json.loads((folder / "card.json").read_text())
    edit(card)
    (folder / "card.json").write_text(json.dumps(card))


CARD_CORRUPTIONS = {
    "truncated": (lambda f: (f / "card.json").write_text((f / "card.json").read_text()[:40]),
                  "not valid JSON"),
    "garbage bytes": (lambda f: (f / "card.json").write_bytes(b"\xff\xfe\x00garbage"),
                      "not valid JSON"),
    "not an object": (lambda f: (f / "card.json").write_text("[1, 2]"), "expected a JSON object"),
    "missing key": (lambda f: _edit_card(f, lambda c: c.pop("activation")),
                    "missing key 'activation'"),
    "wrong type": (lambda f: _edit_card(f, lambda c: c.update(observation_size="421")),
                   "'observation_size' must be int"),
    "bad activation": (lambda f: _edit_card(f, lambda c: c.update(activation="gelu")),
                       "activation must be one of"),
    "bad env_config": (lambda f: _edit_card(f, lambda c: c["env_config"].update(num_players=9)),
                       "env_config is not a valid ChickenFootConfig"),
    "unknown field": (lambda f: _edit_card(f, lambda c: c["env_config"].update(colour="red")),
                      "unknown config field"),
    "net_arch lies": (lambda f: _edit_card(f, lambda c: c.update(net_arch=[32])),
                      "layer sizes .* but card.json says"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CARD_CORRUPTIONS))
def test_corrupted_card_is_a_clear_error(smoke_run, tmp_path, name):
    folder = tmp_path / "ckpt"
    shutil.copytree(ckpt.resolve_checkpoint(smoke_run), folder)
    corrupt, message = CARD_CORRUPTIONS[name]
    corrupt(folder)
    with pytest.raises(ckpt.CheckpointError, match=message) as info:
        ckpt.load_ppo_policy(folder, config=ChickenFootConfig())
    assert "card.json" in str(info.value)


@pytest.mark.slow
def test_exported_policy_is_checked_against_its_recorded_digest(smoke_run, tmp_path):
    out = ex.export(smoke_run, tmp_path / "out")
    # Same arrays, one weight nudged: a valid npz that is not the one the card describes.
    _rewrite(out, b0=_arrays(out)["b0"] + np.float32(0.5))
    with pytest.raises(ckpt.CheckpointError, match="policy.npz: sha256 .* differs"):
        ckpt.load_ppo_policy(out)


@pytest.mark.slow
def test_corrupted_pointer_is_a_clear_error(smoke_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(smoke_run / "checkpoints", run / "checkpoints")
    (run / "checkpoints" / "latest.json").write_text("{garbage")
    with pytest.raises(ckpt.CheckpointError, match="latest.json: not a checkpoint pointer"):
        load_policy(f"ppo:{run}", ChickenFootConfig())


# ------------------------------------------------------------------------------ shipped agent
def test_shipped_agent_is_weights_only_and_plays(observations, monkeypatch):
    assert sorted(p.name for p in SHIPPED.iterdir()) == [
        "card.json", "card.md", "learning_curve.png", "policy.npz"]
    card = ckpt.read_card(SHIPPED)
    assert card["policy_sha256"] == ckpt.sha256_file(SHIPPED / "policy.npz")
    monkeypatch.chdir(ROOT)  # the spec the README and card.md give
    policy = load_policy("ppo:checkpoints/ppo-4p-d9", ChickenFootConfig(), seed=0)
    for obs in observations:
        assert obs["action_mask"][policy.act(obs)] == 1


# ------------------------------------- symlinks, nested JSON and the Security section
def _move_out(path: Path, outside: Path) -> None:
    """Replace `path` by a symlink to a copy of it in `outside` (as a crafted download might)."""
    outside.mkdir(exist_ok=True)
    target = outside / path.name
    shutil.move(path, target)
    path.symlink_to(target)


SYMLINKED = {  # what is replaced by a symlink out of the folder; the export's source; options
    "card.md": (lambda run, step: step / "card.md", "step", {}),
    "card.json": (lambda run, step: step / "card.json", "step", {}),
    "policy.npz": (lambda run, step: step / "policy.npz", "run", {}),
    "run.json": (lambda run, step: run / "run.json", "run", {}),
    "evals.jsonl": (lambda run, step: run / "evals.jsonl", "run", {}),
    "model.zip": (lambda run, step: step / "model.zip", "step", {"allow_pickle": True}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SYMLINKED))
def test_export_does_not_follow_symlinks_out_of_the_source(smoke_run, tmp_path, capsys, name):
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    step = ckpt.resolve_checkpoint(run)
    (step / "card.md").write_text("# card\n")
    if not (run / "evals.jsonl").is_file():
        (run / "evals.jsonl").write_text('{"steps": 256}\n')
    if name == "model.zip":
        (step / "policy.npz").unlink()  # so the folder's model.zip is what would be read
    where, source, options = SYMLINKED[name]
    _move_out(where(run, step), tmp_path / "outside")
    source = run if source == "run" else step
    with pytest.raises(ckpt.CheckpointError, match=f"{name} leads to .*/outside/{name}, outside "
                                                   ".*; export reads only files inside"):
        ex.export(source, tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()
    # The command line reports it on one `error:` line and exits 2.
    argv = [str(source), str(tmp_path / "out")] + (["--allow-pickle"] if options else [])
    with pytest.raises(SystemExit) as exit_info:
        ex.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "outside" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_symlinks_inside_the_source_are_still_followed(smoke_run, tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(ckpt.resolve_checkpoint(smoke_run), folder)
    (folder / "notes.md").write_text("# notes\n")
    (folder / "card.md").symlink_to("notes.md")
    out = ex.export(folder, tmp_path / "out")
    assert (out / "card.md").read_text() == "# notes\n" and not (out / "card.md").is_symlink()


@pytest.mark.slow
def test_export_refuses_deeply_nested_run_json_with_one_error_line(smoke_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(smoke_run, run)
    (run / "run.json").write_text("[" * 20_000 + "]" * 20_000)
    with pytest.raises(SystemExit) as exit_info:
        ex.main([str(run), str(tmp_path / "out")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "run.json: not a run's run.json: JSON nested too deeply" in err[0]
    (run / "run.json").write_text("{}")
    (run / "evals.jsonl").write_text('{"ok": 1}\n' + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(ckpt.CheckpointError, match="evals.jsonl: last line is not valid JSON"):
        ex.export(run, tmp_path / "out")


def test_the_security_docs_name_every_trust_boundary():
    """Each way of making this project run someone else's code is named where users look."""
    page = (ROOT / "docs" / "robustness.md").read_text()
    start = page.index("## Security: loading checkpoints")
    end = page.find("\n## ", start + 1)
    section = page[start:end if end >= 0 else len(page)]
    for boundary in ("--allow-pickle", "--resume", "module:factory", "YAML", "export",
                     "policy_sha256", "latest.json"):
        assert boundary in section, f"the Security section does not mention {boundary}"
