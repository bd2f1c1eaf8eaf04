"""Build engine positions for scenario tests through the public `restore` contract.

Tests name tiles as (a, b) pairs; tiles a test does not place go to the bottom of the boneyard,
so every position holds the full set exactly once (R1). `decisions` and `hidden_shuffle` give
the search tests seeded positions and the same positions with the hidden tiles dealt again.
"""

from __future__ import annotations

import numpy as np

from cf_env import ChickenFootConfig, Engine
from cf_env.agents.policies import load_policy
from cf_env.core.observation import Encoder
from cf_env.core.tiles import tile_tables


def build(
    config: ChickenFootConfig | None = None,
    *,
    hands: list[list[tuple[int, int]]],
    boneyard: list[tuple[int, int]] | None = None,
    leftovers: str | int = "boneyard",
    arms: list[tuple[int, list[tuple[int, int]]]] = (),
    foot: tuple[int, int] | None = None,
    foot_arm: int = -1,
    current: int = 0,
    round: int = 0,
    drawn: tuple[int, int] | None = None,
    scores: list[list[int]] | None = None,
    seed: int = 0,
    center: int | None = None,
) -> Engine:
    """Arms are (parent, [(attached, free), ...]); parent -1 is the centre double.

    `center` overrides the round's double (R4) for `start_search="lower_double"` (R5 variant).

    `foot=(double, toes_left)` with `foot_arm` naming the arm that ends in that double.
    Tiles the test does not place go to the bottom of the boneyard, or to seat `leftovers`'s hand.
    """
    cfg = config or ChickenFootConfig()
    tables = tile_tables(cfg.max_pips)
    center = cfg.max_pips - round if center is None else center
    engine = Engine(cfg, seed=seed)
    used = {tables.tile_id[center, center]}
    norm = lambda pair: [min(pair), max(pair)]  # noqa: E731

    def take(pair) -> list[int]:
        t = int(tables.tile_id[pair[0], pair[1]])
        assert t not in used, f"tile {pair} used twice in the test position"
        used.add(t)
        return norm(pair)

    hands_out = [[take(p) for p in hand] for hand in hands]
    arms_out, open_ends, filled = [], [], 0
    for parent, tiles in arms:
        for pair in tiles:
            take(pair)
        arms_out.append({"parent": parent, "tiles": [list(p) for p in tiles]})
        filled += parent == -1
        if tiles and tiles[-1][0] != tiles[-1][1]:
            open_ends.append(tiles[-1][1])
    bone = [take(p) for p in (boneyard or [])]
    rest = [list(tables.pairs[t]) for t in range(cfg.num_tiles) if t not in used]
    table = [[center, center]] + [norm(p) for _, tiles in arms for p in tiles]
    snap = {
        "max_pips": cfg.max_pips,
        "num_players": cfg.num_players,
        "round": round,
        "num_rounds": cfg.num_rounds,
        "center": center,
        "current": current,
        "hands": hands_out,
        "boneyard": bone + (rest if leftovers == "boneyard" else []),
        "table": table,
        "open_ends": sorted(open_ends),
        "spinner_arms_empty": cfg.spinner_arms - filled,
        "foot": None if foot is None else {"double": foot[0], "toes_left": foot[1]},
        "foot_arm": foot_arm,
        "drawn_tile": None if drawn is None else norm(drawn),
        "scores": scores if scores is not None else [[0] * round for _ in range(cfg.num_players)],
        "game_over": False,
        "winners": [],
        "arms": arms_out,
    }
    if leftovers != "boneyard":
        snap["hands"][leftovers] += rest
    engine.restore(snap)
    return engine


def actions(engine: Engine) -> set[str]:
    """Legal actions by readable name: "9|4@9" (tile, attached value), "draw", "pass"."""
    tables = engine.tables
    out = set()
    for a in engine.legal_actions():
        if a == engine.config.draw_action:
            out.add("draw")
        elif a == engine.config.pass_action:
            out.add("pass")
        else:
            t, side = divmod(a, 2)
            lo, hi = tables.pairs[t]
            attached, free = (hi, lo) if side else (lo, hi)
            out.add(f"{attached}|{free}@{attached}")
    return out


def play(engine: Engine, name: str) -> list[list[int]]:
    """Step by readable name (see `actions`)."""
    cfg, tables = engine.config, engine.tables
    if name == "draw":
        return engine.step(cfg.draw_action)
    if name == "pass":
        return engine.step(cfg.pass_action)
    pair, _, _ = name.partition("@")
    attached, free = (int(x) for x in pair.split("|"))
    t = int(tables.tile_id[attached, free])
    return engine.step(2 * t + (0 if tables.pairs[t][0] == attached else 1))


def decisions(config: ChickenFootConfig, seed: int, share: float = 0.3, skip_forced: bool = False):
    """(engine, observation) at a share of the real choices of a seeded game (random and greedy
    seats: random play draws and passes often, so voids and drawn tiles are common)."""
    engine, encoder = Engine(config, seed=seed, skip_forced=skip_forced), Encoder(config)
    rng = np.random.default_rng(seed)
    players = [load_policy("random" if s % 2 else "greedy", config, seed + s)
               for s in range(config.num_players)]
    while not engine.game_over:
        legal = engine.legal_bits()
        obs = None
        if legal & (legal - 1) and rng.random() < share:
            obs = {"observation": encoder.observe(engine, engine.current),
                   "action_mask": engine.legal_action_mask()}
            yield engine, obs
        if obs is None:
            obs = {"observation": encoder.observe(engine, engine.current),
                   "action_mask": engine.legal_action_mask()}
        engine.step(players[engine.current].act(obs))


def hidden_shuffle(engine: Engine, keep: int, rng: np.random.Generator):
    """Every hand but seat `keep`'s and the boneyard dealt again from their own tiles at random,
    sizes kept (the drawn tile stays with the acting seat)."""
    n = engine.num_players
    fixed = {keep, engine.current} if engine.drawn_tile >= 0 else {keep}
    pool = [t for s in range(n) if s not in fixed for t in engine.hand(s)]
    pool += list(reversed(engine.boneyard))
    pool = [pool[i] for i in rng.permutation(len(pool))]
    hands, at = [], 0
    for s in range(n):
        if s in fixed:
            hands.append(engine.hand(s))
        else:
            hands.append(pool[at : at + engine.hand_counts[s]])
            at += engine.hand_counts[s]
    return hands, pool[at:]
