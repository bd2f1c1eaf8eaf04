"""`python -m training.evaluation.speed`: games per CPU-second of `training.evaluate`, played one
game at a time and batched, in one run, beside the physical limit of the batched path.

    python -m training.evaluation.speed   # ppo:checkpoints/selfplay-4p-d9 vs 3x greedy, single rounds

Both paths run `evaluate`'s own `run_evaluation` (the games and every statistic of the result,
one process, `workers=1`), as `python -m training.evaluate --agent AGENT --opponents OPPONENT
--single-round --workers 1 [--batch off|on]` does. The rates are per **CPU second of this
process** (`time.process_time`: time spent waiting for a core that another job holds is not
counted, so a shared machine slows the figures little); the two paths take turns, `--repeats`
times, and the medians are printed.

The limit: a batched game cannot cost less than its network's forward passes at the machine's
matrix-product rate plus the rules' own work. Measured here:

* FLOPs per game: 2 x (sum of the layers' in x out) per decision of the network (`ppo:` seats'
  real choices: forced ones are not asked), times the network decisions per game, counted on the
  batched run;
* the matrix-product rate: float32 products of `batch_size` rows through the network's layers on
  one BLAS thread (as the batched path runs them), in FLOPs per CPU second;
* the rules' cost per game: the same deals played batched with every seat the compiled `greedy`
  bot (`training.evaluation.batched.play_batched`: deals, steps, bots, scores; no network and no
  statistics).

limit = 1 / (FLOPs per game / rate + rules' seconds per game); the batched rate's share of it is
the ratio printed last. Docs: docs/evaluation.md ("Batched evaluation").
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from cf_env.agents.policies import load_policy
from cf_env.core.config import ChickenFootConfig
from cf_env.tools.cli import HelpFormatter, limit_threads
from training.evaluation.batched import BLAS, DEFAULT_BATCH_SIZE, play_batched
from training.evaluation.evaluate import (
    deal_seed,
    fail,
    lineup,
    plan_evaluation,
    rules_for,
    run_evaluation,
)


def _rate(plan) -> float:
    """Games per CPU second of one `run_evaluation`."""
    started = time.process_time()
    result = run_evaluation(plan)
    return result["games"] / (time.process_time() - started)


def _matmul_rate(layers: list[tuple[np.ndarray, np.ndarray]], rows: int, seconds: float = 0.5) -> float:
    """FLOPs per CPU second of `rows` float32 rows through `layers` ((in, out) weights), on one
    BLAS thread, products only."""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((rows, w.shape[0]), dtype=np.float32) for w, _ in layers]
    flops = 2.0 * rows * sum(w.shape[0] * w.shape[1] for w, _ in layers)
    done, started = 0, time.process_time()
    with BLAS.limit(limits=1, user_api="blas"):
        while time.process_time() - started < seconds:
            for x, (w, _) in zip(inputs, layers):
                x @ w
            done += 1
    return done * flops / (time.process_time() - started)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m training.evaluation.speed",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--agent", default="ppo:checkpoints/selfplay-4p-d9",
                        help="a ppo: spec (the network measured)")
    parser.add_argument("--opponent", default="greedy", help="a compiled bot: random, greedy or "
                        "heuristic")
    parser.add_argument("--deals", type=int, default=2000, help="duplicate deals per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each path")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                        help="games in flight (batched path)")
    args = parser.parse_args(argv)
    limit_threads()
    try:
        if not args.agent.startswith("ppo:"):
            raise ValueError(f"--agent must be a ppo: spec (the limit is a network's); got {args.agent!r}")
        if args.opponent not in ("random", "greedy", "heuristic"):
            raise ValueError(f"--opponent must be random, greedy or heuristic; got {args.opponent!r}")
        if args.repeats < 1:
            raise ValueError(f"--repeats must be >= 1; got {args.repeats}")
        rules = argparse.Namespace(players=None, max_pips=None, rounds=None, set=[])
        config = ChickenFootConfig.from_dict(rules_for(rules, [args.agent]))
        specs = [args.agent, args.opponent]
        plans = {batch: plan_evaluation(specs, config, args.deals, seed=0, single_round=True,
                                        batch=batch, batch_size=args.batch_size)
                 for batch in (False, True)}
    except ValueError as err:
        fail(err, 2)
    cfg = plans[True].config
    run_evaluation(plan_evaluation(specs, config, 2, single_round=True, batch=True))  # warm-up
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeats):
        for batch in (False, True):
            rates[batch].append(_rate(plans[batch]))
    per_game, batched = statistics.median(rates[False]), statistics.median(rates[True])
    ratios = [b / a for a, b in zip(rates[False], rates[True])]

    # The limit: network decisions per game, the product rate, the rules' cost per game.
    network = load_policy(args.agent, cfg, 0)
    calls = [0]
    act_batch = network.act_batch

    def counting(observations, masks):
        calls[0] += len(observations)
        return act_batch(observations, masks)

    network.act_batch = counting
    opponent = load_policy(args.opponent, cfg, 0)
    owners = lineup(2, cfg.num_players)
    seeds = {deal: deal_seed(0, deal) for deal in range(args.deals)}
    games = args.deals * cfg.num_players
    play_batched([network, opponent], owners, cfg, seeds, args.batch_size)
    decisions = calls[0] / games
    layers = [(w.T, b) for w, b in network.weights]
    flops = 2.0 * sum(w.shape[0] * w.shape[1] for w, _ in layers) * decisions
    matmul = _matmul_rate(layers, args.batch_size)
    bots = [load_policy("greedy", cfg, 0), load_policy("greedy", cfg, 0)]
    started = time.process_time()
    play_batched(bots, owners, cfg, seeds, args.batch_size)
    rules_s = (time.process_time() - started) / games
    limit = 1.0 / (flops / matmul + rules_s)

    load = os.getloadavg()
    print(f"python -m training.evaluate --agent {args.agent} --opponents {args.opponent} "
          f"--single-round --workers 1 --deals {args.deals}: {games} games per run, "
          f"{args.repeats} run(s) per path, load average {load[0]:.1f} / {load[1]:.1f} / "
          f"{load[2]:.1f} on {os.cpu_count()} cores")
    print(f"per-game path (--batch off): {per_game:8.0f} games per CPU-second")
    print(f"batched path  (--batch on):  {batched:8.0f} games per CPU-second "
          f"(batch size {args.batch_size})")
    print(f"speed-up: {statistics.median(ratios):.1f}x (median of the runs' ratios)")
    print(f"limit: {decisions:.2f} network decisions per game x "
          f"{flops / decisions / 1e6:.3f} MFLOP = {flops / 1e6:.2f} MFLOP per game at "
          f"{matmul / 1e9:.1f} GFLOP/s ({flops / matmul * 1e6:.1f} us) + rules "
          f"{rules_s * 1e6:.1f} us per game = {limit:8.0f} games per CPU-second")
    print(f"batched path / limit: {batched / limit:.0%}")
    return {"per_game": per_game, "batched": batched, "ratio": statistics.median(ratios),
            "decisions": decisions, "flops": flops, "matmul": matmul, "rules_s": rules_s,
            "limit": limit, "load": load}


if __name__ == "__main__":
    main()
