"""The policy protocol and policy specs — how bots, checkpoints and user code are named and built.

A policy is any object with ``act(observation) -> int`` that, given an agent's observation dict
(``{"observation": ..., "action_mask": ...}`` as the env returns it), returns a legal action.
Policies may keep state within a game; ``reset()``, if defined, is called before each game.

Two conventions shared by everything that drives policies (the single-agent adapter
`cf_env.envs.single_agent` and `training.evaluate`):

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

Specs (used by every CLI) are the table `POLICY_SPECS` — ``random``, ``greedy``, ``heuristic``,
``ismcts[:<iterations> | :ms=<milliseconds>]``, ``guided:<checkpoint
path>[:<iterations> | :ms=<milliseconds>]``, ``lookahead:<checkpoint path>[:<determinizations>
| :ms=<milliseconds>]``, ``belief:`` (the same forms), ``br:<target>[:<determinizations> |
:ms=<milliseconds>]`` (a search best response to a bot or ``ppo:`` target), ``ppo:<checkpoint
path>`` — plus ``some.module:factory``
for user code and the names `register_policy` adds. Search budgets are bounded, in the spec
and in the constructor alike: at most 100,000 iterations (`cf_env.agents.ismcts.MAX_ITERATIONS`)
or 10,000 determinizations (`cf_env.agents.lookahead.MAX_DETERMINIZATIONS`), and at most
``ms=60000`` (`cf_env.agents.ismcts.MAX_MS`); a larger one is a `ValueError` naming the bound.
A spec is ``name`` or ``name:<arg>``; its factory is called as
``factory(config=ChickenFootConfig, seed=int | None)``, with ``arg=<arg>`` when the spec has
one, and returns a policy. The table names each built-in factory by its
"module:function" path, imported when a policy is built (never per decision): this module
imports no agent (a bot is loaded only when asked for), and the agents the table names (bots,
search, checkpoint reader) import nothing from it. `load_policy` is the one public function that
turns a spec into a policy; `validate_policy_spec` builds one through it to check a spec up
front (e.g. before a training run starts).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce
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


@dataclass(frozen=True)
class PolicySpec:
    """One spec name: its factory ("module:function" path or a callable), whether it takes
    ``:<arg>``, how it is written, what it plays, and (for a spec that plays a checkpoint) the
    function, path or callable, that reads the checkpoint's path from the arg."""

    factory: str | PolicyFactory
    takes_arg: bool
    form: str
    description: str
    checkpoint: str | Callable[[str], str] | None = None


# The built-in specs. `ppo` plays a checkpoint alone; `guided` searches with one (both read it
# with `cf_env.agents.checkpoint`). A user's `register_policy` may replace any name but `ppo`.
POLICY_SPECS: dict[str, PolicySpec] = {
    "random": PolicySpec("cf_env.agents.bots:RandomPolicy", False, "random",
                         "uniform over the legal actions"),
    "greedy": PolicySpec("cf_env.agents.bots:GreedyPolicy", False, "greedy",
                         "the legal tile with the most points"),
    "heuristic": PolicySpec("cf_env.agents.bots:HeuristicPolicy", False, "heuristic",
                            "a hand-written strategy reading the player's observation"),
    "ismcts": PolicySpec("cf_env.agents.ismcts:ISMCTSPolicy.from_spec", True,
                         "ismcts[:<iterations> | :ms=<milliseconds>]",
                         "determinized information-set MCTS"),
    "guided": PolicySpec("cf_env.agents.ismcts:guided_from_spec", True,
                         "guided:<checkpoint>[:<iterations> | :ms=<milliseconds>]",
                         "the same search with a checkpoint's policy as its root prior",
                         checkpoint="cf_env.agents.ismcts:guided_checkpoint"),
    "lookahead": PolicySpec("cf_env.agents.lookahead:lookahead_from_spec", True,
                            "lookahead:<checkpoint>[:<determinizations> | :ms=<milliseconds>]",
                            "one move deep over determinizations, scored by a checkpoint's "
                            "value head",
                            checkpoint="cf_env.agents.ismcts:guided_checkpoint"),
    "belief": PolicySpec("cf_env.agents.lookahead:belief_from_spec", True,
                         "belief:<checkpoint>[:<determinizations> | :ms=<milliseconds>]",
                         "lookahead with determinizations weighted by how likely the "
                         "checkpoint's actor was to make the opponents' moves",
                         checkpoint="cf_env.agents.ismcts:guided_checkpoint"),
    "br": PolicySpec("cf_env.agents.best_response:br_from_spec", True,
                     "br:<target>[:<determinizations> | :ms=<milliseconds>]",
                     "search best response to a fixed target (random, greedy, heuristic or "
                     "ppo:<checkpoint>): each move played out with the target on every seat",
                     checkpoint="cf_env.agents.best_response:br_checkpoint"),
    "ppo": PolicySpec("cf_env.agents.checkpoint:ppo_policy", True, "ppo:<checkpoint>",
                      "a weights-only checkpoint's network, argmax over the legal actions",
                      checkpoint=str),  # the arg is the path
}
# User code: any spec `module:attr` whose name is no spec name above.
MODULE_SPEC = PolicySpec("", True, "module:factory",
                         "factory(config=..., seed=...) from an importable module")

# The specs in force: the table, then what `register_policy` added or replaced.
_SPECS: dict[str, PolicySpec] = dict(POLICY_SPECS)


def register_policy(name: str, factory: PolicyFactory) -> None:
    """Make `name` (or `name:<arg>`) a spec; the factory gets config, seed and arg (if any).

    A user's spec of a built-in name replaces the built-in one."""
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
    takes_arg = "arg" in inspect.signature(factory).parameters
    _SPECS[name] = PolicySpec(factory, takes_arg, f"{name}:<arg>" if takes_arg else name,
                              "registered with register_policy")


def policy_names() -> list[str]:
    """The spec names in force, sorted, then the forms ``ppo:<checkpoint>`` and ``module:factory``."""
    return sorted(name for name in _SPECS if name != "ppo") + ["ppo:<checkpoint>", "module:factory"]


def policy_specs() -> list[PolicySpec]:
    """Every spec form in force (the table, registered names, and ``module:factory``), for help."""
    return [*_SPECS.values(), MODULE_SPEC]


def load_policy(spec: str, config: ChickenFootConfig | None = None,
                seed: int | None = None) -> Policy:
    """Build the policy a spec names, for `config` (None: the default game, `ChickenFootConfig()`).

    Raises `ValueError` naming the spec and the valid forms (with the nearest name for a typo);
    a checkpoint that is missing or bad is a `CheckpointError` (`cf_env.agents.checkpoint`, a
    `ValueError` subclass: `CheckpointNotFoundError` for a path with no checkpoint)."""
    if config is None:
        config = ChickenFootConfig()
    elif not isinstance(config, ChickenFootConfig):
        raise ValueError(f"load_policy({spec!r}, config): config must be a ChickenFootConfig or "
                         f"None (the default game); got {type(config).__name__}")
    name, arg, entry = _parse_spec(spec)
    if entry is not None:
        factory = _resolve(entry.factory)
        return factory(config=config, seed=seed, arg=arg) if arg else factory(config=config, seed=seed)
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        raise ValueError(f"policy spec {spec!r}: cannot import module {name!r} ({err})"
                         + _nearest_name(name)) from err
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
    entry = _SPECS.get(name)
    if entry is None or entry.checkpoint is None or not arg:
        return None
    return _resolve(entry.checkpoint)(arg) or None


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


def _parse_spec(spec: str) -> tuple[str, str, PolicySpec | None]:
    """Split a spec into (name, arg, its entry); the entry is None for a `module:attr` spec.
    Checks the form, not whether what it names exists."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"a policy spec is a non-empty string; got {spec!r}")
    name, _, arg = spec.partition(":")
    if name == "ppo" and not arg:
        raise ValueError("policy spec 'ppo:' needs a checkpoint path, e.g. ppo:checkpoints/x")
    entry = _SPECS.get(name)
    if entry is not None:
        if arg and not entry.takes_arg:
            # Without this check the factory fails with a TypeError about a keyword.
            raise ValueError(f"policy spec {spec!r}: {name!r} takes no ':<argument>'; "
                             f"write {name!r}")
        return name, arg, entry
    if arg:
        return name, arg, None
    raise ValueError(f"unknown policy spec {spec!r}; valid: {', '.join(policy_names())}"
                     + (_checkpoint_hint(spec) or _nearest_name(name)))


def _nearest_name(name: str) -> str:
    """"; did you mean 'heuristic'?" for a mistyped spec name, else ""."""
    names = [n for n in _SPECS if n != "ppo"] + ["ppo"]
    close = difflib.get_close_matches(name, names, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _checkpoint_hint(spec: str) -> str:
    """A hint for a checkpoint path given without `ppo:` (a folder, or a name with a slash)."""
    looks = os.sep in spec or "/" in spec or os.path.isdir(spec)
    return f"; a checkpoint is played as ppo:<path>: did you mean 'ppo:{spec}'?" if looks else ""


def _resolve(function: str | Callable) -> Callable:
    """A table entry's function: the callable itself, or the one its "module:qualname" path
    names (importing the module; once imported, a dictionary lookup)."""
    if callable(function):
        return function
    module, _, qualname = function.partition(":")
    return reduce(getattr, qualname.split("."), importlib.import_module(module))
