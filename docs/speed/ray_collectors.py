"""Two local collector processes against two Ray actors: learner decisions per second of
`SelfPlayTrainer.iterate` (collect, then update; no overlap) over ITERATIONS iterations after
one warm-up iteration, and of the collection alone; the start-up (with the warm-up) apart.

    python docs/speed/ray_collectors.py processes 6          # 2 collector processes
    python docs/speed/ray_collectors.py cluster 6            # 2 actors on a 2-node Cluster
    python docs/speed/ray_collectors.py local 6              # 2 actors on a local Ray instance
    python docs/speed/ray_collectors.py cluster 4 selfplay.search_share=0.1 \\
        selfplay.search_iterations=16                        # extra --set overrides

Run from the repository root in a Python with Ray (the rllib extra); figures in
docs/training.md, "Collectors on Ray".
"""

from __future__ import annotations

import sys
import time

from training.config import load_config
from training.selfplay.learner import SelfPlayTrainer

SETS = ["selfplay.workers=2", "selfplay.num_games=64", "selfplay.rollout_steps=32",
        "ppo.net_arch=[64,64]", "ppo.n_epochs=1", "ppo.batch_size=512"]


def bench(address: str | None, iterations: int, sets: list[str]) -> tuple[float, float, float]:
    """(start-up and warm-up s, decisions per s of iterate, decisions per s of collection)."""
    sets = [*SETS, *sets] + ([f"selfplay.ray_address={address}"] if address else [])
    config = load_config("configs/smoke.yaml", sets)
    started = time.perf_counter()
    trainer = SelfPlayTrainer(config, seed=0)
    try:
        trainer.iterate()
        start_s = time.perf_counter() - started
        clock, steps, collect = time.perf_counter(), 0, 0.0
        for _ in range(iterations):
            stats = trainer.iterate()
            steps += stats["decisions"]
            collect += stats["collect_s"]
        wall = time.perf_counter() - clock
    finally:
        trainer.close()
    return start_s, steps / wall, steps / collect


def main(argv: list[str]) -> None:
    mode, iterations, sets = argv[0], int(argv[1]), argv[2:]
    if mode not in ("processes", "cluster", "local"):
        raise SystemExit(f"mode must be processes, cluster or local; got {mode!r}")
    cluster = None
    address = None if mode == "processes" else mode
    if mode == "cluster":
        import ray
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        address = cluster.address
    try:
        start_s, rate, collect_rate = bench(address, iterations, sets)
    finally:
        if cluster is not None:
            ray.shutdown()
            cluster.shutdown()
    print(f"{mode}: start-up and warm-up {start_s:.1f} s, {rate:,.0f} decisions/s (iterate), "
          f"{collect_rate:,.0f} decisions/s of collection", flush=True)


if __name__ == "__main__":  # collector processes ("spawn") import this file again
    main(sys.argv[1:])
