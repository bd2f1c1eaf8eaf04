"""Self-play collectors as Ray actors (`selfplay.ray_address`, `python -m training.ppo --ray
ADDRESS`): `RayCollection`, with `ProcessCollection`'s interface (`collect`, or `start` then
`result` for `selfplay.overlap`, and `close`).

Each of the `selfplay.workers` actors (`CollectorActor`, one CPU each, spread over the
cluster's nodes) owns a `Collector` of `num_games / workers` games seeded with
`worker_seed(seed, index)`, exactly as collector process `index` is, so a Ray run collects the
same rollouts as a local run with the same `workers`. Nothing an actor reads is a path of the
learner's machine:

- the config travels as `TrainConfig.to_dict()` (`CollectorSetup`);
- the weights of each rollout are numpy state dicts put once into the object store and read
  by every actor;
- an opponent-pool snapshot (`snapshots/step_<N>/`) is read once on the learner
  (`SnapshotFiles`: its card.json and policy.npz as bytes), put once into the object store,
  and written by each actor into a folder of its own on its node, where the collector loads
  it as it loads any snapshot (the card's checks included); the actor deletes the copies of
  snapshots that left the pool, and its folder when it is closed;
- each rollout comes back as numpy arrays (the `Rollout` fields), merged in worker order
  (`merge_rollouts`, as the local processes' are).

Opponent specs that name files (`ppo:<path>` and the like in `opponents.bots`) are read on the
actor's node: on a multi-node cluster each node needs those paths (a shared file system, or
the same files at the same paths); an actor that cannot build one stops the run with a
`CollectorError` saying so. Every node runs the same code: the project installed in the Python
that runs the cluster's workers, at the same revision (actors report their observation
version, and another one stops the run).

Failure: a dead actor (killed, its node lost, out of memory) or one whose job raised stops the
run with a `CollectorError` naming the actor, its node, host and pid and how it died; actors
are never restarted (a new one would deal other games than the lost one's, and a rollout half
collected cannot be recovered), so the run continues from its latest checkpoint with
`--resume`, which is atomic and resumes as a local run does. Actors that cannot all be placed
within `START_TIMEOUT_S` (a cluster with fewer free CPUs than `workers`) stop the run the same
way.

Ray is imported only here and only when a `RayCollection` is made (`require_ray`): without
Ray installed, everything else keeps working.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from cf_env import OBSERVATION_VERSION
from training.config import TrainConfig, config_from_dict
from training.processes import CollectorError
from training.selfplay.collection import (
    CollectorSetup,
    build_networks,
    collector_kwargs,
    finish_rollout,
    merge_rollouts,
    numpy_state,
    worker_seed,
)
from training.selfplay.collector import Collector, Rollout

START_TIMEOUT_S = 300.0
"""How long `RayCollection` waits for all its actors to be placed and started."""
CLOSE_TIMEOUT_S = 10.0
"""How long `close` waits for each actor to delete its snapshot folder before killing it."""
INSTALL_HINT = "pip install -e '.[rllib]' (Ray 2.60)"


def ray_available() -> bool:
    """Whether this Python can import Ray (without importing it)."""
    return importlib.util.find_spec("ray") is not None


def require_ray():
    """The `ray` module, or `CollectorError` saying how to install it."""
    try:
        import ray
    except ImportError as err:
        raise CollectorError(f"selfplay.ray_address needs Ray, which this Python lacks "
                             f"({err}); install it with {INSTALL_HINT}, or unset "
                             "selfplay.ray_address to collect in local processes") from None
    return ray


@dataclass(frozen=True)
class SnapshotFiles:
    """An opponent-pool snapshot folder's files (name, bytes), read on the learner: what an
    actor on any node needs to play it."""

    name: str
    files: tuple[tuple[str, bytes], ...]

    @classmethod
    def read(cls, path: str | os.PathLike) -> SnapshotFiles:
        folder = Path(path)
        if not (folder / "card.json").is_file():
            raise FileNotFoundError(f"opponent-pool snapshot {folder}: no card.json there")
        files = tuple((p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file())
        return cls(folder.name, files)

    def write(self, parent: Path) -> Path:
        """The snapshot as `parent/<name>/` (replacing a folder of that name)."""
        target = parent / self.name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name, data in self.files:
            (target / name).write_bytes(data)
        return target


ROLLOUT_FIELDS = tuple(f.name for f in fields(Rollout))


class CollectorActor:
    """One Ray actor's collector (a plain class: `RayCollection` makes it a Ray actor): worker
    `index` of `setup`, with its own folder for the snapshots it is sent."""

    def __init__(self, setup: CollectorSetup, index: int):
        self.setup, self.index = setup, index
        self.collector: Collector | None = None
        self.folder: Path | None = None

    def start(self, snapshots: list) -> dict:
        """Build the networks and the collector (`snapshots`: object refs of `SnapshotFiles`);
        returns where the actor runs: node id, host, pid, observation version."""
        import ray

        torch.set_num_threads(1)
        self.config = config = config_from_dict(self.setup.config)
        rules = config.rules()
        self._check_bots(config)
        self.folder = Path(tempfile.mkdtemp(prefix=f"chickenfoot-ray-collector-{self.index}-"))
        paths = [str(snap.write(self.folder)) for snap in ray.get(list(snapshots))]
        self.actor, self.critic = build_networks(config)
        self.collector = Collector(rules, self.setup.games,
                                   seed=worker_seed(self.setup.seed, self.index),
                                   snapshots=paths, **collector_kwargs(config))
        self._prune()
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid(), "observation_version": OBSERVATION_VERSION}

    def _check_bots(self, config: TrainConfig) -> None:
        from cf_env.agents.policies import validate_policy_spec

        for spec in config.opponents.bots:
            try:
                validate_policy_spec(spec, config.rules())
            except ValueError as err:
                raise ValueError(f"opponents.bots on host {socket.gethostname()}: {err} (on a "
                                 "multi-node Ray cluster, every node needs the files the specs "
                                 "name: a shared file system, or the same files at the same "
                                 "paths)") from None

    def collect(self, actor: dict, critic: dict, new_snapshots: list) -> tuple[dict, dict]:
        """One rollout with these weights (numpy state dicts) after adding `new_snapshots`
        (object refs of `SnapshotFiles`): its arrays and statistics."""
        import ray

        # Arrays from the object store are read-only: copies for torch.
        self.actor.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in actor.items()})
        self.critic.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in critic.items()})
        for snap in ray.get(list(new_snapshots)):
            self.collector.add_snapshot(str(snap.write(self.folder)))
        self._prune()
        roll, stats = finish_rollout(self.collector, self.collector.collect(
            self.actor, self.critic, self.config.selfplay.rollout_steps), self.config)
        return {name: getattr(roll, name) for name in ROLLOUT_FIELDS}, stats

    def _prune(self) -> None:
        """Delete the copies of snapshots that left the pool (games that still hold one hold
        its weights in memory)."""
        live = {Path(p).name for p in self.collector.snapshots}
        for folder in self.folder.iterdir():
            if folder.name not in live:
                shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


class RayCollection:
    """`selfplay.workers` `CollectorActor`s in the Ray cluster at `selfplay.ray_address` (module
    docstring). A process already connected to Ray (`ray.is_initialized()`) uses its
    connection; otherwise this connects and disconnects again on `close`."""

    def __init__(self, config: TrainConfig, seed: int, snapshots: list[str]):
        ray = self.ray = require_ray()
        self.config = config
        s = config.selfplay
        self.address = s.ray_address
        self.owns_ray = False
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, log_to_driver=False)
            except Exception as err:  # noqa: BLE001 — ConnectionError, ValueError, ...: one line
                raise CollectorError(f"cannot connect to the Ray cluster at "
                                     f"selfplay.ray_address={self.address!r}: "
                                     f"{_one_line(err)}") from None
            self.owns_ray = True
        self.actors: list = []
        self.where: list[dict | None] = []
        self._pending: list | None = None
        try:
            remote = ray.remote(CollectorActor).options(
                num_cpus=1, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD")
            setup = CollectorSetup(config.to_dict(), seed, s.num_games // s.workers, ())
            self.actors = [remote.remote(setup, index) for index in range(s.workers)]
            self.where = [None] * len(self.actors)
            refs = self._snapshot_refs(snapshots)
            starts = [actor.start.remote(refs) for actor in self.actors]
            ready, _ = ray.wait(starts, num_returns=len(starts), timeout=START_TIMEOUT_S)
            if len(ready) < len(starts):
                raise CollectorError(
                    f"the Ray cluster at {self.address!r} did not start {len(starts)} collector "
                    f"actors of 1 CPU each within {START_TIMEOUT_S:.0f} s ("
                    f"{len(ready)} ready; cluster resources {ray.cluster_resources()}); lower "
                    "selfplay.workers or add nodes")
            self.where = self._get(starts, "starting")
            versions = {w["observation_version"] for w in self.where}
            if versions != {OBSERVATION_VERSION}:
                raise CollectorError(f"collector actors run observation version(s) "
                                     f"{sorted(versions)}, the learner {OBSERVATION_VERSION}: "
                                     "every Ray node needs this revision of the project")
        except BaseException:
            self.close()
            raise

    @property
    def nodes(self) -> list[str]:
        """Each actor's Ray node id, in worker order."""
        return [w["node"] for w in self.where]

    def _snapshot_refs(self, paths: list[str]) -> list:
        """Each snapshot read once here and put once into the object store."""
        return [self.ray.put(SnapshotFiles.read(path)) for path in paths]

    def _describe(self, index: int) -> str:
        where = self.where[index] if index < len(self.where) else None
        if where is None:
            return f"collector actor {index}"
        return (f"collector actor {index} (node {where['node'][:12]}, host {where['host']}, "
                f"pid {where['pid']})")

    def _get(self, refs: list, doing: str) -> list:
        """The results of one call per actor, in worker order; a dead or failed actor raises
        `CollectorError` naming it and how it ended."""
        exceptions = self.ray.exceptions
        out = []
        for index, ref in enumerate(refs):
            try:
                out.append(self.ray.get(ref))
            except exceptions.RayTaskError as err:  # the actor's method raised
                raise CollectorError(f"{self._describe(index)} failed while {doing}: "
                                     f"{_task_error(err)}\n{err}") from None
            except exceptions.RayError as err:  # the actor or its node is gone
                raise CollectorError(f"{self._describe(index)} died while {doing}: "
                                     f"{_death(err)}") from None
        return out

    def start(self, actor, critic, new_snapshots: list[str]) -> None:
        ray = self.ray
        actor_ref, critic_ref = ray.put(numpy_state(actor)), ray.put(numpy_state(critic))
        refs = self._snapshot_refs(new_snapshots)
        self._pending = [a.collect.remote(actor_ref, critic_ref, refs) for a in self.actors]

    def result(self) -> tuple[Rollout, dict]:
        if self._pending is None:
            raise RuntimeError("RayCollection.result without a start")
        pending, self._pending = self._pending, None
        parts = self._get(pending, "collecting")
        return merge_rollouts(parts)

    def collect(self, actor, critic, new_snapshots: list[str]) -> tuple[Rollout, dict]:
        self.start(actor, critic, new_snapshots)
        return self.result()

    def close(self) -> None:
        """Stop the actors (each deletes its snapshot folder first, if it still can) and, if
        this collection connected to Ray, disconnect. Idempotent."""
        ray = self.ray
        if self.actors:
            started = [a for a, where in zip(self.actors, self.where) if where is not None]
            closing = [actor.close.remote() for actor in started]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT_S)
            for actor in self.actors:
                ray.kill(actor)
        self.actors, self._pending = [], None
        if self.owns_ray and ray.is_initialized():
            ray.shutdown()
        self.owns_ray = False


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _death(err: BaseException) -> str:
    """How Ray says an actor died: its "The actor is dead because ..." line, else its message."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    because = [line for line in lines if "because" in line or "died" in line.lower()]
    return f"{type(err).__name__}: {' '.join(because[-1:] or lines[:1])}"


def _task_error(err: BaseException) -> str:
    """A failed actor method's own exception: its type and message on one line."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return _one_line(cause)
    return _one_line(err)
