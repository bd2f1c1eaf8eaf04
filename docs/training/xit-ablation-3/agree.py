"""How often the lookahead's move is the shipped actor's, and what the actor gives it.

    python docs/training/xit-ablation-3/agree.py DETERMINIZATIONS [DECISIONS]

Over the real choices (two or more legal moves) of seeded games of greedy and random seats
(`tests/positions.decisions`, seeds from 21 on, every choice), until DECISIONS (default 400):
the share where `lookahead:checkpoints/selfplay-4p-d9:<n>`'s best move (`root_statistics`, the
"best" target's argmax) is the actor's argmax, the mean and median value gap between the two
moves, and the mean cross-entropy −log π(best) the "best" target starts the distillation at.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from positions import decisions  # noqa: E402

from cf_env import ChickenFootConfig  # noqa: E402
from cf_env.agents.checkpoint import load_value_head  # noqa: E402
from cf_env.agents.ismcts import NetworkGuide  # noqa: E402
from cf_env.agents.lookahead import LookaheadPolicy  # noqa: E402
from cf_env.agents.policies import load_policy  # noqa: E402

CHECKPOINT = "checkpoints/selfplay-4p-d9"


def main() -> None:
    determinizations = int(sys.argv[1])
    wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    config = ChickenFootConfig().replace(num_rounds=1)
    actor = load_policy(f"ppo:{CHECKPOINT}", config, 0)
    guide = NetworkGuide(actor, config)
    search = LookaheadPolicy(config, 1, guide, load_value_head(CHECKPOINT, config),
                             determinizations)
    agree, gaps, losses = [], [], []
    games = (decisions(config, seed=s, share=1.0) for s in itertools.count(21))
    for _, obs in itertools.chain.from_iterable(games):
        mask = obs["action_mask"].astype(bool)
        prior = np.array(guide.prior(np.asarray(obs["observation"], np.float32),
                                     np.flatnonzero(mask).tolist()))
        visits, totals = search.root_statistics(obs)
        q = np.where(mask, totals / np.maximum(visits, 1), -np.inf)
        mine, best = int(prior.argmax()), int(q.argmax())
        agree.append(mine == best)
        gaps.append(q[best] - q[mine])
        losses.append(-np.log(prior[best]))
        if len(agree) >= wanted:
            break
    print(f"{len(agree)} decisions, {determinizations} determinizations: agreement "
          f"{np.mean(agree):.3f}, value gap mean {np.mean(gaps):.4f} median {np.median(gaps):.4f}, "
          f"-log pi(best) {np.mean(losses):.3f}")


if __name__ == "__main__":
    main()
