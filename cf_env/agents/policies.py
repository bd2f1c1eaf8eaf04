"""The policy protocol and policy specs — how bots, checkpoints and user code are named and built.

A policy is any object with ``act(observation) -> int`` that, given an agent's observation dict
(``{"observation": ..., "action_mask": ...}`` as the env returns it), returns a legal action.
Policies may keep state within a game; ``reset()``, if defined, is called before each game.

Two conventions shared by everything that drives policies (the single-agent adapter
`cf_env.single_agent` and `training.evaluate`):

* **Forced decisions are not asked.** A decision with exactly one legal action is applied without
  calling the policy (the outcome cannot differ), so a policy sees only real choices.
* **Mask-only fast path (optional).** A policy whose choice depends only on which actions are
  legal (never on the observation vector) may also define ``act_bits(legal: int) -> int``, given
  the legal set as an int bitset (bit a set <=> action a legal; ``Engine.legal_bits()``), or
  ``act_legal(legal_actions: list[int]) -> int``, given the legal ids in ascending order
  (``Engine.legal_actions()``). It must return exactly what ``act`` would return for an
  observation with that mask, using its RNG identically (same calls, same order), so the entry
  points are interchangeable and results stay reproducible. Drivers then call it instead of
  ``act`` and skip building the observation, which is most of an opponent's cost;
  `legal_fast_path` returns it as a function of the bitset (or None). The `random` and `greedy`
  bots have ``act_bits``; observation-reading policies (`heuristic`, `ismcts`, PPO checkpoints)
  have no fast path.

Specs (used by every CLI): ``random``, ``greedy``, ``heuristic``, ``ismcts:<iterations>`` (or
``ismcts:ms=<milliseconds>``), ``guided:<checkpoint path>[:<iterations> | :ms=<milliseconds>]``
(`cf_env.ismcts`), ``ppo:<checkpoint path>``, and ``some.module:factory`` for user code. A factory is called as
``factory(config=ChickenFootConfig, seed=int | None)`` and returns a policy. `load_policy` is the
one public function that turns a spec into a policy; `validate_policy_spec` builds one through it
to check a spec up front (e.g. before a training run starts).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

import numpy as np

from cf_env.core.actions import actions_in
from cf_env.core.config import ChickenFootConfig


@runtime_checkable
class Policy(Protocol):
    def act(self, observation: Mapping[str, np.ndarray]) -> int: ...


def legal_fast_path(policy: object) -> Callable[[int], int] | None:
    """The policy's mask-only fast path (see above) as a function of the legal bitset, else None."""
    act_bits = getattr(policy, "act_bits", None)
    if callable(act_bits):
        return act_bits
    act_legal = getattr(policy, "act_legal", None)
    if callable(act_legal):
        return lambda legal: act_legal(actions_in(legal))
    return None


PolicyFactory = Callable[..., Policy]
_FACTORIES: dict[str, PolicyFactory] = {}
# Whether `cf_env.bots` has registered the built-in specs. A flag, not "is _FACTORIES empty":
# a user's spec registered first must not hide the built-ins.
_BUILTINS_LOADED = False


def register_policy(name: str, factory: PolicyFactory) -> None:
    """Make `name` (or `name:<arg>`) a spec; the factory gets config, seed and arg (if any).

    The built-in specs are registered first, so a user's spec of the same name replaces the
    built-in one (and is never replaced by it later)."""
    if not isinstance(name, str) or not name or ":" in name or name == "ppo":
        raise ValueError(
            f"a policy name is a non-empty string without ':' other than 'ppo' (the spec is "
            f"name or name:<arg>); got {name!r}"
        )
    if not callable(factory):
        raise ValueError(
            f"policy {name!r}: the factory must be callable as factory(config=..., seed=...); "
            f"got {factory!r}"
        )
    _ensure_builtins()
    _FACTORIES[name] = factory


def policy_names() -> list[str]:
    _ensure_builtins()
    return sorted(_FACTORIES) + ["ppo:<checkpoint>", "module:factory"]


def load_policy(spec: str, config: ChickenFootConfig, seed: int | None = None) -> Policy:
    """Build the policy a spec names. Raises ValueError naming the spec and the valid forms."""
    kind, name, arg = _parse_spec(spec)
    if kind == "ppo":
        from training.checkpoints import load_ppo_policy  # torch lives in `training` only

        return load_ppo_policy(arg, config=config, seed=seed)
    if kind == "registered":
        factory = _FACTORIES[name]
        return factory(config=config, seed=seed, arg=arg) if arg else factory(config=config, seed=seed)
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        raise ValueError(f"policy spec {spec!r}: cannot import module {name!r} ({err})") from err
    factory = getattr(module, arg, None)
    if not callable(factory):
        raise ValueError(f"policy spec {spec!r}: module {name!r} has no callable {arg!r}")
    policy = factory(config=config, seed=seed)
    if not callable(getattr(policy, "act", None)):
        raise ValueError(f"policy spec {spec!r}: the factory returned no object with act()")
    return policy


def spec_checkpoint(spec: str) -> str | None:
    """The checkpoint path a spec plays from (`ppo:<path>`, `guided:<path>[:<budget>]`), else
    None. Only the form is read: the path is not checked here."""
    name, _, arg = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if name == "ppo" and arg:
        return arg
    if name == "guided" and arg:
        _ensure_builtins()
        from cf_env.agents.bots import _guided_factory  # lazily: the bots import this module
        from cf_env.agents.ismcts import split_guided

        if _FACTORIES.get("guided") is _guided_factory:  # (not a user's own "guided")
            return split_guided(arg)[0] or None
    return None


def validate_policy_spec(spec: str, config: ChickenFootConfig) -> None:
    """Check, before a long job starts, that `spec` builds a policy for `config`.

    The spec is parsed and built exactly as `load_policy` does (so a checkpoint is read and
    checked against `config`, a module imported and its factory called) and then discarded.
    Every problem is raised as a `ValueError` that names the spec: a form error, a missing or
    incompatible checkpoint (`FileNotFoundError` and `CheckpointError` included), a module that
    cannot be imported. Anything else (a bug in a policy) propagates unchanged.
    """
    try:
        load_policy(spec, config, seed=0)
    except (ValueError, OSError) as err:
        message = str(err)
        if not message.startswith(("policy spec", "a policy spec", "unknown policy spec")):
            message = f"policy spec {spec!r}: {message}"
        raise ValueError(message) from err


def _parse_spec(spec: str) -> tuple[str, str, str]:
    """Split a spec into (kind, name, arg), kind being "ppo", "registered" or "module"; check
    its form (not whether what it names exists)."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"a policy spec is a non-empty string; got {spec!r}")
    _ensure_builtins()
    name, _, arg = spec.partition(":")
    if name == "ppo":
        if not arg:
            raise ValueError("policy spec 'ppo:' needs a checkpoint path, e.g. ppo:checkpoints/x")
        return "ppo", name, arg
    if name in _FACTORIES:
        if arg and "arg" not in inspect.signature(_FACTORIES[name]).parameters:
            # Without this check the factory fails with a TypeError about a keyword.
            raise ValueError(f"policy spec {spec!r}: {name!r} takes no ':<argument>'; "
                             f"write {name!r}")
        return "registered", name, arg
    if arg:
        return "module", name, arg
    raise ValueError(f"unknown policy spec {spec!r}; valid: {', '.join(policy_names())}")


def _ensure_builtins() -> None:
    """Register the built-in bots once, whatever was registered before."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    # Set before the import: `bots` registers through `register_policy`, which comes back here.
    _BUILTINS_LOADED = True
    try:
        from cf_env.agents import bots  # noqa: F401  (registers the built-in bots)
    except BaseException:
        _BUILTINS_LOADED = False  # a failed import is retried (and raises again) next time
        raise
