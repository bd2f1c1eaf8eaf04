"""The engine API: `action_problem` (one answer to "is this int action legal here?"),
`placement` (where a tile goes: R6/R7/R9 stated once) and the between-rounds state."""

from __future__ import annotations

import numpy as np
import pytest
from positions import build, play

from cf_env import ChickenFootConfig, Engine, IllegalActionError

CROSS = [(-1, [(9, 1)]), (-1, [(9, 2)]), (-1, [(9, 3)]), (-1, [(9, 4)])]  # R7 arms all filled


def _action(engine: Engine, attached: int, free: int) -> int:
    t = int(engine.tables.tile_id[attached, free])
    return 2 * t + (0 if engine.tables.pairs[t][0] == attached else 1)


# ---------------------------------------------------------------- action_problem
def test_action_problem_is_none_for_a_legal_int_of_any_integer_type():
    engine = build(hands=[[(1, 5), (6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS)
    legal = _action(engine, 1, 5)
    assert engine.legal_actions() == [legal]  # R6/R8: the one tile that fits
    for form in (legal, np.int64(legal), np.uint8(legal), np.array(legal)):
        assert engine.action_problem(form) is None


def test_action_problem_names_an_illegal_action_and_lists_the_legal_ones():
    engine = build(hands=[[(1, 5), (6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS)
    wrong = _action(engine, 6, 7)  # 6 is not an open end (R6)
    problem = engine.action_problem(wrong)
    assert problem is not None
    assert f"action {wrong} (" in problem and "not legal for seat 0" in problem
    assert f"legal: {_action(engine, 1, 5)} (" in problem
    assert "draw" not in problem.split("legal:")[1]  # R8: no draw while a tile fits
    # step raises the same message and changes nothing.
    before = engine.snapshot()
    with pytest.raises(IllegalActionError) as err:
        engine.step(wrong)
    assert str(err.value) == problem
    assert engine.snapshot() == before


@pytest.mark.parametrize(
    "bad", [True, np.bool_(False), 1.0, "3", None, np.array([3]), np.array(2.0)]
)
def test_action_problem_refuses_malformed_actions(bad):
    engine = Engine(ChickenFootConfig(), seed=3)
    problem = engine.action_problem(bad)
    assert problem is not None and problem.startswith("action must be an int in 0..")
    with pytest.raises(IllegalActionError, match="action must be an int"):
        engine.step(bad)


@pytest.mark.parametrize("bad", [-1, 10**6])
def test_action_problem_out_of_range(bad):
    engine = Engine(ChickenFootConfig(), seed=3)
    problem = engine.action_problem(bad)
    assert f"action {bad} (out of range) is not legal" in problem
    listed = [int(item.split(" (")[0]) for item in problem.split("legal: ")[1].split(", ")]
    assert listed == engine.legal_actions()


def test_action_problem_after_game_over():
    engine = Engine(ChickenFootConfig(num_rounds=1), seed=5)
    rng = np.random.default_rng(0)
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    assert engine.action_problem(engine.config.pass_action) == (
        f"action {engine.config.pass_action}: the game is over; call reset()"
    )
    # A malformed action is named as malformed first, as step does.
    assert engine.action_problem(True).startswith("action must be an int")


# ---------------------------------------------------------------- placement (R6, R7, R9)
def test_placement_r7_fills_a_new_arm_of_the_centre_while_one_is_empty():
    engine = build(hands=[[(9, 5), (3, 4)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=[(-1, [(9, 3)])])
    where = engine.placement(_action(engine, 9, 5))
    assert (where.rule, where.arm, where.parent, where.new_arm) == ("R7", 1, -1, True)
    assert (where.attached, where.free_end, where.leaves_open, where.toe) == (9, 5, 5, 0)
    # 3 is an open end, but R7 comes first: a 3 is not playable, so has no place.
    with pytest.raises(ValueError, match="not playable now"):
        engine.placement(_action(engine, 3, 4))
    play(engine, "9|5@9")
    assert engine.arms[1].parent == -1 and engine.arms[1].tiles[-1][1] == 9


def test_placement_r6_extends_the_oldest_open_end_of_the_value():
    arms = [(-1, [(9, 1), (1, 3)]), (-1, [(9, 3)]), (-1, [(9, 2)]), (-1, [(9, 4)])]
    engine = build(hands=[[(3, 5), (0, 5)], [(3, 6), (0, 6)], [(0, 1)], [(0, 2)]], arms=arms)
    first = engine.placement(_action(engine, 3, 5))
    assert (first.rule, first.arm, first.parent, first.new_arm, first.leaves_open) == (
        "R6",
        0,
        -1,
        False,
        5,
    )
    play(engine, "3|5@3")
    assert engine.arms[0].tip == 5 and engine.arms[0].tiles[-1][0] == first.tile
    second = engine.placement(_action(engine, 3, 6))  # the other 3 end: arm 1 now
    assert (second.rule, second.arm) == ("R6", 1)


def test_placement_r6_double_closes_its_arm_and_r9_toes_grow_from_it():
    engine = build(
        hands=[[(4, 4), (0, 5)], [(4, 6), (0, 6)], [(4, 7), (0, 7)], [(0, 1)]], arms=CROSS
    )
    double = engine.placement(_action(engine, 4, 4))
    assert (double.rule, double.arm, double.leaves_open) == ("R6", 3, -1)  # R9: a foot starts
    play(engine, "4|4@4")
    assert (engine.foot_value, engine.foot_arm, engine.toes_left) == (4, 3, 3)
    toe = engine.placement(_action(engine, 4, 6))
    assert (toe.rule, toe.arm, toe.parent, toe.new_arm, toe.toe, toe.leaves_open) == (
        "R9",
        4,
        3,
        True,
        1,
        6,
    )
    play(engine, "4|6@4")
    assert engine.arms[4].parent == 3
    assert engine.placement(_action(engine, 4, 7)).toe == 2
    with pytest.raises(ValueError, match="not a tile action"):
        engine.placement(engine.config.draw_action)
    with pytest.raises(ValueError, match="not a tile action id"):
        engine.placement(True)


@pytest.mark.parametrize(
    "config",
    [ChickenFootConfig(), ChickenFootConfig(max_pips=6, num_players=2, spinner_arms=6, toes=2)],
)
def test_placement_predicts_where_every_played_tile_lands(config):
    from cf_env.viz.render import arm_labels, move_name

    engine = Engine(config, seed=11)
    rng = np.random.default_rng(4)
    rules = set()
    while not engine.game_over:
        action = int(rng.choice(engine.legal_actions()))
        if action >= config.draw_action:
            engine.step(action)
            continue
        where = engine.placement(action)
        rules.add(where.rule)
        name = move_name(engine, action)
        count, rnd = len(engine.arms), engine.round
        engine.step(action)
        if engine.round != rnd:
            continue  # the round ended: the next deal cleared the layout
        arm = engine.arms[where.arm]
        assert arm.tiles[-1] == (where.tile, where.attached) and arm.parent == where.parent
        assert len(engine.arms) == count + where.new_arm
        assert arm.tip == where.leaves_open  # -1: a double closed it (R9)
        label = arm_labels(engine)[where.arm]
        # The move's name names the same arm (render asks `placement` too).
        kind = "toe" if where.parent >= 0 else "arm"
        said = {"R9": f"(arm {label})", "R7": f"(arm {label})", "R6": f"end of {kind} {label}"}
        assert said[where.rule] in name
    assert rules == {"R6", "R7", "R9"}


# ---------------------------------------------------------------- between rounds (R4, R12)
def _play_to_round_end(engine: Engine, rng: np.random.Generator) -> list[int]:
    actions = []
    while True:
        action = int(rng.choice(engine.legal_actions()))
        actions.append(action)
        if engine.step(action):
            return actions


def test_auto_deal_off_stops_between_rounds_with_the_finished_table():
    config = ChickenFootConfig(max_pips=6, num_players=3)
    engine, twin = Engine(config, seed=8, auto_deal=False), Engine(config, seed=8)
    rng = np.random.default_rng(2)
    actions = _play_to_round_end(engine, rng)
    for action in actions:
        twin.step(action)
    assert engine.between_rounds and not engine.game_over
    assert (engine.round, engine.center) == (0, 6)  # the finished round is still on the table
    assert len(engine.scores[0]) == 1 and engine.arms  # R12 scored; the layout kept
    assert engine.scores == twin.scores and twin.round == 1  # auto_deal dealt round 1 at once
    assert engine.legal_bits() == 0 and engine.legal_actions() == []
    problem = engine.action_problem(0)
    assert problem == "action 0: round 0 is over; call deal_next()"
    with pytest.raises(IllegalActionError, match="call deal_next"):
        engine.step(engine.config.draw_action)
    with pytest.raises(ValueError, match="call deal_next"):
        engine.snapshot()
    with pytest.raises(ValueError, match="deal_next"):
        engine.deal_round(list(range(config.num_tiles)))
    assert engine.advance() == []  # nothing to decide
    with pytest.raises(ValueError, match="no round is in play"):
        engine.placement(0)
    engine.deal_next()  # R4: the next double; the same RNG draw auto_deal made
    assert not engine.between_rounds
    assert engine.snapshot() == twin.snapshot()
    with pytest.raises(ValueError, match="not between rounds"):
        engine.deal_next()


def test_deal_next_takes_an_order_as_deal_round_does():
    config = ChickenFootConfig(max_pips=6, num_players=2)
    engine = Engine(config, seed=1, auto_deal=False)
    _play_to_round_end(engine, np.random.default_rng(0))
    order = list(range(config.num_tiles))[::-1]
    with pytest.raises(ValueError, match="exactly once"):
        engine.deal_next(order[1:])
    assert engine.between_rounds  # unchanged by the refused deal
    engine.deal_next(order)
    assert engine.round == 1 and engine.deal_order == tuple(order)
    start = int(engine.tables.double_id[engine.center])  # R5: placed by its holder
    assert set(order[: config.hand_size]) - {start} <= set(engine.hand(0))  # R3: seat 0 first


def test_round_end_view_is_the_engine_stopped_between_rounds():
    from cf_env.viz.record import round_end_view

    engine = Engine(ChickenFootConfig(max_pips=6, num_players=2, num_rounds=2), seed=3)
    rng = np.random.default_rng(5)
    while True:
        action = int(rng.choice(engine.legal_actions()))
        view = round_end_view(engine, action)
        finished = engine.step(action)
        if finished:
            break
        assert view is None
    assert view.between_rounds and view.round == 0 and engine.round == 1
    assert view.scores == engine.scores and view.hand_counts != engine.hand_counts
    assert round_end_view(engine, True) is None and round_end_view(engine, -1) is None
