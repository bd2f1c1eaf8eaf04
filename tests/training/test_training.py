"""Training (`training.ppo`, `training.config`, `training.artifacts.checkpoints`, `training.selfplay.opponents`):
a smoke run writes a run directory and a loadable checkpoint and resumes from it; mismatched
checkpoints fail naming the field; interrupted saves leave the previous checkpoint intact."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

try:  # pytest.importorskip's skip, written so that the imports below may follow it
    import yaml
except ImportError as missing:
    pytest.skip(f"{missing}: needs the train extra: pip install -e '.[train]'", allow_module_level=True)

from cf_env import OBSERVATION_VERSION, ChickenFootConfig
from cf_env.agents.policies import load_policy
from cf_env.envs.env import raw_env
from training import ppo
from training.artifacts import checkpoints as ckpt
from training.config import TrainConfig, load_config
from training.selfplay.opponents import OpponentPool

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs" / "smoke.yaml")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    ppo.main(["--config", SMOKE, "--set", f"runs_dir={runs}", "--set", "run_name=smoke",
              "--set", "algo=maskable_ppo"])  # the SB3 path (self-play: tests/training/test_selfplay.py)
    return runs / "smoke"


# ------------------------------------------------------------------------------ config
def test_configs_load_and_overrides_apply():
    default = load_config(ROOT / "configs" / "default.yaml")
    assert default.rules() == ChickenFootConfig()  # the shipped agent's game: 4p double-9
    cfg = load_config(SMOKE, ["ppo.learning_rate=1e-4", "ppo.net_arch=[8, 8]", "seed=3",
                              "opponents.bots={greedy: 2}"])
    assert cfg.ppo.learning_rate == 1e-4 and cfg.ppo.net_arch == [8, 8] and cfg.seed == 3
    assert cfg.opponents.bots == {"greedy": 2}
    assert cfg.ppo.n_epochs == 1  # untouched smoke values stay
    assert TrainConfig().ppo.gamma == load_config(None).ppo.gamma


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("ppo.learnin_rate=1e-4", r"unknown key\(s\) \['learnin_rate'\] in ppo"),
        ("ppo.n_steps=abc", "ppo.n_steps must be int"),
        ("num_envs=0", "num_envs must be >= 1"),
        ("env.rules={num_players: 9}", "num_players must be 2"),
        ("vec_env=threads", "vec_env must be"),
        ("eval.best_metric=random", "eval.best_metric"),
        ("nonsense", "section.field=value"),
    ],
)
def test_bad_config_names_the_problem(override, message):
    with pytest.raises(ValueError, match=message):
        load_config(SMOKE, [override])


# ------------------------------------------------------------------------------ smoke run
@pytest.mark.slow
def test_smoke_run_writes_a_run_directory(smoke_run):
    config = yaml.safe_load((smoke_run / "config.yaml").read_text())
    assert config["total_steps"] == 512 and config["run_name"] == "smoke"
    info = json.loads((smoke_run / "run.json").read_text())
    assert info["observation_version"] == OBSERVATION_VERSION
    assert info["env_config"] == ChickenFootConfig().to_dict()
    assert info["packages"]["sb3-contrib"] and info["packages"]["torch"]
    assert "commit" in info["sessions"][0]["git"]
    assert list((smoke_run / "tb").rglob("events.out.tfevents.*"))
    latest = ckpt.resolve_checkpoint(smoke_run)
    card = ckpt.read_card(latest)
    assert card["steps"] == 512 and card["observation_version"] == OBSERVATION_VERSION
    assert (latest / "model.zip").is_file() and (latest / "policy.npz").is_file()
    best = json.loads((smoke_run / "checkpoints" / "best.json").read_text())
    assert (smoke_run / "checkpoints" / best["path"] / "card.json").is_file()
    evals = [json.loads(line) for line in (smoke_run / "evals.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in evals] == [256, 512]
    assert all(0.0 <= e["win_rate"]["mean"] <= 1.0 for e in evals)
    snapshots = sorted(p.name for p in (smoke_run / "snapshots").iterdir())
    assert snapshots == [f"step_{s:09d}" for s in (128, 256, 384, 512)]


@pytest.mark.slow
def test_checkpoint_plays_legal_games_as_a_policy_spec(smoke_run):
    config = ChickenFootConfig(num_rounds=2)  # fewer rounds than trained: the obs is padded
    policy = load_policy(f"ppo:{smoke_run}", config, seed=0)
    env = raw_env(num_rounds=2)
    env.reset(seed=4)
    moves = 0
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        action = policy.act(obs)
        assert obs["action_mask"][action] == 1
        env.step(action)
        moves += 1
    assert moves > 20


@pytest.mark.slow
def test_numpy_policy_matches_the_torch_policy(smoke_run):
    import torch
    from sb3_contrib import MaskablePPO

    latest = ckpt.resolve_checkpoint(smoke_run)
    model = MaskablePPO.load(latest / "model.zip", device="cpu")
    policy = ckpt.load_ppo_policy(latest, config=ChickenFootConfig())
    env = raw_env()
    env.reset(seed=9)
    checked = 0
    for _agent in env.agent_iter(max_iter=150):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            break
        mask = obs["action_mask"].astype(bool)
        expected, _ = model.predict(obs["observation"], action_masks=mask, deterministic=True)
        with torch.no_grad():  # log-probabilities over the legal actions
            dist = model.policy.get_distribution(torch.as_tensor(obs["observation"][None]),
                                                 action_masks=mask[None])
        torch_logp = dist.distribution.logits.numpy()[0][mask]
        logits = policy.logits(obs["observation"])[mask]
        np.testing.assert_allclose(logits - np.logaddexp.reduce(logits), torch_logp, atol=1e-5)
        chosen = policy.act(obs)
        # The same action, except where two legal actions tie to float32 precision (seen in
        # smoke runs: logits equal to 1e-7), where either is an argmax.
        legal = np.flatnonzero(mask)
        assert chosen == int(expected) or (
            abs(torch_logp[legal == chosen][0] - torch_logp.max()) < 1e-5)
        checked += 1
        env.step(int(expected))
    assert checked > 50


@pytest.mark.slow
def test_resume_continues_from_the_latest_checkpoint(smoke_run, tmp_path):
    import shutil

    run = tmp_path / "smoke"
    shutil.copytree(smoke_run, run)
    ppo.main(["--resume", str(run), "--set", "total_steps=768", "--set", "eval.every_steps=0"])
    card = ckpt.read_card(ckpt.resolve_checkpoint(run))
    assert card["steps"] == 768
    assert yaml.safe_load((run / "config.yaml").read_text())["total_steps"] == 768
    assert len(json.loads((run / "run.json").read_text())["sessions"]) == 2
    with pytest.raises(SystemExit) as exit_info:  # the user's mistake: an error: line, exit 2
        ppo.main(["--resume", str(run), "--set", "total_steps=1024",
                  "--set", "env.rules={num_players: 3}"])
    assert exit_info.value.code == 2


def test_ctrl_c_writes_a_checkpoint(tmp_path, monkeypatch):
    from stable_baselines3.common.callbacks import BaseCallback

    class Interrupt(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps >= 192:
                raise KeyboardInterrupt
            return True

    from training.sb3 import maskable_ppo

    monkeypatch.setattr(maskable_ppo, "_callbacks", lambda *args: Interrupt())
    with pytest.raises(KeyboardInterrupt):
        ppo.main(["--config", SMOKE, "--set", f"runs_dir={tmp_path}", "--set", "run_name=int",
                  "--set", "algo=maskable_ppo"])
    card = ckpt.read_card(ckpt.resolve_checkpoint(tmp_path / "int"))
    assert card["steps"] == 192


# ------------------------------------------------------------------------------ compatibility
@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_players": 3}, "num_players"),
        ({"max_pips": 6}, "max_pips"),
        ({"double_blank_value": 25}, "double_blank_value"),
        ({"must_play_drawn": True}, "must_play_drawn"),
    ],
)
def test_mismatched_config_fails_naming_the_field(smoke_run, change, field):
    config = ChickenFootConfig(**change)
    with pytest.raises(ckpt.CheckpointMismatchError, match=f"{field}: checkpoint"):
        ckpt.load_ppo_policy(smoke_run, config=config)
    with pytest.raises(ckpt.CheckpointMismatchError, match=field):
        load_policy(f"ppo:{smoke_run}", config)


@pytest.mark.slow
def test_mismatched_observation_version_fails(smoke_run, tmp_path):
    import shutil

    latest = ckpt.resolve_checkpoint(smoke_run)
    copy = tmp_path / "old"
    shutil.copytree(latest, copy)
    card = json.loads((copy / "card.json").read_text())
    card["observation_version"] = OBSERVATION_VERSION + 1
    (copy / "card.json").write_text(json.dumps(card))
    with pytest.raises(ckpt.CheckpointMismatchError, match="observation_version"):
        ckpt.load_ppo_policy(copy, config=ChickenFootConfig())
    # Resuming is strict: any rule differs (num_rounds included), it fails.
    rules = ckpt.read_card(latest)["env_config"]
    fewer = ChickenFootConfig.from_dict({**rules, "num_rounds": rules["num_rounds"] - 1})
    ckpt.load_ppo_policy(latest, config=fewer)  # (the observation is padded)
    with pytest.raises(ckpt.CheckpointMismatchError, match="num_rounds"):
        ckpt.check_compatible(ckpt.read_card(latest), fewer, strict=True)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        ckpt.load_ppo_policy(tmp_path)


# ------------------------------------------------------------------------------ atomic saves
@pytest.mark.slow
def test_interrupted_save_keeps_the_previous_checkpoint(smoke_run, tmp_path, monkeypatch):
    import shutil

    from sb3_contrib import MaskablePPO

    folder = tmp_path / "checkpoints"
    shutil.copytree(smoke_run / "checkpoints", folder)
    before = ckpt.resolve_checkpoint(folder)
    model = MaskablePPO.load(before / "model.zip", device="cpu")
    model.num_timesteps = 10_000
    card = ckpt.read_card(before)

    def crash(self, path, *args, **kwargs):  # dies half-way through writing model.zip
        Path(path).write_bytes(b"PK\x03\x04 partial")
        raise OSError("disk full")

    monkeypatch.setattr(MaskablePPO, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_run_checkpoint(folder, model, card)
    assert ckpt.resolve_checkpoint(folder) == before
    assert not (folder / "step_000010000").exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]
    ckpt.load_ppo_policy(folder, config=ChickenFootConfig())
    MaskablePPO.load(before / "model.zip", device="cpu")
    monkeypatch.undo()
    # A completed save moves the pointer; the superseded step folder is pruned.
    saved = ckpt.save_run_checkpoint(folder, model, card)
    assert ckpt.resolve_checkpoint(folder) == saved and saved.name == "step_000010000"


@pytest.mark.slow
def test_write_checkpoint_never_overwrites(smoke_run):
    latest = ckpt.resolve_checkpoint(smoke_run)
    with pytest.raises(FileExistsError, match="never overwritten"):
        ckpt.write_checkpoint(latest, model=None, card={})


# ------------------------------------------------------------------------------ opponents
@pytest.mark.slow
def test_opponent_pool_samples_by_weight_and_keeps_recent_snapshots(smoke_run):
    config = ChickenFootConfig()
    snaps = sorted(str(p) for p in (smoke_run / "snapshots").iterdir())
    pool = OpponentPool(config, {"greedy": 3.0, "random": 1.0}, snapshot_weight=4.0,
                        max_snapshots=2, snapshots=snaps)
    assert pool.snapshots == snaps[-2:]
    names, probs = pool.entries()
    assert names[:2] == ["greedy", "random"]
    np.testing.assert_allclose(probs, [3 / 8, 1 / 8, 2 / 8, 2 / 8])
    rng = np.random.default_rng(0)
    kinds = [type(p).__name__ for _ in range(200) for p in pool.sample(rng, 3)]
    share = kinds.count("NumpyPolicy") / len(kinds)
    assert 0.4 < share < 0.6
    clone = pickle.loads(pickle.dumps(pool))
    assert clone.entries()[0] == names
    with pytest.raises(ValueError, match="at least one bot"):
        OpponentPool(config, {"greedy": 0.0})
