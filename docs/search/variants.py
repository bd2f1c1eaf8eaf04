"""Guided-search variants compared to choose the `guided:` scheme (README "Policies").

Each is a `module:factory` spec with `docs/search` on PYTHONPATH, e.g.
`PYTHONPATH=docs/search python -m training.evaluate --agent variants:net4 ...`. The checkpoint is
`SEARCH_CKPT` (default checkpoints/selfplay-4p-d9-v2) and the budget `SEARCH_MS` milliseconds of CPU
time per decision (default 25), or `SEARCH_ITERATIONS` iterations when set.

* `plain`      — `ismcts` with greedy rollouts (no network).
* `root`       — PUCT prior at the root only, c = `SEARCH_C` (default 0.25), greedy rollouts.
* `root_c1`, `root_c01` — the same with c = 1 (the prior then decides most visits) and c = 0.1.
* `mine`       — priors also at every node where the searching player acts.
* `all`        — priors at every node (each computed once, from the first determinization there).
* `net4`       — root prior, and the network plays the first 4 real choices of each rollout.
* `plain_follow`, `root_follow` — `plain` and `root` with "follow" rollouts (greedy value + 3 per
  other tile in hand carrying the end the move opens, as the heuristic bot's W_FOLLOW).
* `root_follow_c01`, `net4_follow` — `root_follow` with c = 0.1, and with `net4`'s rollouts.

Lookahead variants (`lookahead:`, `cf_env/agents/lookahead.py`; the checkpoint is `LOOKAHEAD_CKPT`,
default checkpoints/selfplay-4p-d9-v3, which has a value head; `SEARCH_DETERMINIZATIONS`
determinizations per decision, default 64, or `SEARCH_MS` when that is set):

* `lookahead_h0` — the value head scores the position at my next choice (the `lookahead:` spec).
* `lookahead_h1` — the actor also makes my next choice; the value head scores the one after.
* `lookahead_end` — the actor plays every seat to the round's end (no value head: flat Monte
  Carlo with policy rollouts).
* `lookahead_h0_prior` — `lookahead_h0` choosing by mean value + `SEARCH_PRIOR_WEIGHT` (default
  0.05) × log P(move) under the actor.
* `belief` — `lookahead_h0` whose determinizations follow the posterior given the opponents'
  moves (the `belief:` spec, `cf_env/agents/belief.py`): Metropolis chains of `BELIEF_STEPS`
  steps, each giving its last `BELIEF_KEEP` states `BELIEF_EVERY` steps apart, the likelihood
  the actor's at `BELIEF_TEMPERATURE` (default 1) over each opponent's last `BELIEF_MAX_EVENTS`
  (default 8) plays from hand.

Every variant names its rollout rule and c, so it measures the same thing whatever the defaults.
"""

from __future__ import annotations

import os

from cf_env.agents.belief import OpponentEvidence
from cf_env.agents.checkpoint import load_value_head
from cf_env.agents.ismcts import ISMCTSPolicy, NetworkGuide
from cf_env.agents.lookahead import LookaheadPolicy
from cf_env.agents.policies import load_policy


def _budget() -> dict:
    if os.environ.get("SEARCH_ITERATIONS"):
        return {"iterations": int(os.environ["SEARCH_ITERATIONS"])}
    return {"ms": float(os.environ.get("SEARCH_MS", "25"))}


def _guided(config, seed, **options) -> ISMCTSPolicy:
    path = os.environ.get("SEARCH_CKPT", "checkpoints/selfplay-4p-d9-v2")
    guide = NetworkGuide(load_policy(f"ppo:{path}", config, seed), config, label=path)
    options.setdefault("puct", float(os.environ.get("SEARCH_C", "0.25")))
    options.setdefault("rollout", "greedy")
    return ISMCTSPolicy(config, seed, guide=guide, **_budget(), **options)


def plain(config, seed=None):
    return ISMCTSPolicy(config, seed, rollout="greedy", **_budget())


def root(config, seed=None):
    return _guided(config, seed)


def root_c1(config, seed=None):
    return _guided(config, seed, puct=1.0)


def root_c01(config, seed=None):
    return _guided(config, seed, puct=0.1)


def mine(config, seed=None):
    return _guided(config, seed, node_priors="mine")


def all(config, seed=None):  # noqa: A001  (the variant's name)
    return _guided(config, seed, node_priors="all")


def net4(config, seed=None):
    return _guided(config, seed, rollout_net=4)


def plain_follow(config, seed=None):
    return ISMCTSPolicy(config, seed, rollout="follow", **_budget())


def root_follow(config, seed=None):
    return _guided(config, seed, rollout="follow")


def root_follow_c01(config, seed=None):
    return _guided(config, seed, rollout="follow", puct=0.1)


def net4_follow(config, seed=None):
    return _guided(config, seed, rollout="follow", rollout_net=4)


def _lookahead(config, seed, horizon, prior_weight=0.0, belief=False):
    path = os.environ.get("LOOKAHEAD_CKPT", "checkpoints/selfplay-4p-d9-v3")
    guide = NetworkGuide(load_policy(f"ppo:{path}", config, seed), config, label=path)
    value = None if horizon is None else load_value_head(path, config)
    if os.environ.get("SEARCH_MS"):
        budget = {"ms": float(os.environ["SEARCH_MS"])}
    else:
        budget = {"determinizations": int(os.environ.get("SEARCH_DETERMINIZATIONS", "64"))}
    if belief:
        budget["evidence"] = OpponentEvidence(
            config, guide, temperature=float(os.environ.get("BELIEF_TEMPERATURE", "1")),
            max_events=int(os.environ.get("BELIEF_MAX_EVENTS", "8")))
    policy = LookaheadPolicy(config, seed, guide, value, horizon=horizon,
                             prior_weight=prior_weight, **budget)
    if belief:
        policy.MCMC_STEPS = int(os.environ.get("BELIEF_STEPS", policy.MCMC_STEPS))
        policy.MCMC_KEEP = int(os.environ.get("BELIEF_KEEP", policy.MCMC_KEEP))
        policy.MCMC_EVERY = int(os.environ.get("BELIEF_EVERY", policy.MCMC_EVERY))
    return policy


def lookahead_h0(config, seed=None):
    return _lookahead(config, seed, 0)


def lookahead_h1(config, seed=None):
    return _lookahead(config, seed, 1)


def lookahead_end(config, seed=None):
    return _lookahead(config, seed, None)


def lookahead_h0_prior(config, seed=None):
    return _lookahead(config, seed, 0, float(os.environ.get("SEARCH_PRIOR_WEIGHT", "0.05")))


def belief(config, seed=None):
    return _lookahead(config, seed, 0, belief=True)
