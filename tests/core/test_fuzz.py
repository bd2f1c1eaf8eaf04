"""Property tests: random valid configs, random legal playouts, invariants that must always hold.

The heart of this file is `RefRound` (`cf_env.tools.reference`, shared with the soak), a second
implementation of one round's rules (R5–R12) written from docs/rules.md and the action contract
alone: it never calls the engine's mask, placement or scoring code. Every playout is checked step
by step against it:

* every round's deal and start follow R3/R5 from the seeded permutation, with the start-double
  search variants (`start_search`: turns, all draw at once, drop to a lower double);
* tiles are conserved (hands + boneyard + table = the full set, each tile exactly once; R1, R3);
* the engine's action mask equals the reference's legal set and is never empty while the game
  runs (R6–R9, the action contract);
* hands, boneyard order, open ends, empty spinner arms, the pending foot and the acting seat agree;
* the layout agrees: every arm (parent, tiles with their attached values, tip) and the foot's
  arm, and every placement the engine reports before a tile is laid (rule, arm, parent, toe,
  the value left open);
* rounds end exactly when the reference says (R11), within a bound on their length;
* round points are the pips left in each hand, the double-blank counted per config and the
  player who went out scoring 0 (R12); the game ends after `num_rounds` rounds (R4) or, with
  `target_score`, after the round in which a total passes it (the countdown of doubles
  restarting); winners follow R13 (or a shared win with tie_break="none");
* `skip_forced` plays the same game, only without asking the forced decisions;
* snapshot -> JSON -> restore continues identically (observations, masks, later rounds' deals),
  in the engine and through the AEC env.

Bounded so the whole file runs in well under a minute: small `max_examples`, few rounds on the
big sets, and a deterministic sweep for coverage of every (set, player count) pair.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cf_env
from cf_env import ChickenFootConfig, Engine
from cf_env.core.config import SUPPORTED_SETS, DriverOptions, default_hand_size, max_players
from cf_env.core.observation import Encoder
from cf_env.tools import reference
from cf_env.tools.reference import RefRound, pairs_of
from cf_env.viz.render import render_text

FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Rounds per game the fuzzer plays on each set: all of them on double-6 (full games, R4 down
# to the double-blank), fewer on the big sets whose rounds are long.
ROUND_CAP = {6: 7, 9: 3, 12: 2, 15: 1, 18: 1}
# Largest target_score the fuzzer draws per set, for the same reason: games to a target end after
# a few rounds (on double-6 often after more than 7, so the countdown restarts).
TARGET_CAP = {6: 120, 9: 60, 12: 20, 15: 1, 18: 1}


# ---------------------------------------------------------------------------- engine views
def engine_view(engine: Engine) -> dict:
    """The engine's public state, read through the snapshot contract (tiles as tuples)."""
    snap = engine.snapshot()
    return {
        "hands": [{tuple(p) for p in h} for h in snap["hands"]],
        "boneyard": [tuple(p) for p in snap["boneyard"]],
        "table": {tuple(p) for p in snap["table"]},
        "open_ends": Counter(snap["open_ends"]),
        "spinner_arms_empty": snap["spinner_arms_empty"],
        "foot": snap["foot"],
        "drawn_tile": None if snap["drawn_tile"] is None else tuple(snap["drawn_tile"]),
        "current": snap["current"],
        "round": snap["round"],
        "center": snap["center"],
    }


def check_conservation(cfg: ChickenFootConfig, view: dict) -> None:
    """R1/R3: every tile of the set is in exactly one place."""
    everything = [t for h in view["hands"] for t in h] + view["boneyard"] + list(view["table"])
    assert len(everything) == len(set(everything)), "a tile is in two places"
    assert set(everything) == set(pairs_of(cfg.max_pips)), "tiles lost or invented"


def compare_layout(ref: RefRound, engine: Engine) -> None:
    """The engine's arms (the compiled placement's) are the reference's, tile by tile."""
    pairs = pairs_of(engine.config.max_pips)
    arms = [[arm.parent, [(pairs[t], attached) for t, attached in arm.tiles],
             None if arm.tip < 0 else arm.tip] for arm in engine.arms]
    assert arms == ref.arms
    assert engine.foot_arm == (-1 if ref.foot_arm is None else ref.foot_arm)


def compare(ref: RefRound, view: dict) -> None:
    assert view["current"] == ref.current
    assert view["hands"] == ref.hands
    assert view["boneyard"] == ref.boneyard
    assert view["table"] == ref.table
    assert +view["open_ends"] == +ref.ends
    assert view["spinner_arms_empty"] == ref.empty_arms
    foot = None if ref.foot is None else {"double": ref.foot[0], "toes_left": ref.foot[1]}
    assert view["foot"] == foot
    assert view["drawn_tile"] == ref.drawn


def play_checked(cfg: ChickenFootConfig, seed: int, policy_seed: int) -> Engine:
    """A random legal game, checked against `RefRound` after every step."""
    engine = Engine(cfg, seed=seed)  # (no skip_forced: the reference must see every decision)
    deals = np.random.default_rng(seed)  # R3: each round deals the next permutation of it
    policy = np.random.default_rng(policy_seed)
    rounds_seen, ref = 0, None
    scores: list[list[int]] = [[] for _ in range(cfg.num_players)]
    steps_in_round = 0
    while True:
        view = engine_view(engine)
        check_conservation(cfg, view)
        if engine.game_over:
            break
        if ref is None:  # a new round: deal it by the rules and compare the start (R3-R5)
            assert view["round"] == rounds_seen % cfg.num_rounds
            hands, boneyard, center, current = reference.deal(
                cfg, deals.permutation(cfg.num_tiles).tolist(), rounds_seen
            )
            assert view["center"] == center and view["table"] == {(center, center)}
            ref = RefRound(cfg, center, hands, boneyard, current)
            steps_in_round = 0
        compare(ref, view)
        mask = engine.legal_action_mask()
        assert mask.dtype == np.int8 and mask.shape == (cfg.num_actions,)
        legal = set(np.flatnonzero(mask).tolist())
        assert legal, "the acting seat's mask is empty while the game runs"
        assert legal == ref.legal()
        assert engine.legal_actions() == sorted(legal)
        action = int(policy.choice(sorted(legal)))
        compare_layout(ref, engine)
        if action < cfg.draw_action:  # where the move lays its tile, as the engine reports it
            where = engine.placement(action)
            assert (where.rule, where.arm, where.parent, where.new_arm, where.toe,
                    where.leaves_open) == ref.placement(action)
        seat = ref.current
        ended = ref.apply(action)
        finished = engine.step(action)
        steps_in_round += 1
        assert steps_in_round <= reference.round_step_bound(cfg), "the round does not end (R11)"
        if ended:
            points = ref.points()
            assert finished == [points]
            if not ref.hands[seat]:
                assert points[seat] == 0  # R12: the player who went out
            for seat, p in enumerate(points):
                scores[seat].append(p)
            rounds_seen += 1
            ref = None
            assert engine.game_over == reference.game_over(cfg, scores)  # R4, or the target
        else:
            assert finished == []
    assert rounds_seen == len(scores[0])
    assert engine.scores == scores
    assert engine.totals() == [sum(s) for s in scores]
    assert engine.winners == reference.winners(cfg, scores)  # R13
    assert not engine.legal_action_mask().any()
    return engine


# ---------------------------------------------------------------------------- strategies
@st.composite
def configs(draw, max_pips=None, round_cap=None) -> ChickenFootConfig:
    """Any valid config; round counts bounded so that examples stay quick."""
    if max_pips is None:
        max_pips = draw(st.sampled_from(SUPPORTED_SETS))
    players = draw(st.integers(2, max_players(max_pips)))
    count = (max_pips + 1) * (max_pips + 2) // 2
    hand = draw(st.one_of(st.none(), st.integers(2, (count - 1) // players)))
    cap = ROUND_CAP[max_pips] if round_cap is None else round_cap
    target = draw(st.one_of(st.none(), st.none(), st.integers(1, TARGET_CAP[max_pips])))
    return ChickenFootConfig(
        max_pips=max_pips,
        num_players=players,
        hand_size=hand,
        num_rounds=draw(st.integers(1, min(cap, max_pips + 1))) if target is None else None,
        target_score=target,
        start_search=draw(st.sampled_from(("turns", "all_draw", "lower_double"))),
        spinner_arms=draw(st.sampled_from((4, 6))),
        toes=draw(st.one_of(st.just(3), st.integers(1, max_pips))),
        draw_until_playable=draw(st.booleans()),
        must_play_drawn=draw(st.booleans()),
        double_blank_value=draw(st.sampled_from((0, 25, 50, 100, 7))),
        tie_break=draw(st.sampled_from(("r13", "none"))),
    )


# The driver options: not rules (`DriverOptions`), drawn beside a config where a test runs them.
driver_options = st.builds(
    DriverOptions,
    reward_mode=st.sampled_from(("score", "zero_sum", "win")),
    skip_forced=st.booleans(),
)


seeds = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------------------- properties
@pytest.mark.slow
@pytest.mark.parametrize("max_pips", SUPPORTED_SETS)
@settings(FUZZ, max_examples=12)
@given(data=st.data(), seed=seeds, policy_seed=seeds)
def test_random_playout_matches_reference_rules(max_pips, data, seed, policy_seed):
    cfg = data.draw(configs(max_pips=max_pips))
    play_checked(cfg, seed, policy_seed)


@pytest.mark.parametrize(
    "max_pips,players",
    [(m, n) for m in SUPPORTED_SETS for n in range(2, max_players(m) + 1)],
)
def test_every_set_and_player_count(max_pips, players):
    # Coverage the random search cannot promise: every supported (set, players) pair once.
    cfg = ChickenFootConfig(max_pips=max_pips, num_players=players, num_rounds=1)
    assert cfg.hand_size == default_hand_size(max_pips, players)
    play_checked(cfg, seed=1000 * max_pips + players, policy_seed=players)


def forced_prefix(engine: Engine) -> None:
    """Take every single-option decision, as `skip_forced` would."""
    while not engine.game_over:
        legal = engine.legal_actions()
        if len(legal) != 1:
            return
        engine.step(legal[0])


@settings(FUZZ, max_examples=40)
@given(cfg=configs(), seed=seeds, policy_seed=seeds)
def test_skip_forced_plays_the_same_game_without_asking_forced_decisions(cfg, seed, policy_seed):
    skip = Engine(cfg, seed=seed, skip_forced=True)
    full = Engine(cfg, seed=seed)
    policy = np.random.default_rng(policy_seed)
    forced_prefix(full)
    for _ in range(100_000):
        a, b = skip.snapshot(), full.snapshot()
        del a["config"], b["config"]
        assert a == b  # same position, same history (forced moves recorded), same RNG
        if skip.game_over:
            break
        legal = skip.legal_actions()
        assert len(legal) > 1, "skip_forced asked a forced decision"
        assert full.legal_actions() == legal
        action = int(policy.choice(legal))
        skip.step(action)
        full.step(action)
        forced_prefix(full)
    assert full.game_over and skip.scores == full.scores and skip.winners == full.winners


def rules_state(snapshot: dict) -> dict:
    """A snapshot without its physical layout: everything the rules and observations depend on.

    The layout (`arms`, and `foot_arm`, which only means something while a foot is pending) is
    checked separately by the fixed-point and layout tests below.
    """
    out = dict(snapshot)
    out.pop("arms", None)
    out.pop("foot_arm", None)
    return out


def play_to(engine: Engine, policy: np.random.Generator, steps: int) -> None:
    for _ in range(steps):
        if engine.game_over:
            return
        engine.step(int(policy.choice(engine.legal_actions())))


def restored_copy(engine: Engine, seed: int) -> Engine:
    """A fresh engine (another game) restored from `engine`'s snapshot via JSON text."""
    other = Engine(engine.config, seed=seed, skip_forced=engine.skip_forced)
    other.restore(json.loads(json.dumps(engine.snapshot())))
    return other


def lockstep(a: Engine, b: Engine, policy: np.random.Generator, encoder: Encoder) -> None:
    """Play both engines with the same actions to the end; everything observable must agree."""
    n = a.config.num_players
    for _ in range(1_000_000):
        assert a.current == b.current and a.round == b.round and a.game_over == b.game_over
        for seat in range(n):
            np.testing.assert_array_equal(encoder.observe(a, seat), encoder.observe(b, seat))
        mask = a.legal_action_mask()
        np.testing.assert_array_equal(mask, b.legal_action_mask())
        if a.game_over:
            break
        round_before = a.round
        action = int(policy.choice(np.flatnonzero(mask)))
        assert a.step(action) == b.step(action)
        if a.round != round_before:  # a later round's deal must be the same
            assert a.snapshot()["hands"] == b.snapshot()["hands"]
            assert a.snapshot()["boneyard"] == b.snapshot()["boneyard"]
    assert rules_state(a.snapshot()) == rules_state(b.snapshot())


@settings(FUZZ, max_examples=40)
@given(cfg=configs(), opts=driver_options, seed=seeds, policy_seed=seeds, cut=st.floats(0, 1))
def test_snapshot_json_restore_continues_identically(cfg, opts, seed, policy_seed, cut):
    original = Engine(cfg, seed=seed, skip_forced=opts.skip_forced)
    # Play to a random point of the game (a clone measures its length first).
    probe = original.clone()
    play_to(probe, np.random.default_rng(policy_seed), 1_000_000)
    length = len(probe.history)
    policy = np.random.default_rng(policy_seed)
    play_to(original, policy, int(cut * length))
    restored = restored_copy(original, seed=seed + 1)
    assert rules_state(restored.snapshot()) == rules_state(original.snapshot())
    lockstep(original, restored, policy, Encoder(cfg))


@pytest.mark.slow
@settings(FUZZ, max_examples=40)
@given(cfg=configs(), opts=driver_options, seed=seeds, policy_seed=seeds)
def test_the_compiled_observation_is_the_numpy_encoding_every_call(cfg, opts, seed, policy_seed):
    """`Encoder.observe` (written by the compiled core for an engine in play) is
    `Encoder.encode` (the layout's numpy definition) for every seat, call after call: across
    rounds, games, restores (also of another game into the same engine) and clones; written into
    a caller's row too, and a returned array is the caller's own."""
    engine, encoder = Engine(cfg, seed=seed, skip_forced=opts.skip_forced), Encoder(cfg)
    n = cfg.num_players
    row = np.full(encoder.layout.size, np.nan, np.float32)
    policy = np.random.default_rng(policy_seed)
    saved = engine.snapshot()
    kept = None
    for _ in range(600):
        seat_now = int(policy.integers(n))
        for seat in range(n):
            if policy.random() < 0.5:  # seats skip calls: several actions between them
                continue
            got = encoder.observe(engine, seat)
            np.testing.assert_array_equal(got, encoder.encode(engine, seat))
            if kept is not None:
                kept[:] = 7  # an earlier returned array is the caller's: nothing depends on it
            kept = got
        assert encoder.observe(engine, seat_now, row) is row
        np.testing.assert_array_equal(row, encoder.encode(engine, seat_now))
        roll = policy.random()
        if engine.game_over or roll < 0.01:
            engine.reset(int(policy.integers(2**31)))
        elif roll < 0.03:
            engine.restore(saved)  # back in time: a new history, maybe another round
        elif roll < 0.04:
            saved = engine.snapshot()
        elif roll < 0.05:
            engine = engine.clone()  # another engine at the same position
        else:
            engine.step(int(policy.choice(engine.legal_actions())))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_restored_game_lays_tiles_where_the_original_does(players):
    """The physical layout (which arm each tile goes to, shown by render and the play CLI) must
    continue identically too: `restore` promises an exact continuation. Deterministic seeds, cut
    mid-round, where several open ends often share a value."""
    cfg = ChickenFootConfig(max_pips=6, num_players=players, num_rounds=2)
    for seed in range(15):
        original = Engine(cfg, seed=seed)
        policy = np.random.default_rng(seed)
        play_to(original, policy, 12 + seed)
        restored = restored_copy(original, seed=seed + 1)
        while not original.game_over:
            assert render_text(original) == render_text(restored), f"seed {seed}"
            action = int(policy.choice(original.legal_actions()))
            original.step(action)
            restored.step(action)
            assert original.snapshot()["arms"] == restored.snapshot()["arms"], f"seed {seed}"


@settings(FUZZ, max_examples=30)
@given(cfg=configs(round_cap=2), opts=driver_options, seed=seeds, policy_seed=seeds,
       steps=st.integers(0, 2000))
def test_snapshot_restore_snapshot_is_a_fixed_point(cfg, opts, seed, policy_seed, steps):
    """restore(snapshot(x)) snapshots to exactly snapshot(x): state can be hashed and compared."""
    engine = Engine(cfg, seed=seed, skip_forced=opts.skip_forced)
    play_to(engine, np.random.default_rng(policy_seed), steps)
    text = json.dumps(engine.snapshot(), sort_keys=True)
    other = Engine(cfg, seed=seed + 1, skip_forced=opts.skip_forced)
    other.restore(json.loads(text))
    assert json.dumps(other.snapshot(), sort_keys=True) == text


@pytest.mark.slow
@settings(FUZZ, max_examples=25)
@given(
    cfg=configs(round_cap=2),
    opts=driver_options,
    seed=seeds,
    policy_seed=seeds,
    steps=st.integers(0, 400),
)
def test_env_snapshot_restore_continues_identically(cfg, opts, seed, policy_seed, steps):
    kwargs = {**cfg.to_dict(), **opts.to_dict()}
    first, second = cf_env.env(**kwargs), cf_env.env(**kwargs)
    first.reset(seed=seed)
    second.reset(seed=seed + 1)
    policy = np.random.default_rng(policy_seed)

    def act(env):
        obs, _, term, trunc, _ = env.last()
        return None if term or trunc else int(policy.choice(np.flatnonzero(obs["action_mask"])))

    for _ in range(steps):
        if not first.agents or first.unwrapped.engine.game_over:
            break
        first.step(act(first))
    second.unwrapped.restore(json.loads(json.dumps(first.unwrapped.snapshot())))
    for game in range(2):  # this game to its end, then the next game from the restored seeder
        for _ in range(1_000_000):
            assert first.agent_selection == second.agent_selection
            assert first.agents == second.agents
            for agent in first.possible_agents:
                a, b = first.observe(agent), second.observe(agent)
                np.testing.assert_array_equal(a["observation"], b["observation"])
                np.testing.assert_array_equal(a["action_mask"], b["action_mask"])
            np.testing.assert_array_equal(first.unwrapped.state(), second.unwrapped.state())
            if not first.agents:
                break
            action = act(first)
            first.step(action)
            second.step(action)
            assert first.unwrapped.rewards == second.unwrapped.rewards
            assert first.terminations == second.terminations
            assert first.truncations == second.truncations
        if game == 0:
            first.reset()
            second.reset()


@settings(FUZZ, max_examples=30)
@given(cfg=configs(round_cap=3), opts=driver_options, seed=seeds, policy_seed=seeds)
def test_env_rewards_follow_round_points(cfg, opts, seed, policy_seed):
    """Rewards are the documented function of the engine's round points and winners."""
    env = cf_env.env(**cfg.to_dict(), **opts.to_dict())
    env.reset(seed=seed)
    raw = env.unwrapped
    policy = np.random.default_rng(policy_seed)
    # AEC accounting: an agent's return is the sum of the rewards `last()` hands it at each of
    # its turns, including the final (dead) one.
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        obs, reward, term, trunc, _ = env.last()
        totals[env.agent_selection] += reward
        if term or trunc:
            env.step(None)
            continue
        rounds_before = len(raw.engine.scores[0])
        env.step(int(policy.choice(np.flatnonzero(obs["action_mask"]))))
        if len(raw.engine.scores[0]) > rounds_before and opts.reward_mode == "zero_sum":
            assert abs(sum(raw.rewards.values())) < 1e-9
    scores = raw.engine.scores
    over = reference.game_over
    assert over(cfg, scores) and not over(cfg, [s[:-1] for s in scores])
    expected = reference.game_returns(cfg, opts.reward_mode, scores)  # the documented rewards, with R13's winners
    for agent, want in zip(env.possible_agents, expected):
        assert totals[agent] == pytest.approx(want, abs=1e-9)


@pytest.mark.slow
def test_the_compiled_layout_equals_the_references_over_100k_decisions():
    """The layout laid by the compiled placement (every arm, the foot's arm, and the placement
    reported before each tile) against the reference's, over random configs of every variant
    (tests/variants.py) until at least 100,000 decisions were compared."""
    from variants import random_config

    rng = np.random.default_rng(2026)
    decisions = placements = games = 0
    while decisions < 100_000:
        cfg = random_config(rng)
        engine = Engine(cfg, seed=int(rng.integers(2**31)), auto_deal=False)
        deal = engine.deal_order
        while not engine.game_over:
            hands, boneyard, center, current = reference.deal(cfg, list(deal), engine.round)
            ref = RefRound(cfg, center, hands, boneyard, current)
            while True:
                compare_layout(ref, engine)
                legal = engine.legal_actions()
                action = int(rng.choice(legal))
                if action < cfg.draw_action:
                    where = engine.placement(action)
                    assert (where.rule, where.arm, where.parent, where.new_arm, where.toe,
                            where.leaves_open) == ref.placement(action)
                    placements += 1
                ended = ref.apply(action)
                engine.step(action)
                decisions += 1
                if ended:
                    compare_layout(ref, engine)  # the finished table, kept until the next deal
                    break
            if not engine.game_over:
                engine.deal_next()
                deal = engine.deal_order
        games += 1
    assert placements > decisions // 3 and games > 20, (placements, games)
