"""Every script in examples/ runs with small arguments and does what it says.

Each example's `main(argv)` returns what it saw; the tests check it against the env's contract:
every sampled action was in the acting player's mask (the envs also raise on an illegal one), no
empty mask was sampled from, games finished, round rewards are zero-sum. Libraries that are
not installed skip their test with the reason; the RLlib one runs in its own venv
(`make test-rllib`, selected by name), the rest in the main one (`make test`).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from cf_env import ChickenFootConfig
from cf_env.envs.env import INFO_KEYS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def load(name: str):
    """The example script as a module (its `if __name__ == "__main__"` block not run)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_tested_and_linked_from_the_readme():
    scripts = sorted(p.stem for p in EXAMPLES.glob("*.py"))
    assert len(scripts) >= 6
    tests = Path(__file__).read_text(encoding="utf-8")
    section = README.split("## Use it from", 1)[1].split("\n## ", 1)[0]
    for name in scripts:
        assert f'load("{name}")' in tests, f"examples/{name}.py has no test here"
        assert f"(examples/{name}.py)" in section, f"examples/{name}.py is not linked"


def test_pettingzoo_random_play_finishes_zero_sum_games():
    out = load("pettingzoo_random").main(["--games", "2", "--players", "3", "--max-pips", "6"])
    assert out["games"] == 2 and len(out["returns"]) == 2
    assert out["steps"] > 2 * 7  # a double-6 game has at least 7 rounds
    for returns, winners in zip(out["returns"], out["winners"]):
        assert set(returns) == {"player_0", "player_1", "player_2"}
        assert sum(returns.values()) == pytest.approx(0.0, abs=1e-9)
        assert any(r != 0 for r in returns.values())
        assert winners and set(winners) <= set(returns)


def test_pettingzoo_example_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "pettingzoo_random.py"), "--games", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^1 games, \d+ decisions$", done.stdout, re.M), done.stdout


@pytest.mark.slow
def test_sb3_maskable_ppo_trains_and_evaluates_with_masks():
    pytest.importorskip("sb3_contrib", reason="needs the train extra")
    # illegal_action="raise" in the example: one unmasked action would fail the run.
    import torch

    out = load("sb3_maskable_ppo").main(["--steps", "512", "--envs", "2", "--eval-episodes", "4"])
    assert torch.get_num_threads() == 1  # a small network: one thread (README, Single-agent env)
    assert out["timesteps"] >= 512
    assert len(out["rewards"]) == 4 and all(n >= 1 for n in out["lengths"])
    assert all(np.isfinite(out["rewards"]))


@pytest.mark.slow
def test_torchrl_rollout_samples_only_legal_actions_and_pays_zero_sum():
    pytest.importorskip("torchrl", reason="optional extra: pip install -e '.[torchrl]'")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = load("torchrl_rollout").main(["--steps", "300", "--rounds", "1"])
    # TorchRL's warning about PettingZoo's version is silenced; any other warning still shows.
    assert not [w for w in caught if "PettingZoo in TorchRL" in str(w.message)]
    acting, legal, masks, rewards = out["acting"], out["legal"], out["masks"], out["rewards"]
    assert acting.shape == (300, 2)
    assert (acting.sum(-1) == 1).all()  # AEC: exactly one player acts per step
    assert legal[acting].all()
    assert (masks[acting].sum(-1) >= 1).all()  # never sampled from an empty mask
    assert out["games"] >= 2
    assert torch_close(rewards.sum(-1), 0.0)  # zero-sum at every step (round ends)
    assert (rewards != 0).any()
    # TorchRL built the info spec from reset's infos: v1's fixed schema, every key numeric.
    rollout = out["rollout"]
    for group in out["groups"]:
        assert set(rollout[group, "info"].keys()) == set(INFO_KEYS)
    assert rollout["next", out["groups"][0], "info", "round_over"].any()


def torch_close(values, target: float) -> bool:
    return bool((values - target).abs().max() < 1e-5)


@pytest.mark.slow
def test_tianshou_collector_collects_legal_zero_sum_games():
    pytest.importorskip("tianshou", reason="optional extra: pip install -e '.[tianshou]'")
    out = load("tianshou_random").main(["--steps", "300", "--rounds", "1"])
    assert out["steps"] == 300 and out["games"] >= 2
    batch = out["batch"]
    assert len(batch) == 300
    assert out["legal"].all()
    assert batch.obs.mask.sum(1).min() >= 1  # the collected observations' masks: never empty
    assert set(np.unique(batch.obs.agent_id)) == set(out["agents"])
    returns = out["returns"]
    assert returns.shape == (out["games"], 2)
    np.testing.assert_allclose(returns.sum(1), 0.0, atol=1e-9)
    assert (returns != 0).any()


def test_gymnasium_make_vec_sync_and_async_never_sample_an_empty_mask():
    example = load("gymnasium_vector")
    pass_action = ChickenFootConfig(num_players=2, max_pips=6).pass_action
    seen = {}
    for mode in ("sync", "async"):
        out = example.main(["--mode", mode, "--steps", "150", "--envs", "2"])
        assert out["smallest_mask"] >= 1
        assert out["episodes"] >= 5 and len(out["terminal_masks"]) == out["episodes"]
        for mask in out["terminal_masks"]:  # the next-step autoreset's placeholder: PASS only
            assert np.flatnonzero(mask).tolist() == [pass_action]
        seen[mode] = out["returns"]
    assert seen["sync"] == seen["async"]  # the same seeded games in both modes


def test_openspiel_ismcts_plays_our_heuristic_through_evaluate_bots():
    pytest.importorskip("pyspiel", reason="optional extra: pip install -e '.[openspiel]'")
    out = load("openspiel_ismcts").main(["--games", "4", "--simulations", "8"])
    assert [seat for seat, _ in out["results"]] == [0, 1, 0, 1]  # ISMCTS moves round the table
    for _, returns in out["results"]:  # R13, two players: +1 / -1, or 0 each on a tie
        assert sorted(returns) in ([-1.0, 1.0], [0.0, 0.0])
    mean = np.mean([returns[seat] for seat, returns in out["results"]])
    assert out["ismcts_return"] == pytest.approx(mean)


def test_rllib_example_trains_self_play_with_legal_actions_only():
    pytest.importorskip("ray", reason="Ray RLlib: its own venv, make test-rllib")
    out = load("rllib_ppo").main(["--iterations", "1", "--batch", "128"])
    assert out["env_steps"] >= 128
    assert out["actions"] > 0 and out["legal"] == out["actions"]
    assert out["episodes"] >= 1


def test_rllib_example_without_ray_says_how_to_get_it():
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here: the example runs (the test above)")
    done = subprocess.run([sys.executable, str(EXAMPLES / "rllib_ppo.py")], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: examples/rllib_ppo.py needs Ray RLlib")
    assert "make test-rllib" in done.stderr and ".venv-rllib" in done.stderr
