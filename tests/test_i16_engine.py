"""Issue 16 engine API: `action_problem` (one answer to "is this int action legal here?"),
`placement` (where a tile goes: R6/R7/R9 stated once) and the between-rounds state."""

from __future__ import annotations

import numpy as np
import pytest
from positions import build

from cf_env import ChickenFootConfig, Engine, IllegalActionError

CROSS = [(-1, [(9, 1)]), (-1, [(9, 2)]), (-1, [(9, 3)]), (-1, [(9, 4)])]  # R7 arms all filled


def _action(engine: Engine, attached: int, free: int) -> int:
    t = int(engine.tables.tile_id[attached, free])
    return 2 * t + (0 if engine.tables.pairs[t][0] == attached else 1)


# ---------------------------------------------------------------- action_problem
def test_i16_action_problem_is_none_for_a_legal_int_of_any_integer_type():
    engine = build(hands=[[(1, 5), (6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS)
    legal = _action(engine, 1, 5)
    assert engine.legal_actions() == [legal]  # R6/R8: the one tile that fits
    for form in (legal, np.int64(legal), np.uint8(legal), np.array(legal)):
        assert engine.action_problem(form) is None


def test_i16_action_problem_names_an_illegal_action_and_lists_the_legal_ones():
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


@pytest.mark.parametrize("bad", [True, np.bool_(False), 1.0, "3", None, np.array([3]), np.array(2.0)])
def test_i16_action_problem_refuses_malformed_actions(bad):
    engine = Engine(ChickenFootConfig(), seed=3)
    problem = engine.action_problem(bad)
    assert problem is not None and problem.startswith("action must be an int in 0..")
    with pytest.raises(IllegalActionError, match="action must be an int"):
        engine.step(bad)


@pytest.mark.parametrize("bad", [-1, 10**6])
def test_i16_action_problem_out_of_range(bad):
    engine = Engine(ChickenFootConfig(), seed=3)
    problem = engine.action_problem(bad)
    assert f"action {bad} (out of range) is not legal" in problem
    listed = [int(item.split(" (")[0]) for item in problem.split("legal: ")[1].split(", ")]
    assert listed == engine.legal_actions()


def test_i16_action_problem_after_game_over():
    engine = Engine(ChickenFootConfig(num_rounds=1), seed=5)
    rng = np.random.default_rng(0)
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    assert engine.action_problem(engine.config.pass_action) == (
        f"action {engine.config.pass_action}: the game is over; call reset()"
    )
    # A malformed action is named as malformed first, as step does.
    assert engine.action_problem(True).startswith("action must be an int")
