import numpy as np, sys
from cf_env.core.config import ChickenFootConfig
from cf_env.agents.policies import load_policy
from cf_env.envs.env import raw_env
from threadpoolctl import threadpool_limits
cfg = ChickenFootConfig()
ck = sys.argv[1] if len(sys.argv) > 1 else "/tmp/wb3-32m"
opp = load_policy("ppo:checkpoints/selfplay-4p-d9", cfg, seed=0)
env = raw_env(); positions = []
for s in range(40):
    env.reset(seed=100 + s)
    for agent in env.agent_iter():
        obs, r, term, trunc, _ = env.last()
        if term or trunc: env.step(None); continue
        a = opp.act(obs)
        if agent == "player_0" and obs["action_mask"].sum() > 1: positions.append({k: v.copy() for k, v in obs.items()})
        env.step(a)
positions = positions[::2][:120]
ref = load_policy(f"lookahead:{ck}:16", cfg, seed=7)
def values(pol, obs, n):
    legal = np.flatnonzero(obs["action_mask"]).tolist()
    _, sampler, root, work, hand = pol._position(obs)
    with threadpool_limits(1):
        v = sum(pol._chunk(root, work, sampler, hand, legal, 16) for _ in range(n // 16))
    return legal, v / n
refs = [values(ref, p, 1024) for p in positions]
def regret(choices):
    return np.mean([v.max() - v[legal.index(c)] for (legal, v), c in zip(refs, choices)])
print("actor regret", regret([opp.act(p) for p in positions]))
for n in (32, 64, 128, 256):
    pol = load_policy(f"lookahead:{ck}:{n}", cfg, seed=1)
    print(n, "regret", regret([pol.act(p) for p in positions]))
