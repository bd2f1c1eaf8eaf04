"""Safety of the batched adapters (`cf_env.envs.batch.ChickenFootBatch`,
`cf_env.envs.vector_env.ChickenFootVectorEnv`) and their compiled bots: bad input refused before
any game changes (the whole state compared before and after), sizes bounded before anything is
allocated, opponent weights checked, `reset`'s seeds and options checked or honoured, Gymnasium's
SAME_STEP autoreset contract (`final_obs` / `final_info`) checked against Gymnasium's own
wrappers, and the bots' splitmix64 stream free of overflow warnings without the JIT."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cf_env.agents.kernel_bots import next_uniform

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- splitmix64
def splitmix64(state: int) -> tuple[int, float]:
    """The reference stream in Python ints: the next state and its float in [0, 1)."""
    mask = 2**64 - 1
    x = (state + 0x9E3779B97F4A7C15) & mask
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return x, (z >> 11) / 2.0**53


def test_the_bots_stream_is_splitmix64_modulo_2_to_the_64():
    rng = np.random.default_rng(0)
    states = rng.integers(0, 2**64, 500, dtype=np.uint64).tolist() + [0, 2**63, 2**64 - 1]
    for state in states:
        words = np.array([state], np.uint64)
        uniform = next_uniform(words, 0)
        assert (int(words[0]), uniform) == splitmix64(state)


BOT_GAMES = (
    "import numpy as np\n"
    "from cf_env.envs.batch import ChickenFootBatch\n"
    "games = ChickenFootBatch(num_envs=3, bots={1: 'random', 2: 'greedy', 3: 'heuristic'},"
    " max_pips=6, episode='round', final_observation=True)\n"
    "out = games.reset(seed=1)\n"
    "ended = 0\n"
    "for _ in range(60):\n"
    "    out = games.step(out.action_mask.argmax(axis=1))\n"
    "    ended += int(out.terminated.sum())\n"
    "print('ok', ended, games.bot_rng.tolist(), float(games.final_observation.sum()))\n"
)


def test_the_batch_bots_run_without_jit_with_warnings_as_errors():
    """Under NUMBA_DISABLE_JIT=1 the stream is numpy uint64 scalars, which warn on overflow:
    the bots (and the adapter's own round deals and final observations) must run without a
    warning, and play what the compiled code plays."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    code = "from numba.core import config\nassert config.DISABLE_JIT\n" + BOT_GAMES
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("ok")
    compiled: dict = {}
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(BOT_GAMES, compiled)
    assert compiled["ended"] >= 3
    assert result.stdout == printed.getvalue()


# ---------------------------------------------------------------------------- state capture
from cf_env import ChickenFootConfig, Engine  # noqa: E402
from cf_env.core.engine import IllegalActionError  # noqa: E402
from cf_env.core.observation import Encoder  # noqa: E402
from cf_env.envs.batch import (  # noqa: E402
    MAX_BATCH_BYTES,
    ChickenFootBatch,
    max_num_envs,
    per_game_bytes,
)

SMALL = ChickenFootConfig(max_pips=6, num_players=3)
# Scratch, not the games' state: the adapter's of one step, written before the kernel moves, and
# the scratch game on which it plays drawn games' openings (batch.py); the kernel's legal-word
# buffer, which it fills to name a refused action's legal ones.
SCRATCH = {"_actor", "_perms", "_opening", "legal_words"}


def freeze(value):
    """A deep, comparable copy of `value`: arrays copied, Generators as their states, objects
    as their fields."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.copy())
    if isinstance(value, np.random.Generator):
        return ("rng", value.bit_generator.state)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [freeze(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: freeze(v) for k, v in value.items()})
    if hasattr(value, "__dict__") and type(value).__module__.startswith("cf_env"):
        return ("object", {k: freeze(v) for k, v in vars(value).items() if k not in SCRATCH})
    return ("value", value)


def same(a, b, where: str = "") -> None:
    """Assert two `freeze` results are equal, naming the first field that differs."""
    assert type(a) is type(b), where
    if isinstance(a, tuple) and len(a) == 3 and a[0] == "array":
        assert a[1] == b[1] and np.array_equal(a[2], b[2]), where
    elif isinstance(a, tuple) and a[0] in ("list", "tuple") or type(a[1]) is list:
        assert len(a[1]) == len(b[1]), where
        for k, (x, y) in enumerate(zip(a[1], b[1], strict=True)):
            same(x, y, f"{where}[{k}]")
    elif isinstance(a, tuple) and a[0] in ("dict", "object"):
        assert a[1].keys() == b[1].keys(), where
        for k in a[1]:
            same(a[1][k], b[1][k], f"{where}.{k}")
    elif a[0] == "rng":
        assert repr(a[1]) == repr(b[1]), where
    else:
        assert a == b or a[1] is b[1], where


def whole_state(games: ChickenFootBatch):
    """Every field of the adapter and of its kernel batch (every KernelState array, the
    shuffle RNGs and queued shuffles, the seeders, the draws ahead, the output buffers)."""
    return freeze(games)


def masked_random(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    return (rng.random(mask.shape) * mask).argmax(axis=1)


class Seats:
    """A seat sampler (`bots` callable): seat 0 outside, the others greedy, until `broken`, when
    it gives `bad` instead (or raises it, if an exception)."""

    def __init__(self, players: int):
        self.players, self.broken, self.bad = players, False, None

    def __call__(self, rng: np.random.Generator):
        rng.integers(10)  # draws from the game's seeder, as the vector env's sampler does
        if self.broken:
            if isinstance(self.bad, Exception):
                raise self.bad
            return self.bad
        return ["outside"] + ["greedy"] * (self.players - 1)


def play_until_a_game_started(games: ChickenFootBatch, out, rng) -> object:
    """Step until some game ended (its next game dealt): the next step draws that game's seats."""
    for _ in range(2000):
        out = games.step(masked_random(rng, out.action_mask))
        if out.game_over.any():
            return out
    raise AssertionError("no game ended")


# ---------------------------------------------------------------------------- all-or-nothing
@pytest.mark.parametrize("bad", [
    ["greedy", "greedy", "greedy"],             # no outside seat
    ["outside", "greedy"],                      # a seat short
    ["outside", "greedy", "ismcts"],            # not a bot kind
    ["outside", "greedy", 1.5],                 # not a kind code
    ["outside", "greedy", None],
    5,                                          # not a list
    RuntimeError("sampler failed"),             # the sampler itself raises
])
def test_a_bad_seat_draw_at_an_autoreset_refuses_the_step_and_changes_nothing(bad):
    seats = Seats(SMALL.num_players)
    games = ChickenFootBatch(SMALL, 6, bots=seats, num_rounds=1)
    twin = ChickenFootBatch(SMALL, 6, bots=Seats(SMALL.num_players), num_rounds=1)
    rng = np.random.default_rng(0)
    out, twin_out = games.reset(seed=9), twin.reset(seed=9)
    for _ in range(2000):
        actions = masked_random(rng, out.action_mask)
        out, twin_out = games.step(actions), twin.step(actions)
        if out.game_over.any():
            break
    assert out.game_over.any()
    before = whole_state(games)
    last = masked_random(rng, out.action_mask)
    seats.broken, seats.bad = True, bad
    with pytest.raises(type(bad) if isinstance(bad, Exception) else ValueError,
                       match="sampler failed|no outside seat|must give 3 kinds|bot kind must be one of"):
        games.step(last)
    same(before, whole_state(games), "batch")
    seats.broken = False  # the same step, with the last mask, now goes through
    out, twin_out = games.step(last), twin.step(last)
    for name in ("current_player", "observation", "action_mask", "rewards", "terminated"):
        assert np.array_equal(getattr(out, name), getattr(twin_out, name)), name
    assert np.array_equal(games.game_seeds, twin.game_seeds)


def test_a_bad_seat_draw_at_reset_refuses_it_and_changes_nothing():
    seats = Seats(SMALL.num_players)
    games = ChickenFootBatch(SMALL, 4, bots=seats)
    games.reset(seed=1)
    before = whole_state(games)
    seats.broken, seats.bad = True, ["greedy"] * 3
    for seed in (2, None, [5, 6, 7, 8]):
        with pytest.raises(ValueError, match="no outside seat"):
            games.reset(seed=seed)
        same(before, whole_state(games), f"reset(seed={seed})")


def test_games_that_end_before_any_outside_decision_never_make_a_call_draw_midway():
    """One round of two-tile hands, three bots: many games end before the outside seat decides,
    so one call can deal a game several new games. Their seats are drawn before the kernel
    moves (the openings played ahead on a scratch game): the sampler is never called once the
    games move, a sampler that raises refuses the call with the whole state unchanged, and the
    games are those of a twin whose sampler never fails."""
    cfg = ChickenFootConfig(max_pips=6, num_players=4, hand_size=2, num_rounds=1)
    seats = Seats(cfg.num_players)
    moving = [False]

    def sampler(rng):
        assert not moving[0], "a seat draw while the games move"
        return seats(rng)

    games = ChickenFootBatch(cfg, 12, bots=sampler, skip_forced=True)
    twin = ChickenFootBatch(cfg, 12, bots=Seats(cfg.num_players), skip_forced=True)
    kernel = games.kernel
    real_step, real_reset = kernel.step, kernel.reset

    def step(actions):
        moving[0] = True
        return real_step(actions)

    def reset(seeds, which=None):
        moving[0] = True
        return real_reset(seeds, which)

    kernel.step, kernel.reset = step, reset
    out, twin_out = games.reset(seed=2), twin.reset(seed=2)
    moving[0] = False
    rng = np.random.default_rng(4)
    refused = chains = 0
    for turn in range(300):
        actions = masked_random(rng, out.action_mask)
        chains += bool(games._extra)
        seats.broken, seats.bad = turn % 3 == 0, RuntimeError("sampler failed")
        before = whole_state(games) if seats.broken else None
        try:
            out = games.step(actions)
        except RuntimeError:
            refused += 1
            same(before, whole_state(games), "batch")
            seats.broken = False
            out = games.step(actions)
        moving[0] = seats.broken = False
        twin_out = twin.step(actions)
        for name in ("current_player", "observation", "rewards", "terminated", "game_over"):
            assert np.array_equal(getattr(out, name), getattr(twin_out, name)), (turn, name)
        assert np.array_equal(games.game_seeds, twin.game_seeds)
    assert refused > 20 and chains > 5, (refused, chains)


def test_too_many_games_in_a_row_without_an_outside_decision_are_refused(monkeypatch):
    """Past MAX_CHAIN games in a row that end before the outside seat decides, no call could
    reach a decision: the call that would draw them is refused, nothing changed."""
    import cf_env.envs.batch as batch_module

    cfg = ChickenFootConfig(max_pips=6, num_players=4, hand_size=2, num_rounds=1)
    games = ChickenFootBatch(cfg, 12, bots=Seats(cfg.num_players), skip_forced=True)
    out = games.reset(seed=0)
    monkeypatch.setattr(batch_module, "MAX_CHAIN", 2)
    rng = np.random.default_rng(0)
    refused = 0
    for seed in range(30):
        before = whole_state(games)
        try:
            out = games.reset(seed=seed) if seed % 2 else games.step(masked_random(rng, out.action_mask))
        except ValueError as error:
            assert "2 games in a row of game" in str(error)
            same(before, whole_state(games), "batch")
            refused += 1
    assert refused > 5, refused


@pytest.mark.parametrize("kind", ["illegal", "dtype", "shape"])
def test_a_refused_step_restores_the_seeders_drawn_ahead(kind):
    """A game that started a game in the last step has its next seats drawn at this step's
    start; a refused action must leave that seeder as it was too."""
    games = ChickenFootBatch(SMALL, 6, bots=Seats(SMALL.num_players), num_rounds=1)
    rng = np.random.default_rng(1)
    out = play_until_a_game_started(games, games.reset(seed=4), rng)
    actions = masked_random(rng, out.action_mask)
    bad = {"illegal": np.where(np.arange(6) == 5, SMALL.num_actions, actions),
           "dtype": actions.astype(float), "shape": actions[:5]}[kind]
    before = whole_state(games)
    with pytest.raises(IllegalActionError if kind == "illegal" else ValueError):
        games.step(bad)
    same(before, whole_state(games), "batch")


@pytest.mark.parametrize("seed", [1.5, -1, "3", True, [1, 2, 3, 4.0], [1, 2, 3], [1, 2, 3, -4],
                                  np.float64(2.0), {"a": 1}])
def test_a_bad_seed_is_a_value_error_naming_it_and_changes_nothing(seed):
    games = ChickenFootBatch(SMALL, 4, bots={1: "random"})
    games.reset(seed=3)
    before = whole_state(games)
    with pytest.raises(ValueError, match="seed must be None, an int or 4 ints, each non-negative"):
        games.reset(seed=seed)
    same(before, whole_state(games), "batch")


def test_numpy_integer_seeds_are_taken():
    a, b = ChickenFootBatch(SMALL, 3), ChickenFootBatch(SMALL, 3)
    a.reset(seed=np.uint64(7))
    b.reset(seed=np.array([1, 2, 3]))
    c = ChickenFootBatch(SMALL, 3)
    c.reset(seed=7)
    assert np.array_equal(a.game_seeds, c.game_seeds)
    c.reset(seed=[1, 2, 3])
    assert np.array_equal(b.game_seeds, c.game_seeds)


# ---------------------------------------------------------------------------- reset options
@pytest.mark.parametrize("options, message", [
    ({"seed": 3}, r"reset options \['seed'\] are not supported"),
    ({"reset_mask": [True, False, True, False]}, "must be a bool numpy array of shape"),
    ({"reset_mask": np.array([1, 0, 1, 0])}, "must be a bool numpy array of shape"),
    ({"reset_mask": np.ones(3, bool)}, r"must be a bool numpy array of shape \(4,\)"),
    ({"reset_mask": np.zeros(4, bool)}, "at least one True"),
    ("reset_mask", "options must be None or a dict"),
])
def test_unknown_or_malformed_reset_options_are_refused_and_change_nothing(options, message):
    games = ChickenFootBatch(SMALL, 4, bots={2: "greedy"})
    games.reset(seed=3)
    before = whole_state(games)
    with pytest.raises(ValueError, match=message):
        games.reset(seed=5, options=options)
    same(before, whole_state(games), "batch")


def test_reset_mask_resets_only_the_masked_games_with_the_seeds_a_full_reset_gives():
    n = 6
    mask = np.array([True, False, False, True, False, True])
    games = ChickenFootBatch(SMALL, n, bots={1: "greedy"})
    full = ChickenFootBatch(SMALL, n, bots={1: "greedy"})
    rng = np.random.default_rng(2)
    out = games.reset(seed=11)
    for _ in range(7):
        out = games.step(masked_random(rng, out.action_mask))
    kept = {name: getattr(games.kernel.state, name)[~mask].copy()
            for name in games.kernel.state._fields}
    kept_seeds = games.game_seeds[~mask].copy()
    out = games.reset(seed=23, options={"reset_mask": mask})
    expected = full.reset(seed=23)
    for name in ("current_player", "observation", "action_mask"):
        assert np.array_equal(getattr(out, name)[mask], getattr(expected, name)[mask]), name
    assert not out.rewards.any() and not out.terminated.any()
    for name, rows in kept.items():  # the other games: not a field touched
        assert np.array_equal(getattr(games.kernel.state, name)[~mask], rows), name
    assert np.array_equal(games.game_seeds[~mask], kept_seeds)
    assert np.array_equal(games.game_seeds[mask], full.game_seeds[mask])
    for _ in range(300):  # the masked games go on playing the full reset's games, game after game
        actions = masked_random(rng, out.action_mask)
        twin = masked_random(rng, expected.action_mask)
        twin[mask] = actions[mask]
        out, expected = games.step(actions), full.step(twin)
        for name in ("current_player", "observation", "rewards", "terminated"):
            assert np.array_equal(getattr(out, name)[mask], getattr(expected, name)[mask]), name
    assert np.array_equal(games.game_seeds[mask], full.game_seeds[mask])


def test_reset_mask_before_a_first_reset_is_refused():
    games = ChickenFootBatch(SMALL, 2)
    with pytest.raises(ValueError, match="call reset\\(\\) without it first"):
        games.reset(seed=1, options={"reset_mask": np.array([True, False])})


# ---------------------------------------------------------------------------- sizes
def test_a_batch_above_the_cap_is_refused_before_anything_large_is_allocated():
    import tracemalloc

    from cf_env.envs.vector_env import ChickenFootVectorEnv

    per_game_bytes(ChickenFootConfig())  # measured (two tiny batches) before tracing
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"num_envs must be at most \d+ for this config \(\d+ bytes a game"):
        ChickenFootBatch(num_envs=10**7)
    with pytest.raises(ValueError, match="num_envs must be at most"):
        ChickenFootVectorEnv(num_envs=10**7)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * 2**20, peak  # 10**7 games would hold ~70 GB
    cap = max_num_envs(ChickenFootConfig())
    assert cap * per_game_bytes(ChickenFootConfig()) <= MAX_BATCH_BYTES
    with pytest.raises(ValueError, match=f"at most {cap} "):
        ChickenFootBatch(num_envs=cap + 1)


@pytest.mark.parametrize("max_pips", [6, 9])
def test_the_cap_counts_at_least_what_a_game_holds(max_pips):
    """per_game_bytes, the cap's basis, is at least what tracemalloc sees a game take (its
    arrays and its Python objects), and grows with the set."""
    import tracemalloc

    cfg = ChickenFootConfig(max_pips=max_pips)
    ChickenFootBatch(cfg, 2, final_observation=True).reset(seed=0)
    n = 2000
    tracemalloc.start()
    games = ChickenFootBatch(cfg, n, bots={1: "greedy"}, final_observation=True)
    out = games.reset(seed=0)
    games.step(out.action_mask.argmax(axis=1))
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held / n <= per_game_bytes(cfg), (held / n, per_game_bytes(cfg))
    assert per_game_bytes(ChickenFootConfig(max_pips=12)) > per_game_bytes(cfg)


# ---------------------------------------------------------------------------- opponent weights
@pytest.mark.parametrize("weights", [[1.0, float("nan")], [1.0, float("inf")], [0.0, 0.0],
                                     [1.0, -0.5], ["a", "b"], "ab", [1.0], [[1.0, 1.0]], [None, 1]])
def test_bad_opponent_weights_are_refused(weights):
    from cf_env.envs.vector_env import ChickenFootVectorEnv

    with pytest.raises(ValueError, match="opponent weights must be 2 non-negative numbers, finite "
                                         "and not all zero"):
        ChickenFootVectorEnv(2, opponents=["random", "heuristic"], weights=weights)


@pytest.mark.parametrize("weights", [[1e308, 1e308], [5e-324, 5e-324], [3.0, 3.0]])
def test_equal_weights_of_any_size_draw_both_opponents_alike(weights):
    from cf_env.envs.vector_env import ChickenFootVectorEnv

    envs = ChickenFootVectorEnv(200, opponents=["random", "heuristic"], weights=weights,
                                max_pips=6)
    envs.reset(seed=0)
    kinds = envs.batch.seat_kinds
    bots = kinds[kinds != 0]
    share = (bots == 1).mean()  # RANDOM
    assert 0.4 < share < 0.6, share


# ---------------------------------------------------------------------------- final observations
@pytest.mark.parametrize("episode, observe_all", [("round", True), ("game", True),
                                                   ("round", False), ("game", False)])
def test_final_observations_are_the_ended_positions_seen_by_the_seat_that_moved(
        episode, observe_all, monkeypatch):
    """Every seat outside: each game is replayed in an `Engine` that stops between rounds
    (auto_deal=False); where the batch says an episode ended, its final observation is the
    engine's `Encoder.observe` of the position the round ended in, for the seat that moved.
    Both ways of observing them: every game, or the ended games' rows copied out."""
    import cf_env.envs.batch as batch_module

    monkeypatch.setattr(batch_module, "FULL_OBSERVE", [10**9, 0] if observe_all else [0, 0])
    cfg = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=3)
    n = 5
    games = ChickenFootBatch(cfg, n, episode=episode, final_observation=True)
    encoder = Encoder(cfg)
    out = games.reset(seed=[3, 1, 4, 1, 5])
    engines = [Engine(cfg, seed=int(s), auto_deal=False) for s in games.game_seeds]
    rng = np.random.default_rng(0)
    checked = {"rounds": 0, "games": 0}
    for _ in range(400):
        actions = masked_random(rng, out.action_mask)
        movers = out.current_player.copy()
        out = games.step(actions)
        for i, engine in enumerate(engines):
            ended = engine.step(int(actions[i]))
            episode_ended = bool(ended) and (episode == "round" or engine.game_over)
            assert out.terminated[i] == episode_ended
            if episode_ended:
                seen = encoder.observe(engine, int(movers[i]))
                assert np.array_equal(games.final_observation[i], seen), (i, engine.round)
                checked["games" if engine.game_over else "rounds"] += 1
            if engine.game_over:
                engines[i] = engine = Engine(cfg, seed=int(games.game_seeds[i]), auto_deal=False)
            elif ended:
                engine.deal_next()
            assert np.array_equal(out.observation[i], encoder.observe(engine, engine.current))
    assert checked["games"] >= 3 and (episode == "game" or checked["rounds"] >= 5), checked


@pytest.mark.parametrize("observe_all", [True, False])
def test_final_observations_after_bot_moves_show_the_hand_the_round_was_scored_on(observe_all,
                                                                                 monkeypatch):
    """Rounds also end on bots' moves (inside the compiled loop): the final observation's hand
    is the one the seat that moved was scored on (its round points, R12)."""
    import cf_env.envs.batch as batch_module

    monkeypatch.setattr(batch_module, "FULL_OBSERVE", [10**9, 0] if observe_all else [0, 0])
    cfg = ChickenFootConfig(max_pips=6, num_players=4, num_rounds=2)
    n = 16
    games = ChickenFootBatch(cfg, n, bots={1: "greedy", 2: "random", 3: "heuristic"},
                             episode="round", final_observation=True)
    points = games.kernel.tables.points
    count = cfg.num_tiles
    out = games.reset(seed=8)
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(300):
        out = games.step(masked_random(rng, out.action_mask))
        st = games.kernel.state
        # rows whose ended round is still the last one scored (no second round ended after it)
        for i in np.flatnonzero(out.terminated & ~out.game_over):
            hand = games.final_observation[i, :count].astype(bool)
            assert int(points[hand].sum()) == int(st.round_points[i, 0]), i
            checked += 1
    assert checked > 30


# ---------------------------------------------------------------------------- Gymnasium's contract
def make_vec(num_envs: int, **kwargs):
    import gymnasium as gym

    import cf_env  # noqa: F401  (registers the ids)
    from cf_env.envs.single_agent import ENV_ID

    return gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point",
                        **kwargs)


def test_same_step_final_obs_and_final_info_follow_gymnasiums_layout():
    from gymnasium.vector import AutoresetMode

    envs = make_vec(8, opponents=["greedy", "random"], max_pips=6, num_players=3)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, info = envs.reset(seed=0)
    assert "final_obs" not in info
    rng = np.random.default_rng(0)
    ended_steps = 0
    for _ in range(200):
        seats = info["learner_seat"].copy()
        obs, reward, terminated, truncated, info = envs.step(masked_random(rng, info["action_mask"]))
        if not terminated.any():
            assert "final_obs" not in info and "final_info" not in info
            continue
        ended_steps += 1
        final_obs, final_info = info["final_obs"], info["final_info"]
        assert final_obs.dtype == object and final_obs.shape == (8,)
        assert np.array_equal(info["_final_obs"], terminated)
        assert np.array_equal(info["_final_info"], terminated)
        for i in range(8):
            if terminated[i]:
                assert envs.single_observation_space.contains(final_obs[i])
                assert final_info["learner_seat"][i] == seats[i]
                assert np.flatnonzero(final_info["action_mask"][i]).tolist() == [envs.config.pass_action]
            else:
                assert final_obs[i] is None
        for key in ("learner_seat", "round_over", "game_over", "action_mask"):
            assert np.array_equal(final_info[f"_{key}"], terminated)
        assert final_info["round_over"][terminated].all()
    assert ended_steps > 10


def test_final_obs_and_final_info_are_laid_out_as_gymnasiums_own_add_info_lays_them():
    """Gymnasium's SAME_STEP vector envs build the infos with `VectorEnv._add_info(infos,
    {"final_obs": obs, "final_info": info}, i)` for each ended sub-env: built so from the
    env's own pieces, they equal what the env returns (keys, masks, dtypes, values)."""
    envs = make_vec(6, opponents=["random"], max_pips=6, num_players=2)
    obs, info = envs.reset(seed=6)
    rng = np.random.default_rng(5)
    compared = 0
    for _ in range(120):
        seats = info["learner_seat"].copy()
        obs, reward, terminated, truncated, info = envs.step(masked_random(rng, info["action_mask"]))
        if not terminated.any():
            continue
        expected: dict = {}
        for i in np.flatnonzero(terminated):
            mask = np.zeros(envs.config.num_actions, bool)
            mask[envs.config.pass_action] = True
            single = {"learner_seat": np.int32(seats[i]), "round_over": bool(info["round_over"][i]),
                      "game_over": bool(info["game_over"][i]), "action_mask": mask}
            expected = envs._add_info(expected, {"final_obs": info["final_obs"][i].copy(),
                                                 "final_info": single}, int(i))
        assert sorted(k for k in info if "final" in k) == sorted(expected)
        same(freeze({k: v for k, v in expected.items() if k != "final_obs"}),
             freeze({k: info[k] for k in expected if k != "final_obs"}), "infos")
        assert [o is None for o in expected["final_obs"]] == [o is None for o in info["final_obs"]]
        compared += 1
    assert compared > 5


def test_gymnasiums_stateful_vector_wrappers_read_the_same_step_mode():
    """RecordEpisodeStatistics and NormalizeReward read `metadata["autoreset_mode"]`: under
    SAME_STEP every step belongs to an episode and a return restarts right after `terminated`.
    Their statistics equal the ones counted here from the raw env's rewards and flags."""
    from gymnasium.wrappers.vector import NormalizeReward, RecordEpisodeStatistics

    n, gamma = 6, 0.9
    normalized = NormalizeReward(make_vec(n, opponents=["heuristic"], max_pips=6, num_players=2),
                                 gamma=gamma)
    envs = RecordEpisodeStatistics(normalized)
    obs, info = envs.reset(seed=4)
    rng = np.random.default_rng(2)
    lengths, returns, discounted = np.zeros(n, int), np.zeros(n), np.zeros(n)
    episodes = 0
    for _ in range(150):
        obs, reward, terminated, truncated, info = envs.step(masked_random(rng, info["action_mask"]))
        scale = np.sqrt(normalized.return_rms.var + normalized.epsilon)
        raw_reward = reward * scale
        lengths += 1
        returns += reward  # the statistics wrap the normalized rewards
        discounted = discounted * gamma + raw_reward
        discounted[terminated] = 0.0
        np.testing.assert_allclose(normalized.accumulated_reward, discounted, rtol=1e-4, atol=1e-6)
        if terminated.any():
            assert np.array_equal(info["episode"]["l"][terminated], lengths[terminated])
            np.testing.assert_allclose(info["episode"]["r"][terminated], returns[terminated],
                                       rtol=1e-4, atol=1e-6)
            episodes += terminated.sum()
            lengths[terminated], returns[terminated] = 0, 0.0
    assert episodes > 10


def test_the_vector_env_honours_reset_mask_and_refuses_other_options():
    envs = make_vec(4, opponents=["greedy"], max_pips=6)
    full = make_vec(4, opponents=["greedy"], max_pips=6)
    obs, info = envs.reset(seed=1)
    rng = np.random.default_rng(3)
    for _ in range(5):
        obs, *_, info = envs.step(masked_random(rng, info["action_mask"]))
    mask = np.array([False, True, False, True])
    kept = obs.copy()
    obs, info = envs.reset(seed=7, options={"reset_mask": mask})
    expected, expected_info = full.reset(seed=7)
    assert np.array_equal(obs[mask], expected[mask])
    assert np.array_equal(obs[~mask], kept[~mask])
    assert np.array_equal(info["learner_seat"][mask], expected_info["learner_seat"][mask])
    before = whole_state(envs.batch)
    with pytest.raises(ValueError, match=r"reset options \['render'\] are not supported"):
        envs.reset(seed=7, options={"render": True})
    same(before, whole_state(envs.batch), "batch")


# ---------------------------------------------------------------------------- a small fuzzer
def bad_actions(rng: np.random.Generator, good: np.ndarray, num_actions: int):
    """A malformed or illegal variant of the legal `good` actions."""
    n = good.size
    kind = rng.integers(9)
    if kind == 0:
        return good.astype(rng.choice([np.float32, np.float64, np.complex64, bool]))
    if kind == 1:
        return good[: rng.integers(n)]
    if kind == 2:
        return np.concatenate([good, good])
    if kind == 3:
        return good.reshape(1, n)
    if kind == 4:
        return [str(a) for a in good]
    bad = good.copy().astype(rng.choice([np.int8, np.int16, np.int32, np.int64, np.uint64]))
    i = rng.integers(n)
    top = int(np.iinfo(bad.dtype).max)
    values = [num_actions, num_actions + 1, top] + ([2**63] if top > 2**63 else [-1])
    bad[i] = values[rng.integers(len(values))]
    if kind == 5 and n > 1:  # an illegal action beside legal ones, anywhere in the batch
        j = (i + 1) % n
        legal = np.flatnonzero(~np.isin(np.arange(num_actions), [good[j]]))
        bad[j] = legal[0] if legal.size else good[j]
    return bad


def test_random_bad_calls_are_refused_with_a_value_error_and_change_nothing():
    """Random play interleaved with random malformed calls (actions of the wrong dtype, shape or
    value, bad seeds and options): every refused call raises a `ValueError` (or subclass) and
    leaves the whole state as it was; the good calls play on."""
    rng = np.random.default_rng(12)
    seats = Seats(SMALL.num_players)
    games = ChickenFootBatch(SMALL, 5, bots=seats, episode="round", final_observation=True,
                             num_rounds=2)
    out = games.reset(seed=3)
    refused = played = refused_draws = 0
    for _ in range(400):
        good = masked_random(rng, out.action_mask)
        choice = rng.integers(4)
        if choice == 0:
            out = games.step(good)
            played += 1
            continue
        before = whole_state(games)
        try:
            if choice == 1:
                games.step(bad_actions(rng, good, SMALL.num_actions))
            elif choice == 2:
                seed = [-5, 1.5, "x", [1, 2], [1, 2, 3, 4, -1], None, True][rng.integers(7)]
                options = [None, {"foo": 1}, {"reset_mask": np.zeros(5, bool)}][rng.integers(3)]
                if seed is None and options is None:
                    options = {"reset_mask": [True] * 5}
                games.reset(seed=seed, options=options)
            else:  # a seat draw that fails: at the next step's draws, or at a reset's
                seats.broken, seats.bad = True, ["greedy"] * SMALL.num_players
                if games._ahead.all():
                    games.reset()
                else:
                    refused_draws += 1
                    games.step(good)
        except ValueError:
            refused += 1
            same(before, whole_state(games), "batch")
        else:
            raise AssertionError("a bad call was accepted")
        finally:
            seats.broken = False
    assert refused > 200 and played > 50 and refused_draws > 5, (refused, played, refused_draws)


def test_a_zero_dimensional_seed_is_its_scalar_and_other_ranks_are_refused():
    games = ChickenFootBatch(SMALL, 2, bots={1: "greedy", 2: "greedy"})
    same_out = games.reset(seed=np.array(7)).observation.copy()
    assert np.array_equal(same_out, games.reset(seed=7).observation)
    before = whole_state(games)
    for seed in (np.array([[1, 2]]), np.array(1.5), np.array([1.0, 2.0])):
        with pytest.raises(ValueError, match="seed must be None, an int or 2 ints"):
            games.reset(seed=seed)
        same(before, whole_state(games))
