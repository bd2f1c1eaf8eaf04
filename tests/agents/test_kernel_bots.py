"""The compiled bots and `batch_advance` (cf_env.agents.kernel_bots) against the Python bots and
`Engine.advance`.

* Twin games: batches of games over the kernel tests' configs (every variant), each seat a random,
  greedy or heuristic bot or an outside seat, played by `batch_advance` and, game by game, by an
  `Engine` whose choosers are the Python bots' rules (GreedyPolicy's points, HeuristicPolicy.scores
  on the decoded observation) with ties broken by a Python copy of the compiled splitmix64 stream:
  the same moves give the same round points at every round end and the same winners (R12, R13).
* Scores: the compiled heuristic's value of every legal play equals HeuristicPolicy.scores.
* Stops: WAITING only at outside seats (with skip_forced, only at real choices), ROUND_ENDED
  right after a round's end, GAME_OVER for a finished game.
"""

from __future__ import annotations

import numpy as np
from bot_twins import PythonBots, Stream
from variants import CONFIGS, run_without_jit

from cf_env import ChickenFootConfig, Engine
from cf_env.agents.kernel_bots import (
    GAME_OVER,
    GREEDY,
    HEURISTIC,
    OUTSIDE,
    RANDOM,
    ROUND_ENDED,
    WAITING,
    batch_advance,
    bot_action,
    bot_scratch,
    heuristic_scores,
    heuristic_weights,
)
from cf_env.core.actions import actions_in
from cf_env.core.kernel import KernelBatch, words_to_int


def twin_games(config: ChickenFootConfig, seeds: list[int], kind_seed: int,
               skip_forced: bool = False) -> dict:
    """Play the seeds' games with batch_advance and with Engines (module docstring); outside seats
    play seeded random legal actions on both sides. Returns counts of what was compared."""
    n, players = len(seeds), config.num_players
    rng = np.random.default_rng(kind_seed)
    kinds = rng.choice([OUTSIDE, RANDOM, GREEDY, HEURISTIC], size=(n, players)).astype(np.int8)
    batch = KernelBatch(config, n)
    batch.reset(seeds)
    st = batch.state
    bot_rng = np.array([7919 * s + 1 for s in seeds], np.uint64)
    streams = [Stream(7919 * s + 1) for s in seeds]
    outside_kernel = [np.random.default_rng(s) for s in seeds]
    outside_engine = [np.random.default_rng(s) for s in seeds]
    bots = PythonBots(config)
    engines = [Engine(config, seed=s) for s in seeds]

    def outside_choice(generator, legal: int) -> int:
        actions = actions_in(legal)
        return actions[0] if len(actions) == 1 else actions[int(generator.integers(len(actions)))]

    choosers = []
    for i, engine in enumerate(engines):
        row = []
        for seat in range(players):
            if kinds[i, seat] == OUTSIDE:
                row.append(lambda legal, g=outside_engine[i]: outside_choice(g, legal))
            else:
                row.append(bots.chooser(int(kinds[i, seat]), engine, streams[i]))
        choosers.append(row)
    stop = np.zeros(n, np.int8)
    scores, counts = bot_scratch(config)
    weights = heuristic_weights()
    seen = {"rounds": 0, "waits": 0, "games": 0}
    kernel_rounds: list[list[list[int]]] = [[] for _ in range(n)]
    actions = np.full(n, -1, np.int64)
    while True:
        batch_advance(st, batch.tables, weights, kinds, bot_rng, skip_forced, batch.legal_words,
                      stop, scores, counts)
        batch.refill()
        ended = np.flatnonzero(stop == ROUND_ENDED)
        for i in ended:
            kernel_rounds[i].append(st.round_points[i].tolist())
        if ended.size:
            continue  # advance those games on before any outside seat is asked
        if (stop == GAME_OVER).all():
            break
        for i in np.flatnonzero(stop == WAITING):
            legal = words_to_int(batch.legal_words[i])
            assert kinds[i, st.current[i]] == OUTSIDE
            assert not skip_forced or legal & (legal - 1), "a forced decision was asked"
            actions[i] = outside_choice(outside_kernel[i], legal)
            seen["waits"] += 1
        batch.step(actions)  # every live game waits at an outside seat; finished ones ignore it
        for i in np.flatnonzero(st.round_ended):
            kernel_rounds[i].append(st.round_points[i].tolist())
    for i, engine in enumerate(engines):
        while not engine.game_over:  # every seat has a chooser: stops only at round ends
            engine.advance(-1, choosers[i])
        where = f"{config} seed {seeds[i]} kinds {kinds[i].tolist()}"
        rounds = [list(r) for r in zip(*engine.scores)]
        assert kernel_rounds[i] == rounds, where
        assert st.totals[i].tolist() == engine.totals(), where
        assert np.flatnonzero(st.winners[i]).tolist() == sorted(engine.winners), where
        seen["rounds"] += len(rounds)
        seen["games"] += 1
    return seen


def test_compiled_bots_play_the_games_the_python_bots_play_over_every_variant():
    seen = {"rounds": 0, "waits": 0, "games": 0}
    for k, cfg in enumerate(CONFIGS):
        for key, value in twin_games(cfg, [500 * k + j for j in range(6)], kind_seed=k).items():
            seen[key] += value
    assert seen["games"] == 6 * len(CONFIGS)
    assert seen["waits"] > 1000 and seen["rounds"] > len(CONFIGS)


def test_skip_forced_asks_outside_seats_only_real_choices():
    cfg = ChickenFootConfig(max_pips=9, num_players=4, num_rounds=2)
    seen = twin_games(cfg, list(range(8)), kind_seed=3, skip_forced=True)
    assert seen["games"] == 8 and seen["waits"] > 0


def test_compiled_heuristic_scores_equal_heuristic_policy_scores():
    compared = 0
    for cfg in CONFIGS[:: max(1, len(CONFIGS) // 12)]:
        bots = PythonBots(cfg)
        batch = KernelBatch(cfg, 4)
        batch.reset([11, 12, 13, 14])
        engines = [Engine(cfg, seed=s) for s in (11, 12, 13, 14)]
        rng = np.random.default_rng(5)
        scores, counts = bot_scratch(cfg)
        weights = heuristic_weights()
        while not batch.state.game_over.all():
            legal = batch.legal()
            actions = np.full(4, -1, np.int64)
            for i, engine in enumerate(engines):
                if engine.game_over:
                    continue
                options = actions_in(engine.legal_bits())
                plays = [a for a in options if a < cfg.draw_action]
                if plays:
                    heuristic_scores(batch.state, batch.tables, weights, i, legal, scores, counts)
                    expected = bots.heuristic_values(engine, plays)
                    np.testing.assert_array_equal(scores[plays], expected)
                    others = np.setdiff1d(np.arange(cfg.num_actions), plays)
                    assert np.isneginf(scores[others]).all()
                    compared += len(plays)
                actions[i] = options[int(rng.integers(len(options)))]
            batch.step(actions)
            for i, engine in enumerate(engines):
                if actions[i] >= 0:
                    engine.step(int(actions[i]))
    assert compared > 5000


def test_batch_advance_waits_at_outside_seats_and_reports_finished_games():
    cfg = ChickenFootConfig(max_pips=9, num_players=4, num_rounds=1)
    batch = KernelBatch(cfg, 3)
    batch.reset([1, 2, 3])
    st = batch.state
    kinds = np.zeros((3, 4), np.int8)  # every seat outside: nothing is played
    before = st.hands.copy()
    stop = np.full(3, -1, np.int8)
    scores, counts = bot_scratch(cfg)
    batch_advance(st, batch.tables, heuristic_weights(), kinds, np.zeros(3, np.uint64), False,
                  batch.legal_words, stop, scores, counts)
    assert (stop == WAITING).all()
    np.testing.assert_array_equal(st.hands, before)
    expected = batch.legal_words.copy()
    np.testing.assert_array_equal(batch.legal(), expected)
    kinds[:] = GREEDY  # bots everywhere: one round, then the game (num_rounds=1) is over
    batch_advance(st, batch.tables, heuristic_weights(), kinds, np.zeros(3, np.uint64), False,
                  batch.legal_words, stop, scores, counts)
    assert (stop == ROUND_ENDED).all() and st.game_over.all()
    assert (st.round_points.sum(axis=1) == st.totals.sum(axis=1)).all()
    batch_advance(st, batch.tables, heuristic_weights(), kinds, np.zeros(3, np.uint64), False,
                  batch.legal_words, stop, scores, counts)
    assert (stop == GAME_OVER).all()


def test_random_bot_draws_every_legal_action_about_equally():
    cfg = ChickenFootConfig(max_pips=12, num_players=2)
    seed = next(s for s in range(100) if bin(Engine(cfg, seed=s).legal_bits()).count("1") >= 3)
    batch = KernelBatch(cfg, 1)
    batch.reset([seed])
    legal = batch.legal()
    options = actions_in(words_to_int(legal[0]))
    bot_rng = np.array([12345], np.uint64)
    stream = Stream(12345)
    scores, counts = bot_scratch(cfg)
    picks = []
    for _ in range(4000):
        pick = bot_action(batch.state, batch.tables, heuristic_weights(), RANDOM, bot_rng, 0, legal,
                          scores, counts)
        assert pick == options[int(stream.uniform() * len(options))]  # the documented rank
        picks.append(pick)
    share = np.array([picks.count(a) for a in options]) / len(picks)
    np.testing.assert_allclose(share, 1 / len(options), atol=0.03)


def test_compiled_bots_play_the_python_bots_games_without_jit():
    code = (
        "from test_kernel_bots import twin_games\n"
        "from cf_env import ChickenFootConfig\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, num_rounds=2,"
        " draw_until_playable=True)\n"
        "seen = twin_games(cfg, [1, 2, 3], kind_seed=1)\n"
        "assert seen['games'] == 3 and seen['rounds'] == 6, seen\n"
        "print('ok', seen)\n"
    )
    run_without_jit(code, folder="agents")
