"""The leaderboard's cheap entries (`--cheap-games`): bots and `ppo:` networks, played batched,
meet in long matches of their own until each has played the games asked for, and a cheap
newcomer gets as many; the page says which neighbours in the ranking are separated."""

from __future__ import annotations

import pytest
from cli_errors import user_error

from cf_env import ChickenFootConfig
from training.evaluation import leaderboard as lb

TABLE = ChickenFootConfig(num_players=2, max_pips=6, num_rounds=1)
POOL = ["random", "greedy", "heuristic", "ismcts:3"]
CHEAP_GAMES = 60


@pytest.fixture(scope="module")
def board():
    return lb.build(POOL, TABLE, deals=2, meetings=1, seed=1, bootstrap=10,
                    cheap_games=CHEAP_GAMES)


def test_cheap_deals_bring_every_entry_to_the_target():
    lineups = [[0, 1, 2, 3], [0, 4, 5, 6], [1, 2, 4, 5]]
    games = {0: 100, 1: 40, 5: 10}
    deals = lb.cheap_deals(500, 4, lineups, games)
    for entry in range(7):
        matches = sum(entry in lineup for lineup in lineups)
        assert games.get(entry, 0) + matches * 4 * deals >= 500
    assert lb.cheap_deals(500, 4, lineups, dict.fromkeys(range(7), 500)) == 0
    assert lb.cheap_deals(1, 4, lineups, {}) == 2  # an evaluation needs two deals at least
    assert lb.cheap_schedule([0, 2], 4, seed=0) == []  # fewer cheap entries than seats
    assert all(set(lineup) <= {0, 2, 5} for lineup in lb.cheap_schedule([0, 2, 5], 2, seed=0))


def test_cheap_entries_play_their_own_long_matches(board):
    entries = board["entries"]
    assert [e["cheap"] for e in entries] == [True, True, True, False]
    assert board["protocol"]["cheap_games"] == CHEAP_GAMES
    assert board["protocol"]["cheap_deals"] >= 2
    pool_matches = board["matches"][:len(board["schedule"])]
    cheap_matches = board["matches"][len(board["schedule"]):]
    assert [m["lineup"] for m in cheap_matches] == board["cheap_schedule"]
    assert cheap_matches and all(3 not in m["lineup"] for m in cheap_matches)
    assert all(len(m["games"]) == board["protocol"]["cheap_deals"] * 2 for m in cheap_matches)
    seeds = [m["seed"] for m in board["matches"]]
    assert len(set(seeds)) == len(seeds)  # no two matches share deals
    for i, entry in enumerate(entries):
        pool_games = sum(len(m["games"]) for m in pool_matches if i in m["lineup"])
        if entry["cheap"]:
            assert entry["games"] >= CHEAP_GAMES
        else:
            assert entry["games"] == pool_games  # the search entry plays the pool's matches only


def test_a_cheap_newcomer_gets_as_many_games_and_a_search_one_does_not(board):
    cheap = lb.add_entry(board, "ppo:checkpoints/selfplay-2p-d6")
    added = cheap["entries"][-1]
    assert added["cheap"] and added["games"] >= CHEAP_GAMES
    assert cheap["entries"][:4] == board["entries"]  # the pool's figures are untouched
    search = lb.add_entry(board, "ismcts:2")
    other = search["entries"][-1]
    assert not other["cheap"] and other["games"] < CHEAP_GAMES
    # As many games as the pool's search entry, at least, in matches of one length.
    assert other["games"] >= board["entries"][3]["games"]
    lengths = {len(m["games"]) for m in search["additions"][-1]["matches"]}
    assert len(lengths) == 1 and lengths.pop() >= board["protocol"]["deals"] * 2


def test_a_newcomer_plays_as_many_games_as_the_pool_in_longer_matches_if_need_be():
    table = ChickenFootConfig(num_players=2, max_pips=6, num_rounds=1)
    board = lb.build(["random", "greedy", "ismcts:2"], table, deals=2, meetings=1, seed=0,
                     bootstrap=10)
    for entry in board["entries"]:
        del entry["cheap"]  # as a board from before cheap entries: the whole pool is the kind
    plain = lb.add_entry(board, "ismcts:3")["additions"][0]["matches"]
    assert {len(m["games"]) for m in plain} == {2 * 2}  # the pool's 8 games are reached
    for entry in board["entries"]:  # had the pool played more, the newcomer would too
        entry["games"] = 100 + entry["games"]
    board["entries"][0]["games"] = 100  # the fewest
    added = lb.add_entry(board, "ismcts:3")
    matches = added["additions"][0]["matches"]
    assert {len(m["games"]) for m in matches} == {2 * 17}  # ceil(100 / (2 seats x 3 matches))
    assert added["entries"][-1]["games"] == 3 * 2 * 17 >= 100
    # The same seeds: the longer matches begin with the shorter ones' games.
    assert all(m["games"][:4] == p["games"] for m, p in zip(matches, plain))


def test_the_page_says_which_neighbours_are_separated(board):
    rows = lb.separation(board)
    order = lb.ranked(board)
    assert [r["pair"] for r in rows] == [list(p) for p in zip(order, order[1:])]
    for r in rows:
        upper, lower = (board["entries"][i]["rating"] for i in r["pair"])
        disjoint = upper["ci_low"] > lower["ci_high"] or lower["ci_low"] > upper["ci_high"]
        assert r["disjoint"] == disjoint
        test = r["head_to_head"]
        assert r["deals"] >= 2 and test["ci_low"] <= test["mean"] <= test["ci_high"]
        assert r["separated"] == (disjoint or test["ci_low"] > 0 or test["ci_high"] < 0)
    page = lb.format_markdown(board)
    assert "## Which neighbours are separated" in page
    assert page.count(" > `") == len(rows)
    assert "then met in" in page and f"at least {CHEAP_GAMES} games" in page


@pytest.mark.parametrize("args, message", [
    (["--cheap-games", "-1"], "cheap_games must be an int >= 0"),
    (["--cheap-games", "60", "--entries", "random,ismcts:3,ismcts:2"],
     "cheap_games 60: random would play only 8 games: cheap matches need 2 cheap entries"),
    (["--add", "greedy", "--cheap-games", "10"], "--cheap-games cannot be given with --add"),
])
def test_cli_cheap_games_misuse_names_the_problem(args, message, tmp_path, capsys):
    argv = ["--entries", "random,greedy,heuristic", "--players", "2", "--max-pips", "6",
            "--deals", "2", "--meetings", "1", "--bootstrap", "10",
            "--out", str(tmp_path / "lb"), *args]
    if "--add" in args:
        lb.main(argv[:argv.index("--add")])  # a board to add to
        argv = ["--out", str(tmp_path / "lb"), *args]
    with pytest.raises(SystemExit) as exited:
        lb.main(argv)
    assert message in user_error(capsys, exited)
