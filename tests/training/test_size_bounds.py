"""Every size a user gives is bounded before anything is allocated: training configs (counts,
network widths, a self-play rollout's memory) and `training.selfplay.fit_value`'s options are refused
with the bound in the message."""

from __future__ import annotations

import pytest
from crash import ROOT

from training.config import MAX_ROLLOUT_BYTES, SIZE_LIMITS, load_config

SMOKE = str(ROOT / "configs" / "smoke.yaml")


@pytest.mark.parametrize("name", sorted(SIZE_LIMITS))
def test_each_size_limit_is_checked_and_the_limit_itself_is_accepted(name):
    limit = SIZE_LIMITS[name]
    sets = {"selfplay.num_games": ["selfplay.rollout_steps=1"],
            "selfplay.rollout_steps": ["selfplay.num_games=1"],
            "selfplay.workers": [f"selfplay.num_games={limit}", "selfplay.rollout_steps=1"],
            "ppo.n_steps": ["num_envs=1"]}.get(name, [])
    load_config(SMOKE, [*sets, f"{name}={limit}"])  # the limit itself is allowed
    with pytest.raises(ValueError, match=f"{name} must be at most {limit:,}; got {limit + 1:,}"):
        load_config(SMOKE, [*sets, f"{name}={limit + 1}"])


def test_a_self_play_rollout_too_big_for_memory_is_refused_before_allocation():
    with pytest.raises(ValueError, match=rf"rollout of at most {MAX_ROLLOUT_BYTES >> 30} GiB"):
        load_config(SMOKE, ["selfplay.num_games=65536", "selfplay.rollout_steps=65536"])


def test_network_widths_are_bounded():
    load_config(SMOKE, ["ppo.net_arch=[8192, 8192]"])
    with pytest.raises(ValueError, match="at most 16 layers of at most 8192 units"):
        load_config(SMOKE, ["ppo.net_arch=[8193]"])
    with pytest.raises(ValueError, match="at most 16 layers"):
        load_config(SMOKE, ["ppo.net_arch=[4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]"])


@pytest.mark.parametrize(("flag", "value"), [("--games", 1 << 20), ("--rollout-steps", 10**9),
                                             ("--batch-size", 10**12), ("--epochs", 0)])
def test_fit_value_refuses_sizes_out_of_bounds(flag, value, capsys):
    from training.selfplay import fit_value

    with pytest.raises(SystemExit) as stopped:
        fit_value.main(["checkpoints/selfplay-4p-d9", flag, str(value)])
    assert stopped.value.code == 2
    assert f"{flag} must be in 1.." in capsys.readouterr().err


def test_a_config_with_yaml_aliases_is_refused_before_anything_expands(tmp_path):
    """A "billion laughs" file: nested aliases that printing or serialising would expand."""
    laughs = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        laughs.append(f"{level}: &{level} [{', '.join([f'*{previous}'] * 9)}]")
    (tmp_path / "laughs.yaml").write_text("\n".join([*laughs, "ppo:", "  net_arch: *i", ""]))
    with pytest.raises(ValueError, match=r"aliases \(\*name\) are not accepted in a config at line 2"):
        load_config(tmp_path / "laughs.yaml")
    with pytest.raises(ValueError, match="aliases"):
        load_config(SMOKE, ["ppo.net_arch=&x [*x]"])


def test_config_files_and_logs_are_size_bounded(tmp_path, monkeypatch):
    from cf_env.core import atomic
    from training.config import MAX_CONFIG_BYTES

    (tmp_path / "big.yaml").write_text("seed: 0\n" + "#" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(ValueError, match=f"a config holds at most {MAX_CONFIG_BYTES:,}"):
        load_config(tmp_path / "big.yaml")
    monkeypatch.setattr(atomic, "MAX_LOG_BYTES", 64)
    atomic.append_lines(tmp_path / "evals.jsonl", ['{"steps": 1}'] * 10)
    with pytest.raises(ValueError, match="a log is read whole, at most 64"):
        atomic.read_jsonl(tmp_path / "evals.jsonl")
