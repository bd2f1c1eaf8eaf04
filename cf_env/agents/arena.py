"""The arena: the one loop that plays policies through a game's decisions.

The drivers that play policies through a game use `Arena`: `training.evaluation.evaluate` and
`cf_env.tools.demo` (whole games, `play`), the single-agent adapter `cf_env.envs.single_agent`
(the opponents' turns between the learner's, `play(stop_seat, round_end=True)`) and the terminal
game `cf_env.tools.play` (the opponents' moves one at a time, `decide`, so that each is narrated;
a driver that checks the game between decisions does the same). The self-play collector
(`training.selfplay.collector`) keeps its own loop, which batches learner seats across many games. So the
conventions of `cf_env.agents.policies` are carried out here, once:

* **Forced decisions** (exactly one legal action: most draws and passes) are applied without
  asking the policy. An arena built with `ask_forced=True` asks them too (the terminal game
  does, as it always has: a policy's RNG then moves exactly as it did before), and so does any
  arena a seat whose policy has `ask_forced = True` (`belief:`, which follows the game through
  its own decisions): that seat is asked every decision, the others as before.
* **Mask-only fast path.** A policy with `act_bits`/`act_legal` (`legal_fast_path`) is given the
  legal bitset and no observation; its choices and the forced decisions are all made inside one
  `Engine.advance` call. Other policies get ``{"observation", "action_mask"}``, the observation
  written by the compiled core (`Encoder.observe`).
* **Checked answers.** Every answer is checked by the engine, the one place that says what is
  legal (`Engine.step` and `Engine.advance` refuse it before applying it; `decide` asks
  `Engine.action_problem`): a malformed or illegal one raises `IllegalPolicyActionError` naming
  the policy, its seat and the legal actions, the engine as it was before that decision.

* **Failing policies.** By default an exception a policy raises (in `act`, `act_bits`,
  `act_legal` or `reset`) propagates unchanged. An arena built with `wrap_errors=True` (the
  evaluator's, the terminal game's) turns anything a policy raises — any `BaseException`:
  `SystemExit`, `KeyboardInterrupt` and `GeneratorExit` included, so that a bot cannot end or
  silently stop the program — into `PolicyError` naming the policy and its seat, the original as
  its `__cause__`. The user's own Ctrl-C is not the policy's: inside `user_interrupts()` a real
  SIGINT raises `UserInterrupt` (a `KeyboardInterrupt`), which the arena lets through. Such an
  arena also keeps, in `asking[0]`, the seat whose policy it is calling (-1 between calls), e.g.
  in memory shared with a parent process that must say which policy was running if the process
  died.

A seat whose policy is None is not the arena's to play (the learner, the human): `play` stops
when that seat has a real choice.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, MutableSequence, Sequence

import numpy as np

from cf_env.agents.policies import Policy, legal_fast_path
from cf_env.core.actions import IllegalActionError, describe
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder

_ASKING = object()  # a seat's kept answer while its policy is being asked


class PolicyError(ValueError):
    """A policy failed during play: it raised (any exception, `SystemExit` and
    `KeyboardInterrupt` included: an arena with `wrap_errors=True`) or, as the subclass
    `IllegalPolicyActionError`, returned an illegal action.

    `label` and `seat` say whose it was (`seat` -1: while the policy was being built); `error` is
    what it raised, as ``"Type: message"`` ("" for an illegal answer). `deal` and `rotation` are
    set by `training.evaluation.evaluate` (the duplicate deal and rotation being played), else None. All
    are picklable, so the error crosses process boundaries (evaluation workers) intact.
    """

    def __init__(
        self,
        message: str,
        *,
        label: str = "",
        seat: int = -1,
        error: str = "",
        deal: int | None = None,
        rotation: int | None = None,
    ):
        super().__init__(message)
        self.label, self.seat, self.error = label, seat, error
        self.deal, self.rotation = deal, rotation


class IllegalPolicyActionError(IllegalActionError, PolicyError):
    """A policy returned an action that is malformed or not legal in the position it was given.

    Nothing was applied. `label` and `seat` say whose answer it was; `answer` is its repr;
    `action` is it as an int when it was a whole number (illegal now or out of range), None when
    it was no action id at all (a float, a bool, None, an array). All are picklable, so the error
    crosses process boundaries (evaluation workers) intact.
    """

    def __init__(
        self,
        message: str,
        *,
        label: str = "",
        seat: int = -1,
        answer: str = "",
        action: int | None = None,
    ):
        PolicyError.__init__(self, message, label=label, seat=seat)
        self.answer, self.action = answer, action


class UserInterrupt(KeyboardInterrupt):
    """The user's Ctrl-C: a real SIGINT, while `user_interrupts()` is in force. An arena with
    `wrap_errors=True` lets it through, where a `KeyboardInterrupt` a policy raises itself is
    that policy's `PolicyError`."""


@contextlib.contextmanager
def user_interrupts() -> Iterator[None]:
    """While inside, a SIGINT raises `UserInterrupt` instead of a plain `KeyboardInterrupt`.

    The handler in force is kept and called (Python's default one raises `KeyboardInterrupt`,
    which becomes a `UserInterrupt`); an ignored SIGINT stays ignored. Outside the main thread,
    where handlers cannot be set, and when nested, nothing changes.
    """
    previous = signal.getsignal(signal.SIGINT)
    if (
        threading.current_thread() is not threading.main_thread()
        or not callable(previous)
        or getattr(previous, "_raises_user_interrupt", False)
    ):
        yield
        return

    def handler(signum, frame):
        try:
            previous(signum, frame)
        except UserInterrupt:
            raise
        except KeyboardInterrupt as err:
            raise UserInterrupt(*err.args) from None

    handler._raises_user_interrupt = True
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def describe_exception(err: BaseException) -> str:
    """``"Type: message"``, or the type alone when the message is empty."""
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def policy_name(policy: object) -> str:
    """A policy's label when the driver gives none: its `name`, else its class name."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) and name else type(policy).__name__


class Arena:
    """Plays the seats' policies on `engine` (see the module docstring).

    `policies[seat]` is the seat's policy, or None for a seat played from outside; `labels`
    name them in errors (default `policy_name`). `encoder` builds the observations (e.g. shared
    with a learner's own; a new `Encoder` of the engine's config by default). `wrap_errors`: what a policy
    raises becomes `PolicyError` (see the module docstring), and `asking` (a writable sequence,
    default a new list) gets in item 0 the seat whose policy is being called, -1 between calls.
    """

    def __init__(
        self,
        engine: Engine,
        policies: Sequence[Policy | None],
        labels: Sequence[str] | None = None,
        *,
        encoder: Encoder | None = None,
        ask_forced: bool = False,
        wrap_errors: bool = False,
        asking: MutableSequence[int] | None = None,
    ):
        n = engine.config.num_players
        if len(policies) != n:
            raise ValueError(
                f"the arena needs one policy (or None) per seat: {n}; got {len(policies)}"
            )
        self.engine = engine
        self.policies = list(policies)
        self.labels = [
            policy_name(p) if labels is None else labels[seat] for seat, p in enumerate(policies)
        ]
        self.encoder = encoder if encoder is not None else Encoder(engine.config)
        self.ask_forced = bool(ask_forced)
        # Per seat: asked its forced decisions too (the arena's option, or the policy's own).
        self._asks_forced = [self.ask_forced or getattr(p, "ask_forced", False) is True
                             for p in self.policies]
        self._asking = any(self._asks_forced)  # `play` takes the asking loop
        self.wrap_errors = bool(wrap_errors)
        self.asking = asking if asking is not None else [-1]
        self._bind()

    def _bind(self) -> None:
        # Per seat: the fast path (for `decide`), and the one `Engine.advance` calls, which keeps
        # the seat's last answer so that an illegal one can be reported as the policy gave it;
        # and the policy's `act`. With `wrap_errors`, each is guarded (`_guarded`).
        fasts = [None if p is None else legal_fast_path(p) for p in self.policies]
        acts = [None if p is None else p.act for p in self.policies]
        self._answers: list[object] = [None] * len(self.policies)
        if self.wrap_errors:  # one closure per call site, not two: this is the hot path
            self._choosers = [None if f is None else self._guarded(s, f, self._answers)
                              for s, f in enumerate(fasts)]
            fasts = [None if f is None else self._guarded(s, f) for s, f in enumerate(fasts)]
            acts = [None if a is None else self._guarded(s, a) for s, a in enumerate(acts)]
        else:
            self._choosers = [None if f is None else _keeping_answers(f, self._answers, s)
                              for s, f in enumerate(fasts)]
        self._fast, self._acts = fasts, acts

    # A copy (deepcopy, pickle) rebuilds the fast paths from its own policies: closures are not
    # copied, and would go on drawing from the original policies' RNGs. It gets its own `asking`.
    def __getstate__(self) -> dict:
        rebuilt = ("_fast", "_acts", "_answers", "_choosers", "asking")
        return {k: v for k, v in self.__dict__.items() if k not in rebuilt}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("wrap_errors", False)
        self.asking = [-1]
        self._bind()

    def reset_policies(self) -> None:
        """Call each policy's `reset()`, if it has one (before every game, by the convention)."""
        for seat, policy in enumerate(self.policies):
            reset = getattr(policy, "reset", None)
            if callable(reset):
                if self.wrap_errors:
                    self._guarded(seat, lambda call: call())(reset)
                else:
                    reset()

    def play(self, stop_seat: int = -1, round_end: bool = False) -> list[list[int]]:
        """Play decisions until the game ends, `stop_seat` is to act (any decision of it), a seat
        without a policy has a real choice, or, with `round_end`, a round ended. Returns the
        points of the rounds that ended meanwhile (`Engine.step`'s result, concatenated)."""
        if self._asking:
            return self._play_asking(stop_seat, round_end)
        engine, policies, choosers, acts = self.engine, self.policies, self._choosers, self._acts
        done: list[list[int]] = []
        # The engine checks every answer (`Engine.step`, `Engine.advance`): an illegal one raises
        # before it is applied, and is reported here with the policy's name.
        while True:
            try:
                finished = engine.advance(stop_seat, choosers)  # forced and fast-path decisions
            except IllegalActionError as err:
                seat = engine.current
                answer = self._answers[seat]
                if answer is _ASKING:  # raised inside the policy: not an answer of its
                    raise
                raise self._illegal(seat, answer) from err
            if not finished:
                seat = engine.current
                policy = policies[seat]
                if policy is None or seat == stop_seat or engine.game_over:
                    return done
                # A policy that reads observations (`_ask`, inlined: this is a hot path).
                action = acts[seat]({
                    "observation": self.encoder.observe(engine, seat),
                    "action_mask": engine.legal_action_mask(),
                })
                try:
                    finished = engine.step(action)
                except IllegalActionError as err:
                    raise self._illegal(seat, action) from err
            if finished:
                done += finished
                if round_end or engine.game_over:
                    return done

    def decide(self) -> int:
        """The acting seat's action now, checked, not applied: the only legal one if the decision
        is forced (unless the seat is asked those too: `ask_forced`), else its policy's answer."""
        engine = self.engine
        legal = engine.legal_bits()
        if not legal:
            raise IllegalActionError("the game is over: no decision to make")
        seat = engine.current
        if not self._asks_forced[seat] and not legal & (legal - 1):
            return legal.bit_length() - 1
        if self.policies[seat] is None:
            raise ValueError(f"seat {seat} has no policy in this arena")
        fast = self._fast[seat]
        if fast is None:
            return self._ask(seat)
        return self._checked(seat, fast(legal))

    # ------------------------------------------------------------------ internals
    def _play_asking(self, stop_seat: int, round_end: bool) -> list[list[int]]:
        engine, done = self.engine, []
        while not engine.game_over:
            seat = engine.current
            if seat == stop_seat or self.policies[seat] is None:
                break
            finished = engine.step(self.decide())
            done += finished
            if finished and round_end:
                break
        return done

    def _ask(self, seat: int) -> int:
        engine = self.engine
        observation = {
            "observation": self.encoder.observe(engine, seat),
            "action_mask": engine.legal_action_mask(),
        }
        return self._checked(seat, self._acts[seat](observation))

    def _guarded(self, seat: int, call: Callable, answers: list | None = None) -> Callable:
        """`call` (one of seat `seat`'s policy's methods), keeping `asking[0]` and turning what it
        raises, but the user's `UserInterrupt`, into `PolicyError` (`wrap_errors`); with
        `answers`, keeping each answer in `answers[seat]` too (the chooser `Engine.advance`
        calls; what a policy raises is never taken for its answer: it is a `PolicyError`)."""
        asking, failure = self.asking, self._failure

        if answers is None:
            def guarded(arg):
                asking[0] = seat
                try:
                    return call(arg)
                except UserInterrupt:
                    raise
                except BaseException as err:  # SystemExit, KeyboardInterrupt too: the policy's
                    raise failure(seat, err) from err
                finally:
                    asking[0] = -1
        else:
            def guarded(arg):
                asking[0] = seat
                try:
                    answers[seat] = action = call(arg)
                except UserInterrupt:
                    raise
                except BaseException as err:
                    raise failure(seat, err) from err
                finally:
                    asking[0] = -1
                return action

        return guarded

    def _failure(self, seat: int, err: BaseException) -> PolicyError:
        label, what = self.labels[seat], describe_exception(err)
        return PolicyError(f"policy {label!r} at seat {seat} raised {what}",
                           label=label, seat=seat, error=what)

    def _checked(self, seat: int, action: object) -> int:
        """`action` as the int to step if legal now (`Engine.action_problem`); else raises
        `IllegalPolicyActionError`."""
        if self.engine.action_problem(action) is not None:
            raise self._illegal(seat, action)
        return int(action)

    def _illegal(self, seat: int, action: object) -> IllegalPolicyActionError:
        engine, label = self.engine, self.labels[seat]
        tables, size = engine.tables, engine.config.num_actions
        if isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
            action = action[()]  # what SB3's predict() returns for one observation
        whole = isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))
        what = describe(tables, int(action)) if whole and 0 <= int(action) < size else "invalid"
        named = ", ".join(f"{a} ({describe(tables, a)})" for a in engine.legal_actions())
        return IllegalPolicyActionError(
            f"policy {label!r} at seat {seat} returned illegal action {action!r} ({what}); "
            f"legal actions: {named}",
            label=label,
            seat=seat,
            answer=repr(action),
            action=int(action) if whole else None,
        )


def _keeping_answers(fast: Callable[[int], int], answers: list, seat: int) -> Callable[[int], int]:
    """`fast`, keeping each answer in `answers[seat]` (a closure: `Engine.advance` calls it for
    most real choices of a game)."""

    def choose(legal: int) -> int:
        answers[seat] = _ASKING
        answers[seat] = action = fast(legal)
        return action

    return choose
