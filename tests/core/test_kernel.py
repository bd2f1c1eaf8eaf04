"""The compiled, batched rules core (`cf_env.core.kernel`) against the reference `Engine`.

* Differential: batches of games over random valid configs (every variant field, every set size,
  the approach of tests/core/test_fuzz.py's `configs`) stepped together with seeded random legal
  actions, against one `Engine(config, seed=s)` per game fed the same actions: at every decision
  the legal bitset, the seat to move, every hand, the boneyard, the open ends, the spinner arms,
  the pending foot and the drawn tile agree; at every round end the round points; at the game end
  the winners (R4-R13, "same seed, same games").
* Scenarios: the positions of tests/core/test_rules.py built in an Engine (tests/positions.py),
  loaded into the kernel, and its legal moves and transitions checked rule by rule (R6-R13).
* The same functions as plain Python: a small differential run under NUMBA_DISABLE_JIT=1.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from positions import build
from variants import CONFIGS, GAMES, run_without_jit

from cf_env import ChickenFootConfig, Engine
from cf_env.core.actions import IllegalActionError, actions_in
from cf_env.core.config import SUPPORTED_SETS, max_players
from cf_env.core.kernel import KernelBatch, batch_random_actions, words_to_int
from cf_env.core.tiles import tile_tables


def differential(config: ChickenFootConfig, seeds: list[int], action_seed: int, check=None) -> dict:
    """Play len(seeds) games in one batch and in Engines with the same random legal actions,
    asserting agreement at every decision; returns counts of what was compared. `check`, when
    given, is called as check(batch, engines) at every step before the actions are chosen
    (tests/core/test_kernel_observation.py compares the observations there)."""
    n = len(seeds)
    batch = KernelBatch(config, n)
    batch.reset(seeds)
    engines = [Engine(config, seed=s) for s in seeds]
    st = batch.state
    rng = np.random.default_rng(action_seed)
    seen = {"decisions": 0, "rounds": 0, "games": 0, "draws": 0, "feet": 0, "restarts": 0}
    players = config.num_players
    actions = np.zeros(n, dtype=np.int64)
    while True:
        legal = batch.legal()
        if check is not None:
            check(batch, engines)
        live = 0
        for i, engine in enumerate(engines):
            where = f"{config} seed {seeds[i]} decision {len(engine.history)}"
            if engine.game_over:
                assert st.game_over[i], where
                assert words_to_int(legal[i]) == 0, where
                actions[i] = -1
                continue
            assert not st.game_over[i], where
            bits = engine.legal_bits()
            assert words_to_int(legal[i]) == bits, where  # R6-R9
            assert st.current[i] == engine.current, where
            assert st.drawn_tile[i] == engine.drawn_tile, where
            assert config.num_tiles - st.bone_pos[i] == len(engine.boneyard), where
            assert st.boneyard[i, st.bone_pos[i]:].tolist() == engine.boneyard[::-1], where
            assert st.open_count[i].tolist() == engine.open_count, where
            assert st.spinner_empty[i] == engine.spinner_empty, where
            assert (st.foot_value[i], st.toes_left[i]) == (engine.foot_value, engine.toes_left), where
            assert st.center[i] == engine.center and st.round[i] == engine.round, where
            for seat in range(players):
                assert words_to_int(st.hands[i, seat]) == engine.hand_bits(seat), where
                assert st.hand_count[i, seat] == engine.hand_counts[seat], where
            choices = [a for a in range(bits.bit_length()) if bits >> a & 1]
            actions[i] = choices[int(rng.integers(len(choices)))]
            seen["draws"] += int(actions[i] == config.draw_action)
            seen["feet"] += engine.foot_value >= 0
            live += 1
        if not live:
            break
        batch.step(actions)
        seen["decisions"] += live
        for i, engine in enumerate(engines):
            if actions[i] < 0:
                continue
            finished = engine.step(int(actions[i]))
            where = f"{config} seed {seeds[i]} decision {len(engine.history)}"
            assert bool(st.round_ended[i]) == bool(finished), where  # R11
            if finished:
                assert st.round_points[i].tolist() == finished[0], where  # R12
                assert st.totals[i].tolist() == engine.totals(), where
                seen["rounds"] += 1
            assert bool(st.game_over[i]) == engine.game_over, where
            if engine.game_over:
                assert np.flatnonzero(st.winners[i]).tolist() == engine.winners, where  # R13
                seen["games"] += 1
                seen["restarts"] += len(engine.scores[0]) > config.num_rounds  # target_score
    return seen


def test_differential_configs_cover_every_variant_value():
    seen: dict[str, set] = {}
    for cfg in CONFIGS:
        for name, value in cfg.to_dict().items():
            seen.setdefault(name, set()).add(value)
    assert seen["max_pips"] == set(SUPPORTED_SETS)
    assert seen["spinner_arms"] == {4, 6}
    assert seen["start_search"] == {"turns", "all_draw", "lower_double"}
    assert seen["tie_break"] == {"r13", "none"}
    assert seen["draw_until_playable"] == seen["must_play_drawn"] == {False, True}
    assert {0, 50, 100} <= seen["double_blank_value"]
    assert None in seen["target_score"] and len(seen["target_score"]) > 2
    assert 3 in seen["toes"] and len(seen["toes"]) > 2
    assert any(cfg.num_players == max_players(cfg.max_pips) for cfg in CONFIGS)


def test_batched_kernel_plays_the_same_games_as_engine_over_random_configs():
    totals = {"decisions": 0, "rounds": 0, "games": 0, "draws": 0, "feet": 0, "restarts": 0}
    for k, cfg in enumerate(CONFIGS):
        seeds = [1000 * k + j for j in range(GAMES[cfg.max_pips])]
        for key, value in differential(cfg, seeds, action_seed=k).items():
            totals[key] += value
    print("differential:", totals)
    assert totals["decisions"] >= 100_000
    assert totals["games"] == sum(GAMES[cfg.max_pips] for cfg in CONFIGS)
    assert totals["draws"] > 0 and totals["feet"] > 0 and totals["restarts"] > 0


def test_kernel_rejects_an_illegal_action_naming_the_game_and_changes_no_game():
    cfg = ChickenFootConfig()
    batch = KernelBatch(cfg, 3)
    batch.reset([3, 4, 5])
    legal = batch.legal().copy()
    before = [a.copy() for a in batch.state]
    good = [actions_in(words_to_int(legal[i]))[0] for i in range(3)]
    actions = np.array([good[0], cfg.pass_action, good[2]])  # PASS: never legal at the start
    with pytest.raises(IllegalActionError, match=rf"game 1: action {cfg.pass_action} is not "
                       r"legal for seat \d; legal: \[.*\]; no game of the batch was changed"):
        batch.step(actions)
    assert all((a == b).all() for a, b in zip(batch.state, before))  # games 0 and 2 too
    for bad in (np.array(good[:2]), np.array(good, dtype=float), np.array([good])):
        with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(3,\)"):
            batch.step(bad)
    assert all((a == b).all() for a, b in zip(batch.state, before))
    batch.step(np.array(good))  # the legal batch then applies
    assert not all((a == b).all() for a, b in zip(batch.state, before))


def test_kernel_legal_mask_matches_engine_mask():
    cfg = ChickenFootConfig(max_pips=18, num_players=3)
    batch = KernelBatch(cfg, 3)
    batch.reset([7, 8, 9])
    masks = batch.legal_mask()
    for i, seed in enumerate([7, 8, 9]):
        assert (masks[i] == Engine(cfg, seed=seed).legal_action_mask().astype(bool)).all()


# ---------------------------------------------------------------------------- scenarios
def kernel_of(engine: Engine) -> KernelBatch:
    batch = KernelBatch(engine.config, 1)
    batch.load(0, engine)
    return batch


def names(batch: KernelBatch) -> set[str]:
    """The kernel's legal actions by readable name, as tests/positions.py `actions` names them."""
    cfg, out = batch.config, set()
    bits = words_to_int(batch.legal()[0])
    for a in range(cfg.num_actions):
        if not bits >> a & 1:
            continue
        if a == cfg.draw_action:
            out.add("draw")
        elif a == cfg.pass_action:
            out.add("pass")
        else:
            lo, hi = tile_tables(cfg.max_pips).pairs[a >> 1]
            attached, free = (hi, lo) if a & 1 else (lo, hi)
            out.add(f"{attached}|{free}@{attached}")
    return out


def kplay(batch: KernelBatch, name: str) -> None:
    cfg = batch.config
    if name in ("draw", "pass"):
        action = cfg.draw_action if name == "draw" else cfg.pass_action
    else:
        tables = tile_tables(cfg.max_pips)
        attached, free = (int(x) for x in name.partition("@")[0].split("|"))
        t = int(tables.tile_id[attached, free])
        action = 2 * t + (0 if tables.pairs[t][0] == attached else 1)
    batch.step(np.array([action]))


CROSS = [(-1, [(9, 1)]), (-1, [(9, 2)]), (-1, [(9, 3)]), (-1, [(9, 4)])]  # R7 arms all filled
TID = {pair: t for t, pair in enumerate((lo, hi) for lo in range(10) for hi in range(lo, 10))}


def test_kernel_r6_r7_only_empty_spinner_arms_take_tiles_then_every_open_end():
    batch = kernel_of(build(hands=[[(9, 5), (3, 4), (1, 7)], [(0, 0)], [(0, 1)], [(0, 2)]],
                            arms=[(-1, [(9, 3)])]))
    assert names(batch) == {"9|5@9"}  # 3 is open, but an arm of the centre is empty (R7)
    assert batch.state.spinner_empty[0] == 3
    batch = kernel_of(build(hands=[[(3, 4)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=[(-1, [(9, 3)])]))
    assert names(batch) == {"draw"}
    batch = kernel_of(build(hands=[[(1, 5), (4, 4), (6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS))
    assert names(batch) == {"1|5@1", "4|4@4"}  # R6


def test_kernel_r7_variant_six_arms_must_all_be_filled_first():
    cfg = ChickenFootConfig(spinner_arms=6)
    batch = kernel_of(build(cfg, hands=[[(9, 6), (1, 7)], [(0, 0)], [(0, 1)], [(0, 2)]],
                            arms=CROSS + [(-1, [(9, 5)])]))
    assert names(batch) == {"9|6@9"}
    kplay(batch, "9|6@9")
    assert batch.state.spinner_empty[0] == 0
    assert np.flatnonzero(batch.state.open_count[0]).tolist() == [1, 2, 3, 4, 5, 6]


def test_kernel_r8_draw_only_when_nothing_fits_then_the_drawn_tile_or_pass():
    batch = kernel_of(build(hands=[[(1, 5), (6, 6)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS))
    assert names(batch) == {"1|5@1"}  # must place when possible
    batch = kernel_of(build(hands=[[(6, 7), (5, 5)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS,
                            boneyard=[(2, 8)]))
    assert names(batch) == {"draw"}
    kplay(batch, "draw")
    st = batch.state
    assert st.current[0] == 0 and st.drawn_tile[0] == TID[(2, 8)]
    assert names(batch) == {"2|8@2", "pass"}
    kplay(batch, "pass")
    assert st.current[0] == 1 and st.hand_count[0, 0] == 3 and st.drawn_tile[0] == -1
    batch = kernel_of(build(hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(3, 1)]))
    kplay(batch, "draw")
    assert names(batch) == {"1|3@1", "3|1@3", "pass"}
    batch = kernel_of(build(hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(5, 6)]))
    kplay(batch, "draw")
    assert names(batch) == {"pass"}


def test_kernel_r8_empty_boneyard_and_nothing_to_place_means_pass():
    cfg = ChickenFootConfig(hand_size=2)
    batch = kernel_of(build(cfg, hands=[[(6, 7)], [(0, 0)], [(5, 5)], [(0, 2)]], arms=CROSS, leftovers=1))
    assert batch.state.bone_pos[0] == cfg.num_tiles
    assert names(batch) == {"pass"}
    kplay(batch, "pass")
    assert batch.state.current[0] == 1 and not batch.state.round_ended[0]


def test_kernel_r8_variants_must_play_drawn_and_draw_until_playable():
    cfg = ChickenFootConfig(must_play_drawn=True)
    batch = kernel_of(build(cfg, hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS,
                            boneyard=[(2, 8)]))
    kplay(batch, "draw")
    assert names(batch) == {"2|8@2"}
    cfg = ChickenFootConfig(draw_until_playable=True)
    batch = kernel_of(build(cfg, hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS,
                            boneyard=[(5, 6), (7, 8), (2, 5), (0, 3)]))
    before = batch.state.bone_pos[0]
    kplay(batch, "draw")
    assert batch.state.bone_pos[0] == before + 3  # 5|6 and 7|8 don't fit; 2|5 does
    assert batch.state.drawn_tile[0] == TID[(2, 5)] and batch.state.hand_count[0, 0] == 4
    assert names(batch) == {"2|5@2", "pass"}


def test_kernel_r9_r10_a_double_starts_a_foot_whose_toes_come_first():
    batch = kernel_of(build(hands=[[(4, 4), (1, 8)], [(4, 0), (1, 6)], [(2, 7), (3, 6)], [(4, 5), (4, 6)]],
                            arms=CROSS, boneyard=[(4, 7), (8, 8)]))
    st = batch.state
    kplay(batch, "4|4@4")
    assert (st.foot_value[0], st.toes_left[0]) == (4, 3) and st.open_count[0, 4] == 0
    assert names(batch) == {"4|0@4"}  # 1|6 fits the 1 end, but toes come first
    kplay(batch, "4|0@4")
    assert names(batch) == {"draw"}  # 2|7 fits the 2 end: still a draw
    kplay(batch, "draw")
    assert names(batch) == {"4|7@4", "pass"}
    kplay(batch, "4|7@4")
    assert names(batch) == {"4|5@4", "4|6@4"}
    kplay(batch, "4|6@4")
    assert st.foot_value[0] == -1  # R10: the toes are ordinary ends, the double none
    assert np.flatnonzero(st.open_count[0]).tolist() == [0, 1, 2, 3, 6, 7]
    assert st.current[0] == 0 and names(batch) == {"1|8@1"}


def test_kernel_r11_blocked_while_a_foot_is_pending_ends_the_round_and_deals_the_next():
    cfg = ChickenFootConfig(max_pips=6, num_players=2)
    arms = [(-1, [(6, 0), (0, 0)]), (-1, [(6, 1), (1, 0), (0, 2)]), (-1, [(6, 3), (3, 0), (0, 4)]),
            (-1, [(6, 5), (5, 0)])]
    engine = build(cfg, hands=[[(2, 2)], [(3, 3)]], arms=arms, foot=(0, 3), foot_arm=0,
                   boneyard=[(1, 1)], leftovers=1)
    expected_hands = engine.hands.copy()
    batch = kernel_of(engine)
    assert names(batch) == {"draw"}
    kplay(batch, "draw")
    st = batch.state
    assert st.round_ended[0] and st.rounds_played[0] == 1
    points = tile_tables(6).points(50)
    expected_hands[0, tile_tables(6).tile_id[1, 1]] = True
    assert st.round_points[0].tolist() == [int(points[h].sum()) for h in expected_hands]
    assert st.round[0] == 1 and st.center[0] == 5  # R4: the next round is dealt
    engine.step(cfg.draw_action)  # and it is the engine's next round: same RNG, same deal
    assert [words_to_int(st.hands[0, s]) for s in range(2)] == [engine.hand_bits(s) for s in range(2)]


def test_kernel_r5_start_double_holder_or_search_in_turns_from_round_mod_n():
    cfg = ChickenFootConfig(num_players=3)
    start = TID[(9, 9)]
    batch = KernelBatch(cfg, 200)
    batch.reset(list(range(200)))
    searched = 0
    dealt = cfg.num_players * cfg.hand_size
    for seed in range(200):
        order = np.random.default_rng(seed).permutation(cfg.num_tiles).tolist()
        st = batch.state
        if start in order[:dealt]:
            holder = order.index(start) // cfg.hand_size
            expected = [cfg.hand_size] * 3
        else:
            draws = order.index(start) - dealt + 1
            expected = [cfg.hand_size + len(range(s, draws, 3)) for s in range(3)]
            holder = (draws - 1) % 3
            searched += 1
            assert st.bone_pos[seed] == dealt + draws
        expected[holder] -= 1
        assert st.start_seat[seed] == holder and st.current[seed] == (holder + 1) % 3
        assert st.hand_count[seed].tolist() == expected
        assert st.spinner_empty[seed] == 4 and st.center[seed] == 9
    assert searched >= 3


def test_kernel_r5_variants_all_draw_and_lower_double():
    cfg = ChickenFootConfig(num_players=4, start_search="lower_double")
    seeds = list(range(100))
    batch = KernelBatch(cfg, len(seeds))
    batch.reset(seeds)
    dealt = cfg.num_players * cfg.hand_size
    lowered = 0
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(cfg.num_tiles).tolist()
        held = [v for v in range(9, -1, -1) if TID[(v, v)] in order[:dealt]]
        assert batch.state.center[seed] == held[0]  # the highest double anyone holds
        lowered += held[0] < 9
    assert lowered > 0
    cfg = ChickenFootConfig(num_players=4, start_search="all_draw")
    batch = KernelBatch(cfg, len(seeds))
    batch.reset(seeds)
    searched = 0
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(cfg.num_tiles).tolist()
        at = order.index(TID[(9, 9)])
        if at < dealt:
            continue
        searched += 1
        # Every seat draws one tile per batch, seat 0 first, the whole batch even after the
        # double appears; a last batch the boneyard cannot fill goes to the first seats.
        drawn = min(4 * ((at - dealt) // 4 + 1), cfg.num_tiles - dealt)
        expected = [cfg.hand_size + len(range(s, drawn, 4)) for s in range(4)]
        expected[(at - dealt) % 4] -= 1
        assert batch.state.hand_count[seed].tolist() == expected
        assert batch.state.bone_pos[seed] == dealt + drawn
    assert searched > 0


def test_kernel_r12_going_out_scores_pips_left_with_the_double_blank_value():
    for value, expected in [(50, [0, 55, 11, 1]), (0, [0, 5, 11, 1])]:
        cfg = ChickenFootConfig(double_blank_value=value)
        batch = kernel_of(build(cfg, hands=[[(1, 8)], [(0, 0), (2, 3)], [(5, 6)], [(0, 1)]], arms=CROSS))
        kplay(batch, "1|8@1")
        assert batch.state.round_ended[0] and batch.state.round_points[0].tolist() == expected
        assert batch.state.round[0] == 1 and batch.state.totals[0].tolist() == expected


@pytest.mark.parametrize(
    "earlier, last, tie_break, winners",
    [
        ([[0], [5], [30]], [(5, 7), (3, 4)], "r13", [0]),  # a zero round breaks the tie
        ([[0, 3], [0, 7], [30, 30]], [(4, 5), (0, 5)], "r13", [0]),  # then the lowest round
        ([[0, 3], [0, 3], [30, 30]], [(4, 5), (3, 6)], "r13", [0, 1]),  # still tied: shared
        ([[0], [5], [30]], [(5, 7), (3, 4)], "none", [0, 1]),  # no tie-break: shared
        ([[30], [10], [20]], [(0, 2), (0, 3)], "r13", [1]),  # the lowest total
    ],
)
def test_kernel_r13_winners_and_tie_breaks(earlier, last, tie_break, winners):
    rounds = len(earlier[0]) + 1
    cfg = ChickenFootConfig(num_rounds=rounds, num_players=3, tie_break=tie_break)
    c = 9 - (rounds - 1)
    arms = [(-1, [(c, v)]) for v in (1, 2, 3, 4)]
    batch = kernel_of(build(cfg, hands=[[last[0]], [last[1]], [(1, 6)]], arms=arms, current=2,
                            round=rounds - 1, scores=earlier))
    kplay(batch, "1|6@1")
    assert batch.state.game_over[0]
    assert np.flatnonzero(batch.state.winners[0]).tolist() == winners
    assert words_to_int(batch.legal()[0]) == 0  # nothing is legal once the game is over


def test_kernel_target_score_restarts_the_countdown_then_ends_past_the_target():
    cfg = ChickenFootConfig(max_pips=6, num_players=2, target_score=200)
    batch = KernelBatch(cfg, 16)
    batch.reset(list(range(16)))
    rng = np.random.default_rng(5)
    restarted = 0
    while not batch.state.game_over.all():
        before = batch.state.round.copy()
        legal = batch.legal()
        actions = np.array([
            rng.choice([a for a in range(cfg.num_actions) if words_to_int(row) >> a & 1])
            if words_to_int(row) else -1 for row in legal])
        batch.step(actions)
        restarted += int(((before == 6) & (batch.state.round == 0)).sum())
        ended = batch.state.game_over & batch.state.round_ended
        for i in np.flatnonzero(ended):
            assert batch.state.totals[i].max() > 200
        for i in np.flatnonzero(batch.state.round_ended & ~batch.state.game_over):
            assert batch.state.totals[i].max() <= 200
    assert restarted > 0


# ---------------------------------------------------------------------------- plain Python
def test_kernel_plays_the_same_games_as_engine_without_jit():
    code = (
        "from test_kernel import differential\n"
        "from cf_env import ChickenFootConfig\n"
        "cfg = ChickenFootConfig(max_pips=6, num_players=3, spinner_arms=6, draw_until_playable=True,"
        " start_search='all_draw', num_rounds=2)\n"
        "seen = differential(cfg, [1, 2, 3, 4], action_seed=0)\n"
        "assert seen['games'] == 4 and seen['decisions'] > 100, seen\n"
        "print('ok', seen)\n"
    )
    run_without_jit(code)


def test_batch_random_actions_picks_each_legal_action_by_its_rank():
    cfg = ChickenFootConfig(max_pips=12, num_players=3)
    batch = KernelBatch(cfg, 8)
    batch.reset(list(range(8)))
    rng = np.random.default_rng(0)
    for _ in range(40):  # into the round, where several actions are legal
        legal = batch.legal()
        out = np.empty(8, np.int64)
        batch_random_actions(legal, rng.random(8), out)
        batch.step(out)
    legal = batch.legal()
    for i in range(8):
        bits = words_to_int(legal[i])
        choices = [a for a in range(cfg.num_actions) if bits >> a & 1]
        out = np.empty(1, np.int64)
        picked = []
        for k in range(len(choices)):
            batch_random_actions(legal[i : i + 1], np.array([(k + 0.5) / len(choices)]), out)
            picked.append(int(out[0]))
        assert picked == choices
    out = np.empty(1, np.int64)
    batch_random_actions(np.zeros((1, legal.shape[1]), np.uint64), np.array([0.5]), out)
    assert out[0] == -1  # nothing legal: a finished game


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
@pytest.mark.parametrize("entry", ["batch_legal", "batch_step", "batch_observe"])
def test_the_compiled_rules_count_no_references(entry):
    """The entry points turn their arrays into RawArrays (cf_env.core.raw), so the compiled
    rules under them hold no reference-counted value: no incref in any of the functions they
    compile, the helpers they call included (only the CPython wrapper releases the arguments it
    unboxed). Compiled afresh here, since numba shows no LLVM of cached code. Also, no private
    numba option is asked for."""
    from numba import njit

    from cf_env.core import kernel

    config = ChickenFootConfig()
    games = KernelBatch(config, 4)
    games.reset([0, 1, 2, 3])
    legal = games.legal()
    out = np.zeros((4, kernel.obs_tables(config).size), np.float32)
    args = {"batch_legal": (games.state, games.tables, legal.copy()),
            "batch_step": (games.state, games.tables, batch_random_actions(legal, np.full(4, 0.5))),
            "batch_observe": (games.state, games.tables, kernel.obs_tables(config),
                              games.state.current.astype(np.int64), out)}[entry]
    fresh = njit(getattr(kernel, entry).py_func)
    fresh(*args)
    (llvm,) = fresh.inspect_llvm().values()
    functions = {re.search(r"@\"?([\w.$]+)", f).group(1): f
                 for f in re.split(r"\n(?=define )", llvm) if f.startswith("define")}
    compiled = [f for name, f in functions.items()
                if not name.startswith("NRT_") and "cpython" not in name]
    assert len(compiled) >= 2  # the entry point's function and its C-callable twin
    assert all("NRT_incref" not in f and "NRT_decref" not in f for f in compiled)
    assert not [name for name in getattr(kernel, entry).targetoptions if name.startswith("_")]
