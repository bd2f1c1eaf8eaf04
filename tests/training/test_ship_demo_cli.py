"""`training.artifacts.ship` and `cf_env.tools.demo` as command lines: user errors are one `error:` line and
exit 2, found before the long work; a ship replaces an earlier agent only once the new one is
complete."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from cli_errors import user_error

from cf_env.tools import demo
from training.artifacts import ship

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "checkpoints" / "ppo-4p-d9"




def make_run_dir(tmp_path: Path, agent: Path) -> Path:
    """A training run's layout around a shipped agent's weights: what ship reads."""
    run = tmp_path / "runs" / "r"
    step = run / "checkpoints" / "step_4"
    step.mkdir(parents=True)
    for name in ("card.json", "policy.npz"):
        shutil.copy2(agent / name, step / name)
    (run / "checkpoints" / "latest.json").write_text(json.dumps({"path": "step_4"}))
    card = json.loads((agent / "card.json").read_text())
    (run / "run.json").write_text(json.dumps({
        "env_config": card["env_config"], "packages": {"python": "3"},
        "sessions": [{"argv": ["--config", "configs/default.yaml"]}],
    }))
    return run


@pytest.fixture()
def run_dir(tmp_path) -> Path:
    return make_run_dir(tmp_path, SHIPPED)


def no_evaluations(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an evaluation started before the inputs were checked")

    monkeypatch.setattr(ship, "evaluate", refuse)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing_run", "run directory"),
        ("no_best", "best.json does not exist"),
        ("bad_pointer", "not a checkpoint pointer"),
        ("pointer_escapes", "not a single folder name"),
        ("no_run_json", "run.json"),
        ("bad_weights", "policy.npz"),
        ("dest_not_an_agent", "is not a shipped agent"),
        ("dest_an_agent_without_force", "pass --force to replace it"),
        ("dest_is_a_file", "is not a folder"),
        ("dest_in_run", "overlap the run directory"),
        ("one_deal", "deals must be an int >= 2"),
        ("full_game_not_a_baseline", "--full-games takes baselines"),
        ("full_game_typo", "did you mean 'heuristic'?"),
        ("bad_also_spec", "nobot"),
    ],
)
def test_ship_user_errors_print_one_error_line_and_exit_2(
    case, message, run_dir, tmp_path, capsys, monkeypatch
):
    no_evaluations(monkeypatch)
    dest = tmp_path / "shipped"
    argv = [str(run_dir), str(dest), "--deals", "2"]
    if case == "missing_run":
        argv[0] = str(tmp_path / "runs" / "nope")
    elif case == "no_best":
        argv += ["--which", "best"]
    elif case == "bad_pointer":
        (run_dir / "checkpoints" / "latest.json").write_text("step_4")
    elif case == "pointer_escapes":
        (run_dir / "checkpoints" / "latest.json").write_text(json.dumps({"path": "../.."}))
    elif case == "no_run_json":
        (run_dir / "run.json").unlink()
    elif case == "bad_weights":
        (run_dir / "checkpoints" / "step_4" / "policy.npz").write_bytes(b"not an npz")
    elif case == "dest_not_an_agent":
        dest.mkdir()
        (dest / "notes.txt").write_text("mine")
    elif case == "dest_an_agent_without_force":
        shutil.copytree(SHIPPED, dest)
    elif case == "dest_is_a_file":
        dest.write_text("mine")
    elif case == "dest_in_run":
        argv[1] = str(run_dir / "shipped")
    elif case == "one_deal":
        argv[argv.index("--deals") + 1] = "1"
    elif case == "full_game_not_a_baseline":
        argv += ["--full-games", "heuristic,ismcts:5"]
    elif case == "full_game_typo":
        argv += ["--full-games", "heurstic"]
    elif case == "bad_also_spec":
        argv += ["--also", "greedy,nobot"]
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exited:
        ship.main(argv)
    assert message in user_error(capsys, exited)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing made or removed


@pytest.mark.slow
def test_ship_replaces_an_earlier_agent_only_when_complete(run_dir, tmp_path, monkeypatch):
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    dest = tmp_path / "shipped"
    shutil.copytree(SHIPPED, dest)
    (dest / "stale.txt").write_text("from the earlier ship")
    calls = []
    real = ship.evaluate

    def fails_at_the_fourth(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 4:
            raise KeyboardInterrupt  # interrupted half-way
        return real(*args, **kwargs)

    monkeypatch.setattr(ship, "evaluate", fails_at_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        ship.main([str(run_dir), str(dest), "--deals", "2", "--force"])
    assert (dest / "stale.txt").exists()  # the earlier agent is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "shipped"]  # no temp folder left

    monkeypatch.setattr(ship, "evaluate", real)
    card = ship.main([str(run_dir), str(dest), "--deals", "2", "--force"])
    assert sorted(p.name for p in dest.iterdir()) == [
        "card.json", "card.md", "learning_curve.png", "policy.npz"]
    assert json.loads((dest / "card.json").read_text()) == card
    assert [r["opponents"] for r in card["evaluation"]["results"]] == ["3× random", "3× greedy",
                                                                       "3× heuristic"] * 2
    assert card["training"]["checkpoint"] == "latest (step_4)"
    assert f"ppo:{dest}" in (dest / "card.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "shipped"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "9"], "num_players must be 2..8"),
        (["--rounds", "11"], "num_rounds must be"),
        (["--seed", "-1"], "--seed must be >= 0"),
    ],
)
def test_demo_user_errors_print_one_error_line_and_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as exited:
        demo.main(args)
    assert message in user_error(capsys, exited)
    assert capsys.readouterr().out == ""


def test_demo_plays_a_game(capsys):
    assert demo.main(["--players", "3", "--rounds", "2", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "round 1: points" in out and "round 2: points" in out


def test_ship_full_games_and_extra_lineups(run_dir, tmp_path):
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    dest = tmp_path / "shipped"
    card = ship.main([str(run_dir), str(dest), "--deals", "2", "--full-games", "heuristic",
                      "--also", f"ppo:{SHIPPED}"])
    lineups = [(r["opponents"], r["single_round"]) for r in card["evaluation"]["results"]]
    assert lineups == [("3× random", True), ("3× greedy", True), ("3× heuristic", True),
                       (f"3× ppo:{SHIPPED}", True), ("3× heuristic", False)]
    assert "Masked PPO (sb3-contrib MaskablePPO" in (dest / "card.md").read_text()


def test_ship_labels_lineups_by_the_seats_the_bot_fills(tmp_path):
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    # Two players: the agent faces one copy of each bot, and the card says so.
    run = make_run_dir(tmp_path, ROOT / "checkpoints" / "selfplay-2p-d6")
    card = ship.main([str(run), str(tmp_path / "shipped"), "--deals", "2", "--full-games", "",
                      "--hardware", "a test"])
    assert [r["opponents"] for r in card["evaluation"]["results"]] == [
        "1× random", "1× greedy", "1× heuristic"]
    assert card["training"]["hardware"] == "a test"
    assert "Self-play masked PPO" in (tmp_path / "shipped" / "card.md").read_text()


def test_ship_reports_percentages_where_it_wrote_and_publishes_readable_files(tmp_path, capsys):
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    run = make_run_dir(tmp_path, ROOT / "checkpoints" / "selfplay-2p-d6")
    dest = tmp_path / "agents" / "shipped"
    old = os.umask(0o077)  # as unfriendly as it gets: new files 0600, folders 0700
    try:
        ship.main([str(run), str(dest), "--deals", "2", "--full-games", ""])
    finally:
        os.umask(old)
    out = capsys.readouterr().out
    assert re.search(r"round vs 1× greedy: win \d+\.\d% \[\d+\.\d%, \d+\.\d%\] \(parity 50%\)",
                     out), out
    assert f"shipped {dest}/" in out and f"ppo:{dest}" in out
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in dest.iterdir()}
    assert modes == dict.fromkeys(["card.json", "card.md", "learning_curve.png", "policy.npz"], 0o644)
