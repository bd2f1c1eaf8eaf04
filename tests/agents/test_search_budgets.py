"""Search budgets are bounded: `ismcts:`, `guided:`, `lookahead:` and `belief:` refuse an
iteration count or a time budget above their bounds when the spec is built, and their
constructors refuse the same values from Python callers, with messages giving the range; the
bounds themselves are accepted (no decision is run at that size)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from cf_env import ChickenFootConfig
from cf_env.agents.ismcts import MAX_ITERATIONS, MAX_MS, ISMCTSPolicy, NetworkGuide
from cf_env.agents.lookahead import MAX_DETERMINIZATIONS, LookaheadPolicy
from cf_env.agents.policies import load_policy, validate_policy_spec

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "checkpoints" / "selfplay-4p-d9-v3")  # an actor and a value head
D9 = ChickenFootConfig()


def test_the_bounds_are_the_documented_values():
    assert (MAX_ITERATIONS, MAX_MS, MAX_DETERMINIZATIONS) == (100_000, 60_000.0, 10_000)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("ismcts:1000000000000", "iterations must be a positive int, at most 100000"),
        ("ismcts:100001", "iterations must be a positive int, at most 100000"),
        ("ismcts:" + "9" * 5000, "iterations must be a positive int, at most 100000"),
        ("ismcts:ms=60001", "ms must be a positive number of milliseconds, at most 60000"),
        ("ismcts:ms=1e12", "at most 60000"),
        ("ismcts:ms=inf", "at most 60000"),
        ("ismcts:ms=nan", "at most 60000"),
        (f"guided:{CKPT}:1000000000000", "iterations must be a positive int, at most 100000"),
        (f"guided:{CKPT}:ms=1e12", "at most 60000"),
        (f"lookahead:{CKPT}:1000000000000", "iterations must be a positive int, at most 10000;"),
        (f"lookahead:{CKPT}:10001", "at most 10000;"),
        (f"lookahead:{CKPT}:ms=60001", "at most 60000"),
        (f"belief:{CKPT}:1000000000000", "iterations must be a positive int, at most 10000;"),
        (f"belief:{CKPT}:ms=1e12", "at most 60000"),
        # Checked before the checkpoint is read: no such checkpoint, yet the budget is named.
        ("guided:no/such/checkpoint:1000000000000", "at most 100000"),
        ("belief:no/such/checkpoint:1000000000000", "at most 10000;"),
    ],
)
def test_a_budget_above_the_bound_is_refused_when_the_spec_is_built(spec, message):
    with pytest.raises(ValueError, match=message):
        load_policy(spec, D9, 0)
    with pytest.raises(ValueError, match=message):
        validate_policy_spec(spec, D9)


def test_the_bounds_themselves_are_accepted_by_every_spec():
    # Built only: no decision is run at these sizes.
    assert load_policy(f"ismcts:{MAX_ITERATIONS}", D9, 0).iterations == MAX_ITERATIONS
    assert load_policy("ismcts:ms=60000", D9, 0).ms == MAX_MS
    assert load_policy(f"guided:{CKPT}:{MAX_ITERATIONS}", D9, 0).iterations == MAX_ITERATIONS
    assert load_policy(f"guided:{CKPT}:ms=60000", D9, 0).ms == MAX_MS
    for name in ("lookahead", "belief"):
        assert load_policy(f"{name}:{CKPT}:{MAX_DETERMINIZATIONS}", D9, 0).iterations == MAX_DETERMINIZATIONS
        assert load_policy(f"{name}:{CKPT}:ms=60000", D9, 0).ms == MAX_MS


@pytest.mark.parametrize(
    "iterations, ms, message",
    [
        (10**12, None, r"ismcts iterations must be a positive int, at most 100000; got 1000000000000"),
        (MAX_ITERATIONS + 1, None, "at most 100000; got 100001"),
        (10**400, None, "at most 100000; got an int of 1329 bits"),
        (0, None, "at most 100000; got 0"),
        (True, None, "got True"),
        (5.0, None, "got 5.0"),
        ("5", None, "got a str"),
        (200, 1e12, r"ismcts ms must be a positive number of milliseconds, at most 60000; got 1000000000000.0"),
        (200, math.inf, "got inf"),
        (200, math.nan, "got nan"),
        (200, 0, "got 0"),
        (200, "100", "got a str"),
    ],
)
def test_the_ismcts_constructor_refuses_what_the_spec_refuses(iterations, ms, message):
    with pytest.raises(ValueError, match=message):
        ISMCTSPolicy(D9, 0, iterations=iterations, ms=ms)


def test_the_ismcts_constructor_accepts_the_bounds_and_numpy_ints():
    policy = ISMCTSPolicy(D9, 0, iterations=np.int64(MAX_ITERATIONS), ms=MAX_MS)
    assert policy.iterations == MAX_ITERATIONS and type(policy.iterations) is int
    assert policy.ms == MAX_MS


def test_the_lookahead_constructor_bounds_its_determinizations():
    guide = NetworkGuide(load_policy(f"ppo:{CKPT}", D9, 0), D9)
    value = load_policy(f"lookahead:{CKPT}", D9, 0).value
    with pytest.raises(ValueError, match="lookahead iterations must be a positive int, at most 10000; got 10001"):
        LookaheadPolicy(D9, 0, guide, value, determinizations=MAX_DETERMINIZATIONS + 1)
    with pytest.raises(ValueError, match="lookahead ms must be .* at most 60000"):
        LookaheadPolicy(D9, 0, guide, value, ms=MAX_MS * 2)
    policy = LookaheadPolicy(D9, 0, guide, value, determinizations=MAX_DETERMINIZATIONS)
    assert policy.iterations == MAX_DETERMINIZATIONS


def test_rollout_net_must_be_a_count():
    for bad in (-1, 1.5, True, "4"):
        with pytest.raises(ValueError, match="rollout_net must be an int >= 0"):
            ISMCTSPolicy(D9, 0, rollout_net=bad)
