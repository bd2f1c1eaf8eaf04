"""How close `belief:`'s determinizations come to the opponents' real hands.

Seeded single rounds of 4 players double-9: `belief:<checkpoint>:4` at seat 0 (its evidence
follows the round through every decision of seat 0), three `ppo:<checkpoint>` after it. At each
real choice of seat 0 with evidence, 64 determinizations are drawn three ways, and each way's
tile-holding marginals (the share of its deals that give opponent k tile t) are scored against
the real hands by the Brier score over the unseen tiles (lower is better):

* `uniform`: 64 fresh deals, uniform over the consistent ones (`lookahead:`'s);
* `resampled`: 64 drawn from 256 fresh deals in proportion to their likelihood (importance
  resampling; tried first, and weaker than `uniform`: the posterior is so peaked that 256
  uniform deals hold only a few that matter);
* `metropolis`: `belief:`'s, `OpponentEvidence.posterior` with the `LookaheadPolicy.MCMC_*`
  settings (32 chains of 24 steps, two states each).

It prints the mean score of each, the differences from `uniform` with 95% intervals, how much
more likely the real deal is than the uniform ones (mean log-likelihood gap), and the CPU time of
`posterior`. `python docs/search/belief/posterior.py [games]`
"""

from __future__ import annotations

import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from cf_env.agents.lookahead import LookaheadPolicy
from cf_env.agents.policies import load_policy
from cf_env.core.actions import actions_in
from cf_env.core.config import ChickenFootConfig
from cf_env.core.deals import DealSampler
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder

CKPT = "checkpoints/selfplay-4p-d9"
CFG = ChickenFootConfig(num_rounds=1)


def brier(deals, truth: np.ndarray, unseen: np.ndarray) -> float:
    share = np.zeros_like(truth)
    for hands in deals:
        for k, hand in enumerate(hands):
            share[k, hand] += 1.0 / len(deals)
    return float(((share - truth)[:, unseen] ** 2).sum())


def main(games: int) -> None:
    encoder, rng = Encoder(CFG), np.random.default_rng(0)
    scores = {"uniform": [], "resampled": [], "metropolis": []}
    gaps, seconds = [], []
    for game in range(games):
        engine = Engine(CFG, seed=2000 + game)
        me = load_policy(f"belief:{CKPT}:4", CFG, game)
        opponents = [load_policy(f"ppo:{CKPT}", CFG, game + k) for k in range(3)]
        while not engine.game_over:
            seat, legal = engine.current, engine.legal_bits()
            obs = {"observation": encoder.observe(engine, seat), "action_mask": engine.legal_action_mask()}
            if seat:
                engine.step(opponents[seat - 1].act(obs) if legal & (legal - 1) else actions_in(legal)[0])
                continue
            action = me.act(obs)
            evidence = me.evidence
            if legal & (legal - 1) and evidence.count:
                state = me.decoder.decode(obs["observation"])
                sampler = DealSampler.from_state(state, me.tables, rng)
                truth = np.zeros((3, CFG.num_tiles))
                for k in range(3):
                    truth[k, engine.hand(k + 1)] = 1.0
                unseen = ~(state.hand | state.table)
                uniform = [sampler.sample() for _ in range(64)]
                scores["uniform"].append(brier([h for h, _ in uniform], truth, unseen))
                pool = [sampler.sample()[0] for _ in range(256)]
                log_w = evidence.log_weights(pool)
                p = np.exp(log_w - log_w.max())
                picks = rng.choice(len(pool), size=64, p=p / p.sum())
                scores["resampled"].append(brier([pool[i] for i in picks], truth, unseen))
                gaps.append(evidence.log_weights([[engine.hand(k) for k in range(1, 4)]])[0]
                            - log_w.mean())
                start = time.process_time()
                chains = evidence.posterior(uniform[:32], sampler, LookaheadPolicy.MCMC_STEPS, rng,
                                            LookaheadPolicy.MCMC_KEEP, LookaheadPolicy.MCMC_EVERY)
                seconds.append(time.process_time() - start)
                scores["metropolis"].append(brier([h for h, _ in chains], truth, unseen))
            engine.step(action)
    base = np.array(scores["uniform"])
    print(f"{base.size} decisions with evidence, {games} rounds")
    for name, values in scores.items():
        d = np.array(values) - base
        half = 1.96 * d.std(ddof=1) / np.sqrt(d.size)
        print(f"{name:>10}: Brier {np.mean(values):.3f}   minus uniform {d.mean():+.3f} [{d.mean() - half:+.3f}, {d.mean() + half:+.3f}]")
    print(f"the real deal's log-likelihood minus the uniform deals' mean: {np.mean(gaps):.1f} (median {np.median(gaps):.1f})")
    print(f"posterior: {1000 * np.mean(seconds):.1f} ms of CPU per decision (median {1000 * np.median(seconds):.1f})")


if __name__ == "__main__":
    with threadpool_limits(1):
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
