"""Search cost: µs per ISMCTS iteration by set size (a benchmark row; figures in docs/search/speed.md
and docs/search/results.md).

    python -m cf_env.tools.search_bench                   # double-6, 9, 12 at 4 players
    python -m cf_env.tools.search_bench --positions 10    # quicker, noisier
    python -m cf_env.tools.search_bench --json out.json

Positions: decisions with a real choice (two or more legal actions) taken from seeded `greedy`
playouts, early, middle and late in a round alike. Each search policy decides every position at
`LOW` and `HIGH` iterations (after one untimed decision: the compiled search is compiled, or
loaded from numba's cache, on first use); the difference gives the cost of one iteration (a
determinization and a rollout to the round's end), the rest the set-up per decision (decoding the
observation, tabulating the deal sampler, the root `restore` and loading it into the kernel).
Times are CPU seconds of this process (`time.process_time`), so a shared machine slows the
figures less than wall time would; take published figures on an idle machine all the same
(caches and turbo are shared). The engine's own decision cost is measured first in the same
process; "scaled" divides by how much slower it is than docs/bench.md's idle figure: a rough
idle-equivalent, not a measurement.

Rows: "after" is the current `ismcts` (the iterations in compiled code,
`cf_env.agents.kernel_search`); "engine" (`--engine`) the same search with the tree in Python
over `Engine` (`search_on="engine"`, what the schemes with a network inside the iterations run
on); "guided" adds the checkpoint's root prior (one network call per decision). The search of
earlier commits is measured by running this benchmark in a checkout of that commit
(docs/search/speed.md says how the published "before" figures were taken).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from cf_env.agents.ismcts import ISMCTSPolicy, guided_from_spec
from cf_env.agents.policies import load_policy
from cf_env.core import atomic
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from cf_env.tools.cli import HelpFormatter

LOW, HIGH = 20, 200
SETS = (6, 9, 12)
GUIDE = "checkpoints/selfplay-4p-d9"  # 4 players double-9 only


def positions(config: ChickenFootConfig, count: int, seed: int = 0) -> list[dict]:
    """`count` observations with a real choice, spread over seeded greedy playouts."""
    rng = np.random.default_rng(seed)
    encoder, out = Encoder(config), []
    greedy = load_policy("greedy", config, seed)
    game = 0
    while len(out) < count:
        engine = Engine(config.replace(num_rounds=1), seed=seed * 1000 + game)
        game += 1
        keep = rng.random()  # a share of each game's decisions, for a spread over the round
        while not engine.game_over and len(out) < count:
            legal = engine.legal_bits()
            if legal & (legal - 1) and rng.random() < 0.25 + 0.5 * keep:
                out.append({"observation": encoder.observe(engine, engine.current),
                            "action_mask": engine.legal_action_mask()})
            engine.step(greedy.act_bits(legal))
    return out


def cost(make, observations: list[dict]) -> dict:
    """µs per iteration and ms of set-up per decision for policies `make(iterations)`."""
    seconds = {}
    for iterations in (LOW, HIGH):
        policy = make(iterations)
        policy.act(observations[0])  # untimed: numba compiles, or loads its cache, on first use
        start = time.process_time()
        for obs in observations:
            policy.act(obs)
        seconds[iterations] = (time.process_time() - start) / len(observations)
    per_iteration = (seconds[HIGH] - seconds[LOW]) / (HIGH - LOW)
    return {
        "us_per_iteration": 1e6 * per_iteration,
        "setup_ms": 1e3 * max(seconds[LOW] - LOW * per_iteration, 0.0),
        "ms_per_decision_at_200": 1e3 * seconds[HIGH],
    }


def engine_reference(seconds: float = 1.0) -> float:
    """µs per engine decision (random legal play, default config) now, in this process: the
    row `python -m cf_env.tools.bench` reports (docs/bench.md: `REFERENCE_US` on its idle machine).
    The ratio of the two says how much slower this machine or its load makes everything."""
    from cf_env.tools.bench import engine_loop, measure_rate

    return 1e6 / measure_rate(engine_loop(ChickenFootConfig(), seed=0), seconds)


REFERENCE_US = 2.3  # docs/bench.md, "engine" row at the default config


def run(count: int, sets=SETS, players: int = 4, reference_seconds: float = 1.0,
        engine: bool = False) -> list[dict]:
    reference = engine_reference(reference_seconds)
    slow = reference / REFERENCE_US
    print(f"engine reference: {reference:.2f} µs/decision now vs {REFERENCE_US} µs in "
          f"docs/bench.md ({slow:.2f}x); 'scaled' = µs/iteration / {slow:.2f}", flush=True)

    rows = []
    for max_pips in sets:
        config = ChickenFootConfig(max_pips=max_pips, num_players=players)
        observations = positions(config, count)
        makers = {"after": lambda i, c=config: ISMCTSPolicy(c, seed=0, iterations=i)}
        if engine:
            makers["engine"] = lambda i, c=config: ISMCTSPolicy(c, seed=0, iterations=i,
                                                                search_on="engine")
        guide = Path(__file__).resolve().parents[2] / GUIDE
        if max_pips == 9 and players == 4 and guide.is_dir():
            makers["guided"] = lambda i, c=config, g=guide: guided_from_spec(c, 0, f"{g}:{i}")
        for name, make in makers.items():
            row = {"set": f"double-{max_pips}", "players": players, "search": name,
                   "positions": count, **cost(make, observations),
                   "engine_reference_us": reference}
            row["scaled_us_per_iteration"] = row["us_per_iteration"] / slow
            rows.append(row)
            print(f"double-{max_pips:<2} {players}p {name:<7} {row['us_per_iteration']:8.0f} µs/iteration"
                  f" (scaled {row['scaled_us_per_iteration']:5.0f})"
                  f"  set-up {row['setup_ms']:6.2f} ms/decision"
                  f"  {row['ms_per_decision_at_200']:7.1f} ms/decision at {HIGH}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cf_env.tools.search_bench", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--positions", type=int, default=40, help="decisions per set size")
    parser.add_argument("--players", type=int, default=4, help="players")
    parser.add_argument("--sets", default="6,9,12", help="comma-separated max pips")
    parser.add_argument("--engine", action="store_true",
                        help="add the row of the search with the tree in Python over Engine")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if args.positions < 1:
        parser.error("--positions must be at least 1")
    try:
        sets = [int(s) for s in args.sets.split(",")]
    except ValueError:
        parser.error(f"--sets must be comma-separated ints, e.g. 6,9,12; got {args.sets!r}")
    rows = run(args.positions, sets, args.players, engine=args.engine)
    if args.json:
        atomic.write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
