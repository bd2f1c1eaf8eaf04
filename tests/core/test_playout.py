"""`Engine.playout`: a round played to its end by one fixed rule on the engine's bitsets must be
exactly what `advance` with that rule as every seat's chooser plays (moves, tie-break draws,
round points), and leave the engine as it was."""

from __future__ import annotations

import math
import random

import pytest
from positions import build

from cf_env import ChickenFootConfig, Engine, IllegalActionError
from cf_env.core.actions import actions_in

# The R8 variants, six spinner arms, other toe counts, a double-blank worth 0 (R12), 2 and 8
# players, a target-score game (the round still ends the playout).
CONFIGS = [
    {},
    {"num_players": 2, "max_pips": 6, "num_rounds": 3},
    {"num_players": 3, "max_pips": 12, "num_rounds": 2, "draw_until_playable": True},
    {"num_players": 4, "max_pips": 9, "must_play_drawn": True, "draw_until_playable": True},
    {"num_players": 5, "max_pips": 9, "must_play_drawn": True, "toes": 2},
    {"num_players": 8, "max_pips": 12, "num_rounds": 1, "spinner_arms": 6, "toes": 1},
    {"num_players": 4, "max_pips": 6, "double_blank_value": 0, "start_search": "all_draw"},
    {"num_players": 4, "max_pips": 6, "target_score": 150, "start_search": "lower_double"},
]


def rule_tables(engine: Engine, weight: float, rng: random.Random):
    """Random `value` and `follow` tables (small integers, so ties happen) over the actions."""
    n = engine.config.num_actions
    value = [float(rng.randrange(6)) for _ in range(n)]
    attach = engine.tables.attach_bits
    follow = [attach[rng.randrange(len(attach))] if rng.random() < 0.7 else 0 for _ in range(n)]
    return value, follow


class Draws:
    """A seeded stream of uniforms that counts how many were taken."""

    def __init__(self, seed: int):
        self.rng, self.calls = random.Random(seed), 0

    def __call__(self) -> float:
        self.calls += 1
        return self.rng.random()


def slow_choice(engine: Engine, legal: int, value, follow, weight, uniform) -> int:
    """The rule as a chooser written plainly: the argmax of the score, ties by `uniform`."""
    hand = engine.hand_bits(engine.current)
    scores = {a: value[a] + weight * (hand & follow[a]).bit_count() for a in actions_in(legal)}
    best = max(scores.values())
    tied = [a for a in sorted(scores) if scores[a] == best]
    return tied[0] if len(tied) == 1 else tied[int(uniform() * len(tied))]


def state(engine: Engine) -> tuple:
    return (engine.snapshot(), list(engine._hand_bits), list(engine.boneyard), engine._attach,
            engine._open_attach, engine.history[:])


def positions(fields: dict, count: int, seed: int):
    """Seeded positions in play, reached by random legal moves (draws with a drawn tile pending
    included: no `skip_forced`)."""
    rng = random.Random(seed)
    cfg = ChickenFootConfig(**fields)
    out = 0
    game = 0
    while out < count:
        engine = Engine(cfg, seed=seed * 100 + game)
        game += 1
        stop = rng.randrange(60)
        for _ in range(stop):
            legal = engine.legal_actions()
            engine.step(rng.choice(legal))
            if engine.game_over:
                break
        if engine.game_over:
            continue
        out += 1
        yield engine


@pytest.mark.parametrize("fields", CONFIGS)
@pytest.mark.parametrize("weight", [0.0, 3.0])
def test_playout_plays_what_advance_plays_with_the_rule_as_chooser(fields, weight):
    rng = random.Random(hash((tuple(sorted(fields.items())), weight)) & 0xFFFF)
    ties = 0
    for k, engine in enumerate(positions(fields, 40, seed=len(fields))):
        value, follow = rule_tables(engine, weight, rng)
        # Every other position starts with a move of our choosing (`first`, as search expands).
        first = rng.choice(engine.legal_actions()) if k % 2 else -1
        before = state(engine)
        fast_draws, moves = Draws(k), []
        points = engine.playout(value, follow, weight, fast_draws, moves, first=first)
        assert state(engine) == before  # the engine is left as it was

        slow = engine.clone()
        slow_draws = Draws(k)
        rule = (slow, value, follow, weight, slow_draws)
        chooser = lambda legal, rule=rule: slow_choice(rule[0], legal, *rule[1:])  # noqa: E731
        start = len(slow.history)
        finished = slow.step(first) if first >= 0 else []
        while not finished:
            finished = slow.advance(choosers=[chooser] * slow.config.num_players)
        assert moves == [(seat, action) for _, seat, action in slow.history[start:]]
        assert points == finished[0]
        assert fast_draws.calls == slow_draws.calls
        ties += fast_draws.calls
    assert ties  # the tables made ties, so the tie-break order was checked


def test_playout_scores_r12_and_ends_on_r11():
    # Seat 0 plays its last tile and goes out (R11); the others keep their points, the
    # double-blank at its R12 value (50 by default).
    engine = build(hands=[[(9, 8)], [(0, 0), (1, 2)], [(3, 4)], [(5, 5)]])
    a = 2 * int(engine.tables.tile_id[8, 9]) + 1  # attach the 9 half
    assert engine.legal_actions() == [a]
    moves = []
    assert engine.playout([0.0] * engine.config.num_actions, [0] * engine.config.num_actions,
                          0.0, lambda: 0.0, moves) == [0, 53, 7, 10]
    assert moves == [(0, a)]


def test_playout_refuses_a_finished_game():
    engine = Engine(ChickenFootConfig(num_rounds=1), seed=0)
    while not engine.game_over:
        engine.step(engine.legal_actions()[0])
    with pytest.raises(ValueError, match="no round is in play"):
        engine.playout([0.0] * 200, [0] * 200, 0.0, lambda: 0.0)
    assert math.isfinite(engine.scores[0][0])


def test_playout_refuses_an_illegal_first_move_and_changes_nothing():
    engine = build(hands=[[(9, 8), (1, 2)], [(0, 0)], [(3, 4)], [(5, 5)]])
    before = state(engine)
    table = [0.0] * engine.config.num_actions, [0] * engine.config.num_actions
    illegal = 2 * int(engine.tables.tile_id[1, 2])
    for bad in (illegal, engine.config.draw_action, 10_000):
        with pytest.raises(IllegalActionError, match="not legal|out of range"):
            engine.playout(*table, 0.0, lambda: 0.0, first=bad)
        assert state(engine) == before
