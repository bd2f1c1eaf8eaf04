"""Golden transcripts: fixed seeds must replay the recorded games exactly.

They pin the deal (R3/R5), the rules and the observation encoding across refactors. If a change
is *meant* to alter games or observations, regenerate with `python tests/test_golden.py --regenerate` and
bump OBSERVATION_VERSION when the observation changed.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import cf_env

GOLDEN = Path(__file__).parent / "golden" / "transcripts.json"
CASES = {
    "default": ({}, 0),
    "double12_8p_six_arms": ({"max_pips": 12, "num_players": 8, "spinner_arms": 6, "num_rounds": 2}, 1),
    "variants": (
        {"num_players": 3, "draw_until_playable": True, "must_play_drawn": True,
         "double_blank_value": 25, "skip_forced": True, "num_rounds": 4, "reward_mode": "score"},
        2,
    ),
}


def transcript(config: dict, seed: int) -> dict:
    env = cf_env.env(**config)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()
    actions, rewards = [], []
    for _agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        digest.update(obs["observation"].tobytes())
        digest.update(obs["action_mask"].tobytes())
        rewards.append(round(float(reward), 9))
        if term or trunc:
            env.step(None)
            continue
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        actions.append(action)
        env.step(action)
    engine = env.unwrapped.engine
    return {
        "actions": actions,
        "scores": engine.scores,
        "winners": engine.winners,
        "reward_sum": round(sum(rewards), 6),
        "observations_sha256": digest.hexdigest(),
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_transcript(name):
    expected = json.loads(GOLDEN.read_text())[name]
    got = transcript(*CASES[name])
    assert got["actions"] == expected["actions"]
    assert got["scores"] == expected["scores"]
    assert got == expected


if __name__ == "__main__" and "--regenerate" in sys.argv:
    GOLDEN.write_text(json.dumps({k: transcript(*v) for k, v in CASES.items()}, indent=None) + "\n")
    print(f"wrote {GOLDEN}")
