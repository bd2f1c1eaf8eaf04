"""`python -m training.evaluate`: duplicate-deal evaluation of a policy against opponents.

Luck swamps skill in a four-player domino game, so every sampled **deal** is replayed with the
policies rotated through all seats, each replay dealing exactly the same tiles to each seat
position and drawing the boneyard in the same order (the engine is reset with the deal's seed; its
shuffles do not depend on play). Each policy thus plays every hand. The rotation group of one
deal is the statistical unit: a policy's per-deal value is its mean over the games and seats it
held in that group, and 95% intervals are computed over deals (Wilson score intervals for win
rates, Student-t for the other means: `training.evaluation.stats`).

* **deal** — full games (default): one engine seed, i.e. the deals of every round of a game
  (`num_rounds` rounds), replayed as `num_players` games. With `single_round=True` the config is
  played with `num_rounds=1`: a deal is one round's shuffle, replayed `num_players` times.
* **seats** — `policies[0]` is the agent under test, the others are opponents. With as many
  policies as seats the lineup is the list itself; with fewer, the agent takes slot 0 and the
  opponents fill slots 1.. n-1 cyclically (`[a, b, c]` on 4 seats is `a, b, c, b`). A policy that
  holds several slots is one entry in the results, averaged over its seats. Rotation k seats slot
  j at seat (j + k) mod n, for k = 0 .. n-1.
* **metrics** per policy: win rate (R13 winners; a shared win is split), mean round score (points
  per round, R12 — lower is better), mean game total, mean rank (1 = best; R13 order, ties
  share ranks); each with its 95% CI over deals; the agent's difference from each opponent (agent
  minus opponent, per deal) with its CI; and an OpenSkill Plackett-Luce rating table fed every
  game in deal order.
* **determinism** — deal seeds and policy seeds come from `numpy.random.SeedSequence(seed)` by
  deal / block index; deals are played in fixed blocks of `BLOCK_DEALS` (fresh policy instances
  per block) and aggregated in deal order, so the result is identical for any `workers`.
* **play** — each game is played by the arena (`cf_env.agents.arena`): decisions with exactly one
  legal action are taken without asking the policy (the outcome is the same and it saves most of
  the time); policies with the mask-only fast path (`act_bits`, `cf_env.agents.policies`) get
  the legal bitset and no observation (the same choices, without building the observation); any
  other action is checked by the engine's rule and an illegal one raises
  `IllegalPolicyActionError` naming the policy. A policy that raises — anything, `SystemExit`,
  `KeyboardInterrupt` and `GeneratorExit` included — stops the evaluation with `PolicyError`
  (`cf_env.agents.arena`; the illegal-action error is one) naming the policy, its seat, the deal
  and the rotation; a real Ctrl-C stays a `KeyboardInterrupt` (`UserInterrupt`).
* **workers** — with `workers > 1` the blocks (typed `BlockJob` jobs) are played by that many
  "spawn" processes of `training.processes.WorkerPool`, each on its own duplex pipe (no named
  semaphore or shared-memory file, nothing that a SIGKILL of every process at once could leave
  in /dev/shm). A worker keeps, in a few bytes of memory no path names (its pool block, a
  memfd), the deal, rotation and seat it is playing, so a worker that dies without
  answering (`os._exit`, a signal: the out-of-memory killer's SIGKILL) is noticed at once and
  reported as `WorkerDiedError` naming its deals, the deal and rotation, and the policy that was
  choosing, if one was; the other workers are then stopped. Workers ignore SIGINT (the parent
  stops them on a Ctrl-C), are SIGKILLed by the kernel when the parent dies (Linux), and exit at
  the end of their pipe.
* **variance reduction** — with `variance_reduction=CHECKPOINT` (CLI: `--variance-reduction
  [CHECKPOINT]`, off by default) the result also holds `"variance_reduction"`: each policy's win
  rate and round score, and the agent's differences, with the luck of the draws removed by
  control variates from CHECKPOINT's value head, still unbiased, with their intervals and the
  variance ratio (`training.evaluation.variance`, docs/variance-reduction.md). Each game is
  replayed from its seed after it is played to value every tile each draw could have given;
  the games played, and every other number of the result, are the same as without it. With
  `variance_reduction="fit"` (CLI: `--variance-reduction fit`) the value is made for the
  lineup instead, and the policies' known random choices are corrected too
  (`training.evaluation.aivat`): `value_model="rollout"` (the default; `--value-model`) plays
  the lineup out from every outcome of every draw and choice (`rollouts` per outcome,
  `--rollouts`); "ridge" and "mlp" fit V on `calibration_deals` deals (`--calibration-deals`)
  of a seed stream of their own, played first. The entry then also gives the variance ratio
  per corrected term (`terms`) and how V was made (`calibration`).
* **batched** — with `batch=True` (or "auto" when possible; CLI `--batch auto`, its default) a
  lineup of compiled bots and `ppo:` networks is played many games at once
  (`training.evaluation.batched`: one forward pass per network per step), in fixed jobs of
  `CHUNK_DEALS` deals; the same deals, the same games for the networks, the bots' ties broken
  from a stream per game. Search agents, user policies, records and variance reduction keep the
  per-game path. The result's "play" says which path played ("batched" or "per-game").
* **per-game results** — the result's "per_game" holds every game in (deal, rotation) order as
  the row of `GAME_FIELDS`: deal, rotation, the policy (index into "policies") at each seat,
  each seat's points (the game's total) and the winning seats.
* **records** — with `record=FOLDER` every game is saved as its own game record
  (`cf_env.viz.record`, `deal<NNNN>-rot<k>.json`), which `python -m cf_env.viz.replay` replays: the deal's
  engine seed, every action, the result and the policy at each seat (`players`).

This module owns the method (seeds, lineup, rotations, blocks, aggregation over deals) and the CLI;
the metrics, intervals and ratings are `training.evaluation.stats`'s, the tables, plot and output
files `training.evaluation.report`'s.

The CLI plays one evaluation per opponent spec (`--opponents greedy,heuristic`: the agent
against 3× greedy, then against 3× heuristic, the figures training's log reports), or with
``--mixed`` one table seating them all. A spec that plays a checkpoint (`ppo:`, `guided:`, ...)
sets the rules: the game its card says it was trained for (`--players`, `--max-pips`, `--rounds`
left out are taken from it; ones that contradict it are refused with the values that would
work), as `cf_env.tools.play` does. Output files that exist are refused without ``--force``; without
``--out`` the first free name of results/eval.json, results/eval-2.json, ... is taken, and the
paths written are printed. The CLI checks everything the user gave (config, specs, by building
each policy once, the output and record paths, by opening them for writing) before the first
game; a problem there prints one ``error:`` line and exits 2. A policy that fails during play
(an illegal action, an exception, `SystemExit` included, a worker process that died) prints one
``error:`` line and exits 1; a Ctrl-C prints ``interrupted`` and exits 130. Anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import pickle
import re
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from cf_env.agents.arena import (
    Arena,
    IllegalPolicyActionError,
    PolicyError,
    UserInterrupt,
    describe_exception,
    user_interrupts,
)
from cf_env.agents.checkpoint import load_value_head, read_card
from cf_env.agents.policies import Policy, load_policy, spec_checkpoint
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from cf_env.tools.cli import HelpFormatter, limit_threads
from cf_env.viz.record import engine_actions, write_record
from training.evaluation import aivat
from training.evaluation.aivat import AivatSetup
from training.evaluation.batched import (
    CHUNK_DEALS,
    DEFAULT_BATCH_SIZE,
    MAX_BATCH_SIZE,
    batch_kind,
    check_batch_size,
    play_batched,
)
from training.evaluation.report import (
    check_writable,
    format_markdown,
    output_paths,
    plot,
    write_report,
)
from training.evaluation.stats import (
    METRIC_DOCS,
    METRICS,
    difference_ci,
    game_values,
    metric_ci,
    openskill_ratings,
)
from training.evaluation.variance import DrawCorrector, corrected_estimates
from training.processes import WorkerExit, WorkerPool, WorkerStart

# Re-exported: callers import these from here (the CLI's outputs, the error a policy raises).
__all__ = [
    "BLOCK_DEALS",
    "DEFAULT_BATCH_SIZE",
    "BlockJob",
    "DEFAULT_OUT",
    "GAME_FIELDS",
    "EvaluationPlan",
    "IllegalPolicyActionError",
    "PolicyError",
    "WorkerDiedError",
    "card_rules",
    "check_writable",
    "deal_seed",
    "evaluate",
    "fail",
    "format_markdown",
    "lineup",
    "lineups",
    "main",
    "output_paths",
    "plan_evaluation",
    "plot",
    "policy_label",
    "policy_seed",
    "prepare_record_folder",
    "record_name",
    "rotation_seats",
    "run_evaluation",
]

BLOCK_DEALS = 8  # deals per work unit; fixed so that results never depend on `workers`
BATCH_CHOICES = ("auto", "on", "off")  # the CLI's --batch; the API takes "auto", True, False
# The result's "per_game" rows, one per game in (deal, rotation) order.
GAME_FIELDS = ["deal", "rotation", "policy at each seat (index into policies)",
               "points of each seat (game total)", "winners (seats)"]

PolicyItem = str | Callable[..., Policy]


# --------------------------------------------------------------------------- seeds and lineup
def _seed_int(seed: int, *key: int) -> int:
    """A 63-bit seed for (seed, key...), independent for every key (SeedSequence spawn keys)."""
    state = np.random.SeedSequence(seed, spawn_key=key).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


def deal_seed(seed: int, deal: int) -> int:
    """The engine seed of deal `deal` under master seed `seed` (the same for every rotation)."""
    return _seed_int(seed, 0, deal)


def policy_seed(seed: int, block: int, slot: int) -> int:
    return _seed_int(seed, 1, block, slot)


def policy_label(item: PolicyItem) -> str:
    """A deterministic name: the spec string, or the factory's name."""
    if isinstance(item, str):
        return item
    for obj in (item, getattr(item, "func", None)):  # functools.partial exposes .func
        name = getattr(obj, "name", None) or getattr(obj, "__qualname__", None)
        if isinstance(name, str) and name:
            return name
    return type(item).__name__


def lineup(num_items: int, num_players: int) -> list[int]:
    """Which input policy holds each slot: the list itself, or the opponents repeated cyclically."""
    if num_items < 2:
        raise ValueError(
            f"evaluation needs the agent and at least one opponent; got {num_items} policy"
        )
    if num_items > num_players:
        raise ValueError(
            f"{num_items} policies for {num_players} seats: give at most num_players policies "
            "(the agent first, then opponents; fewer opponents are repeated to fill the seats)"
        )
    return [0] + [1 + (j - 1) % (num_items - 1) for j in range(1, num_players)]


def rotation_seats(num_players: int, rotation: int) -> list[int]:
    """Slot held by each seat in rotation k (slot j sits at seat (j + k) mod n)."""
    return [(seat - rotation) % num_players for seat in range(num_players)]


# --------------------------------------------------------------------------- playing
def _build(item: PolicyItem, config: ChickenFootConfig, seed: int) -> Policy:
    try:
        if isinstance(item, str):
            policy = load_policy(item, config, seed)
        else:
            policy = item(config=config, seed=seed)
    except (Exception, UserInterrupt):
        raise
    except BaseException as err:  # SystemExit, KeyboardInterrupt: the factory's failure
        label, what = policy_label(item), describe_exception(err)
        raise PolicyError(f"policy {label!r} raised {what} while being built",
                          label=label, error=what) from err
    if not callable(getattr(policy, "act", None)):
        raise ValueError(f"policy {policy_label(item)!r} built no object with an act() method")
    return policy


@dataclass(frozen=True)
class BlockJob:
    """One work unit of an evaluation: deals [start, stop) of block `block` (whose policies are
    seeded by `policy_seed(seed, block, slot)`), every rotation, played by `items` under
    `config`. `record` keeps each game's actions and players (game records); `value_path` is
    the value head of variance reduction (None: none); `aivat` that of
    `variance_reduction="fit"` (`training.evaluation.aivat.AivatSetup`; None: none);
    `batch_size` plays the deals batched with that many games in flight (None: one game at a
    time)."""

    items: tuple[PolicyItem, ...]
    config: ChickenFootConfig
    seed: int
    block: int
    start: int
    stop: int
    record: bool = False
    value_path: str | None = None
    batch_size: int | None = None
    aivat: AivatSetup | None = None


def _play_block(job: BlockJob, where=None) -> list[dict]:
    """Play a block of deals (`BlockJob`) with every rotation. Runs in a worker.

    `where` (a worker's shared slot, `_SLOT`) gets the deal and rotation being played and, from
    the arenas, the seat whose policy is choosing (-1: none)."""
    items, config, seed, block = job.items, job.config, job.seed, job.block
    start, stop, record, value_path, batch_size = (job.start, job.stop, job.record,
                                                   job.value_path, job.batch_size)
    if where is not None:
        where[0] = where[1] = where[2] = -1
    n = config.num_players
    owners = lineup(len(items), n)
    if batch_size is not None:  # every policy batchable: many games at once (`batched`)
        built = [_build(item, config, policy_seed(seed, block, i)) for i, item in enumerate(items)]
        return play_batched(built, owners, config,
                            {deal: deal_seed(seed, deal) for deal in range(start, stop)},
                            batch_size)
    labels = _unique_labels(items)
    policies = [_build(items[i], config, policy_seed(seed, block, j)) for j, i in enumerate(owners)]
    engine, encoder = Engine(config, seed=0), Encoder(config)
    corrector = None if value_path is None else _corrector(value_path, config)
    setup = job.aivat
    terms_of = None if setup is None else _aivat_corrector(setup, config)
    arenas = []  # one per rotation: the policies at their seats
    for rotation in range(n):
        slots = rotation_seats(n, rotation)
        seat_labels = [labels[owners[j]] for j in slots]
        arenas.append(Arena(engine, [policies[j] for j in slots], seat_labels, encoder=encoder,
                            wrap_errors=True, asking=None if where is None else where[2:3]))
    results = []
    for deal in range(start, stop):
        engine_seed = deal_seed(seed, deal)
        games = []
        for rotation, arena in enumerate(arenas):
            if where is not None:
                where[0], where[1] = deal, rotation
            engine.reset(engine_seed)
            try:
                arena.reset_policies()
                arena.play()
            except PolicyError as err:
                err.deal, err.rotation = deal, rotation
                err.args = (f"{err.args[0]} (deal {deal}, rotation {rotation})", *err.args[1:])
                raise
            game = {"slots": rotation_seats(n, rotation),
                    "scores": [list(s) for s in engine.scores], "winners": list(engine.winners)}
            if record:  # what a game record needs beyond the deal's seed (cf_env.viz.record)
                game["actions"] = engine_actions(engine)
                game["players"] = list(arena.labels)
            if corrector is not None:
                game["actions_played"] = engine_actions(engine)
            if terms_of is not None:  # each seat's AIVAT terms (training.evaluation.aivat)
                game["aivat_terms"] = aivat.block_terms(
                    terms_of, setup, engine_seed, engine_actions(engine),
                    [owners[j] for j in game["slots"]],
                    [policies[j] for j in game["slots"]],
                    aivat.rollout_seed(seed, deal, rotation), game["scores"])
            games.append(game)
        if corrector is not None:  # each seat's draw correction (training.evaluation.variance)
            terms = corrector.deal_terms(engine_seed, [g.pop("actions_played") for g in games],
                                         [g["scores"] for g in games])
            for game, row in zip(games, terms.tolist()):
                game["draw_terms"] = row
        results.append({"deal": deal, "engine_seed": engine_seed, "games": games})
    if where is not None:
        where[0] = where[1] = -1
    return results


_CORRECTORS: dict[tuple[str, ChickenFootConfig], DrawCorrector] = {}


def _corrector(value_path: str, config: ChickenFootConfig) -> DrawCorrector:
    """The draw corrector of a value head for `config`, built once per process."""
    key = (value_path, config)
    if key not in _CORRECTORS:
        _CORRECTORS[key] = DrawCorrector(config, load_value_head(value_path, config))
    return _CORRECTORS[key]


_AIVAT: dict[tuple[AivatSetup, ChickenFootConfig], object] = {}


def _aivat_corrector(setup: AivatSetup, config: ChickenFootConfig):
    """The AIVAT corrector of `setup` for `config`, built once per process (the last one)."""
    key = (setup, config)
    if key not in _AIVAT:
        _AIVAT.clear()
        _AIVAT[key] = aivat.make_corrector(setup, config)
    return _AIVAT[key]


def _unique_labels(items: Sequence[PolicyItem]) -> list[str]:
    labels, seen = [], {}
    for item in items:
        label = policy_label(item)
        seen[label] = seen.get(label, 0) + 1
        labels.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return labels


def _run_blocks(jobs: list[BlockJob], workers: int) -> Iterator[list[dict]]:
    """The results of `jobs`, in order: played here, or by `workers` worker processes."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield _play_block(job)
        return
    yield from _run_in_workers(jobs, min(workers, len(jobs)))


# --------------------------------------------------------------------------- worker processes
class WorkerDiedError(RuntimeError):
    """A worker process of a parallel evaluation ended without answering: it exited
    (`os._exit`) or was killed (a signal, e.g. the out-of-memory killer's SIGKILL).

    `deals` is its job, (first, last) deal; `deal` and `rotation` what it was playing (None
    outside any game); `seat` and `label` the policy that was choosing (None: it died
    outside any policy call); `exitcode` is `multiprocessing.Process.exitcode` (negative: the
    signal). All picklable.
    """

    def __init__(self, message: str, *, deals: tuple[int, int] = (0, 0),
                 deal: int | None = None, rotation: int | None = None,
                 seat: int | None = None, label: str | None = None,
                 exitcode: int | None = None):
        super().__init__(message)
        self.deals, self.deal, self.rotation = deals, deal, rotation
        self.seat, self.label, self.exitcode = seat, label, exitcode


# A worker's shared slot (its `WorkerPool` memory): the deal, rotation and seat being asked
# (int64 each; -1: none), so that the parent can say what a worker that died was doing.
_SLOT = struct.Struct("3q")


def _serve_blocks(start: WorkerStart) -> Callable[[BlockJob], list[dict]]:
    """An evaluation worker (`WorkerPool`'s `serve`): plays each block it is sent, keeping in
    its slot what it is playing."""
    where = None
    if start.memory is not None:
        where = memoryview(start.memory).cast("q")
        where[0] = where[1] = where[2] = -1
    return functools.partial(_play_block, where=where)


def _run_in_workers(jobs: list[BlockJob], workers: int) -> Iterator[list[dict]]:
    # Two jobs in flight per worker, so that none waits for the next one; one when a job is big
    # (factories carrying data), so that the parent never blocks sending to a worker that is
    # itself blocked sending its results.
    depth = 2 if len(pickle.dumps(jobs[0])) <= 32 * 1024 else 1
    pool = WorkerPool("evaluate", workers, _serve_blocks, died=_died, memory_bytes=_SLOT.size,
                      memory_label="chickenfoot-evaluate")
    clean = False
    try:
        for index in range(workers):  # -1: nothing yet (the worker writes the same at its start)
            if pool.memory(index) is not None:
                _SLOT.pack_into(pool.memory(index), 0, -1, -1, -1)
        yield from pool.imap(jobs, depth)
        clean = True
    finally:
        pool.close(graceful=clean)


def _died(worker: WorkerExit) -> WorkerDiedError:
    """The error of an evaluation worker that died (`WorkerPool`'s `died`): its job's deals,
    and from its slot the deal, rotation and policy it was playing."""
    job: BlockJob = worker.job
    deal, rotation, seat = (-1, -1, -1) if worker.memory is None else _SLOT.unpack_from(worker.memory)
    playing = f"deals {job.start}..{job.stop - 1}"
    label = None
    if job.batch_size is not None:  # batched: many games at once, none of them "the" game
        where = "while playing them batched"
    elif deal < 0:
        where = "outside any game"
    elif seat < 0:
        where = f"during deal {deal}, rotation {rotation}, outside any policy call"
    else:
        n = job.config.num_players
        owner = lineup(len(job.items), n)[rotation_seats(n, rotation)[seat]]
        label = _unique_labels(job.items)[owner]
        where = f"while policy {label!r} at seat {seat} was choosing (deal {deal}, rotation {rotation})"
    return WorkerDiedError(
        f"evaluation worker process (pid {worker.pid}, {playing}) {worker.how} {where}",
        deals=(job.start, job.stop - 1), deal=None if deal < 0 else deal,
        rotation=None if deal < 0 else rotation, seat=None if seat < 0 else seat, label=label,
        exitcode=worker.exitcode,
    )


# --------------------------------------------------------------------------- evaluate
@dataclass(frozen=True)
class EvaluationPlan:
    """An evaluation whose inputs were all checked (`plan_evaluation`); `run_evaluation` plays it.

    `config` is the config played (`num_rounds=1` for single rounds); `owners[j]` is the index
    of the policy holding slot j (`lineup`); `labels` are the policies' unique names; `batch`
    says whether the games are played batched (`training.evaluation.batched`, at most
    `batch_size` games in flight per job) or one at a time.
    """

    items: tuple[PolicyItem, ...]
    config: ChickenFootConfig
    deals: int
    seed: int
    workers: int
    single_round: bool
    owners: tuple[int, ...]
    labels: tuple[str, ...]
    record: Path | None = None
    variance_reduction: str | None = None  # a checkpoint whose value head gives the controls,
    # or "fit" (`aivat.FIT`): a value made for the lineup, `value_model` with
    # `calibration_deals` (ridge, mlp) or `rollouts` per outcome (rollout)
    batch: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    value_model: str | None = None
    calibration_deals: int = 0
    rollouts: int = 0


def plan_evaluation(
    policies: list[str | Callable[..., Policy]],
    config: ChickenFootConfig,
    deals: int,
    seed: int = 0,
    workers: int = 1,
    single_round: bool = False,
    *,
    record: str | Path | None = None,
    variance_reduction: str | os.PathLike | None = None,
    batch: bool | str = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    value_model: str | None = None,
    calibration_deals: int | None = None,
    rollouts: int | None = None,
) -> EvaluationPlan:
    """Check everything `evaluate` is given before a game is played (see `evaluate`).

    Each policy is built once here, so a bad spec, checkpoint or factory fails now; the record
    folder is created and must be empty and writable. `batch` (False, True or "auto") is
    resolved here: True is refused unless every policy can be played batched and neither
    `record` nor `variance_reduction` is given; "auto" is True exactly then. `value_model`,
    `calibration_deals` and `rollouts` are checked against `variance_reduction="fit"`
    (`_fit_options`). Raises `ValueError` naming the problem.
    """
    if not isinstance(config, ChickenFootConfig):
        raise ValueError(f"config must be a ChickenFootConfig; got {type(config).__name__}")
    if isinstance(deals, bool) or not isinstance(deals, int) or deals < 2:
        raise ValueError(f"deals must be an int >= 2 (intervals are computed over deals); got {deals!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int; got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}")
    if not (batch is True or batch is False or (isinstance(batch, str) and batch == "auto")):
        raise ValueError(f"batch must be True, False or 'auto'; got {batch!r}")
    batch_size = check_batch_size(batch_size)
    model, calibration, reps = _fit_options(variance_reduction, value_model, calibration_deals,
                                            rollouts)
    items = tuple(policies)
    for item in items:
        if not (isinstance(item, str) and item) and not callable(item):
            raise ValueError(f"each policy is a spec string or a factory; got {item!r}")
    cfg = config.replace(num_rounds=1) if single_round else config
    owners = lineup(len(items), cfg.num_players)
    labels = _unique_labels(items)
    with user_interrupts():  # a real Ctrl-C meanwhile is not a factory's failure
        built = [_build(item, cfg, 0) for item in items]
    unbatchable = [label for label, policy in zip(labels, built) if batch_kind(policy) is None]
    if batch is True:
        why = (f"policy {unbatchable[0]!r} is played one game at a time (only the random, "
               "greedy and heuristic bots and ppo: networks are batched)" if unbatchable
               else "game records are written by the per-game path" if record is not None
               else "variance reduction replays the per-game path's games"
               if variance_reduction is not None else None)
        if why:
            raise ValueError(f"batched evaluation is not possible here: {why}; use batch='auto' "
                             "(CLI: --batch auto) or batch=False")
    batched = batch is not False and not unbatchable and record is None and variance_reduction is None
    if workers > 1:
        for item, label in zip(items, labels):
            if not isinstance(item, str):
                try:
                    pickle.dumps(item)
                except Exception as err:
                    raise ValueError(
                        f"policy factory {label!r} cannot be sent to worker processes ({err}); "
                        "use workers=1 or a module-level factory"
                    ) from err
    if model is not None:
        if cfg.draw_until_playable:
            raise ValueError(
                "variance reduction corrects one chance event per DRAW action; with "
                "draw_until_playable=True one DRAW draws until a tile fits (several chance "
                "events), which it does not support: evaluate without variance_reduction, or "
                "with draw_until_playable=False")
        value_path = aivat.FIT
    else:
        value_path = (None if variance_reduction is None
                      else _check_value_head(variance_reduction, cfg))
    folder = None if record is None else prepare_record_folder(record)
    return EvaluationPlan(items, cfg, deals, seed, workers, bool(single_round), tuple(owners),
                          tuple(labels), folder, value_path, batched, batch_size, model,
                          calibration, reps)


def _fit_options(variance_reduction, value_model, calibration_deals,
                 rollouts) -> tuple[str | None, int, int]:
    """(value model, calibration deals, rollouts per outcome) of `variance_reduction="fit"`
    (None, 0, 0 without it), each checked: `ValueError` naming what is valid."""
    fit = isinstance(variance_reduction, str) and variance_reduction == aivat.FIT
    given = [name for name, value in (("value_model", value_model),
                                      ("calibration_deals", calibration_deals),
                                      ("rollouts", rollouts)) if value is not None]
    if not fit:
        if given:
            raise ValueError(f"{given[0]} applies to variance_reduction='fit' (CLI: "
                             f"--variance-reduction fit) only; got variance_reduction="
                             f"{variance_reduction!r}")
        return None, 0, 0
    model = aivat.DEFAULT_VALUE_MODEL if value_model is None else value_model
    if not isinstance(model, str) or model not in aivat.VALUE_MODELS:
        raise ValueError(f"value_model must be one of {', '.join(aivat.VALUE_MODELS)}; got "
                         f"{value_model!r}")

    def bounded(value, name: str, top: int, low: int) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
                low <= value <= top):
            raise ValueError(f"{name} must be an int in {low}..{top:,}; got {value!r}")
        return int(value)

    if model == "rollout":
        if calibration_deals is not None:
            raise ValueError("calibration_deals applies to the fitted value models (ridge, mlp); "
                             "value_model='rollout' plays the lineup out from each position "
                             "and fits nothing: leave calibration_deals out")
        reps = aivat.DEFAULT_ROLLOUTS if rollouts is None else rollouts
        return model, 0, bounded(reps, "rollouts (per outcome)", aivat.MAX_ROLLOUTS, 1)
    if rollouts is not None:
        raise ValueError(f"rollouts applies to value_model='rollout' only; value_model={model!r} "
                         "is fitted on calibration deals: leave rollouts out")
    deals = aivat.DEFAULT_CALIBRATION_DEALS if calibration_deals is None else calibration_deals
    return model, bounded(deals, "calibration_deals (at least 2: one is held out to measure the "
                          "fit)", aivat.MAX_CALIBRATION_DEALS, 2), 0


def _check_value_head(path: str | os.PathLike, cfg: ChickenFootConfig) -> str:
    """`path` as a string, once its value head loads for `cfg` (else `ValueError`)."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(
            "variance_reduction must be the path of a checkpoint with a value head (value.npz), "
            f"e.g. 'checkpoints/selfplay-4p-d9'; got {path!r}"
        )
    path = str(path)
    try:
        DrawCorrector(cfg, load_value_head(path, cfg))
    except ValueError as err:  # CheckpointError (a ValueError) included: it names the file
        raise ValueError(f"variance reduction with the value head of {path!r}: {err}") from err
    return path


def prepare_record_folder(record: str | Path) -> Path:
    """Create the folder that receives one game record per game; it must be new or empty.

    A name ending in .json/.jsonl is refused: records used to be one JSON-lines file, and a
    folder of that name would surprise whoever passed it.
    """
    folder = Path(record)
    if folder.suffix.lower() in (".json", ".jsonl") or folder.is_file():
        raise ValueError(
            f"record {str(folder)!r} must be a folder (it receives one game record, "
            "deal<NNNN>-rot<k>.json, per game), e.g. results/games/"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.iterdir()):
            raise ValueError(
                f"record folder {str(folder)!r} is not empty; give a new or empty folder so that "
                "no game from another run is mixed in"
            )
        with tempfile.TemporaryFile(dir=folder):  # writable? (os.access is blind to read-only mounts)
            pass
    except OSError as err:
        raise ValueError(f"cannot write game records to {str(folder)!r}: {err.strerror or err}") from err
    return folder


def record_name(deal: int, rotation: int, deals: int) -> str:
    """The file name of one game's record: deal and rotation, zero-padded so names sort in order."""
    return f"deal{deal:0{max(4, len(str(deals - 1)))}d}-rot{rotation}.json"


def evaluate(
    policies: list[str | Callable[..., Policy]],
    config: ChickenFootConfig,
    deals: int,
    seed: int = 0,
    workers: int = 1,
    progress: bool = False,
    single_round: bool = False,
    *,
    record: str | Path | None = None,
    variance_reduction: str | os.PathLike | None = None,
    batch: bool | str = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    value_model: str | None = None,
    calibration_deals: int | None = None,
    rollouts: int | None = None,
) -> dict:
    """Evaluate `policies[0]` against `policies[1:]` over `deals` duplicate deals.

    Each item is a policy spec (see `cf_env.agents.policies.load_policy`) or a factory
    `f(config=..., seed=...) -> Policy` (picklable when `workers > 1`). Returns a JSON-serialisable
    dict (see the module docstring and `format_markdown`). `record`, if given, is a folder (new or
    empty) that receives one game record per game (`cf_env.viz.record`, readable by
    `cf_env.viz.record.read_record` and `python -m cf_env.viz.replay`), named by `record_name`: the deal's
    engine seed, every action, the result and the policy at each seat.

    `variance_reduction`, if given, is a checkpoint with a value head (`value.npz`, e.g.
    "checkpoints/selfplay-4p-d9") for the table played: the result then also holds
    `"variance_reduction"`, the win rates and round scores (and the agent's differences) with
    the luck of the draws removed by control variates from that value head, still unbiased
    (`training.evaluation.variance`); everything else is the same as without it.

    `variance_reduction="fit"` makes the value for the lineup evaluated instead
    (`training.evaluation.aivat`, AIVAT's terms for every draw and for every decision of a
    policy that names its random choices): `value_model` "rollout" (the default: the lineup
    played out from each position, `rollouts` times per outcome, default
    `aivat.DEFAULT_ROLLOUTS`), or "ridge" / "mlp" fitted on `calibration_deals` deals (default
    `aivat.DEFAULT_CALIBRATION_DEALS`) of a seed stream of their own, played first. The
    `"variance_reduction"` entry then also holds `terms` (the ratio per corrected term) and
    `calibration` (how V was made, its cost, and the fit's R² in sample and held out).

    `batch=True` plays the games many at once (`training.evaluation.batched`: every policy a
    compiled bot or a greedy `ppo:` network; no `record`, no `variance_reduction`), at most
    `batch_size` in flight; "auto" does so when it can; False (the default) plays one game at a
    time. Both paths play the same deals; a network's games are the same, the bots' tie-breaks
    come from another stream (`training.evaluation.batched`), so a result differs from the
    per-game one only by that luck. The result's "play" says which path played.

    The result's "per_game" holds every game in (deal, rotation) order as the row of
    `GAME_FIELDS` ("game_fields"): deal, rotation, the index (into "policies") of the policy at
    each seat, each seat's points (the game's total) and the winning seats (R13).
    """
    plan = plan_evaluation(policies, config, deals, seed, workers, single_round, record=record,
                           variance_reduction=variance_reduction, batch=batch,
                           batch_size=batch_size, value_model=value_model,
                           calibration_deals=calibration_deals, rollouts=rollouts)
    return run_evaluation(plan, progress)


def run_evaluation(plan: EvaluationPlan, progress: bool = False) -> dict:
    """Play a checked evaluation (`plan_evaluation`) and return the result dict (`evaluate`)."""
    items, cfg, deals, seed = plan.items, plan.config, plan.deals, plan.seed
    owners, labels, single_round = list(plan.owners), list(plan.labels), plan.single_round
    n = cfg.num_players
    fit = plan.value_model is not None
    setup, info = _aivat_setup(plan) if fit else (None, None)
    jobs = []
    size = CHUNK_DEALS if plan.batch else BLOCK_DEALS
    for block, start in enumerate(range(0, deals, size)):
        stop = min(start + size, deals)
        jobs.append(BlockJob(items, cfg, seed, block, start, stop, plan.record is not None,
                             None if fit else plan.variance_reduction,
                             plan.batch_size if plan.batch else None, setup))
    started = time.process_time()

    per_deal = {m: np.zeros((deals, len(items))) for m in METRICS}
    controls = np.zeros((deals, len(items)))  # each policy's draw correction per deal
    terms = np.zeros((deals, len(items), len(aivat.TERM_COLUMNS)))  # fit: its AIVAT terms
    games_in_order: list[tuple[int, dict]] = []
    per_game: list[list] = []
    bar = _progress_bar(deals, progress)
    try:
        with user_interrupts(), contextlib.closing(_run_blocks(jobs, plan.workers)) as blocks:
            for block_results in blocks:
                for deal_result in block_results:
                    d = deal_result["deal"]
                    # Python floats, added in the same order: numpy scalars cost more here
                    sums = {m: [0.0] * len(items) for m in METRICS}
                    held = [0] * len(items)
                    for rotation, game in enumerate(deal_result["games"]):
                        values = game_values(cfg, game)
                        for seat, slot in enumerate(game["slots"]):
                            owner = owners[slot]
                            held[owner] += 1
                            for m in METRICS:
                                sums[m][owner] += values[m][seat]
                            if "draw_terms" in game:
                                controls[d, owner] += game["draw_terms"][seat]
                            if "aivat_terms" in game:
                                terms[d, owner] += game["aivat_terms"][seat]
                        games_in_order.append((rotation, {**game, "rank": values["rank"]}))
                        per_game.append([d, rotation, [owners[slot] for slot in game["slots"]],
                                         [int(sum(rows)) for rows in game["scores"]],
                                         [int(seat) for seat in game["winners"]]])
                        if plan.record is not None:
                            write_record(
                                plan.record / record_name(d, rotation, deals),
                                cfg,
                                deal_result["engine_seed"],
                                game["actions"],
                                {"scores": game["scores"], "winners": game["winners"]},
                                game["players"],
                            )
                    for m in METRICS:
                        per_deal[m][d] = np.divide(sums[m], held)
                    controls[d] /= held
                    terms[d] /= np.asarray(held, np.float64)[:, None]
                if bar is not None:
                    bar.update(len(block_results))
    finally:
        if bar is not None:
            bar.close()

    result_policies = []
    for i, label in enumerate(labels):
        entry = {"name": label, "seats": owners.count(i)}
        for m in METRICS:
            entry[m] = metric_ci(m, per_deal[m][:, i], n)
        result_policies.append(entry)
    differences = []
    for j in range(1, len(items)):
        diff = {"agent": labels[0], "opponent": labels[j]}
        for m in METRICS:
            diff[m] = difference_ci(m, per_deal[m][:, 0] - per_deal[m][:, j], n)
        differences.append(diff)
    ratings = openskill_ratings(labels, owners, games_in_order)
    for entry, rating in zip(result_policies, ratings):
        entry["rating"] = {k: rating[k] for k in ("mu", "sigma", "ordinal")}
    result = {
        "config": cfg.to_dict(),
        "seed": seed,
        "deals": deals,
        "games": deals * n,
        "single_round": bool(single_round),
        "lineup": [labels[i] for i in owners],
        "policies": result_policies,
        "differences": differences,
        "ratings": sorted(ratings, key=lambda r: -r["ordinal"]),
        "method": {
            "deal": "one round's shuffle" if single_round else f"one game ({cfg.num_rounds} rounds)",
            "rotation": f"each deal replayed {n} times, lineup rotated one seat each time",
            "interval": "95% over deals (the rotation group is the unit): Wilson score for win "
            "rates, Student-t for the other means and the differences, clipped to the range "
            "each metric can take",
            "differences": "agent minus opponent, per deal",
            "rating": "OpenSkill Plackett-Luce, every game in deal order; "
            "a policy on several seats is ranked by its mean seat rank",
            "metrics": METRIC_DOCS,
            "play": ("batched: many games at once, the bots' ties broken by a stream per game "
                     "(training.evaluation.batched)" if plan.batch else "one game at a time"),
        },
        "play": "batched" if plan.batch else "per-game",
        "game_fields": GAME_FIELDS,
        "per_game": per_game,
    }
    if fit:
        info["measured_cpu_s"] = round(time.process_time() - started, 2)
        result["variance_reduction"] = aivat.aivat_estimates(info, labels, per_deal, terms, n)
    elif plan.variance_reduction is not None:
        result["variance_reduction"] = corrected_estimates(
            plan.variance_reduction, labels, per_deal, controls, n)
    return result


def _aivat_setup(plan: EvaluationPlan) -> tuple[AivatSetup, dict]:
    """What the blocks of `variance_reduction="fit"` need, and the result's `calibration`: for
    a fitted model, the calibration deals (seed stream `aivat.calibration_seed`) played here
    first (per-game, in blocks, by the plan's workers) and V fitted on them."""
    num_items = len(plan.items)
    if plan.value_model == "rollout":
        return (AivatSetup("rollout", num_items, plan.rollouts),
                {"model": "rollout", "rollouts_per_outcome": plan.rollouts,
                 "seed_stream": "numpy SeedSequence(seed, spawn_key=(3, deal, rotation)) per "
                 "game, then per event and outcome (splitmix64)",
                 "calibration_deals": 0})
    started = time.process_time()
    seed = aivat.calibration_seed(plan.seed)
    jobs = [BlockJob(plan.items, plan.config, seed, block, start,
                     min(start + BLOCK_DEALS, plan.calibration_deals), record=True)
            for block, start in enumerate(range(0, plan.calibration_deals, BLOCK_DEALS))]
    played = [deal for results in _run_blocks(jobs, plan.workers) for deal in results]
    value, info = aivat.calibrate(plan.config, played, plan.owners, num_items, plan.value_model,
                                  plan.seed)
    info.update({"calibration_deals": plan.calibration_deals,
                 "seed_stream": "numpy SeedSequence(seed, spawn_key=(2,)) as the master seed of "
                 "the calibration deals (aivat.calibration_seed): disjoint from the measured "
                 "deals' (spawn key 0)",
                 "calibration_cpu_s": round(time.process_time() - started, 2)})
    return AivatSetup(plan.value_model, num_items, value=value), info


def _progress_bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    class Bar(tqdm):
        """tqdm with a thread lock: its default one adds a multiprocessing lock, a named
        semaphore that a SIGKILL could leave behind in /dev/shm."""

    Bar.set_lock(threading.RLock())
    return Bar(total=total, unit="deal", desc="evaluate", file=sys.stderr)


def fail(err: BaseException, code: int) -> NoReturn:
    """Report a user error as one `error:` line on stderr and exit with `code` (no traceback)."""
    print("error: " + " ".join(str(err).split()), file=sys.stderr)
    raise SystemExit(code) from None


def _parse_value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)  # 1e2: an integral float is the int it names
    except ValueError:
        return text
    return int(number) if number.is_integer() else number


DEFAULT_OUT = "results/eval"  # without --out: the first of results/eval, eval-2, ... not taken


def lineups(agent: str, opponents: list[str], mixed: bool = False) -> list[list[str]]:
    """The evaluations the CLI plays: one per opponent spec, the agent against copies of it on
    every other seat (what training's periodic evaluations report), or with `mixed` one table
    seating them all (`lineup` repeats them cyclically)."""
    if mixed or len(opponents) <= 1:
        return [[agent, *opponents]]
    unique = list(dict.fromkeys(opponents))
    return [[agent, opponent] for opponent in unique]


def _slug(spec: str) -> str:
    """A file-name part for an opponent spec ("ppo:checkpoints/x" -> "ppo-x")."""
    path = spec_checkpoint(spec)
    if path:
        spec = f"{spec.partition(':')[0]}-{Path(path).name}"
    return re.sub(r"[^A-Za-z0-9._=+-]+", "-", spec).strip("-.") or "opponent"


def lineup_names(groups: list[list[str]]) -> list[str]:
    """A distinct file-name part per lineup of several ("vs-greedy", "vs-heuristic", ...)."""
    names: list[str] = []
    for group in groups:
        name = "vs-" + "-".join(_slug(spec) for spec in group[1:])
        names.append(name if name not in names else f"{name}-{len(names) + 1}")
    return names


def _outputs(out: str | None, names: list[str] | None, force: bool) -> list[tuple[Path, ...]]:
    """The (JSON, Markdown, PNG) paths of each lineup (one lineup: `output_paths(out)`; several:
    `<out>-vs-<opponent>.*`). An existing file is refused without `force`; without `out` the
    first default name whose files are all free is taken."""

    def paths(base: str) -> list[tuple[Path, ...]]:
        json_path = output_paths(base)[0]
        stem = json_path.with_suffix("")
        if names is None:
            return [output_paths(base)]
        return [output_paths(stem.with_name(f"{stem.name}-{name}")) for name in names]

    def taken(groups: list[tuple[Path, ...]]) -> list[Path]:
        return [path for group in groups for path in group if path.is_file()]

    if out is None and not force:
        for number in range(1, 10_000):
            groups = paths(DEFAULT_OUT if number == 1 else f"{DEFAULT_OUT}-{number}")
            if not taken(groups):
                return groups
        raise ValueError(f"every name {DEFAULT_OUT}-<n>.json up to 9999 is taken; give --out")
    groups = paths(out or DEFAULT_OUT)
    existing = taken(groups)
    if existing and not force:
        raise ValueError(f"{', '.join(map(str, existing))} already exist(s); pass --force to "
                         "overwrite, or give another --out (nothing was written)")
    return groups


def card_rules(specs: list[str]) -> tuple[str, dict] | None:
    """(spec, rules) of the first spec that plays a checkpoint (`ppo:`, `guided:`, ...): the
    game its card says it was trained for (as `cf_env.tools.play` reads it); None without one."""
    for spec in specs:
        path = spec_checkpoint(spec)
        if path:
            return spec, ChickenFootConfig.from_dict(read_card(path)["env_config"]).to_dict()
    return None


def rules_for(args: argparse.Namespace, specs: list[str]) -> dict:
    """The config fields of the CLI: a checkpoint's card (if any spec plays one), the options
    given, then `--set`. `--players`/`--max-pips` that contradict the card are refused with the
    values that would work."""
    card = card_rules(specs)
    given = {"num_players": args.players, "max_pips": args.max_pips}
    if card is None:
        fields = {"num_players": 4 if args.players is None else args.players,
                  "max_pips": 9 if args.max_pips is None else args.max_pips,
                  "num_rounds": args.rounds}
    else:
        spec, fields = card
        wrong = [f"--{option} {given[field]}" for option, field in
                 (("players", "num_players"), ("max-pips", "max_pips"))
                 if given[field] is not None and given[field] != fields[field]]
        if wrong:
            raise ValueError(
                f"{' '.join(wrong)} contradicts {spec}: it was trained for "
                f"{fields['num_players']} players, double-{fields['max_pips']}, and a checkpoint "
                f"plays only the game it was trained for; give --players {fields['num_players']} "
                f"--max-pips {fields['max_pips']}, or leave them out to take them from its card"
            )
        if args.rounds is not None:
            fields["num_rounds"] = args.rounds
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set takes FIELD=VALUE (a ChickenFootConfig field); got {item!r}")
        fields[key.strip()] = _parse_value(value.strip())
    return fields


def _headline(result: dict) -> str:
    """One lineup's result in the words of training's log: the agent's win rate and interval."""
    agent, opponents = result["policies"][0], result["policies"][1:]
    n = result["config"]["num_players"]
    against = (f"{n - 1}× {opponents[0]['name']}" if len(opponents) == 1
               else ", ".join(f"{p['seats']}× {p['name']}" for p in opponents))
    win = agent["win_rate"]
    unit = "single rounds" if result["single_round"] else "games"
    return (f"{agent['name']} vs {against}: win rate {win['mean']:.1%} [{win['ci_low']:.1%}, "
            f"{win['ci_high']:.1%}] over {result['deals']} duplicate deals of {unit} "
            f"(parity {1 / n:.0%})")


def _corrected_headline(result: dict) -> str:
    """The agent's variance-reduced win rate, and how many times fewer deals it needs."""
    entry = result["variance_reduction"]
    win = entry["policies"][0]["win_rate"]
    terms = ""
    if "terms" in win:
        terms = (f"; draws alone {win['terms']['draws']:.2f}, actions alone "
                 f"{win['terms']['actions']:.2f}; value: {entry['calibration']['model']}")
    return (f"variance-reduced: win rate {win['mean']:.1%} [{win['ci_low']:.1%}, "
            f"{win['ci_high']:.1%}]; variance ratio {win['variance_ratio']:.2f} (the plain "
            f"estimate needs that many times the deals for this interval's half-width){terms}")


def _batch_options(batch: str, batch_size: str) -> tuple[bool | str, int]:
    """`--batch` and `--batch-size` as `plan_evaluation` takes them (`ValueError` naming the
    valid values)."""
    if batch not in BATCH_CHOICES:
        raise ValueError(f"--batch must be one of {', '.join(BATCH_CHOICES)}; got {batch!r}")
    try:
        size = check_batch_size(int(batch_size))
    except ValueError:
        raise ValueError(f"--batch-size must be an int in 1..{MAX_BATCH_SIZE} (games in "
                         f"flight); got {batch_size!r}") from None
    return {"auto": "auto", "on": True, "off": False}[batch], size


def _value_checkpoint(given: str | None, specs: list[str]) -> str | None:
    """`--variance-reduction`'s checkpoint: the one given ("fit": a value made for the lineup),
    or (given bare) the first spec's that plays a checkpoint; `ValueError` when there is none."""
    if given is None or given:
        return given
    for spec in specs:
        path = spec_checkpoint(spec)
        if path:
            return path
    raise ValueError("--variance-reduction without CHECKPOINT takes the value head of the first "
                     "spec that plays a checkpoint, and none does; give --variance-reduction "
                     "CHECKPOINT (one with a value head, e.g. checkpoints/selfplay-4p-d9)")


def main(argv: list[str] | None = None) -> dict | list[dict]:
    """The command; returns the result dict, or one per lineup when there are several."""
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description="Evaluate a policy against opponents over duplicate deals with seat rotation.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--agent", required=True, help="policy spec under test, e.g. heuristic")
    parser.add_argument("--opponents", required=True,
                        help="comma-separated opponent specs, e.g. greedy,heuristic: one "
                        "evaluation per spec, the agent against it on every other seat (as "
                        "training reports); with --mixed one table seats them all")
    parser.add_argument("--mixed", action="store_true",
                        help="seat all the opponents at one table (repeated cyclically to fill "
                        "the seats) instead of one evaluation per opponent")
    parser.add_argument("--players", type=int, default=None,
                        help="players (default: a checkpoint's card, else 4)")
    parser.add_argument("--max-pips", type=int, default=None,
                        help="double-N set (default: a checkpoint's card, else 9)")
    rounds = parser.add_mutually_exclusive_group()
    rounds.add_argument("--rounds", type=int, default=None,
                        help="rounds per game (default: a checkpoint's card, else N+1)")
    rounds.add_argument("--single-round", action="store_true", help="evaluate single rounds")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="any other ChickenFootConfig field, e.g. --set double_blank_value=25")
    parser.add_argument("--deals", type=int, default=2000, help="duplicate deals")
    parser.add_argument("--seed", type=int, default=0, help="master seed of deals and policies")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--out", default=None,
                        help="output path X.json: writes X.json, X.md and X.png (X is the path "
                        "less a .json/.md/.png suffix; several lineups: X-vs-<opponent>.*); "
                        f"default: {DEFAULT_OUT}.json, or {DEFAULT_OUT}-2.json, ... the first "
                        "name not taken")
    parser.add_argument("--force", action="store_true",
                        help="overwrite output files that exist (without it they are refused)")
    parser.add_argument("--record", default=None, metavar="FOLDER",
                        help="save every game as a game record (cf_env.viz.record, for "
                        "python -m cf_env.viz.replay) in this new or empty folder (several lineups: "
                        "one subfolder each)")
    parser.add_argument("--variance-reduction", nargs="?", const="", default=None,
                        metavar="CHECKPOINT",
                        help="also report win rates and round scores with the luck of the draws "
                        "removed (unbiased control variates from a value head: "
                        "docs/variance-reduction.md), using CHECKPOINT's value.npz; without "
                        "CHECKPOINT, that of the first spec that plays a checkpoint; "
                        "'fit': AIVAT's terms for every draw and every random choice of a bot, "
                        "with a value made for the lineup (--value-model; a folder named fit: "
                        "give ./fit)")
    parser.add_argument("--value-model", default=None, metavar="{rollout,ridge,mlp}",
                        help="with --variance-reduction fit: rollout (default: the lineup "
                        "played out from each position), or ridge / mlp fitted on "
                        "--calibration-deals deals")
    parser.add_argument("--calibration-deals", type=int, default=None, metavar="N",
                        help="with --variance-reduction fit and --value-model ridge or mlp: "
                        f"deals played first to fit the value (default "
                        f"{aivat.DEFAULT_CALIBRATION_DEALS}, at most "
                        f"{aivat.MAX_CALIBRATION_DEALS:,})")
    parser.add_argument("--rollouts", type=int, default=None, metavar="K",
                        help="with --variance-reduction fit and the rollout value: rollouts per "
                        f"outcome (default {aivat.DEFAULT_ROLLOUTS}, at most "
                        f"{aivat.MAX_ROLLOUTS})")
    parser.add_argument("--batch", default="auto", metavar="{auto,on,off}",
                        help="play many games at once (training.evaluation.batched: the random, "
                        "greedy and heuristic bots and ppo: networks, one forward pass per "
                        "network per step): auto does when every policy can and neither "
                        "--record nor --variance-reduction is given; on requires it; off plays "
                        "one game at a time (the bots' ties then come from their own seeded "
                        "generators, as before batched evaluation)")
    parser.add_argument("--batch-size", default=str(DEFAULT_BATCH_SIZE), metavar="N",
                        help="games in flight when batched")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    limit_threads()

    # Everything the user gave is checked here, before the first game (exit 2 on a problem).
    try:
        opponents = [s.strip() for s in args.opponents.split(",") if s.strip()]
        config = ChickenFootConfig.from_dict(rules_for(args, [args.agent, *opponents]))
        groups = lineups(args.agent, opponents, args.mixed)
        names = lineup_names(groups) if len(groups) > 1 else None
        outputs = _outputs(args.out, names, args.force)
        for paths in outputs:
            check_writable(paths)
        value = _value_checkpoint(args.variance_reduction, [args.agent, *opponents])
        for option, given in (("--value-model", args.value_model),
                              ("--calibration-deals", args.calibration_deals),
                              ("--rollouts", args.rollouts)):
            if given is not None and value != aivat.FIT:
                raise ValueError(f"{option} applies to --variance-reduction fit only; give "
                                 f"--variance-reduction fit, or leave {option} out")
        batch, batch_size = _batch_options(args.batch, args.batch_size)
        if batch is True and args.record is not None:
            raise ValueError("--batch on cannot write --record (game records are written by "
                             "the per-game path); use --batch auto or off")
        plans = [plan_evaluation(group, config, args.deals, seed=args.seed,
                                 workers=args.workers, single_round=args.single_round,
                                 variance_reduction=value,
                                 batch=batch if args.record is None else False,
                                 batch_size=batch_size, value_model=args.value_model,
                                 calibration_deals=args.calibration_deals,
                                 rollouts=args.rollouts)
                 for group in groups]
        if args.record is not None:  # made last: a refused command leaves no folder
            folder = prepare_record_folder(args.record)
            plans = [dataclasses.replace(plan, record=folder if names is None
                                         else prepare_record_folder(folder / name))
                     for plan, name in zip(plans, names or [None])]
    except (ValueError, OSError) as err:  # OSError: e.g. a folder that cannot be made
        fail(err, 2)
    results = []
    for plan, paths in zip(plans, outputs):
        started = time.perf_counter()
        try:
            result = run_evaluation(plan, progress=not args.no_progress)
        except (PolicyError, WorkerDiedError) as err:  # a policy failed during play
            fail(err, 1)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise SystemExit(130) from None
        elapsed = time.perf_counter() - started
        table = write_report(result, paths)
        if len(plans) > 1:
            print(f"## {plan.labels[0]} vs {', '.join(plan.labels[1:])}\n")
        print(table)
        print(_headline(result))
        if "variance_reduction" in result:
            print(_corrected_headline(result))
        print(f"{result['games']} games ({result['play']}) in {elapsed:.1f} s with "
              f"{args.workers} worker(s); "
              f"wrote {', '.join(map(str, paths))}"
              + (f"; game records in {plan.record}/" if plan.record is not None else ""))
        if len(plans) > 1:
            print()
        results.append(result)
    return results[0] if len(results) == 1 else results
