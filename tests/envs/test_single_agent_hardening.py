"""Hardening of the single-agent env (`cf_env.envs.single_agent`, `cf_env/ChickenFoot-v1`):
seeded resets replay on a used env for every opponent kind, SB3's `make_vec_env` and `rgb_array`
rendering, actions checked by the engine's rules (never coerced), no stepping outside an episode,
the checkers on the registered id's defaults, typo'd keywords and masks through the wrappers.

Every invalid input raises a clear exception and changes nothing: each such test compares the
engine's snapshot, the observation and the mask before and after.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from cf_env import ChickenFootConfig, IllegalActionError
from cf_env.envs.env import raw_env
from cf_env.envs.single_agent import ENV_ID, ChickenFootSingleAgentEnv, SpecOpponents
from cf_env.viz.render_image import render_rgb

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "ppo-4p-d9"


def _state(env) -> tuple:
    """Everything a failed call must leave as it was: the game, the learner's view and mask."""
    raw = env.unwrapped
    return (
        json.dumps(raw.engine.snapshot(), sort_keys=True),
        raw._observe().tobytes(),
        raw.action_masks().tobytes(),
        raw.learner,
    )


def _placeholder_only(env) -> bool:
    """No episode running: the mask is the terminal placeholder alone (it was
    all False, an empty set that makes a masked categorical NaN)."""
    mask = env.unwrapped.action_masks()
    return mask.sum() == 1 and bool(mask[env.unwrapped.terminal_action])


def _trace(env, seed: int, steps: int, reset_seed: int | None) -> list:
    """Observations, masks and rewards for `steps` random legal learner steps (actions drawn
    from `seed`), starting with `reset(seed=reset_seed)`; episodes roll over with `reset()`."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=reset_seed)
    out = [(obs.tobytes(), info["learner_seat"])]
    for _ in range(steps):
        mask = env.unwrapped.action_masks()
        out.append(mask.tobytes())
        obs, reward, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        out.append((obs.tobytes(), reward, terminated))
        if terminated:
            obs, info = env.reset()
            out.append((obs.tobytes(), info["learner_seat"]))
    return out


# ============================================================================ seeded resets
class _CachingSampler:
    """A user's `OpponentSampler` that builds each policy once and reuses it across games."""

    def __init__(self, config):
        self.config = config
        self.cache: dict[int, object] = {}
        self.extra: list[str] = []

    def sample(self, rng, num):
        from cf_env.agents.policies import load_policy

        out = []
        for slot in range(num):
            if slot not in self.cache:
                self.cache[slot] = load_policy("random", self.config, seed=int(rng.integers(2**31)))
            out.append(self.cache[slot])
        return out

    def add(self, name: str) -> int:
        self.extra.append(name)
        return len(self.extra)


def _snapshot_pool(config):
    from training.selfplay.opponents import OpponentPool

    # Sampling (not greedy) snapshots: their own RNG matters, like the bots'.
    return OpponentPool(config, {"random": 1.0}, snapshot_weight=3.0, snapshots=[str(SHIPPED)])


OPPONENT_KINDS = {
    "random": lambda cfg: ["random"],
    "greedy": lambda cfg: ["greedy"],
    "heuristic": lambda cfg: ["heuristic"],
    "ismcts": lambda cfg: ["ismcts:8"],
    "mixed specs": lambda cfg: ["random", "greedy", "heuristic"],
    "snapshots": _snapshot_pool,
    "custom sampler": _CachingSampler,
}


@pytest.mark.parametrize("kind", list(OPPONENT_KINDS))
def test_reset_seed_reproduces_on_a_used_env(kind):
    """The same seed gives the same games whatever the env played before: the opponents'
    policies are restarted (cached ones had drawn from the env's RNG only when first built,
    and their own RNGs had moved on)."""
    cfg = ChickenFootConfig(num_rounds=2)
    steps = 12 if kind == "ismcts" else 40
    env = ChickenFootSingleAgentEnv(cfg, opponents=OPPONENT_KINDS[kind](cfg))
    first = _trace(env, seed=1, steps=steps, reset_seed=123)
    _trace(env, seed=2, steps=steps, reset_seed=None)  # play on: caches fill, RNGs move
    _trace(env, seed=3, steps=steps, reset_seed=7)  # another seed in between
    assert _trace(env, seed=1, steps=steps, reset_seed=123) == first
    fresh = ChickenFootSingleAgentEnv(cfg, opponents=OPPONENT_KINDS[kind](cfg))
    assert _trace(fresh, seed=1, steps=steps, reset_seed=123) == first


def test_gym_make_reset_with_the_same_seed_gives_the_same_observation():
    env = gym.make(ENV_ID, opponents=["random"])
    first, _ = env.reset(seed=123)
    second, _ = env.reset(seed=123)
    np.testing.assert_array_equal(first, second)


def test_policies_reset_before_every_game_and_sampler_changes_survive_reseeding():
    resets = []

    class Resettable:
        def __init__(self, config, seed=None):
            self.rng = np.random.default_rng(seed)

        def reset(self):
            resets.append(self)

        def act_bits(self, legal):
            legal_actions = [a for a in range(legal.bit_length()) if legal >> a & 1]
            return legal_actions[int(self.rng.integers(len(legal_actions)))]

        def act(self, observation):
            raise AssertionError("the fast path is used")

    env = ChickenFootSingleAgentEnv(opponents=[Resettable], episode="game", num_rounds=1)
    env.reset(seed=0)
    assert len(resets) == 3  # one per opponent seat, before the game
    # call_opponents (VecEnv.env_method's way in) reaches the source and the copy in play, so a
    # change such as a new snapshot survives the next reset(seed=...).
    env.set_opponents(_CachingSampler(env.config))
    assert env.call_opponents("add", "snapshot-a") == 1
    env.reset(seed=0)
    assert env._sampler.extra == ["snapshot-a"] and env.opponents.extra == ["snapshot-a"]
    assert env._sampler is not env.opponents  # games never draw from the source itself


def test_opponents_that_cannot_be_copied_are_refused_and_nothing_changes():
    class Locked(_CachingSampler):
        def __init__(self, config):
            super().__init__(config)
            self.lock = threading.Lock()  # deepcopy cannot copy a lock

    env = ChickenFootSingleAgentEnv(opponents=["greedy"])
    env.reset(seed=0)
    before, source, sampler = _state(env), env.opponents, env._sampler
    with pytest.raises(TypeError, match=r"Locked cannot be deep-copied .*reset\(seed=\.\.\.\)"):
        env.set_opponents(Locked(env.config))
    assert (_state(env), env.opponents, env._sampler) == (before, source, sampler)
    with pytest.raises(TypeError, match="cannot be deep-copied"):
        ChickenFootSingleAgentEnv(opponents=Locked(ChickenFootConfig()))


# ======================================================================= make_vec_env and rendering
@pytest.mark.slow
def test_sb3_make_vec_env_resets_and_renders_rgb_frames():
    pytest.importorskip("sb3_contrib", reason="SB3 and sb3-contrib: the train extra")
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(ENV_ID, n_envs=2)  # SB3 asks for render_mode="rgb_array"
    try:
        obs = vec.reset()
        assert obs.shape == (2, vec.observation_space.shape[0])
        # What VecVideoRecorder checks and captures (moviepy, which writes the file, is not a
        # dependency of this project).
        assert vec.render_mode == "rgb_array"
        assert vec.get_attr("metadata")[0]["render_fps"] == 1
        frame = vec.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    finally:
        vec.close()


@pytest.mark.slow
def test_rgb_array_is_the_learners_view_with_a_fixed_size():
    env = gym.make(ENV_ID, opponents=["greedy"], render_mode="rgb_array", num_rounds=2)
    raw = env.unwrapped
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    shapes, hidden = set(), 0
    for _ in range(30):
        image = env.render()
        np.testing.assert_array_equal(image, render_rgb(raw.engine, viewer=raw.learner))
        shapes.add(image.shape)
        assert image.dtype == np.uint8
        # Only the learner's hand is drawn: another viewer's picture differs.
        other = (raw.learner + 1) % raw.config.num_players
        hidden += not np.array_equal(image, render_rgb(raw.engine, viewer=other))
        _, _, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(raw.action_masks()))))
        if terminated:
            env.reset()
    assert len(shapes) == 1 and hidden == 30  # video recorders need one frame size


@pytest.mark.parametrize("mode", ["human", "rgb", ""])
def test_bad_render_mode_names_the_valid_ones(mode):
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['ansi', 'rgb_array'\]"):
        gym.make(ENV_ID, render_mode=mode)


# ============================================================================ malformed actions
def _legal(env) -> int:
    return int(np.flatnonzero(env.unwrapped.action_masks())[0])


MALFORMED = {
    "float": lambda a: a + 0.7,  # used to play int(51.7) = 51
    "integral float": lambda a: float(a),
    "str": lambda a: str(a),  # used to play int("51")
    "bool": lambda a: True,  # used to play action 1
    "None": lambda a: None,  # used to raise TypeError
    "1-d array": lambda a: np.array([a]),  # used to raise TypeError
    "numpy float": lambda a: np.float32(a),
    "numpy bool": lambda a: np.bool_(True),
    "float array": lambda a: np.array(float(a)),
    "list": lambda a: [a],
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_actions_raise_and_change_nothing(name):
    env = ChickenFootSingleAgentEnv(opponents=["greedy"])
    env.reset(seed=0)
    action = MALFORMED[name](_legal(env))
    before = _state(env)
    with pytest.raises(IllegalActionError, match=r"action must be an int in 0\.\.111; got "):
        env.step(action)
    assert _state(env) == before
    env.step(_legal(env))  # the episode carries on


@pytest.mark.parametrize("name", list(MALFORMED))
def test_penalize_treats_malformed_actions_as_the_aec_env_does(name):
    """As in the AEC env, `"penalize"` penalises a malformed action like an illegal one: -1 and
    the episode ends; the engine never applied it, and the episode cannot be stepped on."""
    env = ChickenFootSingleAgentEnv(opponents=["greedy"], illegal_action="penalize")
    env.reset(seed=0)
    engine_before = json.dumps(env.engine.snapshot(), sort_keys=True)
    obs_before = env._observe()
    obs, reward, terminated, truncated, info = env.step(MALFORMED[name](_legal(env)))
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert json.dumps(env.engine.snapshot(), sort_keys=True) == engine_before
    np.testing.assert_array_equal(obs, obs_before)
    assert _placeholder_only(env)
    with pytest.raises(IllegalActionError, match="the episode is over"):
        env.step(0)


@pytest.mark.parametrize(
    "convert", [np.int64, np.int32, np.uint8, np.array], ids=["int64", "int32", "uint8", "0-d array"]
)
def test_numpy_integers_play_like_ints(convert):
    twins = [ChickenFootSingleAgentEnv(opponents=["random"]) for _ in range(2)]
    for env in twins:
        env.reset(seed=5)
    for _ in range(10):
        action = _legal(twins[0])
        ours, ints = twins[0].step(convert(action)), twins[1].step(action)
        np.testing.assert_array_equal(ours[0], ints[0])
        np.testing.assert_array_equal(ours[4].pop("action_mask"), ints[4].pop("action_mask"))
        assert ours[1:] == ints[1:]
        assert type(twins[0].engine.history[-1][2]) is int
        if ours[2]:
            for env in twins:
                env.reset()


# ====================================================================== stepping outside an episode
@pytest.mark.parametrize("illegal_action", ["raise", "penalize"])
@pytest.mark.parametrize("episode", ["round", "game"])
def test_stepping_a_finished_episode_always_raises(episode, illegal_action):
    """After terminated=True every step raises (it used to play on into the next round for 8
    of these 40 seeds) and changes nothing; the mask is the terminal placeholder alone (it
    was all False); reset() starts the next episode."""
    rounds = 1 if episode == "game" else None  # round episodes: the game goes on after them
    env = ChickenFootSingleAgentEnv(
        opponents=["random"], episode=episode, num_rounds=rounds, illegal_action=illegal_action
    )
    learner_could_act = 0
    for seed in range(40):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        terminated = False
        while not terminated:
            mask = env.action_masks()
            *_, terminated, _, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        # The engine may have the learner to act in the next round already (round episodes).
        engine = env.engine
        engine_legal = engine.legal_actions() if not engine.game_over else []
        learner_could_act += bool(engine_legal) and engine.current == env.learner
        before = _state(env)
        assert _placeholder_only(env)
        for action in engine_legal[:1] + [0, env.config.draw_action, 3.5, None]:
            with pytest.raises(IllegalActionError, match=r"the episode is over .*call reset\(\)"):
                env.step(action)
            assert _state(env) == before
        env.reset()
        assert env.action_masks().any()
    if episode == "round":
        assert learner_could_act == 8  # the seeds the old check let through


def test_step_before_reset_gives_a_clear_error():
    env = ChickenFootSingleAgentEnv(opponents=["greedy"])
    before = _state(env)
    assert _placeholder_only(env)
    for action in (0, env.config.draw_action, "x"):
        with pytest.raises(IllegalActionError, match=r"no episode is running; call reset\(\) first"):
            env.step(action)
        assert _state(env) == before
    # A reset that fails (an opponent that does not load) leaves no episode running either. (A
    # bad spec string fails sooner, when the env is made; a factory is built at reset.)
    def unloadable(config, seed=None):
        raise ValueError("this opponent does not load")

    broken = ChickenFootSingleAgentEnv(opponents=[unloadable])
    with pytest.raises(ValueError, match="does not load"):
        broken.reset(seed=0)
    with pytest.raises(IllegalActionError, match="no episode is running"):
        broken.step(0)


def test_an_opponent_failing_mid_step_halts_the_episode():
    class Faulty:
        def __init__(self, config, seed=None):
            self.calls = 0

        def act(self, observation):
            self.calls += 1
            if self.calls > 3:
                raise RuntimeError("opponent crashed")
            return int(np.flatnonzero(observation["action_mask"])[0])

    env = ChickenFootSingleAgentEnv(opponents=[Faulty], episode="game")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    with pytest.raises(RuntimeError, match="opponent crashed"):
        for _ in range(200):
            env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    # The learner's action went in and an opponent is to act: no learner step may follow.
    before = _state(env)
    assert _placeholder_only(env)
    with pytest.raises(IllegalActionError, match="an opponent's turn failed"):
        env.step(0)
    assert _state(env) == before


# ======================================================= checkers, typos and masks through wrappers
def test_gymnasium_and_sb3_env_checkers_pass_on_the_registered_defaults():
    pytest.importorskip("sb3_contrib", reason="SB3 and sb3-contrib: the train extra")
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(gym.make(ENV_ID).unwrapped)  # as a user writes it
    sb3_check_env(gym.make(ENV_ID))
    # They step unmasked random actions, which the class's default "raise" refuses: the
    # registered id defaults to "penalize", anything given explicitly is kept.
    assert gym.make(ENV_ID).unwrapped.options.illegal_action == "penalize"
    assert gym.make(ENV_ID, illegal_action="raise").unwrapped.options.illegal_action == "raise"
    assert gym.make(ENV_ID, config={"num_players": 3}).unwrapped.options.illegal_action == "penalize"
    assert gym.make(ENV_ID, config=ChickenFootConfig()).unwrapped.options.illegal_action == "raise"
    assert ChickenFootSingleAgentEnv().options.illegal_action == "raise"
    with pytest.raises(IllegalActionError):
        check_env(gym.make(ENV_ID, illegal_action="raise").unwrapped)


@pytest.mark.parametrize(
    ("kwargs", "typo", "meant"),
    [
        ({"num_player": 3}, "num_player", "num_players"),
        ({"illegal_actions": "penalize"}, "illegal_actions", "illegal_action"),
        ({"config": {"max_pip": 6}}, "max_pip", "max_pips"),
    ],
    ids=["keyword", "keyword 2", "config dict"],
)
def test_typo_keyword_gets_the_aec_envs_message(kwargs, typo, meant):
    with pytest.raises(ValueError) as aec:
        raw_env(**kwargs.get("config", kwargs))
    with pytest.raises(ValueError) as ours:
        gym.make(ENV_ID, **kwargs)
    assert str(ours.value) == str(aec.value)
    assert f"unknown config field(s) [{typo!r}]" in str(ours.value)
    assert f"did you mean {typo!r} -> {meant!r}?" in str(ours.value)


def test_typo_in_rules_on_top_of_a_config_object_and_a_bad_config_type():
    with pytest.raises(ValueError, match=r"unknown config field.*'num_player'"):
        ChickenFootSingleAgentEnv(ChickenFootConfig(), num_player=3)
    with pytest.raises(ValueError, match="config must be a ChickenFootConfig, a dict of its fields"):
        ChickenFootSingleAgentEnv(config="max_pips=6")


@pytest.mark.slow
def test_maskable_ppo_reads_the_masks_and_trains_on_make_vec_env():
    """sb3-contrib reaches `action_masks` through SB3's vector envs (`env_method`, which uses
    gymnasium's `get_wrapper_attr`), so MaskablePPO trains on `make_vec_env(ENV_ID)` as is."""
    pytest.importorskip("sb3_contrib", reason="SB3 and sb3-contrib: the train extra")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(ENV_ID, n_envs=2, seed=3)
    try:
        vec.reset()
        assert is_masking_supported(vec)
        masks = get_action_masks(vec)
        expected = [env.unwrapped.action_masks() for env in vec.envs]
        np.testing.assert_array_equal(masks, np.stack(expected))
        assert masks.any(axis=1).all()
        model = MaskablePPO("MlpPolicy", vec, n_steps=16, batch_size=32, n_epochs=1, seed=0)
        model.learn(64)
        assert model.num_timesteps == 64
    finally:
        vec.close()
    # One env from gym.make: the wrappers forward no attributes (gymnasium 1.x); these do.
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    np.testing.assert_array_equal(env.get_wrapper_attr("action_masks")(), env.unwrapped.action_masks())


# ================================================================== seeded resets: the copy in play
def test_spec_opponents_start_empty_in_every_copy_in_play():
    """SpecOpponents' cache lives in the copy in play; the source keeps none (what makes the
    restart at reset(seed=...) rebuild every policy)."""
    env = ChickenFootSingleAgentEnv(opponents=["random", "greedy"])
    env.reset(seed=0)
    assert isinstance(env.opponents, SpecOpponents)
    assert env._sampler._built and not env.opponents._built


def test_soak_replays_single_agent_games_from_their_seed(capsys):
    """`python -m cf_env.tools.soak` plays some games through the single-agent env twice from one
    seed (the second time on the used env) and counts them in its summary line."""
    from cf_env.tools import soak

    assert soak.main(["--steps", "2000", "--seed", "2", "--env-every", "0", "--single-every", "1"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    count = int(line.split(" games (0 via the AEC env, ")[1].split(" twice via the single-agent")[0])
    assert count >= 2 and ", 0 faults;" in line
