"""Search: in-place determinizations (`Engine.copy_from`, `Engine.redeal`), the
uniform consistent-deal sampler against an exact enumeration, search that reads only the acting
player's view, the `guided:` and `ms=` spec forms through `load_policy` and the CLIs, and
worker-independent evaluation results."""

from __future__ import annotations

import collections
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from positions import decisions, hidden_shuffle
from variants import run_without_jit

from cf_env import ChickenFootConfig, Engine
from cf_env.agents.ismcts import ISMCTSPolicy, NetworkGuide, split_guided
from cf_env.agents.kernel_search import Deals
from cf_env.agents.policies import load_policy, spec_checkpoint, validate_policy_spec
from cf_env.core.config import split_options
from cf_env.core.deals import DealSampler
from cf_env.core.layout import Arm
from cf_env.core.observation import Encoder, ObservationDecoder
from cf_env.core.tiles import tile_tables
from cf_env.tools.play import main as play_main
from cf_env.tools.soak import check_position
from training.evaluation.evaluate import evaluate
from training.evaluation.evaluate import main as evaluate_main

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "checkpoints" / "selfplay-4p-d9")  # 4 players double-9
VALUED = str(ROOT / "checkpoints" / "selfplay-4p-d9-v3")  # with a value head (value.npz)
D9 = ChickenFootConfig()

# Variety for the property tests: set sizes, player counts, the R8 and R5 variants, six arms,
# a game to a target score (the search keeps its rounds), skip_forced.
CONFIGS = [
    {},
    {"num_players": 2, "max_pips": 6, "num_rounds": 3},
    {"num_players": 3, "max_pips": 12, "num_rounds": 2, "draw_until_playable": True,
     "must_play_drawn": True},
    {"num_players": 8, "max_pips": 12, "num_rounds": 1, "spinner_arms": 6},
    {"num_players": 5, "num_rounds": 2, "start_search": "lower_double", "skip_forced": True},
    {"num_players": 4, "max_pips": 6, "target_score": 150, "start_search": "all_draw"},
]


# --------------------------------------------------------------------------- engine methods
def slot_values(engine: Engine) -> dict:
    out = {"playable": engine.playable_values()}
    for name in Engine.__slots__:
        value = getattr(engine, name)
        if name == "_values":  # a cache of `playable_values()` (`clone` drops it)
            continue
        if name == "_st":  # views of `game.buffer`, compared below
            continue
        if name == "rng":
            value = value.bit_generator.state
        elif name == "game":
            value = value.buffer.tolist()
        elif isinstance(value, memoryview):
            value = value.tobytes()
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        elif name == "arms":
            value = [(a.parent, list(a.tiles), a.tip) for a in value]
        elif isinstance(value, bytearray):
            value = bytes(value)
        out[name] = value
    return out


@pytest.mark.parametrize("fields", CONFIGS[:4])
def test_copy_from_equals_clone_slot_by_slot(fields):
    cfg = ChickenFootConfig(**fields)
    work = Engine(cfg, seed=99)
    for engine, _ in itertools.islice(decisions(cfg, seed=1, share=0.5), 12):
        work.copy_from(engine)
        assert slot_values(work) == slot_values(engine.clone())
        # Nothing play mutates is shared: playing on the copy leaves the original as it was.
        before = slot_values(engine)
        for name in Engine.__slots__:
            value = getattr(work, name)
            if isinstance(value, (list, bytearray, dict, Arm)) and name not in ("_deal_slices",):
                assert value is not getattr(engine, name) or not value, name
        assert not np.shares_memory(work.game.buffer, engine.game.buffer)
        while not work.game_over and work.round == engine.round:
            work.step(work.legal_actions()[0])
        assert slot_values(engine) == before


def test_copy_from_refuses_another_config():
    with pytest.raises(ValueError, match="same config"):
        Engine(D9).copy_from(Engine(ChickenFootConfig(max_pips=6)))


@pytest.mark.parametrize("fields", CONFIGS)
def test_redeal_keeps_every_restore_invariant_and_the_public_view(fields):
    """Real positions from seeded playouts, their hidden tiles re-dealt at random: `restore`
    accepts the snapshot (every rules invariant), the soak's position checks hold, and nothing
    public changes (each seat's observation is the same)."""
    cfg, options = split_options(fields)
    rng, encoder = np.random.default_rng(7), Encoder(cfg)
    checked = 0
    for engine, _ in decisions(cfg, seed=3, skip_forced=options.skip_forced):
        seat = engine.current
        twin = engine.clone()
        hands, boneyard = hidden_shuffle(engine, seat, rng)
        twin.redeal(hands, boneyard)
        Engine(cfg).restore(twin.snapshot())  # raises SnapshotError on a broken invariant
        check_position(twin)
        assert [twin.hand(s) for s in range(cfg.num_players)] == [sorted(h) for h in hands]
        assert list(reversed(twin.boneyard)) == boneyard
        hand = encoder.layout.slices["hand"]  # each seat's own hand may differ, nothing else
        for s in range(cfg.num_players):
            ours, theirs = encoder.observe(twin, s), encoder.observe(engine, s)
            ours[hand] = theirs[hand] = 0
            assert np.array_equal(ours, theirs)
        assert np.array_equal(encoder.observe(twin, seat), encoder.observe(engine, seat))
        assert np.array_equal(twin.legal_action_mask(), engine.legal_action_mask())
        checked += 1
        if checked == 25:
            break
    assert checked >= 5


def test_redeal_refuses_bad_deals_and_changes_nothing():
    engine = Engine(D9, seed=4)
    hands = [engine.hand(s) for s in range(4)]
    boneyard = list(reversed(engine.boneyard))
    table = int(np.flatnonzero(engine.on_table)[0])
    before = slot_values(engine)
    bad = [
        ([hands[0][:-1], *hands[1:]], boneyard, r"hand 0 gets \d+ tiles but holds \d+"),
        (hands[:3], boneyard, "3 hands given for 4 seats"),
        (hands, boneyard[:-1], "the boneyard gets"),
        ([[table, *hands[0][1:]], *hands[1:]], boneyard, "which is on the table"),
        ([hands[0], [hands[0][0], *hands[1][1:]], *hands[2:]], boneyard, "dealt twice"),
        ([[55, *hands[0][1:]], *hands[1:]], boneyard, "not a tile id"),
        ([["x", *hands[0][1:]], *hands[1:]], boneyard, "not a tile id"),
    ]
    for new_hands, new_boneyard, message in bad:
        with pytest.raises(ValueError, match=message):
            engine.redeal(new_hands, new_boneyard)
        assert slot_values(engine) == before


def test_redeal_keeps_a_drawn_tile_with_the_seat_that_drew_it():
    for engine, _ in decisions(D9, seed=11, share=1.0):
        if engine.drawn_tile >= 0:
            break
    else:
        pytest.fail("no drawn-tile decision in the playout")
    seat, hands = engine.current, [engine.hand(s) for s in range(4)]
    other = (seat + 1) % 4
    i = hands[seat].index(engine.drawn_tile)
    hands[seat][i], hands[other][0] = hands[other][0], hands[seat][i]
    with pytest.raises(ValueError, match=r"drawn tile .* must stay in the hand of seat"):
        engine.clone().redeal(hands, list(reversed(engine.boneyard)))


# --------------------------------------------------------------------------- determinizations
@pytest.mark.parametrize("fields", CONFIGS)
def test_determinizations_satisfy_restore_and_never_move_a_seen_tile(fields):
    cfg, options = split_options(fields)
    policy, decoder = ISMCTSPolicy(cfg, seed=0, iterations=1), ObservationDecoder(cfg)
    tables, n = tile_tables(cfg.max_pips), cfg.num_players
    checked = 0
    for engine, obs in decisions(cfg, seed=5, skip_forced=options.skip_forced):
        seat = engine.current
        order = [(seat + k) % n for k in range(n)]
        state = decoder.decode(obs["observation"])
        det = policy.determinize(state)
        search = Engine(det.config)
        search.restore(det.snapshot())  # every restore invariant
        check_position(det, layout=False)  # (a layout restored without arms is synthetic)
        seen = engine.hands[seat] | engine.on_table
        assert np.array_equal(det.hands[0], engine.hands[seat])  # my hand, exactly
        assert np.array_equal(det.on_table, engine.on_table)
        assert not (det.hands[1:].any(axis=0) & seen).any()  # no seen tile given to anyone
        assert not seen[det.boneyard].any()
        assert det.hand_counts == [engine.hand_counts[s] for s in order]
        assert len(det.boneyard) == len(engine.boneyard)
        assert (det.round, det.center, det.current) == (engine.round, engine.center, 0)
        assert np.array_equal(det.legal_action_mask(), obs["action_mask"])
        # R8 voids: a sampled opponent never holds a value it showed it lacks (unless the
        # voids admit no deal at all, when the sampler says which it relaxed).
        sampler = DealSampler.from_state(state, tables, np.random.default_rng(checked))
        for _ in range(5):
            hands, _ = sampler.sample()
            for k, hand in enumerate(hands):
                if k + 1 in sampler.relaxed:
                    continue
                voids = set(np.flatnonzero(state.voids[k]).tolist())
                assert not any(set(tables.pairs[t]) & voids for t in hand)
        checked += 1
        if checked == 20:
            break
    assert checked >= 5


# --------------------------------------------------------------------------- the sampler
def _enumerate(unseen, sizes, boneyard, voids, pairs) -> collections.Counter:
    """Every consistent deal, as (hand sets..., boneyard in draw order), counted once."""
    deals = collections.Counter()
    for perm in itertools.permutations(unseen):
        hands, at = [], 0
        for size in sizes:
            hands.append(frozenset(perm[at : at + size]))
            at += size
        if all(not (set(pairs[t]) & voids[k]) for k, h in enumerate(hands) for t in h):
            deals[(*hands, perm[at:])] = 1
    return deals


def _frequencies(draw, samples: int) -> collections.Counter:
    counts = collections.Counter()
    for _ in range(samples):
        hands, boneyard = draw()
        counts[(*map(frozenset, hands), tuple(boneyard))] += 1
    return counts


@pytest.mark.slow
def test_sampler_is_uniform_over_consistent_deals_by_exact_enumeration():
    """Double-6, three opponents (hands 2, 2, 1) and a boneyard of 2 from 7 unseen tiles, two
    opponents with voids: 114 consistent deals (hands and boneyard order). 40,000 samples with a
    fixed seed: chi-square with 113 degrees of freedom far below its 0.1% tail (about 165),
    total variation under 0.03 — while the previous "most constrained first" fill is far from
    uniform on the same position."""
    tables = tile_tables(6)
    pairs = tables.pairs
    unseen = [int(tables.tile_id[a, b]) for a, b in
              [(0, 1), (0, 2), (1, 3), (2, 2), (3, 5), (4, 6), (1, 1)]]
    sizes, boneyard, voids = [2, 2, 1], 2, [{1}, {0, 2}, set()]
    exact = _enumerate(unseen, sizes, boneyard, voids, pairs)
    assert len(exact) == 114
    sampler = DealSampler(unseen, sizes, boneyard, voids, tables, np.random.default_rng(2024))
    assert sampler.method == "exact" and not sampler.relaxed
    samples = 40_000
    counts = _frequencies(sampler.sample, samples)
    assert set(counts) <= set(exact)  # only consistent deals
    expected = samples / len(exact)
    chi2 = sum((counts[d] - expected) ** 2 / expected for d in exact)
    tv = 0.5 * sum(abs(counts[d] / samples - 1 / len(exact)) for d in exact)
    assert chi2 < 165 and tv < 0.03, (chi2, tv)

    rng = np.random.default_rng(2024)

    def fill():  # the old greedy sampler: shuffle, then the most constrained picks first
        order = [unseen[i] for i in rng.permutation(len(unseen))]
        return sampler._fill(order, strict=False)

    counts = _frequencies(fill, 20_000)
    old_tv = 0.5 * sum(abs(counts[d] / 20_000 - 1 / len(exact)) for d in exact)
    assert old_tv > 0.1, old_tv


@pytest.mark.parametrize("voids", [[{1}, {0, 2}, set()], [set(), set(), set()], [{1}, {1}, {3}]])
def test_compiled_deals_are_uniform_over_consistent_deals_by_exact_enumeration(voids):
    """The compiled search's deals (`kernel_search.Deals`: `DealSampler`'s tables, sampled in
    compiled code) on the exact-enumeration position above and two other void records: only
    consistent deals, chi-square far below its 0.1% tail, total variation under 0.03."""
    tables = tile_tables(6)
    unseen = [int(tables.tile_id[a, b]) for a, b in
              [(0, 1), (0, 2), (1, 3), (2, 2), (3, 5), (4, 6), (1, 1)]]
    sizes, boneyard = [2, 2, 1], 2
    exact = _enumerate(unseen, sizes, boneyard, voids, tables.pairs)
    sampler = DealSampler(unseen, sizes, boneyard, voids, tables, np.random.default_rng(0))
    assert sampler.method == "exact" and not sampler.relaxed
    deals = Deals(sampler, np.array([2024], np.uint64))
    assert deals.tables is not None
    row = np.zeros((1, tables.num_tiles), np.int32)

    def draw():
        deals.fill(row, 1)
        return deals.split(row[0])

    samples = 30_000
    counts = _frequencies(draw, samples)
    assert set(counts) <= set(exact)
    expected = samples / len(exact)
    chi2 = sum((counts[d] - expected) ** 2 / expected for d in exact)
    dof = len(exact) - 1
    assert chi2 < dof + 4.5 * (2 * dof) ** 0.5, (chi2, dof)  # about the 0.1% tail
    if len(exact) <= 200:  # enough samples per deal for the total variation to be small
        tv = 0.5 * sum(abs(counts[d] / samples - 1 / len(exact)) for d in exact)
        assert tv < 0.03, tv


def test_compiled_deals_fall_back_to_the_sampler_where_it_rejects():
    tables = tile_tables(6)
    unseen = [int(tables.tile_id[a, b]) for a, b in [(0, 1), (0, 2), (1, 3), (3, 5), (4, 6)]]
    sizes, voids = [2, 1], [{1}, set()]
    exact = _enumerate(unseen, sizes, 2, voids, tables.pairs)
    sampler = DealSampler(unseen, sizes, 2, voids, tables, np.random.default_rng(5), max_cells=1)
    deals = Deals(sampler, np.zeros(1, np.uint64))
    assert sampler.method == "rejection" and deals.tables is None
    rows = np.zeros((50, tables.num_tiles), np.int32)
    deals.fill(rows, 50)
    drawn = {(*map(frozenset, hands), tuple(bone)) for hands, bone in map(deals.split, rows)}
    assert drawn <= set(exact) and len(drawn) > 1


def test_sampler_rejection_fallback_is_uniform_too():
    """With the table not allowed (max_cells=1) the sampler falls back to rejection: uniform
    over the consistent deals whenever it finds one within its tries."""
    tables = tile_tables(6)
    unseen = [int(tables.tile_id[a, b]) for a, b in [(0, 1), (0, 2), (1, 3), (3, 5), (4, 6)]]
    sizes, voids = [2, 1], [{1}, set()]
    exact = _enumerate(unseen, sizes, 2, voids, tables.pairs)
    sampler = DealSampler(unseen, sizes, 2, voids, tables, np.random.default_rng(5), max_cells=1)
    assert sampler.method == "rejection"
    counts = _frequencies(sampler.sample, 20_000)
    assert set(counts) <= set(exact)
    tv = 0.5 * sum(abs(counts[d] / 20_000 - 1 / len(exact)) for d in exact)
    assert tv < 0.04, tv


def test_sampler_relaxes_voids_that_admit_no_deal():
    """A stale void record (a kept playable drawn tile, R8) can leave no consistent deal: the
    voids of the opponent that excludes the most tiles are dropped, and sizes still hold."""
    tables = tile_tables(6)
    unseen = [int(tables.tile_id[a, b]) for a, b in [(1, 2), (1, 3), (1, 4), (5, 6)]]
    sampler = DealSampler(unseen, [3, 1], 0, [{1}, set()], tables, np.random.default_rng(0))
    assert sampler.relaxed == [1]
    for _ in range(20):
        hands, boneyard = sampler.sample()
        assert [len(h) for h in hands] == [3, 1] and boneyard == []
        assert sorted(hands[0] + hands[1]) == sorted(unseen)
    with pytest.raises(ValueError, match="inconsistent view"):
        DealSampler(unseen, [3, 2], 0, [set(), set()], tables, np.random.default_rng(0))


# --------------------------------------------------------------------------- hidden information
@pytest.mark.parametrize(
    "spec, fields",
    [("ismcts:24", {}), (f"guided:{CKPT}:16", {}), (f"lookahead:{VALUED}:8", {}),
     (f"belief:{VALUED}:8", {}),
     ("ismcts:24", {"num_players": 3, "max_pips": 6})],
)
def test_search_never_reads_hidden_information(spec, fields):
    """The hidden tiles of the real engine swapped between the opponents and the boneyard (the
    acting seat's view unchanged): the same decision for the same seed, at every position."""
    cfg, options = split_options(fields)
    encoder, rng = Encoder(cfg), np.random.default_rng(1)
    compared = 0
    for engine, obs in decisions(cfg, seed=8, share=0.4, skip_forced=options.skip_forced):
        seat = engine.current
        twin = engine.clone()
        hands, boneyard = hidden_shuffle(engine, seat, rng)
        twin.redeal(hands, boneyard)
        twin_obs = {"observation": encoder.observe(twin, seat),
                    "action_mask": twin.legal_action_mask()}
        assert np.array_equal(twin_obs["observation"], obs["observation"])
        a = load_policy(spec, cfg, seed=compared).act(obs)
        b = load_policy(spec, cfg, seed=compared).act(twin_obs)
        assert a == b
        compared += 1
        if compared == 8:
            break
    assert compared == 8


# --------------------------------------------------------------------------- specs and CLIs
def test_spec_forms_load_through_load_policy():
    plain = load_policy("ismcts:ms=5", D9, 0)
    assert plain.ms == 5.0 and plain.guide is None
    assert load_policy("ismcts:30", D9, 0).iterations == 30
    guided = load_policy(f"guided:{CKPT}", D9, 0)
    assert guided.guide is not None and guided.iterations == 200 and guided.ms is None
    assert load_policy(f"guided:{CKPT}:12", D9, 0).iterations == 12
    assert load_policy(f"guided:{CKPT}:ms=40", D9, 0).ms == 40.0
    assert spec_checkpoint(f"guided:{CKPT}:ms=40") == CKPT
    assert spec_checkpoint(f"ppo:{CKPT}") == CKPT and spec_checkpoint("ismcts:5") is None
    assert split_guided("C:/runs/x:200") == ("C:/runs/x", "200")  # ':' inside a path is kept
    assert split_guided("runs/a:b") == ("runs/a:b", "")
    validate_policy_spec(f"guided:{CKPT}:10", D9)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("ismcts:ms=0", "ms must be a positive number of milliseconds"),
        ("ismcts:ms=abc", "ms must be a positive number"),
        ("ismcts:abc", "iterations must be a positive int"),
        ("guided", "needs a checkpoint path"),
        (f"guided:{CKPT}:0", "iterations must be a positive int"),
        (f"guided:{CKPT}:-4", "iterations must be a positive int"),
        (f"guided:{CKPT}:ms=-1", "ms must be a positive number"),
        ("guided:no/such/checkpoint:10", "no checkpoint at"),
    ],
)
def test_bad_spec_forms_name_the_problem(spec, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_policy(spec, D9, 0)


def test_guided_spec_checks_the_checkpoint_against_the_game():
    with pytest.raises(ValueError, match="num_players"):
        load_policy(f"guided:{CKPT}:5", ChickenFootConfig(num_players=3), 0)


def test_guide_folds_the_round_padding_into_its_first_layer():
    """Single rounds (num_rounds=1) pad the round piece for a 10-round checkpoint: the guide's
    folded first layer gives the checkpoint's own logits."""
    cfg = D9.replace(num_rounds=1)
    network = load_policy(f"ppo:{CKPT}", cfg, 0)
    guide = NetworkGuide(network, cfg)
    rows = [obs["observation"] for _, obs in itertools.islice(decisions(cfg, seed=2), 5)]
    ours = guide.logits(np.stack(rows))
    theirs = np.stack([network.logits(row) for row in rows])
    assert np.allclose(ours, theirs, atol=1e-4)


def test_time_budget_runs_iterations_until_the_cpu_time_is_spent():
    import time

    policy = load_policy("ismcts:ms=30", D9, 0)
    _, obs = next(iter(decisions(D9, seed=1, share=1.0)))
    start = time.process_time()
    policy.act(obs)
    assert time.process_time() - start >= 0.03
    assert policy.last_iterations >= 1


@pytest.mark.slow
def test_evaluate_cli_plays_guided_and_time_budget_specs(tmp_path, capsys):
    out = tmp_path / "eval.json"
    evaluate_main(["--agent", f"guided:{CKPT}:4", "--opponents", "heuristic,ismcts:ms=2",
                   "--mixed", "--players", "4", "--deals", "2", "--single-round", "--seed", "1",
                   "--out", str(out), "--no-progress"])
    result = json.loads(out.read_text())
    labels = [p["name"] for p in result["policies"]]
    assert labels == [f"guided:{CKPT}:4", "heuristic", "ismcts:ms=2"]


@pytest.mark.slow
def test_evaluation_results_are_identical_for_any_workers():
    specs = [f"guided:{CKPT}:4", "ismcts:6", "heuristic"]
    one = evaluate(specs, D9, deals=16, seed=3, workers=1, single_round=True)
    two = evaluate(specs, D9, deals=16, seed=3, workers=2, single_round=True)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_play_cli_takes_the_rules_from_a_guided_checkpoint():
    out = io.StringIO()
    spec = f"guided:{CKPT}:8"
    code = play_main(["--opponents", spec, "--seed", "1", "--rounds", "1"], out=out,
                     inp=io.StringIO(""))
    assert code == 0  # (end of input: the game is abandoned cleanly)
    text = out.getvalue()
    assert text.startswith("Chicken Foot: double-9 set, 4 players, 1 round(s)")
    assert f"rules from the card of {spec}" in text


def test_play_cli_plays_against_a_time_budget_opponent():
    out = io.StringIO()
    answers = io.StringIO("1\n" * 60)
    code = play_main(["--players", "2", "--max-pips", "6", "--rounds", "1", "--opponents",
                      "ismcts:ms=5", "--seed", "3"], out=out, inp=answers)
    assert code == 0
    assert "ismcts:ms=5" in out.getvalue()


def test_measured_guided_alternatives_play_legal_moves():
    """The alternatives the guided scheme was chosen against (priors at every node, network
    moves in rollouts; docs/search/variants.py) stay runnable: legal moves, network called."""
    network = load_policy(f"ppo:{CKPT}", D9, 0)
    for options in ({"node_priors": "all"}, {"node_priors": "mine"}, {"rollout_net": 2},
                    {"rollout": "follow"}):
        policy = ISMCTSPolicy(D9, seed=1, iterations=12, guide=NetworkGuide(network, D9), **options)
        for _, obs in itertools.islice(decisions(D9, seed=4), 4):
            assert obs["action_mask"][policy.act(obs)] == 1
        assert policy.network_calls > 0 or options == {"rollout": "follow"}, options
    with pytest.raises(ValueError, match="node_priors must be"):
        ISMCTSPolicy(D9, node_priors="some")
    with pytest.raises(ValueError, match="rollout must be"):
        ISMCTSPolicy(D9, rollout="smart")


@pytest.mark.parametrize("rollout", ["follow", "greedy"])
@pytest.mark.parametrize("fields", [{}, {"num_players": 3, "max_pips": 12, "must_play_drawn": True,
                                         "draw_until_playable": True},
                                    {"num_players": 4, "max_pips": 6, "target_score": 150}])
def test_compiled_search_decides_as_the_engine_search_with_the_same_streams(rollout, fields):
    """The iterations in compiled code (`cf_env.agents.kernel_search`) against the tree in Python
    over `Engine`, its rollouts by the rule as a chooser through `Engine.advance`
    (`search_on="engine"`): the same decisions and the same random draws (both streams' states
    after the search) at every position."""
    cfg = ChickenFootConfig(**fields)
    positions = [obs for _, obs in itertools.islice(decisions(cfg, seed=5, share=0.5), 12)]
    fast = ISMCTSPolicy(cfg, seed=3, iterations=60, rollout=rollout)
    slow = ISMCTSPolicy(cfg, seed=3, iterations=60, rollout=rollout, search_on="engine")
    assert [fast.act(obs) for obs in positions] == [slow.act(obs) for obs in positions]
    assert slow.rng.bit_generator.state == fast.rng.bit_generator.state
    assert slow.uniform() == fast.uniform()  # the search streams drew as often


def test_compiled_search_decides_as_the_engine_search_without_jit():
    """The compiled search as plain Python (NUMBA_DISABLE_JIT=1) on a small game."""
    code = (
        "import itertools\n"
        "from positions import decisions\n"
        "from cf_env import ChickenFootConfig\n"
        "from cf_env.agents.ismcts import ISMCTSPolicy\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, num_rounds=1)\n"
        "positions = [o for _, o in itertools.islice(decisions(cfg, seed=2, share=0.5), 3)]\n"
        "fast = ISMCTSPolicy(cfg, seed=1, iterations=12)\n"
        "slow = ISMCTSPolicy(cfg, seed=1, iterations=12, search_on='engine')\n"
        "assert [fast.act(o) for o in positions] == [slow.act(o) for o in positions]\n"
        "assert fast.uniform() == slow.uniform()\n"
        "print('ok')\n"
    )
    run_without_jit(code, folder="agents")


def test_compiled_guided_search_decides_as_the_engine_search():
    """The root prior (PUCT at the root) in compiled code as in the Python tree."""
    network = load_policy(f"ppo:{CKPT}", D9, 0)
    positions = [obs for _, obs in itertools.islice(decisions(D9, seed=8, share=0.5), 8)]
    fast = ISMCTSPolicy(D9, seed=2, iterations=40, guide=NetworkGuide(network, D9))
    slow = ISMCTSPolicy(D9, seed=2, iterations=40, guide=NetworkGuide(network, D9),
                        search_on="engine")
    assert [fast.act(obs) for obs in positions] == [slow.act(obs) for obs in positions]
    assert slow.uniform() == fast.uniform()
    with pytest.raises(ValueError, match="search_on must be"):
        ISMCTSPolicy(D9, search_on="gpu")


def test_hand_bits_are_the_hand_as_action_bits():
    tables = tile_tables(9)
    for engine, _ in itertools.islice(decisions(D9, seed=6, share=1.0), 10):
        for seat in range(4):
            assert engine.hand_bits(seat) == sum(tables.tile_bits[t] for t in engine.hand(seat))


def test_search_bench_prints_rows_for_each_search():
    from cf_env.tools.search_bench import run

    rows = run(1, sets=(6, 9), reference_seconds=0.05)
    assert [(r["set"], r["search"]) for r in rows] == [
        ("double-6", "after"), ("double-9", "after"), ("double-9", "guided")]
    assert all(r["us_per_iteration"] > 0 for r in rows)
