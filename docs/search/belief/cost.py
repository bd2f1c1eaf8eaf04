"""CPU time per decision of a search spec (the search agents' target: ≤ 100 ms): eight seeded
single rounds of 4 players double-9, the spec at seat 0 and `ppo:checkpoints/selfplay-4p-d9` at the others.

    python docs/search/belief/cost.py belief:checkpoints/selfplay-4p-d9:64

Prints the mean, median and longest CPU time of the real choices (more than one legal action),
how many took over 100 ms, and the mean of the forced decisions the spec asks for (`belief:`
follows the round through them)."""

from __future__ import annotations

import sys
import time

import numpy as np

from cf_env.agents.policies import load_policy
from cf_env.core.actions import actions_in
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder

CFG = ChickenFootConfig(num_rounds=1)


def main(spec: str) -> None:
    real, forced = [], []
    for game in range(8):
        engine, encoder = Engine(CFG, seed=500 + game), Encoder(CFG)
        me = load_policy(spec, CFG, game)
        opponents = [load_policy("ppo:checkpoints/selfplay-4p-d9", CFG, game + k) for k in range(3)]
        while not engine.game_over:
            seat, legal = engine.current, engine.legal_bits()
            obs = {"observation": encoder.observe(engine, seat), "action_mask": engine.legal_action_mask()}
            choice = bool(legal & (legal - 1))
            if seat == 0 and (choice or getattr(me, "ask_forced", False)):
                start = time.process_time()
                action = me.act(obs)
                (real if choice else forced).append(1000 * (time.process_time() - start))
            elif choice:
                action = (me if seat == 0 else opponents[seat - 1]).act(obs)
            else:
                action = actions_in(legal)[0]
            engine.step(action)
    ms = np.array(real)
    print(f"{spec}: {ms.size} real decisions, mean {ms.mean():.1f} ms, median {np.median(ms):.1f}, "
          f"longest {ms.max():.1f}, {(ms > 100).sum()} over 100 ms; {len(forced)} forced decisions "
          f"asked, mean {np.mean(forced) if forced else 0.0:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
