"""The compiled playout (`cf_env.agents.kernel_search.playout`, through `play_round`): a round
played to its end on the kernel by one fixed rule must be exactly what `Engine.advance` plays with
that rule as every seat's chooser (the same moves, the same tie-break draws, the same R12 round
points), over seeded positions of configs of every variant, leave the root slot as it was, stop at
the round's end (R11), and run as plain Python too (NUMBA_DISABLE_JIT=1)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from positions import build
from variants import CONFIGS, run_without_jit

from cf_env import ChickenFootConfig, Engine, IllegalActionError
from cf_env.agents import kernel_search
from cf_env.agents.kernel_bots import next_uniform
from cf_env.agents.kernel_search import play_round, rule_tables
from cf_env.core.actions import actions_in
from cf_env.core.kernel import KernelBatch, num_words


def random_rule(config: ChickenFootConfig, weight: float, rng: random.Random):
    """Random `value` and `follow` tables (small integers, so that ties happen) over the actions,
    as Python lists (the chooser's form) and as `rule_tables` arrays (the playout's)."""
    n = config.num_actions
    attach = Engine(config, seed=0).tables.attach_bits
    value = [float(rng.randrange(6)) for _ in range(n)]
    follow = [attach[rng.randrange(len(attach))] if rng.random() < 0.7 else 0 for _ in range(n)]
    return value, follow, (*rule_tables(value, follow, num_words(config)), weight)


def chooser(engine: Engine, value, follow, weight, stream: np.ndarray):
    """The rule written plainly over the engine's bitsets: the argmax of the score, ties to the
    int(u · k)-th in ascending order, u from the same splitmix64 stream as the playout's."""
    def choose(legal: int) -> int:
        hand = engine.hand_bits(engine.current)
        scores = {a: value[a] + weight * (hand & follow[a]).bit_count() for a in actions_in(legal)}
        best = max(scores.values())
        tied = [a for a in sorted(scores) if scores[a] == best]
        return tied[0] if len(tied) == 1 else tied[int(next_uniform(stream, 0) * len(tied))]
    return choose


def positions(config: ChickenFootConfig, count: int, seed: int):
    """Seeded positions in play, reached by random legal moves (a drawn tile pending included:
    no `skip_forced`)."""
    rng = random.Random(seed)
    found, game = 0, 0
    while found < count:
        engine = Engine(config, seed=seed * 100 + game)
        game += 1
        for _ in range(rng.randrange(3 * config.num_tiles // 2)):
            engine.step(rng.choice(engine.legal_actions()))
            if engine.game_over:
                break
        if not engine.game_over:
            found += 1
            yield engine


@pytest.mark.parametrize("weight", [0.0, 3.0])
def test_playout_plays_what_advance_plays_with_the_rule_as_chooser(weight):
    ties = compared = 0
    for c, cfg in enumerate(CONFIGS):
        rng = random.Random(1000 * c + int(weight))
        for k, engine in enumerate(positions(cfg, 6, seed=c)):
            value, follow, rule = random_rule(cfg, weight, rng)
            # Every other position starts with a move of our choosing (`first`, as search expands).
            first = rng.choice(engine.legal_actions()) if k % 2 else -1
            batch = KernelBatch(cfg, 2)
            batch.load(0, engine)
            root = [a[0].copy() for a in batch.state]
            stream = np.array([k + 1], np.uint64)
            points, moves = play_round(batch, 0, 1, rule, stream, first)
            assert all((a[0] == b).all() for a, b in zip(batch.state, root))  # root unchanged

            slow, slow_stream = engine.clone(), np.array([k + 1], np.uint64)
            start = len(slow.history)
            finished = slow.step(first) if first >= 0 else []
            choose = chooser(slow, value, follow, weight, slow_stream)
            while not finished:
                finished = slow.advance(choosers=[choose] * cfg.num_players)
            assert moves == [(seat, action) for _, seat, action in slow.history[start:]], cfg
            assert points == finished[0], cfg
            assert stream[0] == slow_stream[0]  # the same tie-break draws
            ties += stream[0] != k + 1
            compared += 1
    assert compared == 6 * len(CONFIGS)
    assert ties  # the tables made ties, so the tie-break order was checked


def zero_rule(config: ChickenFootConfig):
    return (*rule_tables([0.0] * config.num_actions, [0] * config.num_actions,
                         num_words(config)), 0.0)


def test_playout_r11_going_out_ends_the_round_and_r12_scores_the_hands_left():
    # Seat 0 plays its last tile and goes out (R11); the others keep their points, the
    # double-blank at its R12 value (50 by default, 0 in the variant).
    for blank, expected in [(50, [0, 53, 7, 10]), (0, [0, 3, 7, 10])]:
        cfg = ChickenFootConfig(double_blank_value=blank)
        engine = build(cfg, hands=[[(9, 8)], [(0, 0), (1, 2)], [(3, 4)], [(5, 5)]])
        a = 2 * int(engine.tables.tile_id[8, 9]) + 1  # attach the 9 half
        assert engine.legal_actions() == [a]
        batch = KernelBatch(cfg, 2)
        batch.load(0, engine)
        assert play_round(batch, 0, 1, zero_rule(cfg), np.zeros(1, np.uint64)) == (expected, [(0, a)])


def test_playout_r11_a_blocked_round_ends_even_with_a_foot_pending():
    # The foot on 0 wants toes (R9) nobody holds; the one draw cannot help, then nobody can place
    # or draw: the round ends there (R11), each hand scored (R12).
    cfg = ChickenFootConfig(max_pips=6, num_players=2)
    arms = [(-1, [(6, 0), (0, 0)]), (-1, [(6, 1), (1, 0), (0, 2)]), (-1, [(6, 3), (3, 0), (0, 4)]),
            (-1, [(6, 5), (5, 0)])]
    engine = build(cfg, hands=[[(2, 2)], [(3, 3)]], arms=arms, foot=(0, 3), foot_arm=0,
                   boneyard=[(1, 1)], leftovers=1)
    points = engine.tables.points(50)
    expected = [int(points[engine.hand(0)].sum()) + 2, int(points[engine.hand(1)].sum())]
    batch = KernelBatch(cfg, 2)
    batch.load(0, engine)
    result = play_round(batch, 0, 1, zero_rule(cfg), np.zeros(1, np.uint64))
    assert result == (expected, [(0, cfg.draw_action)])


def test_playout_ends_the_work_game_at_the_round_end_without_dealing_the_next():
    cfg = ChickenFootConfig(target_score=500)  # a game that would go on to the next round
    engine = next(positions(cfg, 1, seed=3))
    batch = KernelBatch(cfg, 2)
    batch.load(0, engine)
    st = batch.state
    points, _ = play_round(batch, 0, 1, zero_rule(cfg), np.zeros(1, np.uint64))
    assert st.game_over[1] and st.round[1] == engine.round and not st.need_perm[1]
    assert st.round_ended[1] and points == st.round_points[1].tolist() and sum(points) > 0
    assert not st.game_over[0]
    st.round_ended[1] = False
    kernel_search.playout(st, batch.tables, 1, *zero_rule(cfg)[:2], 0.0, np.zeros(1, np.uint64),
                          -1, np.zeros((2, 2), np.uint64), np.zeros((1000, 2), np.int32))
    assert not st.round_ended[1]  # a finished game is not played on


def test_playout_refuses_a_finished_game_and_an_illegal_first_move():
    cfg = ChickenFootConfig(num_rounds=1)
    done = Engine(cfg, seed=0)
    while not done.game_over:
        done.step(done.legal_actions()[0])
    batch = KernelBatch(cfg, 2)
    batch.load(0, done)
    with pytest.raises(ValueError, match="no round is in play"):
        play_round(batch, 0, 1, zero_rule(cfg), np.zeros(1, np.uint64))
    engine = build(hands=[[(9, 8), (1, 2)], [(0, 0)], [(3, 4)], [(5, 5)]])
    batch = KernelBatch(engine.config, 2)
    batch.load(0, engine)
    before = [a.copy() for a in batch.state]
    illegal = 2 * int(engine.tables.tile_id[1, 2])
    for bad in (illegal, engine.config.draw_action, engine.config.pass_action, -5):
        with pytest.raises(IllegalActionError, match="not legal"):
            play_round(batch, 0, 1, zero_rule(engine.config), np.zeros(1, np.uint64), bad)
        assert all((a == b).all() for a, b in zip(batch.state, before))


def test_playout_plays_what_advance_plays_without_jit():
    code = (
        "import random\n"
        "import test_playout as t\n"
        "from cf_env import ChickenFootConfig\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, must_play_drawn=True, toes=2)\n"
        "import numpy as np\n"
        "from cf_env.core.kernel import KernelBatch\n"
        "from cf_env.agents.kernel_search import play_round\n"
        "rng = random.Random(0)\n"
        "for k, engine in enumerate(t.positions(cfg, 3, seed=1)):\n"
        "    value, follow, rule = t.random_rule(cfg, 3.0, rng)\n"
        "    batch = KernelBatch(cfg, 2); batch.load(0, engine)\n"
        "    points, moves = play_round(batch, 0, 1, rule, np.array([k + 1], np.uint64))\n"
        "    slow, stream = engine.clone(), np.array([k + 1], np.uint64)\n"
        "    start, finished = len(slow.history), []\n"
        "    choose = t.chooser(slow, value, follow, 3.0, stream)\n"
        "    while not finished:\n"
        "        finished = slow.advance(choosers=[choose] * 3)\n"
        "    assert moves == [(s, a) for _, s, a in slow.history[start:]]\n"
        "    assert points == finished[0]\n"
        "print('ok')\n"
    )
    run_without_jit(code)
