"""Determinism of the engine and the AEC env: the seed alone decides the game.

* The same seed gives the same game in another Python process, whatever its hash seed
  (`PYTHONHASHSEED` changes set/dict-of-str iteration order, a classic source of drift).
* Poking the global RNGs (`random`, `np.random`, `torch`) during a game changes nothing, and
  playing never consumes them (one RNG per object, seeded; never the global ones).
* `reset(seed)` followed by unseeded `reset()`s replays the same sequence of games.

* The vectorised training envs play the same episodes in SubprocVecEnv workers as in-process.

Determinism across evaluation worker counts is tested in test_evaluate.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import cf_env
from cf_env import ChickenFootConfig, Engine
from cf_env.core.config import split_options

CONFIGS = [
    {},  # the defaults: double-9, 4 players, 10 rounds
    {"max_pips": 6, "num_players": 3, "skip_forced": True, "reward_mode": "win"},
    {
        "max_pips": 12,
        "num_players": 5,
        "num_rounds": 2,
        "spinner_arms": 6,
        "draw_until_playable": True,
        "must_play_drawn": True,
        "reward_mode": "score",
    },
    # The R5 / R4 variants: a lower double may start a round; rounds run on to a target.
    {"max_pips": 6, "num_players": 2, "start_search": "lower_double", "target_score": 90},
]


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def play_transcript(
    config: dict,
    seed: int,
    policy_seed: int,
    games: int = 2,
    between_steps: Callable[[int], None] | None = None,
) -> dict:
    """Play `games` games through the AEC env (a seeded reset, then unseeded resets) with a
    seeded random policy; return everything observable as JSON-able data."""
    env = cf_env.env(**config)
    policy = np.random.default_rng(policy_seed)
    record: dict = {"games": []}
    step = 0
    for game in range(games):
        env.reset(seed=seed if game == 0 else None)
        turns = []
        for agent in env.agent_iter():
            if between_steps is not None:
                between_steps(step)
            obs, reward, term, trunc, info = env.last()
            turns.append(
                [
                    agent,
                    digest(obs["observation"]),
                    np.flatnonzero(obs["action_mask"]).tolist(),
                    reward,
                    term,
                    trunc,
                    info.get("round"),
                ]
            )
            if term or trunc:
                env.step(None)
            else:
                env.step(int(policy.choice(np.flatnonzero(obs["action_mask"]))))
            step += 1
        raw = env.unwrapped
        record["games"].append(
            {
                "turns": turns,
                "state": digest(raw.state()),
                "snapshot": raw.snapshot(),
                "scores": raw.engine.scores,
                "winners": raw.engine.winners,
            }
        )
    return json.loads(json.dumps(record))  # exactly what another process would print


def engine_transcript(config: dict, seed: int, policy_seed: int) -> dict:
    """The same for the bare engine (no env): every position's snapshot digest."""
    rules, options = split_options(config)
    engine = Engine(rules, seed=seed, skip_forced=options.skip_forced)
    policy = np.random.default_rng(policy_seed)
    positions = []
    while not engine.game_over:
        positions.append(hashlib.sha256(json.dumps(engine.snapshot()).encode()).hexdigest()[:16])
        engine.step(int(policy.choice(engine.legal_actions())))
    return {"positions": positions, "final": engine.snapshot()}


def transcripts() -> list:
    """What the subprocess runs and prints (and this process compares against)."""
    out = []
    for i, config in enumerate(CONFIGS):
        out.append(play_transcript(config, seed=100 + i, policy_seed=i))
        out.append(engine_transcript(config, seed=200 + i, policy_seed=i))
    return out


def run_in_subprocess(hash_seed: str) -> list:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from test_determinism import transcripts; print(json.dumps(transcripts()))"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_same_seed_same_game_across_processes_and_hash_seeds():
    here = transcripts()
    for hash_seed in ("0", "4242"):
        assert run_in_subprocess(hash_seed) == here, f"PYTHONHASHSEED={hash_seed}"


@pytest.mark.slow
def test_the_seed_matters():
    # Guards the test above: a seed that were ignored would make every transcript agree.
    a = play_transcript(CONFIGS[0], seed=1, policy_seed=0, games=1)
    b = play_transcript(CONFIGS[0], seed=2, policy_seed=0, games=1)
    assert a["games"][0]["snapshot"]["history"] != b["games"][0]["snapshot"]["history"]
    assert engine_transcript({}, 1, 0) != engine_transcript({}, 2, 0)


def poke_global_rngs(step: int) -> None:
    """Reseed and draw from every global RNG a user's code might touch."""
    torch = pytest.importorskip("torch", reason="torch's global RNG: the train extra")

    random.seed(step)
    random.random()
    random.shuffle(list(range(10)))
    np.random.seed(step % 2**32)
    np.random.random(5)
    np.random.permutation(10)
    torch.manual_seed(step)
    torch.rand(3)
    torch.randint(0, 10, (4,))


@pytest.mark.slow
def test_poking_global_rngs_mid_game_changes_nothing():
    for i, config in enumerate([{"num_rounds": 3}, CONFIGS[1]]):
        quiet = play_transcript(config, seed=7 + i, policy_seed=i)
        poked = play_transcript(config, seed=7 + i, policy_seed=i, between_steps=poke_global_rngs)
        assert poked == quiet


def test_playing_never_consumes_the_global_rngs():
    torch = pytest.importorskip("torch", reason="torch's global RNG: the train extra")

    random.seed(3)
    np.random.seed(3)
    torch.manual_seed(3)
    before = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    play_transcript(CONFIGS[1], seed=5, policy_seed=5, games=2)
    engine_transcript(CONFIGS[2], seed=5, policy_seed=5)
    engine = Engine(ChickenFootConfig(), seed=None)  # even unseeded: fresh OS entropy
    engine.reset()
    after = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    assert after[0] == before[0]
    assert all(np.array_equal(x, y) for x, y in zip(after[1], before[1]))
    assert torch.equal(after[2], before[2])


def test_same_seed_same_games_in_one_process_and_across_env_instances():
    for config in CONFIGS:
        first = play_transcript(config, seed=11, policy_seed=3, games=3)
        second = play_transcript(config, seed=11, policy_seed=3, games=3)
        assert first == second
        # unseeded resets continue the seeded sequence: three games, three different games
        histories = [json.dumps(g["snapshot"]["history"]) for g in first["games"]]
        assert len(set(histories)) == 3


def test_engine_and_clone_and_reset_agree():
    cfg = ChickenFootConfig(max_pips=9, num_players=4, num_rounds=3)
    engine = Engine(cfg, seed=9)
    clone = engine.clone()
    policy = np.random.default_rng(0)
    while not engine.game_over:
        action = int(policy.choice(engine.legal_actions()))
        engine.step(action)
        clone.step(action)
        assert clone.snapshot() == engine.snapshot()
    final = engine.snapshot()
    # reset(seed) on a used engine replays the game a fresh engine plays
    engine.reset(9)
    fresh = Engine(cfg, seed=9)
    assert engine.snapshot() == fresh.snapshot()
    policy = np.random.default_rng(0)
    while not engine.game_over:
        action = int(policy.choice(engine.legal_actions()))
        engine.step(action)
    assert engine.snapshot() == final


@pytest.mark.parametrize("how", ["clone", "deepcopy", "pickle"])
def test_copies_of_an_engine_are_independent_and_play_on_identically(how):
    """The boards (hands, table, played tiles, voids) live in bytearrays under numpy views; every
    way of copying an engine must give the copy its own boards, views included."""
    cfg = ChickenFootConfig(max_pips=9, num_players=4, num_rounds=2)
    engine = Engine(cfg, seed=5)
    policy = np.random.default_rng(5)
    for _ in range(40):
        engine.step(int(policy.choice(engine.legal_actions())))
    copier = {
        "clone": Engine.clone,
        "deepcopy": copy.deepcopy,
        "pickle": lambda e: pickle.loads(pickle.dumps(e)),
    }[how]
    other = copier(engine)
    before = engine.snapshot()
    boards = [a.copy() for a in (engine.hands, engine.on_table, engine.played_by, engine.voids)]
    actions = []
    while not other.game_over:  # play the copy to its end: the original must not move
        actions.append(int(policy.choice(other.legal_actions())))
        other.step(actions[-1])
        np.testing.assert_array_equal(other.hands.sum(axis=1), other.hand_counts)
    assert engine.snapshot() == before
    for kept, live in zip(boards, (engine.hands, engine.on_table, engine.played_by, engine.voids)):
        np.testing.assert_array_equal(kept, live)
    for action in actions:  # and the original, given the same actions, plays the same game
        engine.step(action)
    assert engine.snapshot() == other.snapshot()


@pytest.mark.slow
def test_training_envs_are_identical_in_subprocess_and_in_process_workers():
    """The vectorised training envs play the same episodes whether they run in worker processes."""
    pytest.importorskip("sb3_contrib", reason="SB3's vector envs: the train extra")
    from training.config import load_config
    from training.sb3.maskable_ppo import make_vec_env

    def rollout(vec_env: str) -> list:
        config = load_config("configs/smoke.yaml", [f"vec_env={vec_env}"])
        vec = make_vec_env(config, [], seed=5)
        rng = np.random.default_rng(0)
        out = [vec.reset().tobytes()]
        try:
            for _ in range(60):
                masks = np.stack(vec.env_method("action_masks"))
                actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
                obs, rewards, dones, _ = vec.step(actions)
                # DummyVecEnv buffers rewards as float32, SubprocVecEnv as float64.
                out.append((obs.tobytes(), rewards.astype(np.float32).tolist(), dones.tolist()))
        finally:
            vec.close()
        return out

    assert rollout("subproc") == rollout("dummy")


def test_reset_seed_seeds_the_action_spaces_so_pettingzoos_loop_replays_its_game():
    """`env.action_space(agent).sample(mask)`, PettingZoo's random loop, plays the same game for
    the same `reset(seed)`, without consuming the games' own seeder (the deals stay those of
    the seed)."""
    import cf_env

    def play(seed: int) -> tuple:
        env = cf_env.env(num_players=3, max_pips=6, num_rounds=2)
        env.reset(seed=seed)
        first_deal = env.unwrapped.engine.deal_order
        actions = []
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            action = None if term or trunc else env.action_space(agent).sample(obs["action_mask"])
            actions.append(action)
            env.step(action)
        return first_deal, actions, env.unwrapped.engine.scores

    assert play(5) == play(5)
    assert play(5)[1] != play(6)[1]
    env = cf_env.env(num_players=3, max_pips=6, num_rounds=2)
    env.reset(seed=5)  # the first game's engine seed is still the seeder's first draw
    assert env.unwrapped.engine.seed == int(np.random.default_rng(5).integers(2**63))
