"""Baseline bots: legality over playouts, determinism, observation decoding, scripted choices
(greedy R12 points, heuristic rules, R8 drawn tile, R9 feet) and ISMCTS determinizations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from positions import build

from cf_env import ChickenFootConfig, Engine
from cf_env.agents.bots import GreedyPolicy, HeuristicPolicy
from cf_env.agents.ismcts import ISMCTSPolicy
from cf_env.agents.policies import load_policy, policy_names, register_policy
from cf_env.core.actions import encode_play
from cf_env.core.config import split_options
from cf_env.core.observation import Encoder, ObservationDecoder
from cf_env.core.tiles import tile_tables

PLAYOUT_CONFIGS = [
    {"num_rounds": 3},
    {"num_players": 2, "max_pips": 6},
    {"num_players": 8, "max_pips": 12, "num_rounds": 1, "spinner_arms": 6},
    {"num_players": 3, "num_rounds": 2, "draw_until_playable": True, "must_play_drawn": True},
    {"num_players": 5, "num_rounds": 2, "skip_forced": True, "double_blank_value": 0},
]


def observe(engine: Engine, encoder: Encoder) -> dict:
    return {
        "observation": encoder.observe(engine, engine.current),
        "action_mask": engine.legal_action_mask(),
    }


def playout(config: ChickenFootConfig, policies: list, seed: int, check=None,
            skip_forced: bool = False) -> list[int]:
    """Play a whole game, seat s using policies[s % len]; every action must be legal."""
    engine, encoder = Engine(config, seed=seed, skip_forced=skip_forced), Encoder(config)
    taken = []
    while not engine.game_over:
        obs = observe(engine, encoder)
        if check is not None:
            check(engine, obs)
        action = policies[engine.current % len(policies)].act(obs)
        assert isinstance(action, int) and obs["action_mask"][action] == 1, action
        taken.append(action)
        engine.step(action)
    return taken


def play_action(engine: Engine, attached: int, free: int) -> int:
    tables = tile_tables(engine.config.max_pips)
    return encode_play(tables, int(tables.tile_id[attached, free]), attached)


# Four filled spinner arms with open ends 0, 1, 2, 3 (R6 normal play, no foot pending).
OPEN_0123 = [(-1, [(9, 0)]), (-1, [(9, 1)]), (-1, [(9, 2)]), (-1, [(9, 3)])]


# --------------------------------------------------------------------------- legality, determinism
@pytest.mark.parametrize("fields", PLAYOUT_CONFIGS)
def test_heuristic_and_greedy_only_play_legal_actions(fields):
    cfg, options = split_options(fields)  # (skip_forced: the engine, not the bots)
    for seed in range(3):
        playout(cfg, [HeuristicPolicy(cfg, seed), load_policy("random", cfg, seed),
                      GreedyPolicy(cfg, seed)], seed, skip_forced=options.skip_forced)


@pytest.mark.parametrize("fields", [PLAYOUT_CONFIGS[1], PLAYOUT_CONFIGS[3]])
def test_ismcts_only_plays_legal_actions(fields):
    cfg = ChickenFootConfig(**{**fields, "num_rounds": 2})
    playout(cfg, [load_policy("ismcts:4", cfg, 1), load_policy("random", cfg, 2)], seed=3)


@pytest.mark.parametrize("spec", ["random", "greedy", "heuristic", "ismcts:3"])
def test_bots_are_deterministic_given_their_seed(spec):
    cfg = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=2)

    def run(seed: int) -> list[int]:
        return playout(cfg, [load_policy(spec, cfg, seed + s) for s in range(3)], seed=11)

    assert run(5) == run(5)
    if spec in ("random", "ismcts:3"):  # greedy and heuristic use theirs only to break ties
        assert run(5) != run(6)


# --------------------------------------------------------------------------- observation decoding
@pytest.mark.parametrize("fields", PLAYOUT_CONFIGS)
def test_decoder_recovers_what_the_player_knows(fields):
    cfg, options = split_options(fields)
    decoder, n = ObservationDecoder(cfg), cfg.num_players

    def check(engine: Engine, obs: dict) -> None:
        seat = engine.current
        order = [(seat + k) % n for k in range(n)]
        st = decoder.decode(obs["observation"])
        assert np.array_equal(st.hand, engine.hands[seat])
        assert np.array_equal(st.table, engine.on_table)
        assert st.open_counts.tolist() == list(engine.open_count)
        assert np.flatnonzero(st.playable).tolist() == engine.playable_values()
        assert st.spinner_empty == engine.spinner_empty
        assert (st.foot, st.toes_left) == (engine.foot_value, engine.toes_left)
        assert st.drawn_tile == engine.drawn_tile
        assert st.boneyard == len(engine.boneyard)
        assert st.hand_sizes.tolist() == [engine.hand_counts[s] for s in order]
        assert np.array_equal(st.voids, engine.voids[order[1:]])
        assert np.array_equal(st.played, engine.played_by[order[1:]])
        assert (st.round, st.center) == (engine.round, engine.center)
        assert st.totals.tolist() == [engine.totals()[s] for s in order]

    playout(cfg, [load_policy("random", cfg, 0)], seed=4, check=check,
            skip_forced=options.skip_forced)


# --------------------------------------------------------------------------- scripted choices
def test_greedy_plays_the_tile_with_the_most_points():
    cfg = ChickenFootConfig()
    encoder = Encoder(cfg)
    # R12: the double-blank counts 50, more than any other tile.
    engine = build(cfg, hands=[[(3, 8), (0, 0), (1, 2), (5, 6)], [(4, 4)], [(4, 5)], [(4, 6)]],
                   arms=OPEN_0123)
    assert GreedyPolicy(cfg, 0).act(observe(engine, encoder)) == play_action(engine, 0, 0)
    engine = build(cfg, hands=[[(3, 8), (2, 7), (1, 4), (5, 6)], [(4, 4)], [(4, 5)], [(4, 6)]],
                   arms=OPEN_0123)
    assert GreedyPolicy(cfg, 0).act(observe(engine, encoder)) == play_action(engine, 3, 8)
    # A blank-valued double-blank is the lightest tile instead.
    light = ChickenFootConfig(double_blank_value=0)
    engine = build(light, hands=[[(0, 0), (1, 2), (5, 6)], [(4, 4)], [(4, 5)], [(4, 6)]],
                   arms=OPEN_0123)
    action = GreedyPolicy(light, 0).act(observe(engine, Encoder(light)))
    assert action in (play_action(engine, 1, 2), play_action(engine, 2, 1))


def test_heuristic_sheds_the_double_blank():
    cfg = ChickenFootConfig()
    engine = build(cfg, hands=[[(3, 8), (0, 0), (1, 2), (5, 6)], [(4, 4)], [(4, 5)], [(4, 6)]],
                   arms=OPEN_0123)
    assert HeuristicPolicy(cfg, 0).act(observe(engine, Encoder(cfg))) == play_action(engine, 0, 0)


def test_heuristic_prefers_starting_a_foot_to_a_slightly_heavier_tile():
    # R9: 3|3 (6 points) starts a chicken foot; greedy plays 2|5 (7 points) instead.
    cfg = ChickenFootConfig()
    engine = build(cfg, hands=[[(3, 3), (2, 5), (4, 4)], [(6, 6)], [(6, 7)], [(6, 8)]],
                   arms=OPEN_0123)
    obs = observe(engine, Encoder(cfg))
    assert GreedyPolicy(cfg, 0).act(obs) == play_action(engine, 2, 5)
    assert HeuristicPolicy(cfg, 0).act(obs) == play_action(engine, 3, 3)


def test_heuristic_leaves_an_end_it_can_follow():
    # 1|6 and 2|5 weigh the same; only 6 is a value I keep (6|8), so 1|6 leaves my own end.
    cfg = ChickenFootConfig()
    engine = build(cfg, hands=[[(1, 6), (2, 5), (6, 8)], [(4, 4)], [(4, 5)], [(4, 7)]],
                   arms=OPEN_0123)
    obs = observe(engine, Encoder(cfg))
    for seed in range(5):
        assert HeuristicPolicy(cfg, seed).act(obs) == play_action(engine, 1, 6)


def test_heuristic_uses_known_voids():
    # Equal tiles 1|6 and 2|5; opponents showed they lack 5 (R8), so 2|5 leaves an end they
    # cannot use.
    cfg = ChickenFootConfig()
    engine = build(cfg, hands=[[(1, 6), (2, 5), (7, 8)], [(4, 4)], [(4, 6)], [(4, 7)]],
                   arms=OPEN_0123)
    snap = engine.snapshot()
    snap["voids"] = [[], [5], [5], []]
    engine.restore(snap)
    obs = observe(engine, Encoder(cfg))
    for seed in range(5):
        assert HeuristicPolicy(cfg, seed).act(obs) == play_action(engine, 2, 5)


def test_heuristic_plays_a_playable_drawn_tile():
    # R8: after a draw the drawn tile may be played or the turn passed; it plays it.
    cfg = ChickenFootConfig()
    engine = build(cfg, hands=[[(5, 6), (3, 7)], [(4, 4)], [(4, 5)], [(4, 6)]],
                   arms=OPEN_0123, drawn=(3, 7))
    obs = observe(engine, Encoder(cfg))
    assert obs["action_mask"][cfg.pass_action] == 1
    assert HeuristicPolicy(cfg, 0).act(obs) == play_action(engine, 3, 7)


def test_heuristic_counts_points_double_when_an_opponent_is_about_to_go_out():
    cfg = ChickenFootConfig()
    policy, decoder, encoder = HeuristicPolicy(cfg, 0), ObservationDecoder(cfg), Encoder(cfg)
    mine, others = [(1, 6), (2, 5), (7, 8)], [[(4, 4), (4, 7), (4, 9)], [(4, 8), (5, 7), (8, 8)]]
    close = build(cfg, hands=[mine, others[0], [(4, 6)], others[1]], arms=OPEN_0123)
    far = build(cfg, hands=[mine, others[0], [(4, 6), (5, 9), (6, 9)], others[1]], arms=OPEN_0123)
    action = play_action(close, 2, 5)
    gain = policy.score(decoder.decode(encoder.observe(close, 0)), action) - policy.score(
        decoder.decode(encoder.observe(far, 0)), action
    )
    assert gain == pytest.approx(7.0)  # the tile's 7 points count once more (R11, R12)


# --------------------------------------------------------------------------- ISMCTS
def test_ismcts_determinizations_agree_with_the_public_information():
    cfg = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=3)
    policy = ISMCTSPolicy(cfg, seed=0, iterations=1)
    decoder, n, seen_late_round = ObservationDecoder(cfg), cfg.num_players, []

    def check(engine: Engine, obs: dict) -> None:
        if obs["action_mask"].sum() == 1:
            return  # a forced move: the search engine (skip_forced) would take it on restore
        seat = engine.current
        order = [(seat + k) % n for k in range(n)]
        det = policy.determinize(decoder.decode(obs["observation"]))
        assert np.array_equal(det.hands[0], engine.hands[seat])
        assert np.array_equal(det.on_table, engine.on_table)
        assert det.hand_counts == [engine.hand_counts[s] for s in order]
        assert len(det.boneyard) == len(engine.boneyard)
        assert (det.round, det.center, det.current) == (engine.round, engine.center, 0)
        assert np.array_equal(det.legal_action_mask(), obs["action_mask"])
        assert det.hands.sum() + len(det.boneyard) + det.on_table.sum() == cfg.num_tiles
        seen_late_round.append(engine.round)

    playout(cfg, [load_policy("random", cfg, 0)], seed=2, check=check)
    assert max(seen_late_round) == 2  # later rounds (scores restored as totals) were covered


def test_ismcts_respects_known_voids_and_never_sees_hidden_tiles():
    cfg = ChickenFootConfig()
    engine = build(cfg, hands=[[(1, 6), (2, 5), (7, 8)], [(4, 4), (4, 7)], [(4, 6)], [(5, 8)]],
                   arms=OPEN_0123)
    snap = engine.snapshot()
    snap["voids"] = [[], [5, 9], [], [0]]
    engine.restore(snap)
    policy, decoder = ISMCTSPolicy(cfg, seed=3), ObservationDecoder(cfg)
    state = decoder.decode(Encoder(cfg).observe(engine, 0))
    tables, hidden_hands = tile_tables(9), set()
    for _ in range(50):
        hands, boneyard = policy.sample_hidden(state)
        assert [len(h) for h in hands] == [2, 1, 1]
        assert not any(5 in tables.pairs[t] or 9 in tables.pairs[t] for t in hands[0])
        assert not any(0 in tables.pairs[t] for t in hands[2])
        hidden_hands.add(tuple(sorted(hands[0])))
    # The true hand of seat 1 is one sample among many: the search does not know it.
    assert len(hidden_hands) > 10


def test_ismcts_spec_errors_name_the_problem():
    cfg = ChickenFootConfig()
    assert load_policy("ismcts:7", cfg, 0).iterations == 7
    assert load_policy("ismcts", cfg, 0).iterations == 200
    for bad in ("ismcts:abc", "ismcts:0", "ismcts:-3"):
        with pytest.raises(ValueError, match="iterations must be a positive int"):
            load_policy(bad, cfg, 0)


@pytest.mark.parametrize("fields", PLAYOUT_CONFIGS)
@pytest.mark.parametrize("spec", ["random", "greedy"])
def test_mask_only_fast_path_makes_the_same_choices_as_act(spec, fields):
    """`act_bits(legal)` (cf_env.agents.policies' fast path) is `act(observation)` with the same RNG
    use: two bots with one seed, one asked each way at every decision (forced ones included, so
    single-action draws of the RNG are compared too), choose identically over whole games, and
    their RNGs end in the same state."""
    config, options = split_options(fields)
    for game in range(3):
        by_obs, by_legal = (load_policy(spec, config, seed=100 + game) for _ in range(2))
        engine = Engine(config, seed=game, skip_forced=options.skip_forced)
        encoder = Encoder(config)
        decisions = ties = 0
        while not engine.game_over:
            legal = engine.legal_actions()
            expected = by_obs.act(observe(engine, encoder))
            got = by_legal.act_bits(engine.legal_bits())
            assert got == expected and type(got) is int, (spec, fields, game, legal)
            decisions += 1
            ties += len(legal) > 1
            engine.step(got)
        assert by_obs.rng.bit_generator.state == by_legal.rng.bit_generator.state
        assert decisions > 20 and ties > 0


def test_greedy_fast_path_breaks_point_ties_like_act():
    """Greedy's tie-breaking (several legal tiles with the top points, e.g. both halves of one
    tile) draws from the RNG identically on both entry points."""
    config = ChickenFootConfig()
    by_obs, by_legal = GreedyPolicy(config, seed=7), GreedyPolicy(config, seed=7)
    rng = np.random.default_rng(0)
    tied = 0
    for _ in range(300):
        legal = sorted(rng.choice(config.num_actions, size=int(rng.integers(1, 12)), replace=False))
        mask = np.zeros(config.num_actions, dtype=np.int8)
        mask[legal] = 1
        points = by_obs.action_points[legal]
        tied += int((points == points.max()).sum() > 1)
        obs = {"observation": np.zeros(1, np.float32), "action_mask": mask}
        assert by_legal.act_bits(sum(1 << int(a) for a in legal)) == by_obs.act(obs)
    assert tied > 20  # the RNG was really exercised


# ------------------------------------------------------------------ hardening
def test_register_policy_before_builtins_keeps_them():
    """A user spec registered before anything loaded the built-in bots used to hide them
    ("unknown policy spec 'random'"): built-ins were imported only while no spec was registered.
    Run in a fresh interpreter, so that no earlier test has imported `cf_env.agents.bots` already."""
    script = """
import sys
from cf_env import ChickenFootConfig
from cf_env.agents.policies import load_policy, policy_names, register_policy

assert "cf_env.agents.bots" not in sys.modules  # the order under test: a user's spec first
mine = lambda config, seed: "mine"
register_policy("mine", mine)
config = ChickenFootConfig(max_pips=6, num_players=2)
print(type(load_policy("random", config, seed=0)).__name__)
print(type(load_policy("greedy", config, seed=0)).__name__)
print(load_policy("mine", config, seed=0))
# A user's spec under a built-in name replaces it, and stays: the built-ins are not re-imported.
register_policy("greedy", mine)
print(load_policy("greedy", config, seed=0), load_policy("random", config, seed=0) != "mine")
print(policy_names())
"""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:4] == ["RandomPolicy", "GreedyPolicy", "mine", "mine True"]
    assert lines[4] == str(
        ["belief", "br", "greedy", "guided", "heuristic", "ismcts", "lookahead", "mine", "random",
         "ppo:<checkpoint>", "module:factory"]
    )


@pytest.mark.parametrize(
    "name, factory, message",
    [
        ("", GreedyPolicy, "a policy name is a non-empty string without ':'"),
        ("ppo", GreedyPolicy, "other than 'ppo'"),
        ("my:bot", GreedyPolicy, "got 'my:bot'"),
        (7, GreedyPolicy, "got 7"),
        ("mybot", "not callable", "the factory must be callable"),
    ],
)
def test_register_policy_refuses_names_no_spec_can_reach(name, factory, message):
    before = policy_names()
    with pytest.raises(ValueError, match=message):
        register_policy(name, factory)
    assert policy_names() == before  # nothing registered
