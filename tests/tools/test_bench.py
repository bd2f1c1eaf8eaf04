"""The benchmark (`python -m cf_env.tools.bench`) runs end to end at tiny sizes and measures what it
claims.

No timed assertions: speed is reported by `python -m cf_env.tools.bench`, never asserted here.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from cf_env.core.config import ChickenFootConfig
from cf_env.envs.env import raw_env
from cf_env.tools import bench

TINY_CFG = ChickenFootConfig(max_pips=6, num_players=2, num_rounds=1)
TINY = bench.Budget(
    seconds=0.01,
    repeats=1,
    ppo_rollouts={1: 1, 2: 1},
    ppo_n_steps=8,
    ppo_repeats=1,
    memory_instances=2,
    scaling=False,
)


@pytest.mark.slow
def test_run_measures_every_loop_ppo_and_memory(capsys):
    results = bench.run(TINY, peers=False, ppo=True, configs={"tiny": TINY_CFG}, libs=False)
    figures = results["configs"]["tiny"]
    assert set(figures["rates"]) == {"engine", "engine+obs", "raw AEC", "wrapped AEC", "single-agent"}
    assert all(rate > 0 for rate in figures["rates"].values())
    assert set(figures["ppo"]) == {"ours x1", "constant x1", "ours x2", "constant x2"}
    assert figures["ratios"]["ppo ours/constant x2"] > 0
    assert all(size > 0 for size in figures["memory_bytes"].values())
    out = capsys.readouterr().out
    assert "Throughput, tiny config: double-6, 2 players" in out
    assert "MaskablePPO learner steps" in out


@pytest.mark.slow
def test_missing_peers_are_reported_not_faked(monkeypatch, capsys):
    real = bench.available
    monkeypatch.setattr(bench, "available", lambda m: False if m in ("pygame", "pyspiel") else real(m))
    figures = bench.section("tiny", TINY_CFG, TINY, peers=True, ppo=False, libs=False)
    assert "connect_four raw" not in figures["rates"]
    assert figures["ratios"]["raw AEC / connect_four raw"] is None
    assert "peer not installed (pip install .[bench])" in capsys.readouterr().out


def test_ratio_pairs_rates_from_the_same_round():
    # Round ratios 2, 3, 4 -> median 3; the ratio of the medians (4 / 1) would hide the pairing.
    group = bench.Group({"a": [2.0, 9.0, 4.0], "b": [1.0, 3.0, 1.0]})
    assert group.ratio("a", "b") == 3.0
    assert group.median("a") == 4.0
    assert group.spread("a") == pytest.approx((9.0 - 2.0) / 4.0)


def test_measure_group_interleaves_loops_within_a_round():
    calls: list[str] = []

    def busy(name):
        def run(k):
            calls.append(name)
            end = time.process_time() + 0.0005 * k / 10
            while time.process_time() < end:
                pass
            return k

        return run

    group = bench.measure_group(
        {"a": busy("a"), "b": busy("b")}, bench.Budget(seconds=0.02, repeats=2), slice_seconds=0.002
    )
    assert [len(rates) for rates in group.rates.values()] == [2, 2]
    assert all(rate > 0 for rates in group.rates.values() for rate in rates)
    measured = calls[calls.index("b") + 1 :]  # after warm-up and calibration
    switches = sum(1 for x, y in zip(measured, measured[1:]) if x != y)
    assert switches >= 4  # the loops took turns, not one long stretch each


def test_loops_play_real_games_with_legal_actions():
    env = raw_env(**TINY_CFG.to_dict())
    loop = bench.aec_loop(env)
    assert loop(500) == 500  # several games: the loop resets when every agent is done
    assert env.unwrapped.engine.history  # the engine was really stepped
    assert bench.engine_loop(TINY_CFG, observe=True)(300) == 300
    step, mean_length = bench.gym_loop(bench.single_agent_env(TINY_CFG))
    step(200)
    assert mean_length() >= 1


def test_constant_env_has_the_adapter_spaces_and_episode_length():
    adapter = bench.single_agent_env(TINY_CFG)
    adapter.reset(seed=0)
    mask = adapter.action_masks()
    env = bench.ConstantEnv(adapter.observation_space, adapter.action_space, mask, length=3)
    assert env.observation_space == adapter.observation_space
    assert env.action_space == adapter.action_space
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    ends = [env.step(0)[2] for _ in range(3)]
    assert ends == [False, False, True]
    np.testing.assert_array_equal(env.action_masks(), mask)


def test_scaling_reports_cost_per_decision_for_each_config():
    rows = bench.scaling(TINY, grid=(TINY_CFG, ChickenFootConfig(max_pips=6, num_players=3)))
    assert [(r["max_pips"], r["players"]) for r in rows] == [(6, 2), (6, 3)]
    assert rows[1]["obs_size"] > rows[0]["obs_size"]  # more opponents, more pieces
    assert all(r[k] > 0 for r in rows for k in ("engine µs", "engine+obs µs", "raw AEC µs"))


@pytest.mark.parametrize("argv", [["--seconds", "0"], ["--repeats", "0"], ["--bogus"]])
def test_cli_rejects_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(argv)
    assert exit_info.value.code == 2
    assert "usage: python -m cf_env.tools.bench" in capsys.readouterr().err


# ------------------------------------------------------------------ other libraries' wrappers
@pytest.mark.slow
def test_library_rows_measure_torchrl_and_tianshou_beside_connect_four(capsys):
    for module in ("torchrl", "tianshou", "pygame"):
        pytest.importorskip(module, reason="make installs the torchrl, tianshou and bench extras")
    figures = bench.section("tiny", TINY_CFG, TINY, peers=True, ppo=False, libs_only=True)
    rates = figures["libraries"]["rates"]
    assert set(rates) == {"wrapped AEC", "torchrl ours", "torchrl connect_four", "tianshou ours",
                          "tianshou connect_four"}
    assert all(rate > 0 for rate in rates.values())
    ratios = figures["libraries"]["ratios"]
    for name in ("torchrl", "tianshou"):
        assert ratios[f"{name}: ours / connect_four"] > 0
        assert ratios[f"{name}: plain wrapped AEC loop / ours through {name}"] > 0
    out = capsys.readouterr().out
    assert "Through other libraries' PettingZoo wrappers, tiny config: double-6, 2 players" in out
    assert "| torchrl: ours / connect_four |" in out
    assert "Throughput," not in out  # libs_only: nothing else measured


def test_missing_libraries_and_peers_are_reported_not_faked(monkeypatch, capsys):
    real = bench.available
    gone = ("torchrl", "pygame")
    monkeypatch.setattr(bench, "available", lambda m: False if m in gone else real(m))
    figures = bench.section("tiny", TINY_CFG, TINY, peers=True, ppo=False, libs_only=True)
    libraries = figures["libraries"]
    assert not any(name.startswith("torchrl") or "connect_four" in name
                   for name in libraries["rates"])
    assert libraries["ratios"]["torchrl: ours / connect_four"] is None
    assert libraries["ratios"]["tianshou: ours / connect_four"] is None
    out = capsys.readouterr().out
    assert "torchrl not installed (pip install .[torchrl])" in out
    assert "peer not installed (pip install .[bench])" in out
    if real("tianshou"):
        assert libraries["ratios"]["tianshou: plain wrapped AEC loop / ours through tianshou"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("library", ["torchrl", "tianshou"])
def test_library_loops_step_on_across_game_ends(library):
    pytest.importorskip(library, reason=f"optional extra: pip install -e '.[{library}]'")
    from cf_env.envs.env import env as wrapped

    # One round of 2-player double-6 lasts a few dozen steps: 8 calls cross several game ends.
    loop = getattr(bench, f"{library}_loop")(wrapped(**TINY_CFG.to_dict()))
    assert [loop(25) for _ in range(8)] == [25] * 8


def test_libs_flags_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exited:
        bench.main(["--no-libs", "--libs-only"])
    assert exited.value.code == 2
    assert "--no-libs and --libs-only exclude each other" in capsys.readouterr().err


def test_quick_budget_measures_a_fraction_of_the_full_run():
    # --quick took 6 minutes where the README promised about 2: every part of its budget must
    # be well under the full run's (no timing here: the work each budget asks for).
    def loop_seconds(budget):
        return budget.seconds * budget.repeats

    def ppo_decisions(budget):
        per_round = sum(r * budget.ppo_n_steps * envs for envs, r in budget.ppo_rollouts.items())
        return per_round * budget.ppo_repeats

    assert loop_seconds(bench.QUICK) <= loop_seconds(bench.FULL) / 4
    assert ppo_decisions(bench.QUICK) <= ppo_decisions(bench.FULL) / 4
    assert not bench.QUICK.scaling
