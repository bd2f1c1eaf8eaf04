"""Expert iteration's targets: the policy a root search's statistics say the actor should play.

Both forms take one decision's root statistics (`ISMCTSPolicy.root_statistics`: visits N(a) and
total reward per legal action, the mover's zero-sum round rewards in points_scale units), the
actor's prior π (its masked softmax) and the legal mask, and return an (A,) float32 distribution
with mass on legal actions only (`selfplay.search_target` picks the form):

* **"visits"**: N(a)^(1/T) normalised (T = `selfplay.search_temperature`). At a PUCT root the
  visits follow the prior closely at small budgets, so the target moves little from π.
* **"improved"**: Gumbel MuZero's improved policy (Danihelka et al., 2022, "Policy improvement
  by planning with Gumbel", eq. 11), softmax(log π(a) + σ(q̂(a))) with
  σ(q) = (C_VISIT + max_b N(b)) · scale · q, where q̂(a) is the action's mean reward Q(a) if
  it was visited and otherwise the prior-weighted mean of the visited ones' (the paper's
  v_mix without a value head: the search has none). Q is used in reward units, not min-max
  normalised over the root's children: that would stretch the gap between two equally good
  moves to a full unit. `scale` = `selfplay.search_scale`. The improvement is over π itself, so
  it holds at any budget: an action the search found better gains mass in proportion to how
  much better and how often it was tried.

* **"best"**: all mass on the visited legal action(s) with the highest mean reward Q(a), split
  evenly among ties: the move `lookahead:` plays, for the flat search
  (`LookaheadPolicy.root_statistics`, every move scored on the same determinizations).

`TargetPlayer` plays by a target (its argmax, or a sample from it), with a checkpoint's actor as
the prior: how strong the target is as a policy, which is what distillation can at best reach;
docs/training/xit-targets/ measures the forms with it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cf_env.core.config import ChickenFootConfig
from training.config import SEARCH_PLAYS, SEARCH_TARGETS

C_VISIT = 50.0  # the paper's c_visit: σ's scale grows with the visits the best action had


def visit_target(visits: np.ndarray, mask: np.ndarray, prior: np.ndarray,
                 temperature: float) -> np.ndarray:
    """N(a)^(1/temperature) over the legal actions, normalised; the prior if nothing was
    visited."""
    legal = mask.astype(bool)
    weights = np.where(legal, visits.astype(np.float64), 0.0) ** (1.0 / temperature)
    if weights.sum() <= 0:
        weights = np.where(legal, prior, 0.0)
    return (weights / weights.sum()).astype(np.float32)


def improved_target(visits: np.ndarray, totals: np.ndarray, mask: np.ndarray,
                    prior: np.ndarray, scale: float) -> np.ndarray:
    """softmax over the legal actions of log π(a) + (C_VISIT + max N) · scale · q̂(a) (module
    docstring)."""
    legal = mask.astype(bool)
    seen = legal & (visits > 0)
    p = np.where(legal, np.maximum(prior, 1e-12), 0.0)
    q = np.zeros(visits.shape, np.float64)
    q[seen] = totals[seen] / visits[seen]
    if seen.any():
        q[legal & ~seen] = float((p[seen] * q[seen]).sum() / p[seen].sum())
    sigma = (C_VISIT + float(visits[legal].max(initial=0))) * scale * q
    z = np.full(visits.shape, -np.inf)
    z[legal] = np.log(p[legal]) + sigma[legal]
    z -= z[legal].max()
    out = np.exp(z)
    return (out / out.sum()).astype(np.float32)


def best_target(visits: np.ndarray, totals: np.ndarray, mask: np.ndarray,
                prior: np.ndarray) -> np.ndarray:
    """Uniform over the visited legal actions of highest mean reward; the prior if none was
    visited."""
    seen = mask.astype(bool) & (visits > 0)
    if not seen.any():
        return visit_target(visits, mask, prior, 1.0)
    q = np.full(visits.shape, -np.inf)
    q[seen] = totals[seen] / visits[seen]
    top = (q == q.max()).astype(np.float64)
    return (top / top.sum()).astype(np.float32)


def search_target(form: str, visits: np.ndarray, totals: np.ndarray, mask: np.ndarray,
                  prior: np.ndarray, temperature: float, scale: float) -> np.ndarray:
    """The target of `form` ("visits", "improved" or "best") from one root's statistics."""
    if form == "visits":
        return visit_target(visits, mask, prior, temperature)
    if form == "best":
        return best_target(visits, totals, mask, prior)
    check_form(form)
    return improved_target(visits, totals, mask, prior, scale)


def check_form(form: str) -> None:
    """ValueError naming the valid forms when `form` is not one of them."""
    if form not in SEARCH_TARGETS:
        raise ValueError(f"search target must be one of {', '.join(SEARCH_TARGETS)}; got {form!r}")


class TargetPlayer:
    """Plays by a search target: `checkpoint`'s actor as the root prior, `iterations` of its
    guided search (rollouts by the `rollout` rule, ISMCTS's "follow" or "greedy"), then the target's argmax
    (`play="argmax"`) or a sample from it ("sample")."""

    def __init__(self, config: ChickenFootConfig, seed: int | None = None, *,
                 checkpoint: str, iterations: int, form: str = "improved",
                 temperature: float = 1.0, scale: float = 0.1, play: str = "sample",
                 rollout: str = "follow"):
        if play not in SEARCH_PLAYS:
            raise ValueError(f"play must be one of {', '.join(SEARCH_PLAYS)}; got {play!r}")
        check_form(form)  # before any search
        from cf_env.agents.checkpoint import load_ppo_policy
        from cf_env.agents.ismcts import ISMCTSPolicy, NetworkGuide

        network = load_ppo_policy(checkpoint, config=config, seed=seed)
        self.guide = NetworkGuide(network, config, label=checkpoint)
        self.search = ISMCTSPolicy(config, seed, iterations=iterations, guide=self.guide,
                                   rollout=rollout)
        self.rng = np.random.default_rng(seed)
        self.form, self.temperature, self.scale, self.play = form, temperature, scale, play

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        mask = np.asarray(observation["action_mask"]).astype(bool)
        legal = np.flatnonzero(mask)
        if legal.size == 1:
            return int(legal[0])
        vector = np.asarray(observation["observation"], np.float32)
        prior = np.asarray(self.guide.prior(vector, legal.tolist()), np.float64)
        visits, totals = self.search.root_statistics(observation, prior)
        target = search_target(self.form, visits, totals, mask, prior, self.temperature,
                               self.scale).astype(np.float64)
        if self.play == "argmax":
            return int(target.argmax())
        return int(self.rng.choice(target.size, p=target / target.sum()))
