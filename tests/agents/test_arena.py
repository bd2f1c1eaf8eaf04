"""`cf_env.agents.arena`: the one loop that plays policies.

The arena must play exactly the games a plain loop over `Engine.step` plays (forced decisions,
R8's draws and passes with one legal action, applied without asking), stop where it is told,
and refuse a policy's illegal answer by name without changing the engine.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from cf_env.agents.arena import Arena, IllegalPolicyActionError
from cf_env.agents.policies import load_policy
from cf_env.core.actions import IllegalActionError
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from cf_env.envs.single_agent import ChickenFootSingleAgentEnv

SMALL = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=3)
LINEUPS = [("random", "greedy", "heuristic"), ("heuristic", "heuristic", "random")]


def _policies(specs, config, seed):
    return [load_policy(spec, config, seed=seed + seat) for seat, spec in enumerate(specs)]


def _by_hand(config, specs, seed) -> Engine:
    """The reference: check-then-step over `Engine.step`, every policy asked through `act` on
    an observation built afresh, forced decisions taken without asking."""
    engine, encoder = Engine(config, seed=seed), Encoder(config)
    policies = _policies(specs, config, seed)
    while not engine.game_over:
        legal = engine.legal_actions()
        seat = engine.current
        if len(legal) == 1:
            action = legal[0]
        else:
            mask = engine.legal_action_mask()
            obs = {"observation": encoder.observe(engine, seat), "action_mask": mask}
            action = policies[seat].act(obs)
        engine.step(action)
    return engine


@pytest.mark.parametrize("specs", LINEUPS)
@pytest.mark.parametrize("seed", [0, 7])
def test_arena_plays_the_games_a_plain_step_loop_plays(specs, seed):
    reference = _by_hand(SMALL, specs, seed)
    engine = Engine(SMALL, seed=seed)
    arena = Arena(engine, _policies(specs, SMALL, seed))
    finished = arena.play()
    assert engine.game_over
    assert engine.history == reference.history
    assert engine.scores == reference.scores and engine.winners == reference.winners
    # The points of every round (R12) come back, in order.
    assert finished == [list(rnd) for rnd in zip(*engine.scores)]


class Counting:
    """Records the size of every legal set it is asked about; plays the first legal action."""

    def __init__(self, fast: bool):
        self.sizes: list[int] = []
        if fast:
            self.act_bits = self._act_bits

    def act(self, observation):
        legal = np.flatnonzero(observation["action_mask"])
        self.sizes.append(len(legal))
        return int(legal[0])

    def _act_bits(self, legal: int) -> int:
        self.sizes.append(legal.bit_count())
        return (legal & -legal).bit_length() - 1


@pytest.mark.parametrize("fast", [False, True])
def test_forced_decisions_never_reach_the_policy(fast):
    engine = Engine(SMALL, seed=3)
    players = [Counting(fast) for _ in range(SMALL.num_players)]
    Arena(engine, players).play()
    asked = sum(len(p.sizes) for p in players)
    assert all(size >= 2 for p in players for size in p.sizes)
    forced = len(engine.history) - asked
    assert asked > 0 and forced > 0  # the game had both kinds (draws and passes are R8's)
    # With ask_forced the same policies are asked every decision, and play the same game.
    again = Engine(SMALL, seed=3)
    asking = [Counting(fast) for _ in range(SMALL.num_players)]
    Arena(again, asking, ask_forced=True).play()
    assert again.history == engine.history
    assert sum(len(p.sizes) for p in asking) == len(again.history)


@pytest.mark.parametrize("fast", [False, True])
def test_a_policy_that_asks_for_its_forced_decisions_gets_them_alone(fast):
    """A policy with `ask_forced = True` (`belief:` follows the game through its own moves) is
    asked each of its seat's decisions; the other seats are asked as before, and the game is the
    same."""
    engine = Engine(SMALL, seed=3)
    Arena(engine, [Counting(fast) for _ in range(SMALL.num_players)]).play()
    again = Engine(SMALL, seed=3)
    players = [Counting(fast) for _ in range(SMALL.num_players)]
    players[1].ask_forced = True
    Arena(again, players).play()
    assert again.history == engine.history
    assert len(players[1].sizes) == sum(1 for _, seat, _ in again.history if seat == 1)
    assert 1 in players[1].sizes
    assert all(size >= 2 for p in players[:1] + players[2:] for size in p.sizes)


class Cheat:
    """Returns PASS whatever the position (illegal whenever a tile can be placed, R8), or a
    malformed answer."""

    name = "cheat"

    def __init__(self, answer=None, fast=False):
        self.answer = answer
        if fast:
            self.act_bits = lambda legal: self._answer()

    def _answer(self):
        return SMALL.pass_action if self.answer is None else self.answer

    def act(self, observation):
        return self._answer()


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("answer", [None, 1.5, np.array(10_000)])
def test_an_illegal_answer_names_the_policy_and_changes_nothing(fast, answer):
    engine = Engine(SMALL, seed=1)
    cheat = Cheat(answer, fast)
    policies = [load_policy("random", SMALL, seed=1), cheat, load_policy("greedy", SMALL, seed=2)]
    arena = Arena(engine, policies, ["random", "the cheat", "greedy"])
    snapshots = []
    with pytest.raises(IllegalPolicyActionError) as err:
        while True:  # one decision at a time, so the state before the failing one is known
            snapshots.append(json.dumps(engine.snapshot()))
            engine.step(arena.decide())
    assert json.dumps(engine.snapshot()) == snapshots[-1]
    message = str(err.value)
    assert message.startswith("policy 'the cheat' at seat 1 returned illegal action")
    assert "legal actions: " in message
    for action in engine.legal_actions():
        assert f"{action} (" in message
    assert (err.value.label, err.value.seat) == ("the cheat", 1)
    # The answer as an action id when it was a whole number (a 0-d integer array is one), else None.
    expected = {type(None): SMALL.pass_action, float: None, np.ndarray: 10_000}[type(answer)]
    assert err.value.action == expected
    assert isinstance(err.value, IllegalActionError)  # what the envs' callers catch
    # `play` raises the same before applying the answer (fast path: inside Engine.advance).
    engine = Engine(SMALL, seed=1)
    policies[0] = load_policy("random", SMALL, seed=1)
    policies[2] = load_policy("greedy", SMALL, seed=2)
    arena = Arena(engine, policies, ["random", "the cheat", "greedy"])
    with pytest.raises(IllegalPolicyActionError, match="policy 'the cheat' at seat 1"):
        arena.play()
    assert engine.current == 1 and not engine.game_over
    assert json.dumps(engine.snapshot()) == snapshots[-1]


def test_the_error_crosses_process_boundaries_with_its_fields():
    err = IllegalPolicyActionError("policy 'x' at seat 2 ...", label="x", seat=2, answer="1.5")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is IllegalPolicyActionError and str(back) == str(err)
    assert (back.label, back.seat, back.answer, back.action) == ("x", 2, "1.5", None)


def test_numpy_integer_answers_are_actions():
    class AsNumpy:
        def __init__(self, seed):
            self.inner = load_policy("greedy", SMALL, seed=seed)

        def act(self, observation):
            return np.array(self.inner.act(observation))  # a 0-d array, as SB3's predict()

    engine, reference = Engine(SMALL, seed=4), Engine(SMALL, seed=4)
    Arena(engine, [AsNumpy(s) for s in range(3)]).play()
    Arena(reference, [load_policy("greedy", SMALL, seed=s) for s in range(3)]).play()
    assert engine.history == reference.history


def test_play_stops_at_the_seat_it_is_told():
    engine = Engine(SMALL, seed=2)
    arena = Arena(engine, _policies(("random", "greedy", "random"), SMALL, 2))
    outside = 0
    while True:
        arena.play(stop_seat=2)
        if engine.game_over:
            break
        assert engine.current == 2  # stopped before seat 2's decision, forced or not
        engine.step(engine.legal_actions()[0])  # seat 2 moves "from outside"
        outside += 1
    # Every decision of seat 2 was made outside: the arena never played it, not even forced ones.
    assert outside == sum(1 for (_, seat, _) in engine.history if seat == 2) > 0


def test_a_seat_without_a_policy_stops_play_at_its_real_choices_only():
    engine = Engine(SMALL, seed=5)
    arena = Arena(engine, [None, *_policies(("random", "greedy", "random"), SMALL, 5)[1:]])
    outside = 0
    while True:
        arena.play()
        if engine.game_over:
            break
        assert engine.current == 0 and len(engine.legal_actions()) >= 2  # a real choice
        engine.step(engine.legal_actions()[-1])
        outside += 1
    # Seat 0's forced decisions (R8's draws and passes) were the arena's.
    assert sum(1 for (_, seat, _) in engine.history if seat == 0) > outside > 0


def test_round_end_stops_right_after_a_round():
    engine = Engine(SMALL, seed=6)
    arena = Arena(engine, _policies(("greedy", "random", "heuristic"), SMALL, 6))
    rounds = []
    while not engine.game_over:
        finished = arena.play(round_end=True)
        assert len(finished) == 1
        rounds.append(finished[0])
        assert [s[-1] for s in engine.scores] == finished[0]
    assert len(rounds) == SMALL.num_rounds


def test_decide_takes_forced_moves_itself_and_refuses_a_finished_game():
    engine = Engine(SMALL, seed=0)
    never = Cheat(answer="never asked")
    arena = Arena(engine, [never] * 3)
    while not engine.game_over:
        legal = engine.legal_actions()
        if len(legal) > 1:
            engine.step(legal[0])
            continue
        assert arena.decide() == legal[0]
        engine.step(legal[0])
    with pytest.raises(IllegalActionError, match="game is over"):
        arena.decide()


def test_single_agent_names_an_illegal_opponent_and_halts():
    class Cheater:
        name = "cheater"

        def __init__(self, config, seed=None):
            self.config = config

        def act(self, observation):
            return int(np.flatnonzero(observation["action_mask"] == 0)[0])

    env = ChickenFootSingleAgentEnv(config=SMALL, opponents=[Cheater], episode="game")
    with pytest.raises(IllegalPolicyActionError, match="policy 'cheater' at seat"):
        env.reset(seed=0)
        for _ in range(200):
            env.step(int(np.flatnonzero(env.action_masks())[0]))
    with pytest.raises(IllegalActionError, match="no episode is running|an opponent's turn failed"):
        env.step(0)


def test_a_copied_arena_plays_its_own_policies():
    import copy

    engine = Engine(SMALL, seed=8)
    arena = Arena(engine, _policies(("random", "greedy", "random"), SMALL, 8))
    twin = copy.deepcopy(arena)
    assert twin.engine is not engine and twin.policies[0] is not arena.policies[0]
    twin.play()
    assert engine.history == []  # the original did not move
    arena.play()
    assert twin.engine.history == engine.history  # the same RNG states, copied, played alike
    fresh = Arena(Engine(SMALL, seed=8), _policies(("random", "greedy", "random"), SMALL, 8))
    pickled = pickle.loads(pickle.dumps(fresh))
    pickled.play()
    assert pickled.engine.history == engine.history


def test_an_engine_error_inside_a_policy_is_not_taken_for_its_answer():
    class Broken:
        """A fast-path policy whose own engine work fails (e.g. a search stepping a copy)."""

        def act(self, observation):
            raise AssertionError("not used")

        def act_bits(self, legal):
            Engine(SMALL, seed=0).step(10_000)  # raises IllegalActionError inside the policy

    engine = Engine(SMALL, seed=0)
    arena = Arena(engine, [Broken()] * 3)
    with pytest.raises(IllegalActionError) as err:
        arena.play()
    assert not isinstance(err.value, IllegalPolicyActionError)
    assert "action 10000 (out of range)" in str(err.value)
