"""The self-play opponent pool: baseline bots plus frozen past snapshots of the learner.

Each opponent seat of a new game draws independently: a bot spec with its configured weight, or
one of the most recent `max_snapshots` snapshots, which share `snapshot_weight` evenly. Training
adds a snapshot every `opponents.snapshot_every` learner steps (`add_snapshot`, reached in every
env through `VecEnv.env_method("call_opponents", "add_snapshot", path)`). Snapshots play through
the numpy actor (`cf_env.agents.checkpoint.NumpyPolicy`), so they cost little more than a bot.

The pool is picklable (specs and paths only; policies are built lazily inside each env process)
and implements `cf_env.envs.single_agent.OpponentSampler`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from cf_env.agents.checkpoint import load_ppo_policy
from cf_env.agents.policies import Policy, load_policy
from cf_env.core.config import ChickenFootConfig


def pool_entries(bots: Mapping[str, float], snapshots: Sequence[str],
                 snapshot_weight: float) -> tuple[list[str], np.ndarray]:
    """An opponent pool's members (bot specs, then `snapshot:<path>`) and their probabilities:
    each bot its weight, the snapshots `snapshot_weight` split evenly, normalised. Shared by
    `OpponentPool` (the MaskablePPO path) and the self-play collector."""
    names = list(bots)
    weights = list(bots.values())
    if snapshots and snapshot_weight > 0:
        share = snapshot_weight / len(snapshots)
        names += [f"snapshot:{p}" for p in snapshots]
        weights += [share] * len(snapshots)
    probs = np.asarray(weights, dtype=np.float64)
    return names, probs / probs.sum()


class OpponentPool:
    def __init__(
        self,
        config: ChickenFootConfig,
        bots: Mapping[str, float],
        snapshot_weight: float = 0.0,
        max_snapshots: int = 8,
        snapshots: Sequence[str] = (),
        snapshot_greedy: bool = False,
    ):
        if int(max_snapshots) < 1:
            # `del snapshots[:-0]` deletes nothing: 0 would keep every snapshot, not none.
            raise ValueError(f"max_snapshots must be >= 1; got {max_snapshots} (a "
                             "snapshot_weight of 0 keeps snapshots out of play)")
        self.config = config
        self.bots = {str(k): float(v) for k, v in bots.items() if v > 0}
        self.snapshot_weight = float(snapshot_weight)
        self.max_snapshots = int(max_snapshots)
        self.snapshot_greedy = bool(snapshot_greedy)
        self.snapshots: list[str] = []
        for path in snapshots:
            self.add_snapshot(path)
        if not self.bots and not self.snapshots:
            raise ValueError("the opponent pool needs at least one bot with a positive weight")
        self._built: dict[tuple[int, str], Policy] = {}

    def add_snapshot(self, path: str) -> int:
        """Add a frozen learner (a checkpoint directory); returns the pool's snapshot count."""
        self.snapshots.append(str(path))
        del self.snapshots[: -self.max_snapshots]
        return len(self.snapshots)

    def entries(self) -> tuple[list[str], np.ndarray]:
        """The pool's current members (bot specs, `snapshot:<path>`) and their probabilities."""
        return pool_entries(self.bots, self.snapshots, self.snapshot_weight)

    def sample(self, rng: np.random.Generator, num: int) -> list[Policy]:
        names, probs = self.entries()
        out = []
        for slot in range(num):
            name = names[int(rng.choice(len(names), p=probs))]
            key = (slot, name)
            if key not in self._built:
                seed = int(rng.integers(2**31))
                if name.startswith("snapshot:"):
                    self._built[key] = load_ppo_policy(
                        name[len("snapshot:"):], config=self.config, seed=seed,
                        deterministic=self.snapshot_greedy,
                    )
                else:
                    self._built[key] = load_policy(name, self.config, seed=seed)
            out.append(self._built[key])
        if len(self._built) > 4 * (len(self.bots) + self.max_snapshots) * max(num, 1):
            # Snapshots that left the pool: drop their policies (memory stays bounded).
            live = set(names)
            self._built = {k: v for k, v in self._built.items() if k[1] in live}
        return out

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_built"] = {}
        return state
