"""The self-play learner's networks and its collection: the collector in the trainer's process
(`LocalCollection`) or in `selfplay.workers` worker processes (`ProcessCollection`, each rollout
handed over in a block of shared memory), and what both share with the Ray actors of
`training.selfplay.ray_collection` (the collector's settings, its seeds, a rollout's merge and
statistics)."""

from __future__ import annotations

import mmap
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from cf_env.core.observation import observation_layout
from training.config import TrainConfig, config_from_dict
from training.processes import (
    CollectorError,
    WorkerExit,
    WorkerFailure,
    WorkerPool,
    WorkerStart,
)
from training.selfplay.collector import (
    Collector,
    Rollout,
    compute_gae,
    privileged_size,
    rollout_fields,
)


# ------------------------------------------------------------------------------- networks
def build_mlp(sizes: list[int], activation: str, out_gain: float) -> nn.Sequential:
    """Linear layers of `sizes` with `activation` between them; orthogonal init as SB3/CleanRL
    (gain sqrt 2 for hidden layers, `out_gain` for the last: 0.01 policy, 1 value)."""
    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
    layers: list[nn.Module] = []
    for k, (a, b) in enumerate(zip(sizes, sizes[1:])):
        linear = nn.Linear(a, b)
        last = k == len(sizes) - 2
        nn.init.orthogonal_(linear.weight, out_gain if last else np.sqrt(2))
        nn.init.zeros_(linear.bias)
        layers.append(linear)
        if not last:
            layers.append(act())
    return nn.Sequential(*layers)


def build_networks(config: TrainConfig) -> tuple[nn.Sequential, nn.Sequential]:
    rules = config.rules()
    obs = observation_layout(rules).size
    critic_in = obs + (privileged_size(rules) if config.selfplay.privileged_critic else 0)
    arch, act = list(config.ppo.net_arch), config.ppo.activation
    actor = build_mlp([obs, *arch, rules.num_actions], act, 0.01)
    critic = build_mlp([critic_in, *arch, 1], act, 1.0)
    return actor, critic




# ------------------------------------------------------------------------------- collection
def collector_kwargs(config: TrainConfig) -> dict:
    """What a Collector needs from the config, besides its games, seed and snapshots."""
    s, o = config.selfplay, config.opponents
    return {"pool_share": s.pool_share, "bots": dict(o.bots), "snapshot_weight": o.snapshot_weight,
            "max_snapshots": o.max_snapshots, "snapshot_greedy": o.snapshot_greedy,
            "privileged": s.privileged_critic, "win_bonus": s.win_bonus,
            "episode": config.env.episode, "options": config.options(),
            "one_learner_seat": s.one_learner_seat, "search_share": s.search_share,
            "search_iterations": s.search_iterations, "search_operator": s.search_operator,
            "search_teacher": s.search_teacher,
            "search_target": s.search_target, "search_temperature": s.search_temperature,
            "search_scale": s.search_scale, "search_play": s.search_play}


def worker_seed(seed: int, worker: int) -> int:
    """The collector seed of worker `worker` (its games, seats, bots and samples)."""
    return int(np.random.SeedSequence([seed, worker]).generate_state(1, np.uint64)[0] >> 2)


def finish_rollout(collector: Collector, roll: Rollout, config: TrainConfig) -> tuple[Rollout, dict]:
    compute_gae(roll, config.ppo.gamma, config.ppo.gae_lambda)
    return roll, {"wins": float(np.sum(collector.wins)), "seats": len(collector.wins),
                  "rounds": collector.rounds}


class LocalCollection:
    """The collector in the trainer's own process (workers 1, no overlap)."""

    def __init__(self, config: TrainConfig, seed: int, snapshots: list[str]):
        self.config = config
        self.collector = Collector(config.rules(), config.selfplay.num_games,
                                   seed=worker_seed(seed, 0), snapshots=list(snapshots),
                                   **collector_kwargs(config))

    def collect(self, actor, critic, new_snapshots: list[str]) -> tuple[Rollout, dict]:
        for path in new_snapshots:
            self.collector.add_snapshot(path)
        roll = self.collector.collect(actor, critic, self.config.selfplay.rollout_steps)
        return finish_rollout(self.collector, roll, self.config)

    def close(self) -> None:
        pass


class SharedRollout:
    """One collector process's rollout arrays in shared memory: the worker writes its rollout
    there and the trainer copies it out, instead of pickling ~22 MB through the pipe (~10 µs of
    CPU per decision on the two sides; a copy each side costs ~0.5).

    The memory is the collector's `WorkerPool` block (`training.processes.anonymous_memory`: no
    path names it), mapped by the trainer and the worker alike, so a run killed whole leaves
    nothing in `/dev/shm`."""

    def __init__(self, fields: dict[str, tuple[type, tuple]], memory: mmap.mmap):
        self.arrays, offset = {}, 0
        for key, (dtype, shape) in fields.items():
            self.arrays[key] = np.ndarray(shape, dtype, buffer=memory, offset=offset)
            offset += _aligned(int(np.prod(shape)) * np.dtype(dtype).itemsize)

    @staticmethod
    def size(fields: dict[str, tuple[type, tuple]]) -> int:
        """The bytes of memory the arrays of `fields` take (64-byte aligned arrays)."""
        return sum(_aligned(int(np.prod(shape)) * np.dtype(dtype).itemsize)
                   for dtype, shape in fields.values())

    def write(self, roll: Rollout) -> None:
        for key, array in self.arrays.items():
            array[...] = getattr(roll, key)

    def close(self) -> None:
        self.arrays = {}  # no view may outlive the mapping


def _aligned(size: int) -> int:
    return -(-size // 64) * 64


def _rollout_fields(config: TrainConfig, games: int) -> dict[str, tuple[type, tuple]]:
    rules = config.rules()
    width = observation_layout(rules).size + (
        privileged_size(rules) if config.selfplay.privileged_critic else 0)
    return rollout_fields(config.selfplay.rollout_steps * games, width, rules.num_actions)


@dataclass(frozen=True)
class CollectorSetup:
    """What every collector process starts from: the run's config (`TrainConfig.to_dict()`),
    the seed its own is drawn from (`worker_seed(seed, index)`), its number of games and the
    opponent pool's snapshots."""

    config: dict
    seed: int
    games: int
    snapshots: tuple[str, ...]


@dataclass(frozen=True)
class CollectJob:
    """One rollout to collect: the actor's and critic's weights (numpy state dicts) and the
    snapshots added to the opponent pool since the last job. Its result is the rollout's
    statistics (`_finish`); the rollout itself is written into the worker's `SharedRollout`."""

    actor: dict[str, np.ndarray]
    critic: dict[str, np.ndarray]
    new_snapshots: tuple[str, ...] = ()


def _serve_collector(start: WorkerStart):
    """A collector process (`WorkerPool`'s `serve`): builds its collector and networks, and
    returns the handler of each `CollectJob`, which writes the rollout into the worker's block
    of shared memory and answers its statistics."""
    torch.set_num_threads(1)
    setup: CollectorSetup = start.setup
    config = config_from_dict(setup.config)
    shared = SharedRollout(_rollout_fields(config, setup.games), start.memory)
    actor, critic = build_networks(config)
    collector = Collector(config.rules(), setup.games, seed=worker_seed(setup.seed, start.index),
                          snapshots=list(setup.snapshots), **collector_kwargs(config))

    def collect(job: CollectJob) -> dict:
        actor.load_state_dict({k: torch.from_numpy(v) for k, v in job.actor.items()})
        critic.load_state_dict({k: torch.from_numpy(v) for k, v in job.critic.items()})
        for path in job.new_snapshots:
            collector.add_snapshot(path)
        roll, stats = finish_rollout(collector, collector.collect(actor, critic,
                                                           config.selfplay.rollout_steps), config)
        shared.write(roll)
        return stats

    return collect


def merge_rollouts(parts: list[tuple[dict[str, np.ndarray], dict]]) -> tuple[Rollout, dict]:
    """One rollout of the workers' (arrays, statistics), concatenated in worker order: each
    part's chain links (`next`) shifted by the rows before it, the statistics summed."""
    merged, offset = {}, 0
    stats = {"wins": 0.0, "seats": 0, "rounds": 0}
    for arrays, part_stats in parts:
        nxt = arrays["next"]
        for key, value in arrays.items():
            merged.setdefault(key, []).append(np.where(nxt >= 0, nxt + offset, -1)
                                              if key == "next" else value)
        offset += len(nxt)
        for key in stats:
            stats[key] += part_stats[key]
    return Rollout(**{k: np.concatenate(v) for k, v in merged.items()}), stats


def numpy_state(module: nn.Module) -> dict:
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


def _collector_died(worker: WorkerExit) -> CollectorError:
    return CollectorError(f"collector worker {worker.index} (pid {worker.pid}) {worker.how} "
                          "during collection")


def _collector_failed(failure: WorkerFailure) -> CollectorError:
    return CollectorError(f"collector worker {failure.index} (pid {failure.pid}) failed:\n"
                          f"{failure.traceback}")


class ProcessCollection:
    """`workers` collector processes (a `WorkerPool`); `start` sends the weights, `result`
    gathers the rollouts (concatenated in worker order, chain links shifted). A worker that dies
    or fails raises `CollectorError` naming it as soon as the trainer waits for it."""

    def __init__(self, config: TrainConfig, seed: int, snapshots: list[str]):
        self.config = config
        workers = config.selfplay.workers
        games = config.selfplay.num_games // workers
        fields = _rollout_fields(config, games)
        self.shared: list[SharedRollout] = []
        self.pool = WorkerPool("collector", workers, _serve_collector,
                               CollectorSetup(config.to_dict(), seed, games, tuple(snapshots)),
                               died=_collector_died, failed=_collector_failed,
                               memory_bytes=SharedRollout.size(fields),
                               memory_label="chickenfoot-rollout")
        try:
            for worker in range(workers):
                memory = self.pool.memory(worker)
                if memory is None:
                    raise CollectorError("collector processes need memory handed over a pipe "
                                         "(SCM_RIGHTS), which this platform lacks; use "
                                         "selfplay.workers=1 and selfplay.overlap=false")
                self.shared.append(SharedRollout(fields, memory))
        except BaseException:
            self.close()
            raise

    @property
    def procs(self) -> list:
        """The collector processes, in worker order."""
        return self.pool.processes

    def start(self, actor, critic, new_snapshots: list[str]) -> None:
        job = CollectJob(numpy_state(actor), numpy_state(critic), tuple(new_snapshots))
        for worker in range(len(self.pool)):
            self.pool.submit(worker, job)

    def result(self) -> tuple[Rollout, dict]:
        parts = []
        for worker, shared in enumerate(self.shared):
            part_stats = self.pool.receive(worker)  # the worker has written its block
            parts.append((dict(shared.arrays), part_stats))  # views: merge_rollouts copies them
        merged = merge_rollouts(parts)
        del parts
        return merged

    def collect(self, actor, critic, new_snapshots: list[str]) -> tuple[Rollout, dict]:
        self.start(actor, critic, new_snapshots)
        return self.result()

    def close(self) -> None:
        for shared in self.shared:
            shared.close()  # its views first: then the pool unmaps the memory
        self.shared = []
        self.pool.close()
