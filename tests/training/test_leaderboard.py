"""`training.evaluation.leaderboard`: the seeded schedule, a reproducible board, `--add` against a
frozen pool, the strength order it finds, and the errors a user gets for bad input."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest
from cli_errors import user_error

from cf_env import ChickenFootConfig
from training.evaluation import leaderboard as lb

TABLE = ChickenFootConfig(num_players=2, max_pips=6, num_rounds=1)
POOL = ["random", "greedy", "heuristic"]
TINY = ["--entries", ",".join(POOL), "--players", "2", "--max-pips", "6", "--deals", "4",
        "--meetings", "1", "--bootstrap", "10"]


@pytest.fixture(scope="module")
def board_files(tmp_path_factory):
    """A tiny board written by the command, and its JSON text."""
    out = tmp_path_factory.mktemp("board") / "lb"
    lb.main([*TINY, "--out", str(out)])
    return out, (out.parent / "lb.json").read_text()


# --------------------------------------------------------------------------- schedule
@pytest.mark.parametrize("entries, table, meetings", [(12, 4, 2), (7, 4, 1), (5, 2, 3), (4, 4, 1)])
def test_schedule_seats_distinct_entries_until_every_pair_has_met(entries, table, meetings):
    lineups = lb.schedule(entries, table, meetings, seed=3)
    met = dict.fromkeys(combinations(range(entries), 2), 0)
    for lineup in lineups:
        assert len(set(lineup)) == table and all(0 <= e < entries for e in lineup)
        for pair in combinations(sorted(lineup), 2):
            met[pair] += 1
    assert min(met.values()) >= meetings
    assert lb.schedule(entries, table, meetings, seed=3) == lineups


def test_schedule_depends_on_the_seed_and_keeps_entries_balanced():
    first, other = lb.schedule(12, 4, 2, seed=0), lb.schedule(12, 4, 2, seed=1)
    assert first != other
    played = np.bincount(np.ravel(first), minlength=12)
    assert played.max() - played.min() <= 2


def test_addition_schedule_meets_every_pool_entry_each_round():
    lineups = lb.addition_schedule(pool_size=7, table=4, meetings=2, seed=0, entry=7)
    assert all(lineup[0] == 7 and len(set(lineup)) == 4 for lineup in lineups)
    assert len(lineups) == 2 * 3  # ceil(7 / 3) groups a round
    for round_ in (lineups[:3], lineups[3:]):
        assert set().union(*(lineup[1:] for lineup in round_)) == set(range(7))


# --------------------------------------------------------------------------- the board
def test_same_seed_gives_the_same_json(board_files, tmp_path):
    _, text = board_files
    lb.main([*TINY, "--out", str(tmp_path / "again")])
    assert (tmp_path / "again.json").read_text() == text
    lb.main([*TINY, "--seed", "1", "--out", str(tmp_path / "other")])
    assert (tmp_path / "other.json").read_text() != text


def test_board_holds_what_a_later_add_needs(board_files):
    out, text = board_files
    board = json.loads(text)
    assert [e["spec"] for e in board["entries"]] == POOL
    assert board["schedule"] == [m["lineup"] for m in board["matches"]]
    assert board["protocol"]["deals"] == 4 and board["config"]["num_players"] == 2
    for match in board["matches"]:
        assert len(match["games"]) == 4 * 2  # deals x rotations
        for _deal, _rotation, seats, points, winners in match["games"]:
            assert sorted(seats) == sorted(match["lineup"]) and len(points) == 2 and winners
    for i, entry in enumerate(board["entries"]):
        rating = entry["rating"]
        assert rating["ci_low"] <= rating["ci_high"]
        assert rating["conservative"] == pytest.approx(rating["mu"] - 3 * rating["sigma"])
        assert entry["matches"] == sum(i in lineup for lineup in board["schedule"])
        assert entry["games"] == 8 * entry["matches"]
    page = (out.parent / "lb.md").read_text()
    assert "How to add an agent" in page and "python -m training.leaderboard" in page
    assert all(f"`{spec}`" in page for spec in POOL)
    assert (out.parent / "lb.png").read_bytes()[:4] == b"\x89PNG"


def test_add_rates_one_newcomer_and_leaves_every_other_entry_bit_for_bit(board_files, tmp_path):
    out, text = board_files
    (tmp_path / "lb.json").write_text(text)
    lb.main(["--add", "ismcts:20", "--out", str(tmp_path / "lb")])
    after_text = (tmp_path / "lb.json").read_text()
    before, after = json.loads(text), json.loads(after_text)
    assert len(after["entries"]) == len(before["entries"]) + 1
    for old, new in zip(before["entries"], after["entries"]):
        assert lb.dumps(old) == lb.dumps(new)
        assert lb.dumps(old, 2) in after_text and lb.dumps(old, 2) in text  # the very text
    for key in ("config", "protocol", "schedule", "matches"):
        assert after[key] == before[key]
    added = after["entries"][-1]
    assert added["spec"] == "ismcts:20" and not added["pool"]
    assert added["matches"] == len(POOL) and added["games"] == 8 * len(POOL)
    (addition,) = after["additions"]
    assert addition["entry"] == 3 and all(3 in m["lineup"] for m in addition["matches"])
    assert "*added*" in (tmp_path / "lb.md").read_text()


def test_add_refuses_a_spec_on_the_board_and_replace_rates_it_again(board_files, tmp_path, capsys):
    _, text = board_files
    (tmp_path / "lb.json").write_text(text)
    out = str(tmp_path / "lb")
    lb.main(["--add", "ismcts:20", "--out", out])
    once = (tmp_path / "lb.json").read_text()
    with pytest.raises(SystemExit) as exited:
        lb.main(["--add", "ismcts:20", "--out", out])
    assert "already on the board" in user_error(capsys, exited)
    assert (tmp_path / "lb.json").read_text() == once
    with pytest.raises(SystemExit) as exited:
        lb.main(["--add", "greedy", "--replace", "--out", out])
    assert "in the board's pool" in user_error(capsys, exited)
    lb.main(["--add", "ismcts:20", "--replace", "--out", out])
    assert (tmp_path / "lb.json").read_text() == once  # the same seeds: the same games again


def test_notes_in_the_page_survive_a_rewrite(board_files, tmp_path):
    _, text = board_files
    (tmp_path / "lb.json").write_text(text)
    lb.main(["--render", "--out", str(tmp_path / "lb")])
    page = (tmp_path / "lb.md").read_text()
    page = page.replace(lb.NOTES_END, "Ran beside two other jobs.\n" + lb.NOTES_END)
    (tmp_path / "lb.md").write_text(page)
    lb.main(["--add", "ismcts:20", "--out", str(tmp_path / "lb")])
    assert "Ran beside two other jobs." in (tmp_path / "lb.md").read_text()
    assert (tmp_path / "lb.json").read_text() != text


def test_alpharank_falls_back_to_the_pool_when_two_added_entries_never_met(board_files, tmp_path):
    _, text = board_files
    board = json.loads(text)
    assert board["alpharank"]["over"] == "all entries"
    assert sum(board["alpharank"]["mass"]) == pytest.approx(1.0, abs=1e-5)
    two = lb.add_entry(lb.add_entry(board, "ismcts:20"), "ismcts:30")
    view = two["alpharank"]
    assert view["over"] == "the pool" and view["mass"][3:] == [None, None]
    assert sum(view["mass"][:3]) == pytest.approx(1.0, abs=1e-5)
    assert "two added entries never met" in lb.format_markdown(two)


def test_a_stronger_bot_outranks_random():
    # 2 players, double-6: heuristic wins about two rounds in three against random there, so
    # 64 deals (128 games) separate them well beyond the bootstrap's spread.
    board = lb.build(["random", "heuristic"], TABLE, deals=64, meetings=1, seed=0, bootstrap=20)
    random_, heuristic = (e["rating"] for e in board["entries"])
    assert heuristic["ci_low"] > random_["ci_high"]
    assert board["entries"][1]["win_rate"] > 0.5
    assert lb.ranked(board) == [1, 0]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("entries, message", [
    ("random,nosuchbot,greedy", "unknown policy spec 'nosuchbot'"),
    ("random,greedy,random", "'random' is listed twice"),
    ("random,greedy,ppo:checkpoints/selfplay-4p-d9", "trained for a different game"),
    ("random,greedy,ismcts:ms=5", "time budget"),
    ("random", "1 entries for a 2-player table"),
])
def test_bad_entries_are_refused_before_any_game(entries, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        lb.main(["--entries", entries, "--players", "2", "--max-pips", "6", "--deals", "4",
                 "--out", str(tmp_path / "lb")])
    assert message in user_error(capsys, exited)
    assert not list(tmp_path.iterdir())


def test_add_refuses_a_newcomer_for_another_table(board_files, tmp_path, capsys):
    _, text = board_files
    (tmp_path / "lb.json").write_text(text)
    with pytest.raises(SystemExit) as exited:
        lb.main(["--add", "ppo:checkpoints/selfplay-4p-d9", "--out", str(tmp_path / "lb")])
    assert "num_players: checkpoint 4 vs env 2" in user_error(capsys, exited)


@pytest.mark.parametrize("args, message", [
    (["--add", "greedy", "--deals", "8"], "--deals cannot be given with --add"),
    (["--add", "greedy", "--out", "missing/lb"], "no leaderboard at"),
    (["--replace"], "--replace goes with --add"),
])
def test_cli_misuse_names_the_problem(args, message, board_files, capsys):
    out, _ = board_files
    if "--out" not in args:
        args = [*args, "--out", str(out)]
    with pytest.raises(SystemExit) as exited:
        lb.main(args)
    assert message in user_error(capsys, exited)


def test_an_existing_board_is_not_overwritten_without_force(board_files, capsys):
    out, text = board_files
    with pytest.raises(SystemExit) as exited:
        lb.main([*TINY, "--out", str(out)])
    assert "already exist" in user_error(capsys, exited)
    assert (out.parent / "lb.json").read_text() == text


def test_add_refuses_a_board_whose_pool_checkpoint_has_changed(board_files, tmp_path, capsys):
    _, text = board_files
    board = json.loads(text)
    board["entries"][0].update(spec="ppo:checkpoints/selfplay-2p-d6", checkpoint_sha256="0" * 64)
    (tmp_path / "lb.json").write_text(lb.dumps(board))
    with pytest.raises(SystemExit) as exited:
        lb.main(["--add", "ismcts:20", "--out", str(tmp_path / "lb")])
    assert "has changed since the board was built" in user_error(capsys, exited)


def test_a_file_that_is_no_board_is_refused(tmp_path, capsys):
    (tmp_path / "lb.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(SystemExit) as exited:
        lb.main(["--add", "greedy", "--out", str(tmp_path / "lb")])
    assert "not a leaderboard" in user_error(capsys, exited)


# --------------------------------------------------------------------------- rating
def _synthetic_matches(deals: int, seed: int) -> list[dict]:
    """One 2-player match in which entry 1 wins each game with probability 0.6."""
    rng = np.random.default_rng(seed)
    games = []
    for deal in range(deals):
        for rotation in range(2):
            seats = [0, 1] if rotation == 0 else [1, 0]
            winner_entry = 1 if rng.random() < 0.6 else 0
            winner_seat = seats.index(winner_entry)
            points = [0, 0]
            points[1 - winner_seat] = 10
            games.append([deal, rotation, seats, points, [winner_seat]])
    return [{"lineup": [0, 1], "seed": seed, "games": games}]


def _interval_width(deals: int, tau) -> float:
    _, samples = lb.rate_pool(TABLE, 2, _synthetic_matches(deals, 3), seed=0, bootstrap=40,
                              tau=tau)
    low, high = np.quantile(samples[:, 1], [0.025, 0.975])
    return float(high - low)


def test_without_drift_the_interval_narrows_as_games_are_added():
    # Four times the games: about half the interval without drift; with OpenSkill's default
    # drift the rating follows the recent games only, and the interval barely moves.
    assert _interval_width(1600, 0.0) < 0.7 * _interval_width(400, 0.0)
    assert _interval_width(1600, None) > 0.8 * _interval_width(400, None)


def test_the_no_drift_update_is_openskills_bit_for_bit():
    from openskill.models import PlackettLuce

    from training.evaluation.stats import PlackettLuceUpdate

    reference, fast = PlackettLuce(tau=0.0), PlackettLuceUpdate(0.0)
    rng = np.random.default_rng(2)
    ours = [(fast.mu, fast.sigma) for _ in range(4)]
    theirs = [reference.rating() for _ in range(4)]
    for _ in range(50):
        ranks = rng.integers(0, 3, 4).astype(float).tolist()
        ours = fast.rate(ours, [0, 1, 2, 3], ranks)
        theirs = [team[0] for team in reference.rate([[r] for r in theirs], ranks=ranks)]
        assert ours == [(r.mu, r.sigma) for r in theirs]
    assert fast.tau == 0.0


def test_a_new_board_records_that_it_was_rated_without_drift(board_files):
    board = json.loads(board_files[1])
    assert board["protocol"]["tau"] == lb.TAU == 0.0
