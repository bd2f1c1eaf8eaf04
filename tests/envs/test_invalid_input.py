"""Invalid inputs: every one raises a clear, documented exception and changes nothing.

* Configs with wrong types or values -> `ValueError` naming the field and what is valid
  (through `ChickenFootConfig`, `from_dict`, `replace` and the env constructors).
* Actions that are out of range, negative, floats, numpy scalars of float/bool dtypes, arrays,
  sequences, `None` while alive, bools, strings, or anything after the game ended ->
  `cf_env.IllegalActionError` (a `ValueError`) naming the action and what is legal; the engine
  and env state are unchanged and the game carries on. numpy integer scalars of a legal action
  are accepted. With `illegal_action="penalize"`: no exception, the offender gets -1 and the
  game ends (PettingZoo classic semantics).
* Corrupted snapshots (missing keys, wrong/duplicated/missing tiles, wrong types, another
  config) -> `cf_env.SnapshotError` (a `ValueError`) naming the offending field; the state is
  unchanged.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import cf_env
from cf_env import ChickenFootConfig, Engine, IllegalActionError, SnapshotError
from cf_env.core.config import OPTION_FIELDS, DriverOptions, split_options
from cf_env.core.snapshot import SNAPSHOT_KEYS


def test_documented_exceptions_are_value_errors():
    assert issubclass(IllegalActionError, ValueError)
    assert issubclass(SnapshotError, ValueError)


# ============================================================================ configs
# (fields, the field the message must name, a fragment saying what is valid)
BAD_CONFIGS = [
    ({"max_pips": 7}, "max_pips", "6, 9, 12, 15, 18"),
    ({"max_pips": -6}, "max_pips", "6, 9, 12, 15, 18"),
    ({"max_pips": "9"}, "max_pips", "int"),
    ({"max_pips": 9.0}, "max_pips", "int"),
    ({"max_pips": True}, "max_pips", "int"),
    ({"max_pips": None}, "max_pips", "int"),
    ({"num_players": 1}, "num_players", "2..8"),
    ({"num_players": 0}, "num_players", "2..8"),
    ({"num_players": 9}, "num_players", "2..8"),
    ({"num_players": 5, "max_pips": 6}, "num_players", "2..4"),
    ({"num_players": 15, "max_pips": 18}, "num_players", "2..14"),
    ({"num_players": 4.0}, "num_players", "int"),
    ({"num_players": True}, "num_players", "int"),
    ({"num_players": "4"}, "num_players", "int"),
    ({"hand_size": 0}, "hand_size", "2..13"),
    ({"hand_size": 1}, "hand_size", "2..13"),
    ({"hand_size": -7}, "hand_size", "2..13"),
    ({"hand_size": 14}, "hand_size", "2..13"),
    ({"hand_size": 28, "num_players": 2, "max_pips": 6}, "hand_size", "2..13"),
    ({"hand_size": 7.0}, "hand_size", "int"),
    ({"hand_size": "7"}, "hand_size", "int"),
    ({"num_rounds": 0}, "num_rounds", "1..10"),
    ({"num_rounds": 11}, "num_rounds", "1..10"),
    ({"num_rounds": 8, "max_pips": 6}, "num_rounds", "1..7"),
    ({"num_rounds": -1}, "num_rounds", "1..10"),
    ({"num_rounds": 2.5}, "num_rounds", "int"),
    ({"num_rounds": "3"}, "num_rounds", "int"),
    ({"spinner_arms": 5}, "spinner_arms", "4 or 6"),
    ({"spinner_arms": 7}, "spinner_arms", "4 or 6"),
    ({"spinner_arms": 0}, "spinner_arms", "4 or 6"),
    ({"spinner_arms": "4"}, "spinner_arms", "int"),
    ({"spinner_arms": 4.0}, "spinner_arms", "int"),
    ({"toes": 0}, "toes", "1..9"),
    ({"toes": 10}, "toes", "1..9"),
    ({"toes": 7, "max_pips": 6}, "toes", "1..6"),
    ({"toes": 3.0}, "toes", "int"),
    ({"draw_until_playable": 1}, "draw_until_playable", "True or False"),
    ({"draw_until_playable": "yes"}, "draw_until_playable", "True or False"),
    ({"draw_until_playable": None}, "draw_until_playable", "True or False"),
    ({"must_play_drawn": 0}, "must_play_drawn", "True or False"),
    ({"must_play_drawn": "False"}, "must_play_drawn", "True or False"),
    ({"skip_forced": 1}, "skip_forced", "True or False"),
    ({"skip_forced": np.bool_(True)}, "skip_forced", "True or False"),
    ({"double_blank_value": -1}, "double_blank_value", "0..180"),
    ({"double_blank_value": 181}, "double_blank_value", "0..180"),  # twice points_scale on double-9
    ({"double_blank_value": 121, "max_pips": 6}, "double_blank_value", "0..120"),
    ({"double_blank_value": 10**30}, "double_blank_value", "0..180"),
    ({"start_search": "lower"}, "start_search", "'turns', 'all_draw', 'lower_double'"),
    ({"start_search": None}, "start_search", "'turns', 'all_draw', 'lower_double'"),
    ({"target_score": 0}, "target_score", "1..4905"),
    ({"target_score": 4906}, "target_score", "1..4905"),
    ({"target_score": 100.0}, "target_score", "int"),
    ({"target_score": "100"}, "target_score", "int"),
    ({"target_score": True}, "target_score", "int"),
    ({"target_score": 100, "num_rounds": 3}, "num_rounds", "left unset (or 10)"),
    ({"double_blank_value": 50.0}, "double_blank_value", "int"),
    ({"double_blank_value": "50"}, "double_blank_value", "int"),
    ({"double_blank_value": True}, "double_blank_value", "int"),
    ({"tie_break": "R13"}, "tie_break", "'r13', 'none'"),
    ({"tie_break": None}, "tie_break", "'r13', 'none'"),
    ({"reward_mode": "points"}, "reward_mode", "'score', 'zero_sum', 'win'"),
    ({"reward_mode": ""}, "reward_mode", "'score', 'zero_sum', 'win'"),
    ({"illegal_action": "ignore"}, "illegal_action", "'raise', 'penalize'"),
    ({"illegal_action": "Raise"}, "illegal_action", "'raise', 'penalize'"),
]


def _config_id(case) -> str:
    return ",".join(f"{k}={v!r}" for k, v in case[0].items())


@pytest.mark.parametrize("fields, field, valid", BAD_CONFIGS, ids=map(_config_id, BAD_CONFIGS))
def test_bad_config_names_the_field_and_what_is_valid(fields, field, valid):
    # The driver options (reward_mode, skip_forced, illegal_action) are DriverOptions' fields,
    # checked with the same messages wherever the flat keywords go.
    kind = DriverOptions if field in OPTION_FIELDS else ChickenFootConfig
    builders = {
        kind.__name__: lambda: kind(**fields),
        "from_dict": lambda: ChickenFootConfig.from_dict(fields),
        "split_options": lambda: split_options(fields),
        "env": lambda: cf_env.env(**fields),
        "raw_env": lambda: cf_env.raw_env(**fields),
    }
    if set(fields) == {field}:  # (replace keeps the base's other fields; see the test below)
        builders["replace"] = lambda: kind().replace(**fields)
    for name, build in builders.items():
        with pytest.raises(ValueError) as err:
            build()
        message = str(err.value)
        assert field in message, (name, message)
        assert valid in message, (name, message)
        assert repr(fields[field]) in message or str(fields[field]) in message, (name, message)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"render_mode": "rgb"}, "ansi"),
        ({"render_mode": 1}, "ansi"),
        ({"max_cycles": 0}, "positive int"),
        ({"max_cycles": -3}, "positive int"),
        ({"max_cycles": 1.5}, "positive int"),
        ({"max_cycles": True}, "positive int"),
        ({"max_cycles": "10"}, "positive int"),
    ],
)
def test_bad_env_arguments_name_the_argument(kwargs, fragment):
    (name,) = kwargs
    for make in (cf_env.env, cf_env.raw_env):
        with pytest.raises(ValueError) as err:
            make(**kwargs)
        assert name in str(err.value) and fragment in str(err.value)


def test_replace_rederives_the_fields_left_to_their_defaults():
    # `hand_size` and `num_rounds` left as None follow the set and player count (README table);
    # replacing the set or the player count must not freeze the old defaults into an invalid
    # config (double-9's 10 rounds on a double-6, 7 tiles each for 8 players).
    assert ChickenFootConfig().replace(max_pips=6).num_rounds == 7
    assert ChickenFootConfig().replace(num_players=8).hand_size == 6
    assert ChickenFootConfig(num_players=8).replace(num_players=2).hand_size == 7
    # ... while a value the user gave is kept.
    assert ChickenFootConfig(hand_size=5).replace(num_players=3).hand_size == 5


def test_unknown_config_field_lists_the_valid_fields():
    with pytest.raises(ValueError) as err:
        ChickenFootConfig.from_dict({"num_player": 3})
    assert "num_player" in str(err.value) and "num_players" in str(err.value)


def test_env_with_a_misspelt_field_raises_value_error_listing_the_valid_fields():
    # A misspelt keyword is the commonest config mistake; the env should say what it accepts,
    # as `ChickenFootConfig.from_dict` does, not fail with the dataclass's bare TypeError.
    for make in (cf_env.env, cf_env.raw_env):
        with pytest.raises(ValueError) as err:
            make(num_player=3)
        assert "num_player" in str(err.value) and "num_players" in str(err.value)


# ============================================================================ engine states
CFG = ChickenFootConfig(max_pips=9, num_players=4, num_rounds=2)


def find_engine(cfg: ChickenFootConfig, predicate, seeds=range(300)) -> Engine:
    """The first position of a seeded random game that satisfies `predicate`."""
    for seed in seeds:
        engine = Engine(cfg, seed=seed)
        policy = np.random.default_rng(seed)
        while True:
            if predicate(engine):
                return engine
            if engine.game_over:
                break
            engine.step(int(policy.choice(engine.legal_actions())))
    raise AssertionError("no such position in the searched games")


STATES = {
    "start": lambda e: True,
    # R8: the post-draw decision (the drawn tile is pending).
    "post_draw": lambda e: e.drawn_tile >= 0 and not e.game_over,
    # R9: a chicken foot is pending.
    "foot": lambda e: e.foot_value >= 0 and not e.game_over,
    # Right after a round ended: the next round's first decision.
    "next_round": lambda e: e.round == 1 and e.history[-1][0] != 1,
}


def state(name: str, cfg: ChickenFootConfig = CFG) -> Engine:
    return find_engine(cfg, STATES[name])


def frozen(engine: Engine) -> str:
    return json.dumps(engine.snapshot(), sort_keys=True)


# (id, action built from (legal actions, number of actions))
MALFORMED = [
    ("num_actions", lambda legal, n: n),
    ("num_actions+1", lambda legal, n: n + 1),
    ("huge", lambda legal, n: 10**9),
    ("beyond_int64", lambda legal, n: 2**70),
    ("minus_one", lambda legal, n: -1),
    ("minus_num_actions", lambda legal, n: -n),
    ("minus_legal", lambda legal, n: -max(legal[-1], 1)),
    ("very_negative", lambda legal, n: -(2**70)),
    ("float_of_legal", lambda legal, n: float(legal[0])),
    ("half", lambda legal, n: legal[0] + 0.5),
    ("nan", lambda legal, n: float("nan")),
    ("inf", lambda legal, n: float("inf")),
    ("np_float32_of_legal", lambda legal, n: np.float32(legal[0])),
    ("np_float64_of_legal", lambda legal, n: np.float64(legal[0])),
    ("np_float16_of_legal", lambda legal, n: np.float16(legal[0])),
    ("np_bool", lambda legal, n: np.bool_(True)),
    ("np_complex", lambda legal, n: np.complex64(legal[0])),
    ("array_1", lambda legal, n: np.array([legal[0]])),
    ("array_2", lambda legal, n: np.array(legal[:1] * 2)),
    ("array_2d", lambda legal, n: np.array([[legal[0]]])),
    ("array_float_0d", lambda legal, n: np.array(float(legal[0]))),
    ("list", lambda legal, n: [legal[0]]),
    ("tuple", lambda legal, n: (legal[0],)),
    ("None", lambda legal, n: None),
    ("True", lambda legal, n: True),
    ("False", lambda legal, n: False),
    ("str_of_legal", lambda legal, n: str(legal[0])),
    ("str_draw", lambda legal, n: "draw"),
    ("bytes", lambda legal, n: b"\x01"),
    ("complex", lambda legal, n: complex(legal[0])),
    ("fraction", lambda legal, n: Fraction(legal[0])),
    ("decimal", lambda legal, n: Decimal(legal[0])),
    ("dict", lambda legal, n: {"action": legal[0]}),
]


def illegal_ints(engine: Engine) -> list[int]:
    """In-range actions that are not legal now: a sample that covers each kind."""
    cfg = engine.config
    legal = set(engine.legal_actions())
    candidates = [
        0,
        1,  # the hi half of the double-blank: never legal (a double attaches one way only)
        cfg.draw_action,
        cfg.pass_action,
        cfg.num_actions - 3,
    ]
    # A tile held by another seat (or in the boneyard): never the actor's to play.
    other = (engine.current + 1) % cfg.num_players
    candidates += [2 * t for t in engine.hand(other)[:2]]
    return [a for a in candidates if a not in legal]


def assert_message_for(action, message: str, engine: Engine, legal: list[int]) -> None:
    n = engine.config.num_actions
    if isinstance(action, int) and not isinstance(action, bool):
        assert f"action {action}" in message
        assert "legal" in message
        for a in legal:  # the legal set is named
            assert str(a) in message
    else:
        assert f"0..{n - 1}" in message, message  # the valid range
        assert type(action).__name__ in message, message  # and what was given


@pytest.mark.parametrize("where", list(STATES))
@pytest.mark.parametrize("make", [m for _, m in MALFORMED], ids=[i for i, _ in MALFORMED])
def test_engine_rejects_malformed_actions_and_changes_nothing(where, make):
    engine = state(where)
    legal = engine.legal_actions()
    action = make(legal, engine.config.num_actions)
    before = frozen(engine)
    with pytest.raises(IllegalActionError) as err:
        engine.step(action)
    assert_message_for(action, str(err.value), engine, legal)
    assert frozen(engine) == before
    assert engine.legal_actions() == legal
    # The game carries on exactly as if nothing had happened.
    twin = Engine(engine.config)
    twin.restore(json.loads(before))
    engine.step(legal[-1])
    twin.step(legal[-1])
    assert frozen(engine) == frozen(twin)


@pytest.mark.parametrize("where", list(STATES))
def test_engine_rejects_illegal_in_range_actions_and_changes_nothing(where):
    engine = state(where)
    legal = engine.legal_actions()
    before = frozen(engine)
    bad = illegal_ints(engine)
    assert bad
    for action in bad:
        with pytest.raises(IllegalActionError) as err:
            engine.step(action)
        assert_message_for(action, str(err.value), engine, legal)
        assert frozen(engine) == before


@pytest.mark.parametrize(
    "cast", [np.int64, np.int32, np.int16, np.uint16, np.uint64, np.intp, int], ids=str
)
def test_numpy_integer_scalars_of_a_legal_action_are_accepted(cast):
    engine = state("post_draw")
    twin = engine.clone()
    action = engine.legal_actions()[0]
    engine.step(cast(action))
    twin.step(action)
    assert frozen(engine) == frozen(twin)
    # the history records plain ints, so snapshots stay JSON
    assert type(engine.history[-1][2]) is int
    json.dumps(engine.snapshot())


def finished_engine() -> Engine:
    return find_engine(
        ChickenFootConfig(max_pips=6, num_players=3, num_rounds=1), lambda e: e.game_over
    )


@pytest.mark.parametrize(
    "action", [0, 1, "draw-action", "pass-action", None, 2.0, -1, 10**6], ids=repr
)
def test_any_action_after_the_game_ended_raises(action):
    engine = finished_engine()
    cfg = engine.config
    action = {"draw-action": cfg.draw_action, "pass-action": cfg.pass_action}.get(action, action)
    before = frozen(engine)
    assert not engine.legal_action_mask().any()
    with pytest.raises(IllegalActionError) as err:
        engine.step(action)
    if isinstance(action, int):
        assert "game is over" in str(err.value)
    assert frozen(engine) == before


# ============================================================================ env actions
def env_at(where: str, **overrides):
    """An AEC env whose engine sits in the same position as `state(where)`."""
    cfg, options = split_options(overrides, CFG)  # driver options do not change the game
    engine = state(where, cfg)
    env = cf_env.env(**cfg.to_dict(), **options.to_dict())
    env.reset(seed=0)
    env.unwrapped.restore(engine.snapshot())
    return env


def env_frozen(env) -> dict:
    """Everything an agent or a wrapper can see of the env, as plain data (0 == 0.0)."""
    raw = env.unwrapped
    obs, reward, term, trunc, info = env.last()
    text = json.dumps(
        {
            "snapshot": raw.snapshot(),
            "agent": env.agent_selection,
            "agents": env.agents,
            "rewards": raw.rewards,
            "cumulative": raw._cumulative_rewards,
            "terminations": raw.terminations,
            "truncations": raw.truncations,
            "infos": raw.infos,
            "last": [obs["observation"].tolist(), obs["action_mask"].tolist(), reward, term, trunc],
        },
        sort_keys=True,
        default=str,
    )
    return json.loads(text)


@pytest.mark.parametrize("where", ["start", "post_draw", "foot"])
@pytest.mark.parametrize("make", [m for _, m in MALFORMED], ids=[i for i, _ in MALFORMED])
def test_env_rejects_malformed_actions_and_changes_nothing(where, make):
    env = env_at(where)
    legal = np.flatnonzero(env.last()[0]["action_mask"]).tolist()
    action = make(legal, CFG.num_actions)
    before = env_frozen(env)
    with pytest.raises(IllegalActionError) as err:
        env.step(action)
    assert_message_for(action, str(err.value), env.unwrapped.engine, legal)
    assert env_frozen(env) == before
    env.step(legal[0])  # and the game goes on


@pytest.mark.parametrize("where", ["start", "post_draw", "foot"])
def test_env_rejects_illegal_in_range_actions_and_changes_nothing(where):
    env = env_at(where)
    engine = env.unwrapped.engine
    before = env_frozen(env)
    for action in illegal_ints(engine):
        with pytest.raises(IllegalActionError):
            env.step(action)
        assert env_frozen(env) == before


def test_env_accepts_sampled_numpy_integers_and_0d_integer_arrays():
    env = env_at("start")
    agent = env.agent_selection
    mask = env.last()[0]["action_mask"]
    action = env.action_space(agent).sample(mask=mask)  # numpy int64, the gymnasium way
    assert isinstance(action, np.integer)
    env.step(action)
    mask = env.last()[0]["action_mask"]
    env.step(np.array(int(np.flatnonzero(mask)[0])))  # so is SB3 predict()'s 0-d int array


def test_env_illegal_action_keeps_the_pending_round_reward():
    # After a round ends, every agent's round reward waits in `last()` until its next turn. An
    # illegal action that raises must not wipe it (the state is unchanged), or a caller that
    # catches the error and retries loses that reward.
    env = cf_env.env(**{**CFG.to_dict(), "reward_mode": "score"})
    env.reset(seed=1)
    policy = np.random.default_rng(1)
    while env.last()[1] == 0:
        env.step(int(policy.choice(np.flatnonzero(env.last()[0]["action_mask"]))))
    assert not env.unwrapped.engine.game_over
    before = env_frozen(env)
    pending = env.last()[1]
    with pytest.raises(IllegalActionError):
        env.step(-1)
    assert env.last()[1] == pending
    assert env_frozen(env) == before


PENALIZED = [
    "num_actions",
    "minus_one",
    "float_of_legal",
    "np_float32_of_legal",
    "array_1",
    "None",
    "True",
    "str_of_legal",
]


@pytest.mark.parametrize("name", PENALIZED + ["illegal_int"])
def test_penalize_mode_ends_the_game_with_minus_one_for_the_offender(name):
    env = env_at("foot", illegal_action="penalize")
    raw = env.unwrapped
    offender = env.agent_selection
    legal = raw.engine.legal_actions()
    if name == "illegal_int":
        action = illegal_ints(raw.engine)[0]
    else:
        action = dict(MALFORMED)[name](legal, CFG.num_actions)
    engine_before = json.dumps(raw.engine.snapshot(), sort_keys=True)
    env.step(action)  # no exception
    assert raw.rewards[offender] == -1.0
    assert all(r == 0 for agent, r in raw.rewards.items() if agent != offender)
    assert all(env.terminations.values())
    assert raw.infos[offender].get("illegal_action") is True
    assert json.dumps(raw.engine.snapshot(), sort_keys=True) == engine_before  # no move made
    # The standard AEC wind-down: each agent sees its final reward, then steps None.
    seen = {}
    while env.agents:
        agent = env.agent_selection
        _, reward, term, _, _ = env.last()
        assert term
        seen[agent] = reward
        with pytest.raises(ValueError):  # a dead agent may only step None
            env.step(0)
        env.step(None)
    assert seen[offender] == -1.0
    assert set(seen) == set(env.possible_agents)


def test_env_any_action_after_the_game_ended_raises_and_changes_nothing():
    env = cf_env.env(max_pips=6, num_players=3, num_rounds=1)
    env.reset(seed=3)
    policy = np.random.default_rng(3)
    while not env.unwrapped.engine.game_over:
        env.step(int(policy.choice(np.flatnonzero(env.last()[0]["action_mask"]))))
    assert not env.last()[0]["action_mask"].any()
    before = env_frozen(env)
    cfg = env.unwrapped.config
    for action in (0, cfg.draw_action, cfg.pass_action, -1, 1.5, "x", np.int64(0)):
        with pytest.raises(ValueError):  # PettingZoo: a terminated agent may only step None
            env.step(action)
        assert env_frozen(env) == before


# ============================================================================ snapshots
SNAP_CFG = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=3)


def snapshot_base(kind: str) -> dict:
    predicates = {
        # Round 1 (so scores hold a finished round), a foot pending with toes already played.
        "foot": lambda e: e.round == 1 and e.foot_value >= 0 and e.toes_left < 3 and e.boneyard,
        "drawn": lambda e: e.round == 1 and e.drawn_tile >= 0,
    }
    return find_engine(SNAP_CFG, predicates[kind]).snapshot()


def other_hand_tile(s: dict) -> list[int]:
    return s["hands"][(s["current"] + 1) % 3][0]


def _set(key, value):
    def change(s):
        s[key] = value
        return s

    return change


def _do(fn):
    def change(s):
        fn(s)
        return s

    return change


def _drop(key):
    return lambda s: {k: v for k, v in s.items() if k != key}


def _tied_game_over(s):
    # A finished game at round 1 of 3: R4 says a game ends only after its last round.
    s["game_over"] = True
    s["scores"] = [[10, 0], [10, 0], [10, 0]]
    s["winners"] = [0, 1, 2]
    s["drawn_tile"] = None
    return s


# (id, base snapshot kind, corruption, fragment the message must contain)
CORRUPTIONS = [
    ("not_a_dict_list", "foot", lambda s: [s], "dict"),
    ("not_a_dict_none", "foot", lambda s: None, "dict"),
    ("not_a_dict_json_text", "foot", lambda s: json.dumps(s), "dict"),
    *[(f"missing_{k}", "foot", _drop(k), k) for k in SNAPSHOT_KEYS],
    # -- another game's config
    (
        "config_other_players",
        "foot",
        _do(lambda s: s["config"].update(num_players=2)),
        "num_players",
    ),
    (
        "config_other_blank_value",
        "foot",
        _do(lambda s: s["config"].update(double_blank_value=0)),
        "double_blank_value",
    ),
    ("config_unknown_field", "foot", _do(lambda s: s["config"].update(colour="red")), "colour"),
    ("config_str", "foot", _set("config", "default"), "config"),
    ("config_none", "foot", _set("config", None), "config"),
    ("max_pips_other", "foot", _set("max_pips", 9), "max_pips"),
    ("max_pips_str", "foot", _set("max_pips", "6"), "max_pips"),
    ("num_players_other", "foot", _set("num_players", 4), "num_players"),
    ("num_rounds_other", "foot", _set("num_rounds", 7), "num_rounds"),
    # -- round, centre, seat
    ("round_negative", "foot", _set("round", -1), "round"),
    ("round_past_end", "foot", _set("round", 3), "round"),
    ("round_str", "foot", _set("round", "1"), "round"),
    ("round_bool", "foot", _set("round", True), "round"),
    ("center_wrong", "foot", _set("center", 6), "center"),
    ("current_too_big", "foot", _set("current", 3), "current"),
    ("current_negative", "foot", _set("current", -1), "current"),
    ("current_str", "foot", _set("current", "0"), "current"),
    ("current_float", "foot", _set("current", 1.0), "current"),
    ("current_none", "foot", _set("current", None), "current"),
    ("start_seat_bad", "foot", _set("start_seat", 9), "start_seat"),
    # -- tiles: duplicated, missing, malformed (R1: each tile exactly once)
    (
        "dup_hand_and_boneyard",
        "foot",
        _do(lambda s: s["hands"][0].append(s["boneyard"][0])),
        "twice",
    ),
    ("dup_within_hand", "foot", _do(lambda s: s["hands"][1].append(s["hands"][1][0])), "twice"),
    ("dup_hand_and_table", "foot", _do(lambda s: s["hands"][2].append(s["table"][0])), "twice"),
    ("dup_boneyard", "foot", _do(lambda s: s["boneyard"].append(s["boneyard"][0])), "twice"),
    (
        "dup_reversed_pair",
        "foot",
        _do(lambda s: s["boneyard"].append(s["hands"][0][0][::-1])),
        "twice",
    ),
    ("missing_from_hand", "foot", _do(lambda s: s["hands"][0].pop()), "missing"),
    ("missing_from_boneyard", "foot", _do(lambda s: s["boneyard"].pop()), "missing"),
    ("hand_tile_to_table", "foot", _do(lambda s: s["table"].append(s["hands"][0].pop())), "arms"),
    (
        "start_double_off_table",
        "foot",
        _do(
            lambda s: (
                s["table"].remove([6 - s["round"]] * 2),
                s["boneyard"].append([6 - s["round"]] * 2),
            )
        ),
        "start double",
    ),
    ("tile_out_of_set", "foot", _do(lambda s: s["hands"][0].append([7, 7])), "hands[0]"),
    ("tile_negative", "foot", _do(lambda s: s["hands"][0].__setitem__(0, [-1, 2])), "hands[0]"),
    (
        "tile_three_numbers",
        "foot",
        _do(lambda s: s["hands"][0].__setitem__(0, [1, 2, 3])),
        "hands[0]",
    ),
    ("tile_str", "foot", _do(lambda s: s["hands"][0].__setitem__(0, "1|2")), "hands[0]"),
    ("tile_floats", "foot", _do(lambda s: s["hands"][0].__setitem__(0, [1.0, 2.0])), "hands[0]"),
    ("tile_bools", "foot", _do(lambda s: s["hands"][0].__setitem__(0, [True, False])), "hands[0]"),
    ("tile_none", "foot", _do(lambda s: s["boneyard"].__setitem__(0, None)), "boneyard"),
    ("hands_too_few", "foot", _do(lambda s: s["hands"].pop()), "hands"),
    ("hands_none", "foot", _set("hands", None), "hands"),
    ("hands_dict", "foot", _set("hands", {"0": []}), "hands"),
    ("hand_int", "foot", _do(lambda s: s["hands"].__setitem__(0, 5)), "hands"),
    ("boneyard_none", "foot", _set("boneyard", None), "boneyard"),
    ("boneyard_str", "foot", _set("boneyard", "abc"), "boneyard"),
    ("table_none", "foot", _set("table", None), "table"),
    # -- the table's rules state (R7, R9)
    ("open_ends_extra", "foot", _do(lambda s: s["open_ends"].append(1)), "open_ends"),
    ("open_ends_short", "foot", _do(lambda s: s["open_ends"].pop()), "open_ends"),
    ("open_ends_out_of_range", "foot", _do(lambda s: s["open_ends"].append(7)), "open_ends"),
    ("open_ends_none", "foot", _set("open_ends", None), "open_ends"),
    ("spinner_too_many", "foot", _set("spinner_arms_empty", 5), "spinner_arms_empty"),
    ("spinner_negative", "foot", _set("spinner_arms_empty", -1), "spinner_arms_empty"),
    ("spinner_str", "foot", _set("spinner_arms_empty", "0"), "spinner_arms_empty"),
    ("spinner_disagrees", "foot", _set("spinner_arms_empty", 1), "spinner_arms_empty"),
    ("foot_list", "foot", _set("foot", [3, 1]), "foot"),
    ("foot_missing_toes", "foot", _do(lambda s: s["foot"].pop("toes_left")), "foot"),
    ("foot_wrong_keys", "foot", _set("foot", {"value": 3, "toes": 1}), "foot"),
    ("foot_toes_zero", "foot", _do(lambda s: s["foot"].update(toes_left=0)), "toes_left"),
    ("foot_toes_too_many", "foot", _do(lambda s: s["foot"].update(toes_left=4)), "toes_left"),
    ("foot_toes_str", "foot", _do(lambda s: s["foot"].update(toes_left="1")), "toes_left"),
    ("foot_double_out_of_range", "foot", _do(lambda s: s["foot"].update(double=7)), "foot"),
    (
        "foot_disagrees_with_toes",
        "foot",
        _do(lambda s: s["foot"].update(toes_left=3 if s["foot"]["toes_left"] < 3 else 2)),
        "foot",
    ),
    ("foot_dropped", "foot", _set("foot", None), "foot"),
    ("foot_arm_str", "foot", _set("foot_arm", "a"), "foot_arm"),
    ("foot_arm_wrong", "foot", _set("foot_arm", 1), "foot"),
    ("arms_none", "foot", _set("arms", None), "arms"),
    ("arms_not_dicts", "foot", _set("arms", [1, 2]), "arm"),
    ("arm_parent_bad", "foot", _do(lambda s: s["arms"][1].update(parent=9)), "parent"),
    ("arm_tile_mismatch", "foot", _do(lambda s: s["arms"][0]["tiles"].insert(0, [5, 3])), "arm 0"),
    (
        "drawn_tile_not_in_hand",
        "drawn",
        lambda s: {**s, "drawn_tile": other_hand_tile(s)},
        "drawn_tile",
    ),
    ("drawn_tile_out_of_set", "drawn", _set("drawn_tile", [9, 9]), "drawn_tile"),
    ("drawn_tile_str", "drawn", _set("drawn_tile", "5|5"), "drawn_tile"),
    # -- scores, game end, winners (R12, R13, R4)
    ("scores_none", "foot", _set("scores", None), "scores"),
    ("scores_too_few_seats", "foot", _do(lambda s: s["scores"].pop()), "scores"),
    ("scores_extra_round", "foot", _do(lambda s: s["scores"][0].append(3)), "scores[0]"),
    ("scores_negative", "foot", _do(lambda s: s["scores"][1].__setitem__(0, -5)), "scores[1]"),
    ("scores_float", "foot", _do(lambda s: s["scores"][1].__setitem__(0, 5.0)), "scores[1]"),
    ("game_over_str", "foot", _set("game_over", "yes"), "game_over"),
    ("game_over_int", "foot", _set("game_over", 1), "game_over"),
    ("game_over_none", "foot", _set("game_over", None), "game_over"),
    ("game_over_before_last_round", "foot", _tied_game_over, "game_over"),
    ("winners_while_running", "foot", _set("winners", [0]), "winners"),
    ("winners_none", "foot", _set("winners", None), "winners"),
    # -- extras: public history, RNG
    ("voids_none", "foot", _set("voids", None), "voids"),
    ("voids_out_of_range", "foot", _set("voids", [[12], [], []]), "voids"),
    ("voids_too_few_seats", "foot", _set("voids", [[1]]), "voids"),
    ("voids_too_many_seats", "foot", _set("voids", [[], [], [], [1]]), "voids"),
    ("played_by_none", "foot", _set("played_by", None), "played_by"),
    (
        "played_by_off_table",
        "foot",
        _do(lambda s: s["played_by"][0].append(s["boneyard"][0])),
        "played_by",
    ),
    ("history_int", "foot", _set("history", 5), "history"),
    ("rng_none", "foot", _set("rng", None), "rng"),
    ("rng_garbage", "foot", _set("rng", {"state": 1}), "rng"),
    (
        "rng_other_generator",
        "foot",
        _set("rng", np.random.MT19937(0).state | {"state": {"key": [0] * 624, "pos": 0}}),
        "rng",
    ),
]


def _corrupt(kind: str, change) -> object:
    return change(copy.deepcopy(snapshot_base(kind)))


@pytest.mark.parametrize(
    "kind, change, fragment",
    [c[1:] for c in CORRUPTIONS],
    ids=[c[0] for c in CORRUPTIONS],
)
def test_engine_rejects_corrupted_snapshot_and_changes_nothing(kind, change, fragment):
    bad = _corrupt(kind, change)
    target = find_engine(SNAP_CFG, lambda e: len(e.history) == 9, seeds=[77])
    before = frozen(target)
    with pytest.raises(SnapshotError) as err:
        target.restore(bad)
    assert fragment in str(err.value), str(err.value)
    assert frozen(target) == before
    legal = target.legal_actions()
    twin = Engine(SNAP_CFG)
    twin.restore(json.loads(before))
    target.step(legal[0])
    twin.step(legal[0])
    assert frozen(target) == frozen(twin)


def test_the_uncorrupted_bases_restore():
    # Guards the table above: every failure there comes from its corruption alone.
    for kind in ("foot", "drawn"):
        snap = snapshot_base(kind)
        target = Engine(SNAP_CFG, seed=5)
        target.restore(json.loads(json.dumps(snap)))
        assert target.snapshot()["hands"] == snap["hands"]


ENV_CORRUPTIONS = [
    *[
        c
        for c in CORRUPTIONS
        if c[0].startswith(("not_a_dict", "missing_", "dup_", "config_", "tile_"))
    ],
    ("seeder_garbage", "foot", _set("seeder", {"state": 0}), "seeder"),
    ("seeder_none", "foot", _set("seeder", None), "seeder"),
    ("num_steps_str", "foot", _set("num_steps", "many"), "num_steps"),
    ("num_steps_none", "foot", _set("num_steps", None), "num_steps"),
]


@pytest.mark.parametrize(
    "kind, change, fragment",
    [c[1:] for c in ENV_CORRUPTIONS],
    ids=[c[0] for c in ENV_CORRUPTIONS],
)
def test_env_rejects_corrupted_snapshot_and_changes_nothing(kind, change, fragment):
    env = cf_env.env(**SNAP_CFG.to_dict())
    env.reset(seed=11)
    policy = np.random.default_rng(11)
    for _ in range(7):
        env.step(int(policy.choice(np.flatnonzero(env.last()[0]["action_mask"]))))
    source = cf_env.env(**SNAP_CFG.to_dict())
    source.reset(seed=0)
    source.unwrapped.restore(snapshot_base(kind))
    bad = change(copy.deepcopy(source.unwrapped.snapshot()))  # with the env's extras
    before = env_frozen(env)
    with pytest.raises(SnapshotError) as err:
        env.unwrapped.restore(bad)
    assert fragment in str(err.value), str(err.value)
    assert env_frozen(env) == before
    env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))


# ============================================================================ unreachable states
# States the rules cannot produce are refused (SnapshotError, nothing changed), and a game
# restored without its layout keeps producing snapshots that restore.
def _move_hand_to_boneyard(s: dict) -> dict:
    seat = (s["current"] + 1) % 3
    s["boneyard"] += s["hands"][seat]
    s["hands"][seat] = []
    return s


def _played_twice(s: dict) -> dict:
    seat = next(k for k, tiles in enumerate(s["played_by"]) if tiles)
    s["played_by"][(seat + 1) % 3].append(s["played_by"][seat][0])
    return s


def _start_double_played(s: dict) -> dict:
    s["played_by"][0].append([6 - s["round"]] * 2)
    return s


def _without_arms(change):
    def drop(s: dict) -> dict:
        del s["arms"], s["foot_arm"]
        return change(s)

    return drop


def _open_end_changed(s: dict) -> dict:
    # Same number of open ends, one of another value: the table's tiles cannot show it.
    v = s["open_ends"][0]
    s["open_ends"][0] = next(w for w in range(7) if w != v and w not in s["open_ends"])
    return s


UNREACHABLE_STATES = [
    ("empty_hand_mid_round", _move_hand_to_boneyard, "empty"),
    ("tile_in_two_seats_played_by", _played_twice, "played_by"),
    ("start_double_in_played_by", _start_double_played, "start double"),
    ("open_ends_value_off_the_table", _without_arms(_open_end_changed), "open_ends"),
    ("open_ends_one_too_many", _without_arms(_do(lambda s: s["open_ends"].append(s["open_ends"][0]))), "open_ends"),
    ("open_ends_one_short", _without_arms(_do(lambda s: s["open_ends"].pop())), "open_ends"),
    ("version_newer", _set("version", 3), "version"),
    ("version_1_before_0_1_0", _set("version", 1), "snapshot version 1 was written before chickenfoot 0.1.0"),
    ("version_str", _set("version", "1"), "version"),
    ("version_bool", _set("version", True), "version"),
    ("version_none", _set("version", None), "version"),
]


@pytest.mark.parametrize(
    "change, fragment", [c[1:] for c in UNREACHABLE_STATES], ids=[c[0] for c in UNREACHABLE_STATES]
)
def test_restore_rejects_states_the_rules_cannot_produce(change, fragment):
    base = snapshot_base("foot")
    bad = change(copy.deepcopy(base))
    target = find_engine(SNAP_CFG, lambda e: len(e.history) == 9, seeds=[77])
    before = frozen(target)
    with pytest.raises(SnapshotError) as err:
        target.restore(bad)
    assert fragment in str(err.value), str(err.value)
    assert frozen(target) == before
    # The base itself restores, also without its arms: only the change is refused.
    target.restore(copy.deepcopy(base))
    target.restore(_without_arms(lambda s: s)(copy.deepcopy(base)))


def test_hand_bound_is_the_deal_plus_the_tiles_that_left_the_boneyard():
    from positions import build

    def hands(sizes: list[int]) -> list[list[tuple[int, int]]]:
        tiles = [(a, b) for a in range(9) for b in range(a, 10) if (a, b) != (9, 9)]
        out, k = [], 0
        for size in sizes:
            out.append(tiles[k : k + size])
            k += size
        return out

    # 55 tiles, 4 × 7 dealt: seat 0 holds 10 (3 drawn), seat 1 placed the start double; 24 in
    # the boneyard, so exactly 3 tiles left it: reachable.
    engine = build(hands=hands([10, 6, 7, 7]), arms=[])
    assert engine.hand_counts == [10, 6, 7, 7] and len(engine.boneyard) == 24
    # One more tile in seat 0 (from seat 1): 4 past the deal, 3 drawn: not reachable.
    before = frozen(engine)
    bad = engine.snapshot()
    bad["hands"][0].append(bad["hands"][1].pop())
    with pytest.raises(SnapshotError, match=r"exceed the deal of 7 by 4 tiles, but only 3"):
        engine.restore(bad)
    assert frozen(engine) == before


def test_a_game_restored_without_arms_snapshots_and_restores_again():
    """README: a snapshot without `arms` is accepted. Every later snapshot of that game (its
    stand-in layout left out) must restore again and continue identically."""
    cfg = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=2)
    for seed in range(6):
        cut = 6 + 3 * seed
        original = find_engine(cfg, lambda e, cut=cut: len(e.history) == cut, seeds=[seed])
        snap = original.snapshot()
        del snap["arms"], snap["foot_arm"]
        bare = Engine(cfg, seed=1)
        bare.restore(snap)
        policy = np.random.default_rng(seed)
        while not original.game_over:
            again = json.loads(json.dumps(bare.snapshot()))
            twin = Engine(cfg, seed=2)
            twin.restore(again)  # raised "the arms do not hold exactly the table's tiles"
            assert twin.snapshot() == again
            # Stand-in arms are left out until the next round deals a real layout.
            assert ("arms" in again) == (bare.round != snap["round"])
            action = int(policy.choice(original.legal_actions()))
            assert bare.step(action) == original.step(action) == twin.step(action)
            assert bare.legal_actions() == original.legal_actions() == twin.legal_actions()
        assert bare.scores == original.scores and bare.winners == original.winners


# ========================================================================= double_blank_value bound
def test_double_blank_value_is_bounded_by_twice_points_scale():
    for max_pips in (6, 9, 18):
        top = ChickenFootConfig(max_pips=max_pips).points_scale * 2
        assert ChickenFootConfig(max_pips=max_pips, double_blank_value=int(top)).double_blank_value == top
        with pytest.raises(ValueError) as err:
            ChickenFootConfig(max_pips=max_pips, double_blank_value=int(top) + 1)
        assert f"double_blank_value must be 0..{int(top)}" in str(err.value)
    # Every published value fits on every set; rewards and the observation's bound stay finite.
    for value in (0, 25, 50, 100):
        cfg = ChickenFootConfig(max_pips=6, double_blank_value=value)
        env = cf_env.raw_env(**cfg.to_dict())
        assert np.isfinite(env.observation_space("player_0")["observation"].high).all()


def test_unknown_config_field_suggests_the_nearest_field():
    with pytest.raises(ValueError) as err:
        ChickenFootConfig.from_dict({"num_player": 3, "zzz": 1})
    message = str(err.value)
    assert message.startswith("unknown config field(s) ['num_player', 'zzz']; valid fields: [")
    assert "did you mean 'num_player' -> 'num_players'?" in message
