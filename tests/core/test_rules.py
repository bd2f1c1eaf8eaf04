"""Scenario tests, one or more per rule: given this table and hand, these are the legal moves."""

from __future__ import annotations

import numpy as np
import pytest
from positions import actions, build, play

from cf_env import ChickenFootConfig, Engine, IllegalActionError, SnapshotError
from cf_env.core.observation import Encoder
from cf_env.core.tiles import tile_tables

CROSS = [(-1, [(9, 1)]), (-1, [(9, 2)]), (-1, [(9, 3)]), (-1, [(9, 4)])]  # R7 arms all filled


# ---------------------------------------------------------------- R7 spinner
def test_r7_only_empty_spinner_arms_take_tiles_while_any_is_empty():
    engine = build(hands=[[(9, 5), (3, 4), (1, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=[(-1, [(9, 3)])])
    # 3 is an open end, but an arm of the centre is still empty: only 9s may be played.
    assert actions(engine) == {"9|5@9"}
    play(engine, "9|5@9")
    assert engine.spinner_empty == 2


def test_r7_player_without_centre_value_must_draw_even_if_an_end_matches():
    engine = build(hands=[[(3, 4)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=[(-1, [(9, 3)])])
    assert actions(engine) == {"draw"}


def test_r7_after_all_arms_are_filled_every_open_end_takes_tiles():
    engine = build(hands=[[(1, 5), (4, 4), (6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS)
    assert actions(engine) == {"1|5@1", "4|4@4"}


def test_r7_variant_six_arms_must_all_be_filled_first():
    cfg = ChickenFootConfig(spinner_arms=6)
    arms = CROSS + [(-1, [(9, 5)])]
    engine = build(cfg, hands=[[(9, 6), (1, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=arms)
    assert engine.spinner_empty == 1
    assert actions(engine) == {"9|6@9"}
    play(engine, "9|6@9")
    assert engine.spinner_empty == 0
    assert engine.playable_values() == [1, 2, 3, 4, 5, 6]  # every end is open now


# ---------------------------------------------------------------- R8 turn
def test_r8_must_place_when_possible_so_no_draw():
    engine = build(hands=[[(1, 5), (6, 6)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS)
    assert actions(engine) == {"1|5@1"}


def test_r8_draw_then_the_drawn_tile_may_be_played_or_not():
    engine = build(
        hands=[[(6, 7), (5, 5)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(2, 8)]
    )
    assert actions(engine) == {"draw"}
    play(engine, "draw")
    assert engine.current == 0  # R8: the same player decides about the drawn tile
    assert engine.drawn_tile == engine.tables.tile_id[2, 8]
    # Only the drawn tile may be placed (5|5 and 6|7 still don't fit anyway), or PASS.
    assert actions(engine) == {"2|8@2", "pass"}
    play(engine, "pass")
    assert engine.current == 1
    assert engine.hand_counts[0] == 3  # the drawn tile stays in hand


def test_r8_a_drawn_tile_that_fits_two_ends_offers_both_halves():
    engine = build(hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(3, 1)])
    play(engine, "draw")
    assert actions(engine) == {"1|3@1", "3|1@3", "pass"}


def test_r8_unplayable_drawn_tile_leaves_only_pass():
    engine = build(hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(5, 6)])
    play(engine, "draw")
    assert actions(engine) == {"pass"}


def test_r8_empty_boneyard_and_nothing_to_place_means_pass():
    # Everything not placed goes to seat 1, who can play on the 1 end: the round is not dead.
    # Hands of 2 at the deal, so seat 1's 47 tiles are reachable (45 drawn of the 47 that left
    # the boneyard; restore rejects a hand larger than that).
    cfg = ChickenFootConfig(hand_size=2)
    engine = build(cfg, hands=[[(6, 7)], [(0, 0)], [(5, 5)], [(0, 2)]], arms=CROSS, leftovers=1)
    assert len(engine.boneyard) == 0
    assert actions(engine) == {"pass"}
    play(engine, "pass")
    assert engine.current == 1 and not engine.game_over and engine.round == 0


def test_r8_variant_must_play_drawn():
    cfg = ChickenFootConfig(must_play_drawn=True)
    engine = build(cfg, hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(2, 8)])
    play(engine, "draw")
    assert actions(engine) == {"2|8@2"}
    engine2 = build(cfg, hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]], arms=CROSS, boneyard=[(5, 6)])
    play(engine2, "draw")
    assert actions(engine2) == {"pass"}  # an unplayable drawn tile still ends the turn


def test_r8_variant_draw_until_playable():
    cfg = ChickenFootConfig(draw_until_playable=True)
    engine = build(
        cfg,
        hands=[[(6, 7)], [(0, 0)], [(0, 1)], [(0, 2)]],
        arms=CROSS,
        boneyard=[(5, 6), (7, 8), (2, 5), (0, 3)],
    )
    before = len(engine.boneyard)
    play(engine, "draw")
    # 5|6 and 7|8 don't fit; 2|5 does: three tiles drawn in one DRAW, all kept.
    assert len(engine.boneyard) == before - 3
    assert engine.drawn_tile == engine.tables.tile_id[2, 5]
    assert set(engine.hand(0)) == {engine.tables.tile_id[a, b] for a, b in [(6, 7), (5, 6), (7, 8), (2, 5)]}
    assert actions(engine) == {"2|5@2", "pass"}


# ---------------------------------------------------------------- R9 / R10 chicken foot
def foot_position(**kw) -> Engine:
    # Seat 0 plays 4|4 on the 4 arm: a chicken foot on 4.
    return build(
        hands=[[(4, 4), (1, 8)], [(4, 0), (1, 6)], [(2, 7), (3, 6)], [(4, 5), (4, 6)]],
        arms=CROSS,
        boneyard=[(4, 7), (8, 8)],
        **kw,
    )


def test_r9_double_starts_a_foot_and_following_players_must_play_toes():
    engine = foot_position()
    play(engine, "4|4@4")
    assert (engine.foot_value, engine.toes_left) == (4, 3)
    assert 4 not in engine.snapshot()["open_ends"]  # the double offers no end of its own (R10)
    # Seat 1 could play 1|6 on the 1 end but must play a toe on the 4.
    assert engine.current == 1
    assert actions(engine) == {"4|0@4"}
    play(engine, "4|0@4")
    # Seat 2 holds no 4: must draw although 2|7 fits the 2 end.
    assert actions(engine) == {"draw"}
    play(engine, "draw")  # draws 4|7: playable as a toe
    assert actions(engine) == {"4|7@4", "pass"}
    play(engine, "4|7@4")
    assert engine.toes_left == 1
    assert actions(engine) == {"4|5@4", "4|6@4"}
    play(engine, "4|6@4")
    # R10: foot done; the toes' ends (0, 7, 6) are ordinary open ends, 4 is not.
    assert engine.foot_value == -1
    assert sorted(engine.snapshot()["open_ends"]) == [0, 1, 2, 3, 6, 7]
    assert engine.current == 0
    assert actions(engine) == {"1|8@1"}


def test_r9_player_who_cannot_play_a_toe_draws_or_passes_and_turn_moves_on():
    engine = foot_position()
    play(engine, "4|4@4")
    play(engine, "4|0@4")
    play(engine, "draw")
    play(engine, "pass")  # may decline the drawn toe (R8)
    assert engine.current == 3 and engine.toes_left == 2


def test_r11_blocked_while_a_foot_is_pending_ends_the_round_after_the_last_draw():
    cfg = ChickenFootConfig(max_pips=6, num_players=2)
    # Foot on 0; every 0 tile is on the table; the last boneyard tile (1|1) is no toe.
    arms = [(-1, [(6, 0), (0, 0)]), (-1, [(6, 1), (1, 0), (0, 2)]), (-1, [(6, 3), (3, 0), (0, 4)]), (-1, [(6, 5), (5, 0)])]
    engine = build(
        cfg, hands=[[(2, 2)], [(3, 3)]], arms=arms, foot=(0, 3), foot_arm=0,
        boneyard=[(1, 1)], leftovers=1,
    )
    assert actions(engine) == {"draw"}
    hands_before = engine.hands.copy()
    finished = play(engine, "draw")
    # Nobody can place and nobody can draw: the round ends at once, nobody is asked to pass.
    assert len(finished) == 1
    points = tile_tables(6).points(50)
    hands_before[0, engine.tables.tile_id[1, 1]] = True
    assert finished[0] == [int(points[h].sum()) for h in hands_before]
    assert engine.round == 1 and engine.center == 5  # R4: the next round is dealt


# ---------------------------------------------------------------- R4 / R5 rounds and start
def test_r4_rounds_count_down_from_the_highest_double():
    engine = Engine(ChickenFootConfig(max_pips=6, num_players=3), seed=5)
    centres, rng = [], np.random.default_rng(0)
    while not engine.game_over:
        if not centres or centres[-1] != engine.center:
            centres.append(engine.center)
            assert engine.on_table[engine.tables.double_id[engine.center]]
        engine.step(int(rng.choice(engine.legal_actions())))
    assert centres == [6, 5, 4, 3, 2, 1, 0]
    assert all(len(s) == 7 for s in engine.scores)


def test_r4_num_rounds_plays_that_many_rounds():
    engine = Engine(ChickenFootConfig(num_rounds=2), seed=1)
    rng = np.random.default_rng(1)
    while not engine.game_over:
        engine.step(int(rng.choice(engine.legal_actions())))
    assert [len(s) for s in engine.scores] == [2, 2, 2, 2]


def test_r5_holder_places_start_double_and_next_seat_acts():
    cfg = ChickenFootConfig()
    for seed in range(30):
        order = np.random.default_rng(seed).permutation(cfg.num_tiles)
        start = int(tile_tables(9).double_id[9])
        dealt = order[: cfg.num_players * cfg.hand_size].tolist()
        if start in dealt:
            holder = dealt.index(start) // cfg.hand_size
            engine = Engine(cfg, seed=seed)
            assert engine.start_seat == holder
            assert engine.current == (holder + 1) % 4
            assert engine.hand_counts[holder] == cfg.hand_size - 1
            assert engine.spinner_empty == 4 and engine.playable_values() == [9]
            return
    pytest.fail("no seed dealt the start double")


def test_r5_nobody_holds_it_so_seats_draw_in_turn_from_round_mod_n():
    cfg = ChickenFootConfig(num_players=3)
    start = int(tile_tables(9).double_id[9])
    seen = 0
    for seed in range(200):
        order = np.random.default_rng(seed).permutation(cfg.num_tiles).tolist()
        dealt = cfg.num_players * cfg.hand_size
        if start in order[:dealt]:
            continue
        draws = order.index(start) - dealt + 1  # tiles drawn until the double appears
        engine = Engine(cfg, seed=seed)
        # Seat k draws the k-th, (k+n)-th, ... tile, beginning with seat round % n = 0.
        expected_counts = [cfg.hand_size + len(range(s, draws, 3)) for s in range(3)]
        holder = (draws - 1) % 3
        expected_counts[holder] -= 1  # then places the double
        assert engine.hand_counts == expected_counts
        assert engine.start_seat == holder and engine.current == (holder + 1) % 3
        for k in range(draws - 1):  # drawn tiles stay in the drawer's hand
            assert engine.hands[k % 3, order[dealt + k]]
        seen += 1
    assert seen >= 3


# ---------------------------------------------------------------- R11 / R12 / R13
def test_r11_r12_going_out_ends_the_round_and_scores_pips_with_double_blank_50():
    engine = build(
        hands=[[(1, 8)], [(0, 0), (2, 3)], [(5, 6)], [(0, 0 + 1)]], arms=CROSS
    )
    finished = play(engine, "1|8@1")
    assert finished == [[0, 50 + 5, 11, 1]]
    assert engine.round == 1 and engine.scores == [[0], [55], [11], [1]]


def test_r12_variant_double_blank_value():
    cfg = ChickenFootConfig(double_blank_value=0)
    engine = build(cfg, hands=[[(1, 8)], [(0, 0), (2, 3)], [(5, 6)], [(0, 1)]], arms=CROSS)
    assert play(engine, "1|8@1") == [[0, 5, 11, 1]]


def test_r13_lowest_total_wins():
    cfg = ChickenFootConfig(num_rounds=2, max_pips=9, num_players=3)
    # Last round's centre is 8: arms hold 8s.
    arms = [(-1, [(8, 1)]), (-1, [(8, 2)]), (-1, [(8, 3)]), (-1, [(8, 4)])]
    engine = build(cfg, hands=[[(1, 7)], [(0, 2)], [(0, 3)]], arms=arms, round=1, scores=[[30], [10], [20]])
    play(engine, "1|7@1")
    assert engine.game_over
    assert [sum(s) for s in engine.scores] == [30, 12, 23]
    assert engine.winners == [1]


@pytest.mark.parametrize(
    "earlier, last, tie_break, winners",
    [
        # Totals tie at 12; seat 0 has a zero round, seat 1 none.
        ([[0], [5], [30]], [(5, 7), (3, 4)], "r13", [0]),
        # Totals tie at 12 with one zero round each; seat 0's lowest non-zero round is 3 < 5.
        ([[0, 3], [0, 7], [30, 30]], [(4, 5), (0, 5)], "r13", [0]),
        # Tied on every tie-break: a shared win.
        ([[0, 3], [0, 3], [30, 30]], [(4, 5), (3, 6)], "r13", [0, 1]),
        # The first case without tie-breaks: a shared win.
        ([[0], [5], [30]], [(5, 7), (3, 4)], "none", [0, 1]),
    ],
)
def test_r13_tie_breaks(earlier, last, tie_break, winners):
    rounds = len(earlier[0]) + 1
    cfg = ChickenFootConfig(num_rounds=rounds, num_players=3, tie_break=tie_break)
    c = 9 - (rounds - 1)  # R4: the last round's centre double
    arms = [(-1, [(c, v)]) for v in (1, 2, 3, 4)]
    # Seat 2 goes out with 1|6 on the 1 end; seats 0 and 1 keep one tile each.
    engine = build(cfg, hands=[[last[0]], [last[1]], [(1, 6)]], arms=arms, current=2,
                   round=rounds - 1, scores=earlier)
    play(engine, "1|6@1")
    assert engine.game_over and engine.winners == winners
    totals = engine.totals()
    assert totals[0] == totals[1] == 12


# ---------------------------------------------------------------- skip_forced
def test_skip_forced_never_asks_a_decision_with_one_legal_action():
    engine = Engine(ChickenFootConfig(), seed=3, skip_forced=True)
    rng = np.random.default_rng(3)
    decisions = 0
    while not engine.game_over:
        legal = engine.legal_actions()
        assert len(legal) >= 2
        engine.step(int(rng.choice(legal)))
        decisions += 1
    assert decisions > 50


def test_skip_forced_plays_the_same_game_as_taking_forced_actions_by_hand():
    plain, skip = Engine(ChickenFootConfig(), seed=9), Engine(ChickenFootConfig(), seed=9, skip_forced=True)
    rng = np.random.default_rng(9)
    while not plain.game_over:
        legal = plain.legal_actions()
        action = legal[0] if len(legal) == 1 else int(rng.choice(legal))
        plain.step(action)
        if len(legal) > 1:
            skip.step(action)
    assert skip.game_over and skip.scores == plain.scores


@pytest.mark.parametrize("stop_seat", [-1, 0, 2])
@pytest.mark.parametrize("with_choosers", [False, True])
def test_advance_takes_exactly_the_decisions_nobody_must_be_asked(stop_seat, with_choosers):
    """`advance` applies forced decisions and, for seats given a chooser, their choices; it stops
    at `stop_seat`'s turn, at a real choice of a seat without a chooser, or right after a round
    ends, having played what a by-hand check-then-step loop would."""
    by_hand, batched = Engine(ChickenFootConfig(), seed=4), Engine(ChickenFootConfig(), seed=4)
    hand_rng, batch_rng, rng = (np.random.default_rng(4) for _ in range(3))

    def chooser(chooser_rng):
        def choose(legal: int) -> int:
            actions = [a for a in range(legal.bit_length()) if legal >> a & 1]
            return actions[int(chooser_rng.integers(len(actions)))]

        return choose

    # Seats 1 and 3 choose through the engine (when asked to); seats 0 and 2 are asked.
    choosers = [None, chooser(batch_rng), None, chooser(batch_rng)] if with_choosers else None
    by_hand_choose = chooser(hand_rng)
    while not batched.game_over:
        finished: list[list[int]] = []
        while not finished and by_hand.current != stop_seat and not by_hand.game_over:
            legal = by_hand.legal_actions()
            if len(legal) == 1:
                finished = by_hand.step(legal[0])
            elif choosers is not None and choosers[by_hand.current] is not None:
                finished = by_hand.step(by_hand_choose(by_hand.legal_bits()))
            else:
                break
        assert batched.advance(stop_seat, choosers) == finished
        assert batched.snapshot() == by_hand.snapshot()
        if finished or batched.game_over:
            continue
        if batched.current == stop_seat:
            assert batched.advance(stop_seat, choosers) == []  # nothing taken for the stop seat
        action = int(rng.choice(batched.legal_actions()))
        assert batched.step(action) == by_hand.step(action)
    assert by_hand.game_over and batched.scores == by_hand.scores


def test_advance_rejects_an_illegal_choice_and_changes_nothing():
    engine = Engine(ChickenFootConfig(), seed=1)
    while len(engine.legal_actions()) < 2:
        engine.step(engine.legal_actions()[0])
    before = engine.snapshot()
    choosers = [lambda legal: engine.config.draw_action] * engine.config.num_players
    with pytest.raises(IllegalActionError, match="not legal"):
        engine.advance(-1, choosers)
    assert engine.snapshot() == before


# ------------------------------------- R5 / R4 / R13 variants: all_draw, lower_double, target_score
def first_deal(cfg: ChickenFootConfig, seed: int) -> tuple[list[list[int]], list[int]]:
    """R3 as the engine deals it: seat s takes the s-th block of `hand_size` tiles of the
    seeded permutation; the rest is the boneyard, drawn from its start."""
    order = np.random.default_rng(seed).permutation(cfg.num_tiles).tolist()
    size, n = cfg.hand_size, cfg.num_players
    return [order[s * size : (s + 1) * size] for s in range(n)], order[n * size :]


def seeds_where(cfg: ChickenFootConfig, predicate, wanted: int = 3) -> list[int]:
    found = [seed for seed in range(3000) if predicate(*first_deal(cfg, seed))]
    assert len(found) >= wanted, "no seed dealt the wanted position"
    return found[:wanted]


def test_all_draw_every_seat_draws_at_once_until_the_double_appears():
    cfg = ChickenFootConfig(num_players=3, start_search="all_draw")
    start = int(tile_tables(9).double_id[9])
    for seed in seeds_where(cfg, lambda hands, bone: start in bone[3:]):
        hands, bone = first_deal(cfg, seed)
        found = bone.index(start)  # the double is the (found+1)-th tile drawn
        batch_end = (found // 3 + 1) * 3  # the whole batch draws, at once
        engine = Engine(cfg, seed=seed)
        for k, tile in enumerate(bone[:batch_end]):  # seat k % 3 draws the k-th tile (round 0)
            if tile != start:
                assert engine.hands[k % 3, tile]
        holder = found % 3
        expected = [cfg.hand_size + batch_end // 3] * 3
        expected[holder] -= 1  # then places the double
        assert engine.hand_counts == expected
        assert len(engine.boneyard) == len(bone) - batch_end
        assert engine.start_seat == holder and engine.current == (holder + 1) % 3
        assert engine.center == 9 and engine.on_table[start]


def test_all_draw_a_last_batch_the_boneyard_cannot_fill():
    # Double-6, 3 players of 7: the boneyard holds 7 tiles, so the third batch is one tile.
    cfg = ChickenFootConfig(max_pips=6, num_players=3, start_search="all_draw")
    start = int(tile_tables(6).double_id[6])
    for seed in seeds_where(cfg, lambda hands, bone: bone[-1] == start, wanted=1):
        engine = Engine(cfg, seed=seed)
        assert engine.boneyard == []
        assert engine.hand_counts == [7 + 3 - 1, 7 + 2, 7 + 2]  # seat 0 drew it, placed it
        assert engine.start_seat == 0 and engine.current == 1


def test_lower_double_the_highest_lower_double_held_starts_the_round():
    cfg = ChickenFootConfig(start_search="lower_double")
    ids = tile_tables(9).double_id
    held = lambda hands, value: any(int(ids[value]) in h for h in hands)  # noqa: E731
    for seed in seeds_where(cfg, lambda hands, bone: not held(hands, 9)):
        hands, bone = first_deal(cfg, seed)
        value = max(v for v in range(9) if held(hands, v))
        holder = next(s for s, h in enumerate(hands) if int(ids[value]) in h)
        engine = Engine(cfg, seed=seed)
        assert engine.center == value and engine.on_table[ids[value]]
        assert not engine.on_table[ids[9]] and engine.round == 0  # the round is still round 0
        assert engine.hand_counts == [7 - (s == holder) for s in range(4)]  # nobody drew
        assert engine.start_seat == holder and engine.current == (holder + 1) % 4
        assert engine.playable_values() == [value]  # R7: the spinner is the lower double
        layout = Encoder(cfg).layout
        obs = layout.view(Encoder(cfg).observe(engine, 0))
        assert np.flatnonzero(obs["center"]).tolist() == [value]
        assert np.flatnonzero(obs["round"]).tolist() == [0]


def test_lower_double_with_no_lower_double_held_searches_as_r5():
    # Two hands of 2: often no double at all is dealt. Then the round's own double is drawn
    # for in turns (R5), from seat round % n = 0.
    cfg = ChickenFootConfig(num_players=2, hand_size=2, start_search="lower_double")
    ids = {int(i) for i in tile_tables(9).double_id}
    start = int(tile_tables(9).double_id[9])
    for seed in seeds_where(cfg, lambda hands, bone: not ids & set(hands[0] + hands[1])):
        hands, bone = first_deal(cfg, seed)
        draws = bone.index(start) + 1
        engine = Engine(cfg, seed=seed)
        assert engine.center == 9
        expected = [2 + len(range(s, draws, 2)) for s in range(2)]
        expected[(draws - 1) % 2] -= 1
        assert engine.hand_counts == expected


def test_lower_double_next_round_counts_down_from_its_own_double():
    # Round 0 was started by 5|5 (nobody held 9|9 .. 6|6); round 1 is still double-8's (R4).
    cfg = ChickenFootConfig(num_players=3, num_rounds=3, start_search="lower_double")
    arms = [(-1, [(5, v)]) for v in (1, 2, 3, 4)]
    engine = build(cfg, hands=[[(1, 7)], [(2, 8)], [(3, 9)]], arms=arms, center=5)
    assert engine.center == 5 and engine.playable_values() == [1, 2, 3, 4]
    rng = np.random.default_rng()
    rng.bit_generator.state = engine.snapshot()["rng"]
    order = rng.permutation(cfg.num_tiles).tolist()  # the next deal
    hands = [order[s * 7 : (s + 1) * 7] for s in range(3)]
    ids = tile_tables(9).double_id
    expected = next(v for v in range(8, -1, -1) if any(int(ids[v]) in h for h in hands))
    play(engine, "1|7@1")
    assert engine.round == 1 and engine.center == expected <= 8
    # The same snapshot is refused where the variant is off: centre 5 is not round 0's (R4).
    snap = engine.snapshot()
    snap["center"], snap["config"]["start_search"] = 3, "turns"
    with pytest.raises(SnapshotError, match="center must be 8"):
        Engine(ChickenFootConfig(num_players=3, num_rounds=3)).restore(snap)


TARGET = ChickenFootConfig(max_pips=6, num_players=3, target_score=60)
ZERO_ARMS = [(-1, [(0, v)]) for v in (1, 2, 3, 4)]  # round 6 of double-6: the double-blank's


def target_round_end(earlier: list[list[int]]) -> Engine:
    """Seat 0 goes out in the double-blank round; seats 1 and 2 keep 8 and 6 points."""
    engine = build(TARGET, hands=[[(1, 5)], [(2, 6)], [(3, 3)]], arms=ZERO_ARMS, round=6,
                   scores=earlier)
    assert play(engine, "1|5@1") == [[0, 8, 6]]
    return engine


def test_target_score_the_countdown_restarts_while_nobody_passes_the_target():
    # Totals 30, 52 + 8 = 60, 42: reaching the target is not passing it.
    engine = target_round_end([[5] * 6, [9, 9, 9, 9, 8, 8], [6] * 6])
    assert not engine.game_over and engine.totals() == [30, 60, 42]
    assert engine.round == 0 and engine.center == 6  # double-6 again (R4 countdown restarts)
    assert [len(s) for s in engine.scores] == [7, 7, 7]  # more rounds than num_rounds
    obs = Encoder(TARGET).layout.view(Encoder(TARGET).observe(engine, 0))
    assert np.flatnonzero(obs["round"]).tolist() == [0]  # the place in the countdown
    assert (obs["scores"] <= Encoder(TARGET).layout.view(Encoder(TARGET).layout.high)["scores"]).all()


def test_target_score_the_game_ends_in_the_round_a_total_passes_it():
    engine = target_round_end([[5] * 6, [9] * 6, [6] * 6])  # seat 1: 54 + 8 = 62 > 60
    assert engine.game_over and engine.round == 6 and engine.totals() == [30, 62, 42]
    assert engine.winners == [0]  # R13: the lowest total
    assert not engine.legal_action_mask().any()


def test_target_score_ties_break_as_r13():
    # Seats 0 and 2 tie on 36; seat 0 has a zero round (this one), seat 2 none.
    engine = target_round_end([[6] * 6, [9] * 6, [5] * 6])
    assert engine.game_over and engine.totals() == [36, 62, 36]
    assert engine.winners == [0]


def test_target_score_restore_checks_the_totals_against_the_target():
    ok = build(TARGET, hands=[[(1, 5)], [(2, 6)], [(3, 3)]], arms=ZERO_ARMS, round=6,
               scores=[[5] * 6, [9] * 6, [6] * 6])
    snap = ok.snapshot()
    over = {**snap, "scores": [[5] * 6, [11] * 6, [6] * 6]}  # 66 > 60, yet the game runs
    with pytest.raises(SnapshotError, match="pass target_score 60"):
        ok.restore(over)
    wrong_count = {**snap, "scores": [[5] * 5, [9] * 5, [6] * 5]}  # round 6 needs 6 mod 7
    with pytest.raises(SnapshotError, match="6 mod 7"):
        ok.restore(wrong_count)
    ok.restore({**snap, "scores": [[1] * 13, [2] * 13, [3] * 13]})  # the second countdown
    assert ok.totals() == [13, 26, 39] and ok.round == 6
