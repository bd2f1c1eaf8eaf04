"""A policy that fails is that policy's error (`cf_env.agents.arena.PolicyError`), whatever it
raises — `SystemExit`, `KeyboardInterrupt` and `GeneratorExit` included — in an arena built with
`wrap_errors=True` (the evaluator's, the terminal game's), while the user's own Ctrl-C stays an
interrupt; and `cf_env.tools.play` reports a failing bot instead of exiting cleanly."""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import time

import numpy as np
import pytest

from cf_env.agents.arena import (
    Arena,
    IllegalPolicyActionError,
    PolicyError,
    UserInterrupt,
    user_interrupts,
)
from cf_env.agents.policies import load_policy, register_policy
from cf_env.core.actions import IllegalActionError
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.tools.play import main as play_main

SMALL = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=3)


class Failing:
    """Plays the first legal action; its `calls`-th call (of `act`/`act_bits`, or `reset`)
    runs `fail` instead. `fast`: it offers the mask-only fast path."""

    def __init__(self, fail, fast: bool, at: int = 3, in_reset: bool = False):
        self.fail, self.at, self.in_reset, self.calls = fail, at, in_reset, 0
        if fast:
            self.act_bits = self._act_bits

    def reset(self):
        if self.in_reset:
            self.fail()

    def _tick(self):
        self.calls += 1
        if self.calls == self.at and not self.in_reset:
            self.fail()

    def _act_bits(self, legal):
        self._tick()
        return (legal & -legal).bit_length() - 1

    def act(self, observation):
        self._tick()
        return int(np.flatnonzero(observation["action_mask"])[0])


def raising(error: BaseException):
    def fail():
        raise error

    return fail


def engine_error():
    Engine(SMALL, seed=0).step(10_000)  # an IllegalActionError of the policy's own engine work


ERRORS = {
    "SystemExit": (raising(SystemExit(0)), "SystemExit: 0"),
    "KeyboardInterrupt": (raising(KeyboardInterrupt()), "KeyboardInterrupt"),
    "GeneratorExit": (raising(GeneratorExit()), "GeneratorExit"),
    "RuntimeError": (raising(RuntimeError("a bug\nin two lines")), "RuntimeError: a bug in two lines"),
    "IllegalActionError inside": (engine_error, "IllegalActionError: action 10000 (out of range)"),
}


def _arena(failing, **options):
    engine = Engine(SMALL, seed=4)
    policies = [load_policy("random", SMALL, seed=1), failing, load_policy("greedy", SMALL, seed=2)]
    return Arena(engine, policies, ["random", "the failing one", "greedy"], wrap_errors=True,
                 **options)


@pytest.mark.parametrize("error", sorted(ERRORS))
@pytest.mark.parametrize("where", ["act_bits in play", "act in play", "act in decide", "reset"])
def test_whatever_a_policy_raises_is_its_policy_error(error, where):
    fail, text = ERRORS[error]
    failing = Failing(fail, fast=where == "act_bits in play", in_reset=where == "reset")
    arena = _arena(failing, ask_forced=where == "act in decide")
    engine = arena.engine
    with pytest.raises(PolicyError) as err:
        arena.reset_policies()
        if where == "act in decide":
            while True:
                before = json.dumps(engine.snapshot())
                engine.step(arena.decide())
        else:
            arena.play()
    assert not isinstance(err.value, IllegalPolicyActionError)  # it raised; it gave no answer
    assert str(err.value).startswith(f"policy 'the failing one' at seat 1 raised {text}")
    assert (err.value.label, err.value.seat, err.value.deal, err.value.rotation) == (
        "the failing one", 1, None, None)
    assert err.value.error.startswith(text)
    assert type(err.value.__cause__).__name__ == error.split()[0]  # the original, chained
    assert arena.asking == [-1]  # no policy is being called any more
    if where == "act in decide":
        assert json.dumps(engine.snapshot()) == before  # nothing applied
    elif where != "reset":
        assert engine.current == 1 and not engine.game_over


def test_without_wrap_errors_what_a_policy_raises_propagates_unchanged():
    for fail, kind in [(raising(RuntimeError("bug")), RuntimeError),
                       (raising(SystemExit(3)), SystemExit)]:
        engine = Engine(SMALL, seed=4)
        arena = Arena(engine, [Failing(fail, fast=True), *_policies_random(2)])
        with pytest.raises(kind):
            arena.play()


def _policies_random(n):
    return [load_policy("random", SMALL, seed=seed) for seed in range(n)]


def test_asking_holds_the_seat_only_while_its_policy_is_called():
    seen = []

    class Watcher:
        def __init__(self, seat, fast):
            self.seat = seat
            if fast:
                self.act_bits = lambda legal: self._answer(legal)

        def _answer(self, legal):
            seen.append((self.seat, int(slot[0])))
            return (legal & -legal).bit_length() - 1

        def act(self, observation):
            mask = observation["action_mask"]
            return self._answer(sum(1 << int(a) for a in np.flatnonzero(mask)))

    slot = memoryview(bytearray(8)).cast("q")  # as a worker's shared memory would be
    slot[0] = -1
    engine = Engine(SMALL, seed=2)
    arena = Arena(engine, [Watcher(0, True), Watcher(1, False), Watcher(2, True)],
                  wrap_errors=True, asking=slot)
    arena.play()
    assert engine.game_over and len(seen) > 20
    assert all(seat == asked for seat, asked in seen)
    assert {seat for seat, _ in seen} == {0, 1, 2}
    assert slot[0] == -1


def test_the_users_ctrl_c_passes_through_a_wrapping_arena():
    def ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT, arriving while the policy runs
        time.sleep(5)

    handler = signal.getsignal(signal.SIGINT)
    arena = _arena(Failing(ctrl_c, fast=True))
    with pytest.raises(UserInterrupt), user_interrupts():
        arena.play()
    assert signal.getsignal(signal.SIGINT) is handler
    assert arena.asking == [-1]
    # A KeyboardInterrupt the policy raises itself is not the user's: it is the policy's error.
    arena = _arena(Failing(raising(KeyboardInterrupt()), fast=True))
    with pytest.raises(PolicyError), user_interrupts():
        arena.play()


def test_user_interrupts_leaves_an_ignored_sigint_alone():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with user_interrupts():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_policy_errors_are_value_errors_that_cross_process_boundaries():
    err = PolicyError("policy 'x' at seat 2 raised SystemExit: 0 (deal 9, rotation 1)",
                      label="x", seat=2, error="SystemExit: 0", deal=9, rotation=1)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is PolicyError and str(back) == str(err)
    assert (back.label, back.seat, back.error, back.deal, back.rotation) == (
        "x", 2, "SystemExit: 0", 9, 1)
    assert isinstance(err, ValueError)
    illegal = IllegalPolicyActionError("policy 'x' at seat 2 returned ...", label="x", seat=2)
    assert isinstance(illegal, PolicyError) and isinstance(illegal, IllegalActionError)


# --------------------------------------------------------------------------- cf_env.tools.play
class _Bot:
    """Plays its first legal action; its third decision runs FAIL[kind]."""

    FAIL = {
        "system_exit": raising(SystemExit(0)),
        "keyboard_interrupt": raising(KeyboardInterrupt()),
        "real_sigint": lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5)),
    }

    def __init__(self, config, seed=None, kind=""):
        self.kind, self.calls = kind, 0

    def act(self, observation):
        self.calls += 1
        if self.calls == 3:
            self.FAIL[self.kind]()
        return int(np.flatnonzero(observation["action_mask"])[0])


for _kind in _Bot.FAIL:
    register_policy(f"test_policy_errors_{_kind}",
                    lambda config, seed=None, kind=_kind: _Bot(config, seed, kind))

PLAY = ["--players", "2", "--max-pips", "6", "--rounds", "1", "--seed", "1", "--seat", "1"]


@pytest.mark.parametrize(("kind", "error"), [("system_exit", "SystemExit: 0"),
                                              ("keyboard_interrupt", "KeyboardInterrupt")])
def test_play_reports_a_bot_that_raises_systemexit_or_keyboardinterrupt(kind, error, capsys):
    code = play_main([*PLAY, "--opponents", f"test_policy_errors_{kind}"], out=io.StringIO(),
                     inp=io.StringIO("1\n" * 50))
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.splitlines() == [
        f"error: player_0 (test_policy_errors_{kind}) failed: {error}"], err


def test_play_still_stops_on_the_users_ctrl_c_during_a_bots_turn(capsys):
    out = io.StringIO()
    code = play_main([*PLAY, "--opponents", "test_policy_errors_real_sigint"], out=out,
                     inp=io.StringIO("1\n" * 50))
    assert code == 130
    assert out.getvalue().endswith("\ninterrupted\n")
    assert "error:" not in capsys.readouterr().err


# ------------------------------------------------------------------ building a policy from a spec
def test_load_policy_defaults_its_config_to_the_default_game():
    from cf_env.envs.env import raw_env

    env = raw_env()
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    for policy in (load_policy("greedy"), load_policy("heuristic", None, seed=1)):
        assert observation["action_mask"][policy.act(observation)]
    with pytest.raises(ValueError, match="config must be a ChickenFootConfig or None"):
        load_policy("greedy", {"num_players": 4})


def test_a_missing_checkpoint_is_the_documented_checkpoint_error():
    from cf_env.agents.checkpoint import CheckpointError, CheckpointNotFoundError

    with pytest.raises(CheckpointNotFoundError, match="no checkpoint at 'nope'") as raised:
        load_policy("ppo:nope")
    # A ValueError subclass as the README's errors table says (and still a FileNotFoundError).
    assert isinstance(raised.value, CheckpointError) and isinstance(raised.value, ValueError)
    assert isinstance(raised.value, FileNotFoundError)


def test_mistyped_specs_name_the_nearest_one(tmp_path):
    with pytest.raises(ValueError, match=r"did you mean 'heuristic'\?$"):
        load_policy("heurstic")
    with pytest.raises(ValueError, match=r"cannot import module 'heurstic'.*did you mean 'heuristic'"):
        load_policy("heurstic:3")
    folder = tmp_path / "my-agent"
    folder.mkdir()
    for spec in (str(folder), "checkpoints/selfplay-4p-d9"):  # a folder, or a path-like name
        with pytest.raises(ValueError, match=rf"did you mean 'ppo:{spec}'\?$"):
            load_policy(spec)
