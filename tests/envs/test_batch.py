"""The batched env (`cf_env.envs.batch.ChickenFootBatch`) against N independent AEC envs.

* Differential: over tests/core/test_kernel.py's random configs (every variant field, every set
  size and player count), every reward mode, both episode kinds and skip_forced on and off, a
  batch with every seat outside plays the games that one `cf_env.raw_env` per game plays, reset
  with the same seed and then `reset()` after each game (the batch's auto-reset): at every
  decision the seat to move, its observation and its mask, after every step each seat's reward
  and the terminations agree.
* Bots: random bots replayed in the AEC envs (their splitmix64 tie-break stream recomputed here)
  play the same games; greedy and heuristic bots keep the state consistent, leave every outside
  decision to an outside seat and pay zero-sum rewards.
* Auto-reset off, bad input (no game changed), determinism, no aliasing of the games' state,
  memory, and a small differential as plain Python (NUMBA_DISABLE_JIT=1).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from variants import CONFIGS, run_without_jit

import cf_env
from cf_env import ChickenFootConfig, Engine
from cf_env.agents.kernel_bots import GREEDY, HEURISTIC, OUTSIDE, RANDOM, next_uniform
from cf_env.core.engine import IllegalActionError
from cf_env.core.kernel import popcount
from cf_env.core.observation import Encoder
from cf_env.envs.batch import ChickenFootBatch

# Games per config in the differential, by set: enough decisions in all, a few seconds of AEC play.
DIFF_GAMES = {6: 16, 9: 14, 12: 7, 15: 5, 18: 4}
MODES = ("zero_sum", "score", "win")


def aec_differential(config: ChickenFootConfig, seeds: list[int], *, reward_mode: str = "zero_sum",
                     episode: str = "game", skip_forced: bool = False, action_seed: int = 0,
                     games_each: int = 2) -> dict:
    """Play len(seeds) games in one batch (every seat outside) and in one AEC env each, with the
    same random legal actions, until every env has played `games_each` games (auto-reset: the
    AEC env's `reset()`), asserting agreement at every decision; returns counts."""
    n = len(seeds)
    batch = ChickenFootBatch(config, n, reward_mode=reward_mode, episode=episode,
                             skip_forced=skip_forced)
    envs = [cf_env.raw_env(**config.to_dict(), reward_mode=reward_mode, skip_forced=skip_forced)
            for _ in seeds]
    for env, seed in zip(envs, seeds):
        env.reset(seed=seed)
    out = batch.reset(seed=seeds)
    rng = np.random.default_rng(action_seed)
    played = [0] * n  # games finished per env
    seen = {"decisions": 0, "rounds": 0, "games": 0}
    actions = np.zeros(n, np.int64)
    while min(played) < games_each:
        for i, env in enumerate(envs):
            agent = env.agent_selection
            where = f"{config} seed {seeds[i]} game {played[i]} step {env.num_steps}"
            assert out.current_player[i] == env.agent_name_mapping[agent], where
            seen_by = env.observe(agent)
            assert np.array_equal(out.observation[i], seen_by["observation"]), where
            assert np.array_equal(out.action_mask[i], seen_by["action_mask"].astype(bool)), where
            actions[i] = rng.choice(np.flatnonzero(out.action_mask[i]))
        out = batch.step(actions)
        seen["decisions"] += n
        for i, env in enumerate(envs):
            env.step(int(actions[i]))
            where = f"{config} seed {seeds[i]} game {played[i]} step {env.num_steps}"
            rewards = np.array([env.rewards[a] for a in env.possible_agents], np.float32)
            assert np.array_equal(out.rewards[i], rewards), where
            round_over = env.infos[env.agents[0]]["round_over"]
            game_over = all(env.terminations.values())
            assert out.round_over[i] == round_over and out.game_over[i] == game_over, where
            assert out.terminated[i] == (round_over if episode == "round" else game_over), where
            assert not out.truncated[i], where
            seen["rounds"] += round_over
            if game_over:
                played[i] += 1
                seen["games"] += 1
                env.reset()  # the next game from the env's seeder: the batch's auto-reset
    return seen


def test_batch_plays_the_same_games_as_aec_envs_over_random_configs():
    totals = {"decisions": 0, "rounds": 0, "games": 0}
    kinds = set()
    for k, cfg in enumerate(CONFIGS):
        mode = MODES[k % 3]
        episode = "round" if mode != "win" and k % 2 else "game"
        skip = k % 4 == 2  # even k: "game" episodes (a skipped-forced step may end several rounds)
        kinds.add((mode, episode, skip))
        seeds = [7000 * k + j for j in range(DIFF_GAMES[cfg.max_pips])]
        seen = aec_differential(cfg, seeds, reward_mode=mode, episode=episode, skip_forced=skip,
                                action_seed=k)
        for key, value in seen.items():
            totals[key] += value
    print("batch differential:", totals)
    assert totals["decisions"] >= 100_000
    assert {m for m, _, _ in kinds} == set(MODES) and {e for _, e, _ in kinds} == {"game", "round"}
    assert {s for _, _, s in kinds} == {False, True}


def test_batch_plays_the_same_games_as_aec_envs_without_jit():
    code = (
        "from test_batch import aec_differential\n"
        "from cf_env import ChickenFootConfig\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, num_rounds=2,"
        " start_search='all_draw')\n"
        "seen = aec_differential(cfg, [1, 2, 3], reward_mode='zero_sum', games_each=1)\n"
        "assert seen['games'] >= 3 and seen['decisions'] > 50, seen\n"
        "print('ok', seen)\n"
    )
    run_without_jit(code, folder="envs")


# ---------------------------------------------------------------------------- bots
def test_random_bots_replayed_in_aec_envs_play_the_same_games():
    """Seats 1 and 3 are random bots: their choices are recomputed here from the documented
    stream (splitmix64 seeded with the game's engine seed; the int(u * k)-th legal action)."""
    cfg = ChickenFootConfig(max_pips=6, num_players=4, num_rounds=3)
    seeds = list(range(40, 52))
    n = len(seeds)
    bots = {1: "random", 3: "random"}
    batch = ChickenFootBatch(cfg, n, bots=bots)
    out = batch.reset(seed=seeds)
    envs = [cf_env.raw_env(**cfg.to_dict()) for _ in seeds]
    seeders = [np.random.default_rng(s) for s in seeds]  # the AEC env's seeder, replayed
    bot_rng = np.zeros(n, np.uint64)
    pending = np.zeros((n, 4))  # the AEC rewards since the last outside decision

    def start(i, seed=None):
        envs[i].reset(seed=seed)
        bot_rng[i] = np.uint64(int(seeders[i].integers(2**63)))
        advance(i, pay=False)

    def advance(i, pay=True):
        env = envs[i]
        while not all(env.terminations.values()):
            seat = env.agent_name_mapping[env.agent_selection]
            if seat not in bots:
                return
            legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
            pick = 0 if len(legal) == 1 else int(next_uniform(bot_rng, i) * len(legal))
            env.step(int(legal[pick]))
            if pay:
                pending[i] += [env.rewards[a] for a in env.possible_agents]

    for i, seed in enumerate(seeds):
        start(i, seed)
    rng = np.random.default_rng(1)
    games, decisions = 0, 0
    actions = np.zeros(n, np.int64)
    while games < 2 * n:
        for i, env in enumerate(envs):
            assert out.current_player[i] == env.agent_name_mapping[env.agent_selection]
            assert np.array_equal(out.observation[i], env.observe(env.agent_selection)["observation"])
            actions[i] = rng.choice(np.flatnonzero(out.action_mask[i]))
        out = batch.step(actions)
        decisions += n
        for i, env in enumerate(envs):
            env.step(int(actions[i]))
            pending[i] = [env.rewards[a] for a in env.possible_agents]
            advance(i)
            assert np.array_equal(out.rewards[i], pending[i].astype(np.float32)), (seeds[i], env.num_steps)
            over = all(env.terminations.values())
            assert out.terminated[i] == over
            if over:
                games += 1
                start(i)
    assert decisions > 1000


def tiles_consistent(batch: ChickenFootBatch) -> bool:
    """Every tile is in exactly one place (a hand, the table, the boneyard) and each hand's bits
    match its count: what a bot playing a tile it does not hold, or an illegal draw, breaks."""
    st, count = batch.kernel.state, batch.config.num_tiles
    for i in range(batch.num_envs):
        held = [sum(popcount(w & np.uint64(0x5555555555555555)) for w in st.hands[i, s])
                for s in range(batch.num_players)]
        if held != st.hand_count[i].tolist():
            return False
        if sum(held) + int(st.on_table[i].sum()) + count - int(st.bone_pos[i]) != count:
            return False
    return True


@pytest.mark.parametrize("kinds", [{1: "greedy", 2: "heuristic"}, {0: "heuristic", 1: "random", 3: "greedy"}])
def test_bot_seats_leave_outside_decisions_to_outside_seats_and_pay_zero_sum(kinds):
    cfg = ChickenFootConfig(num_players=4, num_rounds=4)
    n = 32
    batch = ChickenFootBatch(cfg, n, bots=kinds, skip_forced=True)
    out = batch.reset(seed=5)
    rng = np.random.default_rng(2)
    returns = np.zeros((n, 4))
    games = 0
    for _ in range(400):
        assert (batch.seat_kinds[np.arange(n), out.current_player] == OUTSIDE).all()
        assert out.action_mask.sum(axis=1).min() >= 2  # skip_forced: only real choices are asked
        assert tiles_consistent(batch)
        out = batch.step((rng.random(out.action_mask.shape) * out.action_mask).argmax(axis=1))
        assert np.allclose(out.rewards.sum(axis=1), 0.0, atol=1e-5)  # zero_sum (R12)
        returns += out.rewards
        games += int(out.terminated.sum())
    assert games > 0
    assert np.abs(returns).sum() > 0


def test_bots_given_as_array_and_as_callable_seat_the_same_kinds():
    cfg = ChickenFootConfig(num_players=3)
    table = np.array([[OUTSIDE, GREEDY, RANDOM], [HEURISTIC, OUTSIDE, OUTSIDE]], np.int8)
    batch = ChickenFootBatch(cfg, 2, bots=table)
    assert (batch.seat_kinds == table).all()
    drawn = ChickenFootBatch(cfg, 2, bots=lambda rng: ["outside", "greedy", "greedy"])
    drawn.reset(seed=0)
    assert (drawn.seat_kinds == [[OUTSIDE, GREEDY, GREEDY]] * 2).all()
    with pytest.raises(ValueError, match="has no outside seat"):
        ChickenFootBatch(cfg, 2, bots={0: "greedy", 1: "greedy", 2: "random"})
    with pytest.raises(ValueError, match="bot kind must be one of"):
        ChickenFootBatch(cfg, 2, bots={1: "grredy"})


# ---------------------------------------------------------------------------- auto-reset
def test_without_auto_reset_a_finished_game_stays_finished_and_its_action_is_ignored():
    cfg = ChickenFootConfig(max_pips=6, num_players=2, num_rounds=1)
    batch = ChickenFootBatch(cfg, 6, auto_reset=False)
    out = batch.reset(seed=3)
    rng = np.random.default_rng(0)
    finished = np.zeros(6, bool)
    while not finished.all():
        live = out.action_mask.any(axis=1)
        assert (live == ~finished).all()
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else -1 for m in out.action_mask])
        out = batch.step(actions)  # -1 for a finished game: ignored
        assert not (out.terminated & finished).any()  # terminated once, on the step it ended
        finished |= out.terminated
        assert (out.current_player[finished] == -1).all()
        assert not out.observation[finished].any() and not out.action_mask[finished].any()


def test_auto_reset_deals_the_next_game_of_the_stream_in_the_same_step():
    cfg = ChickenFootConfig(max_pips=6, num_players=2, num_rounds=1)
    batch = ChickenFootBatch(cfg, 4)
    out = batch.reset(seed=[10, 11, 12, 13])
    first = batch.game_seeds.copy()
    assert first.tolist() == [int(np.random.default_rng(s).integers(2**63)) for s in [10, 11, 12, 13]]
    rng = np.random.default_rng(0)
    while True:
        out = batch.step((rng.random(out.action_mask.shape) * out.action_mask).argmax(axis=1))
        if out.terminated.any():
            break
    i = int(np.flatnonzero(out.terminated)[0])
    seeder = np.random.default_rng(10 + i)
    seeder.integers(2**63)
    assert batch.game_seeds[i] == seeder.integers(2**63) != first[i]
    assert out.rewards[i].any() and out.game_over[i]  # the finished game's rewards are kept
    engine = Engine(cfg, seed=int(batch.game_seeds[i]))  # the new game's first decision is returned
    assert out.current_player[i] == engine.current
    assert np.array_equal(out.observation[i], Encoder(cfg).observe(engine, engine.current))
    assert np.array_equal(out.action_mask[i], engine.legal_action_mask().astype(bool))


# ---------------------------------------------------------------------------- bad input
def state_copy(batch: ChickenFootBatch) -> list[np.ndarray]:
    return [a.copy() for a in batch.kernel.state] + [batch.bot_rng, batch.game_seeds.copy()]


@pytest.mark.parametrize("bots", [None, {1: "greedy", 3: "random"}])
def test_bad_actions_raise_and_change_no_game(bots):
    cfg = ChickenFootConfig()
    batch = ChickenFootBatch(cfg, 5, bots=bots)
    out = batch.reset(seed=1)
    good = np.array([np.flatnonzero(m)[0] for m in out.action_mask])
    before, shown = state_copy(batch), [a.copy() for a in out[:-1]]
    bad = good.copy()
    bad[3] = cfg.pass_action  # never legal before the first placement
    with pytest.raises(IllegalActionError, match=rf"game 3: action {cfg.pass_action} is not legal"):
        batch.step(bad)
    bad[3] = cfg.num_actions + 7  # out of range
    with pytest.raises(IllegalActionError, match=rf"game 3: action {cfg.num_actions + 7} is not legal"):
        batch.step(bad)
    for wrong in (good.astype(float), good[:4], good.reshape(5, 1), "3", good.astype(bool)):
        with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(5,\)"):
            batch.step(wrong)
    assert all(np.array_equal(a, b) for a, b in zip(state_copy(batch), before))
    assert all(np.array_equal(a, b) for a, b in zip(out[:-1], shown))  # outputs untouched too
    batch.step(good)
    assert not all(np.array_equal(a, b) for a, b in zip(state_copy(batch), before))


def test_bad_constructor_arguments_name_the_field():
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        ChickenFootBatch(num_envs=0)
    with pytest.raises(ValueError, match="reward_mode must be one of"):
        ChickenFootBatch(num_envs=2, reward_mode="points")
    with pytest.raises(ValueError, match="use episode='game'"):
        ChickenFootBatch(num_envs=2, reward_mode="win", episode="round")
    with pytest.raises(ValueError, match="unknown config field"):
        ChickenFootBatch(num_envs=2, max_pip=6)
    with pytest.raises(ValueError, match="are not rules"):
        ChickenFootBatch({"reward_mode": "win"}, 2)
    with pytest.raises(RuntimeError, match="reset"):
        ChickenFootBatch(num_envs=2).step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="seed must be None, an int or 2 ints"):
        ChickenFootBatch(num_envs=2).reset(seed=[1, 2, 3])


# ---------------------------------------------------------------------------- determinism, aliasing
def play(batch: ChickenFootBatch, seed, steps: int, action_seed: int = 0) -> list[np.ndarray]:
    out = batch.reset(seed=seed)
    rng = np.random.default_rng(action_seed)
    trace = []
    for _ in range(steps):
        trace += [out.observation.copy(), out.action_mask.copy(), out.current_player.copy()]
        out = batch.step((rng.random(out.action_mask.shape) * out.action_mask).argmax(axis=1))
        trace += [out.rewards.copy(), out.terminated.copy()]
    return trace


def test_same_seed_same_games_and_an_int_seed_gives_each_game_its_own_stream():
    cfg = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=2)
    bots = {2: "heuristic"}
    a = play(ChickenFootBatch(cfg, 8, bots=bots), 9, 150)
    b = play(ChickenFootBatch(cfg, 8, bots=bots), 9, 150)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    c = play(ChickenFootBatch(cfg, 8, bots=bots), 10, 150)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    batch = ChickenFootBatch(cfg, 8)
    batch.reset(seed=9)
    seeds = batch.game_seeds.copy()
    assert len(set(seeds.tolist())) == 8
    small = ChickenFootBatch(cfg, 3)
    small.reset(seed=9)
    assert (small.game_seeds == seeds[:3]).all()  # a game's stream does not depend on N
    batch.reset()  # no seed: each game's next game from its seeder
    assert not (batch.game_seeds == seeds).any()


def test_writing_into_the_returned_arrays_changes_no_game():
    cfg = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=2)
    clean = ChickenFootBatch(cfg, 6, bots={1: "greedy"}, privileged=True)
    dirty = ChickenFootBatch(cfg, 6, bots={1: "greedy"}, privileged=True)
    a, b = clean.reset(seed=4), dirty.reset(seed=4)
    rng = np.random.default_rng(3)
    for _ in range(120):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
        actions = (rng.random(a.action_mask.shape) * a.action_mask).argmax(axis=1)
        for array in b:
            array[...] = 1  # scribble over every output, the seat to move included
        a, b = clean.step(actions), dirty.step(actions)
    assert a.privileged.shape == (6, clean.privileged_size) and a.privileged.any()


def test_a_batch_of_4096_default_games_holds_at_most_64_mib():
    ChickenFootBatch(num_envs=2).reset(seed=0)  # compiled code loaded before measuring
    tracemalloc.start()
    batch = ChickenFootBatch(num_envs=4096, bots={1: "greedy"})
    batch.reset(seed=0)
    batch.step(batch.reset(seed=1).action_mask.argmax(axis=1))
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert batch.nbytes <= 64 * 2**20
    assert held <= 64 * 2**20, held  # everything it holds, the per-game Generators included


def test_the_documented_batched_example_runs_and_pays_zero_sum_rewards():
    """The environment card's batched example, as written: it runs, and under the default
    zero_sum rewards every game's seat returns sum to zero (R12)."""
    from pathlib import Path

    card = Path(__file__).resolve().parents[2] / "docs" / "environment.md"
    section = card.read_text(encoding="utf-8").split("### Batched: thousands of games in one call", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, str(card), "exec"), namespace)
    returns = namespace["returns"]
    assert returns.shape == (1024, 4) and np.abs(returns).sum() > 0
    np.testing.assert_allclose(returns.sum(axis=1), 0.0, atol=1e-4)
