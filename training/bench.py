"""Self-play trainer throughput against the MaskablePPO ceiling, measured in the same run.

    python -m training.bench                 # 5 rounds, default config (about 3 minutes)
    python -m training.bench --rounds 3 --iterations 2 --set selfplay.overlap=true
    python -m training.bench --rounds 1 --iterations 2 --no-baseline --set selfplay.overlap=false \
        --set selfplay.search_share=0.1 --set selfplay.search_iterations=64   # expert iteration

Each round measures, one after the other so both see the same background load:

* the self-play trainer (`training.selfplay.learner.SelfPlayTrainer`, configs/default.yaml plus any
  `--set`): whole iterations (collect a rollout, then update on it), learner decisions per
  **CPU second** of every process the trainer uses (its own and its collector processes'), and
  per wall-clock second;
* sb3-contrib MaskablePPO on the constant-cost env with 16 in-process envs, exactly the
  `cf_env.tools.bench.ppo_rates` row ("constant x16": SB3's own cost per learner step with an env that
  costs nothing), learner steps per CPU second.

The claim is the median over rounds of the per-round ratio self-play / constant x16 (target
>= 2: the new trainer does at least twice the learner decisions per CPU second that MaskablePPO
could do with a free env). `--no-baseline` measures the self-play trainer alone (no
MaskablePPO row, no ratio): comparing its own settings, e.g. expert iteration's search share
and budget (docs/training.md, "Search-distilled self-play").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from cf_env.tools import bench as cf_bench
from cf_env.tools.cli import HelpFormatter
from training.config import load_config
from training.selfplay.learner import SelfPlayTrainer


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes `pids` (Linux /proc), this one included."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def selfplay_rate(trainer: SelfPlayTrainer, iterations: int) -> tuple[float, float]:
    """(learner decisions per CPU second, per wall second) over `iterations` iterations."""
    pids = [os.getpid()] + [p.pid for p in getattr(trainer.collection, "procs", [])]
    decisions = 0
    wall, cpu = time.perf_counter(), _cpu_seconds(pids)
    for _ in range(iterations):
        decisions += trainer.iterate()["decisions"]
    wall, cpu = time.perf_counter() - wall, _cpu_seconds(pids) - cpu
    return decisions / cpu, decisions / wall


def run(sets: list[str], rounds: int, iterations: int, baseline: bool = True) -> dict:
    config = load_config("configs/default.yaml", ["eval.every_steps=0", *sets])
    trainer = SelfPlayTrainer(config, seed=config.seed)
    trainer.iterate()  # warm-up: first rollout (and, with overlap, the collector's start)
    rules = config.rules()
    length = cf_bench.episode_length(rules)
    budget = cf_bench.Budget(ppo_rollouts={16: 1}, ppo_repeats=1)
    rows = {"selfplay cpu": [], "selfplay wall": [], "constant x16": []}
    try:
        for _ in range(rounds):
            cpu_rate, wall_rate = selfplay_rate(trainer, iterations)
            rows["selfplay cpu"].append(cpu_rate)
            rows["selfplay wall"].append(wall_rate)
            if baseline:
                rows["constant x16"].append(
                    cf_bench.ppo_rates(rules, budget, length).median("constant x16"))
    finally:
        trainer.close()
    ratios = [a / b for a, b in zip(rows["selfplay cpu"], rows["constant x16"])]
    if not baseline:
        return {"settings": sets, "selfplay decisions/CPU-s": statistics.median(rows["selfplay cpu"]),
                "selfplay decisions/wall-s": statistics.median(rows["selfplay wall"])}
    return {
        "settings": sets,
        "selfplay decisions/CPU-s": statistics.median(rows["selfplay cpu"]),
        "selfplay decisions/wall-s": statistics.median(rows["selfplay wall"]),
        "MaskablePPO constant x16 steps/CPU-s": statistics.median(rows["constant x16"]),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.bench",
                                     description=__doc__.split("\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds (medians are over rounds)")
    parser.add_argument("--iterations", type=int, default=2,
                        help="self-play iterations (rollout + update) per round")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help="override a field of configs/default.yaml for the self-play trainer")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the MaskablePPO constant-cost row (and the ratio)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.iterations < 1:
        parser.error("--rounds and --iterations must be >= 1")
    result = run(args.set, args.rounds, args.iterations, baseline=not args.no_baseline)
    print("| trainer (default config, 4 players double-9) | learner decisions / CPU-s | / wall-s |")
    print("|---|---:|---:|")
    print(f"| self-play{' (' + ', '.join(args.set) + ')' if args.set else ''} | "
          f"{result['selfplay decisions/CPU-s']:,.0f} | {result['selfplay decisions/wall-s']:,.0f} |")
    if args.no_baseline:
        return 0
    print(f"| MaskablePPO, constant-cost env, 16 envs | "
          f"{result['MaskablePPO constant x16 steps/CPU-s']:,.0f} | |")
    print(f"\nself-play / MaskablePPO constant x16, per CPU second: **{result['ratio']:.2f}x** "
          f"(median of {', '.join(f'{r:.2f}' for r in result['ratios'])}; target >= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
