"""Soak test: millions of random legal steps across random valid configs, checking invariants.

    python -m cf_env.tools.soak --steps 1000000            # the README figure
    python -m cf_env.tools.soak --steps 200000 --seed 7    # another sample of configs and games

Outside the test suite (it runs for a while). Every game draws a random valid config (every set
size, player counts 2..max, hand sizes, spinner arms, toes, the R8 variants, the start-double
search variants, games to a target score, double-blank value, tie-break, reward mode,
`skip_forced`) and plays random legal actions, checking as it goes:

* every round's deal and start follow R3/R5 (and the `start_search` variants) from the game
  seed's permutations;

* tiles are conserved: hands + boneyard + table = the set, each tile exactly once (R1, R3);
* the action mask is never empty for the acting seat and equals the legal set of the
  reference rules model (R6-R9) over the public table state; the table state agrees with the
  layout (open ends, empty spinner arms, toes owed);
* rounds end within a bound on their length (R11); round points are the pips left in hand with
  the double-blank at its configured value, 0 for whoever went out (R12); a game has
  `num_rounds` rounds (R4), or ends in the round in which a total passes `target_score`; its
  winners follow R13;
* after the game, every action raises `IllegalActionError`;
* now and then: an illegal or malformed action raises and changes nothing; snapshot -> JSON ->
  restore reproduces the snapshot and continues identically (masks, points, layout, deals);
  a game is played through the AEC env (agent selection, masks, observation space, rewards,
  infos with reset's keys and types);
  a game is played through the single-agent gymnasium env twice from the same `reset(seed)`,
  the second time on the used env: the same observations, masks and rewards for the same
  actions; every info has reset's keys and types; after `terminated` the mask is the terminal
  placeholder alone, and stepping raises and changes nothing.

The rules these checks expect (deals, legality, R11-R13, rewards) come from
`cf_env.tools.reference`, the rules model written apart from the engine that `tests/core/test_fuzz.py`
uses too.

Any exception or broken invariant is a fault: it is recorded with the config and seeds that
reproduce it, the soak moves on to the next game, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from cf_env.core.actions import IllegalActionError
from cf_env.core.config import (
    SUPPORTED_SETS,
    ChickenFootConfig,
    DriverOptions,
    max_players,
    num_tiles,
)
from cf_env.core.engine import Engine
from cf_env.tools import reference
from cf_env.tools.cli import HelpFormatter
from cf_env.tools.reference import pairs_of

# Malformed actions the engine must reject (beside illegal in-range ints).
_MALFORMED = (None, -1, 1.5, "0", True, np.float32(0), np.array([0]), 10**9)


class Fault(AssertionError):
    """A broken invariant (the kind is the first word of the message)."""


def check(condition: bool, kind: str, detail=None) -> None:
    """Raise a `Fault` of `kind` unless `condition`; `detail` is a string or a callable making
    one (so that the hot path never formats messages)."""
    if not condition:
        text = detail() if callable(detail) else detail
        raise Fault(f"{kind}: {text}" if text else kind)


@dataclass
class Stats:
    steps: int = 0  # agent decisions (calls to step)
    actions: int = 0  # actions applied, forced ones taken by `skip_forced` included
    games: int = 0
    rounds: int = 0
    env_games: int = 0
    single_agent_games: int = 0  # each played twice from the same seed
    snapshot_checks: int = 0
    illegal_probes: int = 0
    seconds: float = 0.0  # wall clock
    cpu_seconds: float = 0.0  # this process's CPU time (the machine may be shared)
    by_set: Counter = field(default_factory=Counter)
    faults: list = field(default_factory=list)


# ---------------------------------------------------------------------------- random configs
def random_config(rng: np.random.Generator) -> tuple[ChickenFootConfig, DriverOptions]:
    """Random rules and driver options (the options drawn last, as they always were)."""
    max_pips = int(rng.choice(SUPPORTED_SETS))
    players = int(rng.integers(2, max_players(max_pips) + 1))
    most = (num_tiles(max_pips) - 1) // players
    hand = None if rng.random() < 0.6 else int(rng.integers(2, most + 1))
    # A quarter of the games play to a target (up to about two rounds' points of a big hand).
    target = int(rng.integers(1, 20 * max_pips + 1)) if rng.random() < 0.25 else None
    rules = ChickenFootConfig(
        max_pips=max_pips,
        num_players=players,
        hand_size=hand,
        num_rounds=int(rng.integers(1, max_pips + 2)) if target is None else None,
        target_score=target,
        start_search=str(rng.choice(("turns", "all_draw", "lower_double"))),
        spinner_arms=int(rng.choice((4, 6))),
        toes=3 if rng.random() < 0.7 else int(rng.integers(1, max_pips + 1)),
        draw_until_playable=bool(rng.random() < 0.3),
        must_play_drawn=bool(rng.random() < 0.3),
        double_blank_value=int(rng.choice((0, 25, 50, 100))),
        tie_break=str(rng.choice(("r13", "none"))),
    )
    options = DriverOptions(
        reward_mode=str(rng.choice(("score", "zero_sum", "win"))),
        skip_forced=bool(rng.random() < 0.3),
    )
    return rules, options


# ---------------------------------------------------------------------------- invariants
def rules_legal(engine: Engine) -> set[int]:
    """The legal actions by the reference rules (R6-R9, R8 draw/pass) over the engine's public
    table state."""
    pairs = pairs_of(engine.config.max_pips)
    values = reference.playable_values(
        engine.center,
        engine.spinner_empty,
        dict(enumerate(engine.open_count)),
        engine.foot_value if engine.foot_value >= 0 else None,
    )
    hand = [pairs[t] for t in np.flatnonzero(engine.hands[engine.current])]
    drawn = pairs[engine.drawn_tile] if engine.drawn_tile >= 0 else None
    return reference.legal_actions(engine.config, values, hand, drawn, bool(engine.boneyard))


def check_position(engine: Engine, layout: bool = True) -> None:
    """Invariants of the current position; `layout` adds the (slower) table-layout checks."""
    cfg = engine.config
    # R1/R3: conservation.
    where = engine.hands.sum(axis=0) + engine.on_table
    where += np.bincount(np.asarray(engine.boneyard, dtype=np.int64), minlength=cfg.num_tiles)
    check(bool((where == 1).all()), "conservation", lambda: f"tile counts {where.tolist()}")
    check(
        engine.hand_counts == engine.hands.sum(axis=1).tolist(),
        "hand_counts",
        lambda: f"{engine.hand_counts} vs {engine.hands.sum(axis=1).tolist()}",
    )
    # The mask: int8, never empty while the game runs, equal to the rules.
    mask = engine.legal_action_mask()
    check(mask.dtype == np.int8 and mask.shape == (cfg.num_actions,), "mask_shape")
    legal = set(np.flatnonzero(mask).tolist())
    check(bool(legal), "empty_mask", lambda: f"seat {engine.current}")
    expected = rules_legal(engine)
    check(legal == expected, "mask", lambda: f"engine {sorted(legal)} vs rules {sorted(expected)}")
    if not layout:
        return
    # The rules state agrees with the layout.
    arms = engine.arms  # a new list at each read: read once
    tips = Counter(arm.tip for arm in arms if arm.tip >= 0)
    check(
        tips == Counter({v: c for v, c in enumerate(engine.open_count) if c}),
        "open_ends",
        lambda: f"layout {dict(tips)} vs counts {engine.open_count}",
    )
    spinner = sum(1 for arm in arms if arm.parent < 0)
    check(engine.spinner_empty == cfg.spinner_arms - spinner, "spinner_arms_empty")
    if engine.foot_value >= 0:
        toes = sum(1 for arm in arms if arm.parent == engine.foot_arm)
        check(
            toes + engine.toes_left == cfg.toes, "foot", lambda: f"{toes} + {engine.toes_left} toes"
        )


def expected_points(engine: Engine, hands: np.ndarray, boneyard: list[int], action: int) -> list:
    """R12 (by the reference) for a round ended by `action` (no forced follow-ups)."""
    cfg = engine.config
    hands = hands.copy()
    seat = engine.history[-1][1]
    if action < cfg.draw_action:
        hands[seat, action // 2] = False
    elif action == cfg.draw_action:  # a round-ending draw emptied the boneyard into this hand
        hands[seat, boneyard] = True
    pairs = pairs_of(cfg.max_pips)
    return reference.round_points(cfg, [[pairs[t] for t in np.flatnonzero(h)] for h in hands])


def check_deal(engine: Engine, order: list[int]) -> None:
    """The round just dealt is the reference's deal of its permutation (before any decision)."""
    hands, boneyard, center, current = reference.deal(engine.config, order, engine.round)
    pairs = pairs_of(engine.config.max_pips)
    check(engine.center == center, "deal_center", lambda: f"{engine.center} vs {center}")
    check(engine.current == current, "deal_current", lambda: f"{engine.current} vs {current}")
    check([pairs[t] for t in engine.boneyard[::-1]] == boneyard, "deal_boneyard")
    got = [{pairs[t] for t in np.flatnonzero(h)} for h in engine.hands]
    check(got == hands, "deal_hands", lambda: f"sizes {[len(h) for h in got]} vs {[len(h) for h in hands]}")


def probe_illegal(engine: Engine, rng: np.random.Generator) -> None:
    """An illegal or malformed action raises IllegalActionError and changes nothing."""
    before = json.dumps(engine.snapshot())
    legal = set(engine.legal_actions())
    illegal = [a for a in range(engine.config.num_actions) if a not in legal]
    choices = list(_MALFORMED) + ([int(rng.choice(illegal))] if illegal else [])
    action = choices[int(rng.integers(len(choices)))]
    try:
        engine.step(action)
    except IllegalActionError:
        pass
    else:
        raise Fault(f"illegal_accepted: action {action!r} was applied")
    check(json.dumps(engine.snapshot()) == before, "illegal_changed_state", repr(action))


def check_restore(engine: Engine, policy: np.random.Generator) -> None:
    """snapshot -> JSON -> restore is exact, and both copies continue identically."""
    text = json.dumps(engine.snapshot(), sort_keys=True)
    twin = Engine(engine.config, seed=0, skip_forced=engine.skip_forced)
    twin.restore(json.loads(text))
    check(json.dumps(twin.snapshot(), sort_keys=True) == text, "snapshot_fixed_point")
    probe = engine.clone()
    while not probe.game_over:
        action = int(policy.choice(probe.legal_actions()))
        a, b = probe.step(action), twin.step(action)
        check(a == b, "restore_points", f"{a} vs {b}")
        check(np.array_equal(probe.legal_action_mask(), twin.legal_action_mask()), "restore_mask")
        check(probe.round == twin.round and probe.current == twin.current, "restore_turn")
    left, right = probe.snapshot(), twin.snapshot()
    check(left["arms"] == right["arms"], "restore_layout", "tiles went to different arms")
    check(left["history"] == right["history"], "restore_history")
    check(left["scores"] == right["scores"], "restore_scores")
    check(left["rng"] == right["rng"], "restore_rng")


# ---------------------------------------------------------------------------- games
def play_engine_game(
    cfg: ChickenFootConfig,
    options: DriverOptions,
    seed: int,
    policy_seed: int,
    stats: Stats,
    extras: bool,
) -> None:
    skip_forced = options.skip_forced
    engine = Engine(cfg, seed=seed, skip_forced=skip_forced)
    deals = np.random.default_rng(seed)  # R3: each round deals the next permutation of it
    order = deals.permutation(cfg.num_tiles).tolist()
    if not skip_forced:  # (with skip_forced the engine may have moved on already)
        check_deal(engine, order)
    policy = np.random.default_rng(policy_seed)
    probes = np.random.default_rng(policy_seed + 1)
    restore_at = int(probes.integers(0, 150)) if extras else -1
    in_round, steps = 0, 0
    while not engine.game_over:
        check_position(engine, layout=steps % 16 == 0)
        if extras and probes.random() < 0.02:
            probe_illegal(engine, probes)
            stats.illegal_probes += 1
        if steps == restore_at:
            check_restore(engine, np.random.default_rng(policy_seed + 2))
            stats.snapshot_checks += 1
        hands, boneyard = engine.hands.copy(), list(engine.boneyard)
        rounds_before, actions_before = engine.round, len(engine.history)
        legal = engine.legal_actions()
        action = legal[int(policy.integers(len(legal)))]
        finished = engine.step(action)
        steps += 1
        stats.steps += 1
        stats.actions += len(engine.history) - actions_before
        in_round += 1
        check(in_round <= reference.round_step_bound(cfg), "round_never_ends", lambda: f"round {engine.round}")
        for points in finished:
            check(len(points) == cfg.num_players and min(points) >= 0, "points", str(points))
        if finished:
            stats.rounds += len(finished)
            in_round = 0
            if not skip_forced:  # each decision is one action: recompute R12 exactly
                check(len(finished) == 1, "one_round_per_step")
                expected = expected_points(engine, hands, boneyard, action)
                check(finished[0] == expected, "round_points", f"{finished} vs {expected}")
            nxt = (rounds_before + len(finished)) % cfg.num_rounds  # the countdown may restart
            check(engine.game_over or engine.round == nxt, "round_index")
            if not engine.game_over and not skip_forced:
                check_deal(engine, deals.permutation(cfg.num_tiles).tolist())
            elif not engine.game_over:
                deals.permutation(cfg.num_tiles)  # keep in step with the engine's deals
    played = [s[:-1] for s in engine.scores]
    check(all(len(s) == len(engine.scores[0]) for s in engine.scores), "rounds_played")
    over = reference.game_over
    check(over(cfg, engine.scores) and not over(cfg, played), "game_end")
    check(engine.winners == reference.winners(cfg, engine.scores), "winners", lambda: f"{engine.winners}")
    check(not engine.legal_action_mask().any(), "mask_after_game")
    for action in (0, cfg.draw_action, cfg.pass_action):
        try:
            engine.step(action)
        except IllegalActionError:
            continue
        raise Fault(f"step_after_game: action {action} was accepted")


def play_env_game(
    cfg: ChickenFootConfig, options: DriverOptions, seed: int, policy_seed: int, stats: Stats
) -> None:
    from cf_env.envs.env import env as make_env  # the AEC adapter (pettingzoo) only when needed

    env = make_env(**cfg.to_dict(), **options.to_dict())
    env.reset(seed=seed)
    raw, engine = env.unwrapped, env.unwrapped.engine
    policy = np.random.default_rng(policy_seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    schema = {key: type(value) for key, value in raw.infos[env.possible_agents[0]].items()}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        check(
            {key: type(value) for key, value in info.items()} == schema,
            "env_info_schema",
            lambda: f"{agent}: {info} vs {schema}",  # noqa: B023 (called at once)
        )
        returns[agent] += reward
        check(raw.observation_space(agent).contains(obs), "observation_space")
        if term or trunc:
            env.step(None)
            continue
        check(agent == f"player_{engine.current}", "agent_selection")
        check(np.array_equal(obs["action_mask"], engine.legal_action_mask()), "env_mask")
        rounds_before = len(engine.scores[0])
        env.step(int(policy.choice(np.flatnonzero(obs["action_mask"]))))
        stats.steps += 1
        if options.reward_mode == "zero_sum" and len(engine.scores[0]) > rounds_before:
            check(abs(sum(raw.rewards.values())) < 1e-9, "zero_sum")
    check(engine.game_over, "env_game_over")
    stats.rounds += len(engine.scores[0])
    stats.actions += len(engine.history)
    wants = reference.game_returns(cfg, options.reward_mode, engine.scores)
    for agent, want in zip(env.possible_agents, wants):
        check(abs(returns[agent] - want) < 1e-6, "env_return", f"{agent}: {returns}")


def play_single_agent_game(
    cfg: ChickenFootConfig, options: DriverOptions, seed: int, policy_seed: int, stats: Stats
) -> None:
    """A whole game through the single-agent env (`cf_env.envs.single_agent`), random legal learner
    actions against random and greedy opponents; then `reset(seed)` on the used env and the same
    actions again must give the same observations, masks and rewards (a reseeded env replays
    its game exactly)."""
    from cf_env.envs.single_agent import ChickenFootSingleAgentEnv

    # The adapter skips the learner's forced moves itself; "win" pays only at a game's end.
    episode = "game" if options.reward_mode == "win" else "round"
    env = ChickenFootSingleAgentEnv(
        cfg,
        opponents=["random", "greedy"],
        episode=episode,
        reward_mode=options.reward_mode,
        illegal_action=options.illegal_action,
    )
    engine = env.engine

    def play() -> list:
        policy = np.random.default_rng(policy_seed)
        obs, info = env.reset(seed=seed)
        trace: list = [obs.tobytes(), info["learner_seat"]]
        schema = {key: type(value) for key, value in info.items()}  # every info has reset's
        placeholder = np.zeros(cfg.num_actions, dtype=bool)  # the mask while no episode runs
        placeholder[env.terminal_action] = True
        while True:
            check(engine.current == env.learner, "single_agent_turn")
            mask = env.action_masks()
            check(
                np.array_equal(mask, engine.legal_action_mask().astype(bool)), "single_agent_mask"
            )
            legal = np.flatnonzero(mask)
            check(len(legal) >= 2, "single_agent_forced", "a forced learner move was asked")
            obs, reward, terminated, truncated, info = env.step(int(legal[policy.integers(len(legal))]))
            stats.steps += 1
            check(env.observation_space.contains(obs), "single_agent_observation_space")
            trace += [mask.tobytes(), obs.tobytes(), reward, terminated, truncated]
            check(
                {key: type(value) for key, value in info.items()} == schema,
                "single_agent_info_schema",
                lambda: f"{sorted(info)} vs {sorted(schema)}",  # noqa: B023 (called at once)
            )
            if terminated:
                check(
                    np.array_equal(env.action_masks(), placeholder),
                    "single_agent_mask_after_episode",
                    "the mask after an episode is the terminal placeholder alone",
                )
                played = len(engine.history)  # the whole game's actions: any step adds one
                try:
                    env.step(int(legal[0]))
                except IllegalActionError:
                    check(len(engine.history) == played, "single_agent_step_after_end")
                else:
                    raise Fault("single_agent_step_after_end: a finished episode was stepped")
                if engine.game_over:
                    stats.rounds += len(engine.scores[0])
                    stats.actions += len(engine.history)
                    return trace
                obs, info = env.reset()
                trace += [obs.tobytes(), info["learner_seat"]]

    first = play()
    second = play()  # the same seed on the used env
    check(first == second, "single_agent_reseed", "reset(seed) on a used env played another game")


# ---------------------------------------------------------------------------- driver
def soak(
    steps: int,
    seed: int = 0,
    env_every: int = 25,
    extras_every: int = 10,
    log=None,
    single_every: int = 25,
) -> Stats:
    rng = np.random.default_rng(seed)
    stats = Stats()
    start = last_report = time.perf_counter()
    cpu_start = time.process_time()
    while stats.steps < steps:
        cfg, options = random_config(rng)
        game_seed, policy_seed = (int(x) for x in rng.integers(0, 2**31, size=2))
        through_env = env_every > 0 and stats.games % env_every == env_every - 1
        extras = extras_every > 0 and stats.games % extras_every == 0
        through_single = (
            not through_env and single_every > 0 and stats.games % single_every == single_every // 2
        )
        try:
            if through_env:
                play_env_game(cfg, options, game_seed, policy_seed, stats)
                stats.env_games += 1
            elif through_single:
                play_single_agent_game(cfg, options, game_seed, policy_seed, stats)
                stats.single_agent_games += 1
            else:
                play_engine_game(cfg, options, game_seed, policy_seed, stats, extras)
        except Exception as err:  # any crash is a fault too; record it and carry on
            kind = str(err).split(":")[0] if isinstance(err, Fault) else type(err).__name__
            stats.faults.append(
                {
                    "kind": kind,
                    "fault": f"{type(err).__name__}: {err}"[:500],
                    "config": {**cfg.to_dict(), **options.to_dict()},
                    "game_seed": game_seed,
                    "policy_seed": policy_seed,
                    "path": "env" if through_env else "single-agent" if through_single else "engine",
                    "extras": extras,
                }
            )
        stats.games += 1
        stats.by_set[cfg.max_pips] += 1
        now = time.perf_counter()
        if log is not None and now - last_report > 10:
            last_report = now
            print(
                f"  {stats.steps:,} steps, {stats.games:,} games, {len(stats.faults)} faults, "
                f"{stats.steps / (now - start):,.0f} steps/s",
                file=log,
                flush=True,
            )
    stats.seconds = time.perf_counter() - start
    stats.cpu_seconds = time.process_time() - cpu_start
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--steps", type=int, default=1_000_000, help="agent decisions to play")
    parser.add_argument("--seed", type=int, default=0, help="seeds the configs and games")
    parser.add_argument("--env-every", type=int, default=25, help="every Nth game via the env")
    parser.add_argument(
        "--extras-every", type=int, default=10, help="every Nth game probes illegal actions"
    )
    parser.add_argument(
        "--single-every", type=int, default=25,
        help="every Nth game via the single-agent env, replayed from its seed (0: never)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be positive")
    stats = soak(
        args.steps, args.seed, args.env_every, args.extras_every, log=sys.stderr,
        single_every=args.single_every,
    )
    kinds = Counter(f["kind"] for f in stats.faults)
    summary = {
        "steps": stats.steps,
        "actions": stats.actions,
        "games": stats.games,
        "rounds": stats.rounds,
        "env_games": stats.env_games,
        "single_agent_games": stats.single_agent_games,
        "snapshot_checks": stats.snapshot_checks,
        "illegal_probes": stats.illegal_probes,
        "faults": len(stats.faults),
        "fault_kinds": dict(kinds),
        "seconds": round(stats.seconds, 1),
        "cpu_seconds": round(stats.cpu_seconds, 1),
        "steps_per_second": round(stats.steps / stats.seconds),
        "steps_per_cpu_second": round(stats.steps / max(stats.cpu_seconds, 1e-9)),
        "games_per_set": {str(k): v for k, v in sorted(stats.by_set.items())},
        "seed": args.seed,
    }
    if args.json:
        print(json.dumps({**summary, "first_faults": stats.faults[:10]}, indent=1))
    else:
        print(
            f"soak: {stats.steps:,} steps ({stats.actions:,} engine actions incl. forced), "
            f"{stats.games:,} games ({stats.env_games} via the AEC env, "
            f"{stats.single_agent_games} twice via the single-agent env from one seed), "
            f"{stats.rounds:,} rounds, "
            f"{len(stats.faults)} faults; {summary['steps_per_second']:,} steps/s "
            f"({stats.seconds:.0f} s wall; {summary['steps_per_cpu_second']:,} steps per CPU "
            f"second) (seed {args.seed})"
        )
        print(
            f"  games per set: {summary['games_per_set']}; snapshot/restore checks: "
            f"{stats.snapshot_checks}; illegal-action probes: {stats.illegal_probes}"
        )
        if kinds:
            print(f"  fault kinds: {dict(kinds)}")
        for fault in stats.faults[:10]:
            print("  " + json.dumps(fault))
    return 1 if stats.faults else 0


if __name__ == "__main__":
    sys.exit(main())
