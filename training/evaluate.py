"""`python -m training.evaluate`: duplicate-deal evaluation of a policy against opponents.

Luck swamps skill in a four-player domino game, so every sampled **deal** is replayed with the
policies rotated through all seats, each replay dealing exactly the same tiles to each seat
position and drawing the boneyard in the same order (the engine is reset with the deal's seed; its
shuffles do not depend on play). Each policy thus plays every hand. The rotation group of one
deal is the statistical unit: a policy's per-deal value is its mean over the games and seats it
held in that group, and 95% Student-t intervals are computed over deals.

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
  `IllegalPolicyActionError` naming the policy.
* **records** — with `record=FOLDER` every game is saved as its own game record
  (`cf_env.record`, `deal<NNNN>-rot<k>.json`), which `python -m cf_env.replay` replays: the deal's
  engine seed, every action, the result and the policy at each seat (`players`).

This module owns the method (seeds, lineup, rotations, blocks, aggregation over deals) and the
CLI; the metrics, intervals and ratings are `training.stats`'s, the tables, plot and output files
`training.report`'s.

The CLI checks everything the user gave (config, specs, by building each policy once, the output
and record paths, by opening them for writing) before the first game; a problem there prints one
``error:`` line and exits 2. An illegal action from a policy during play prints one ``error:``
line and exits 1. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from cf_env.agents.arena import Arena, IllegalPolicyActionError
from cf_env.agents.policies import Policy, load_policy
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder, SeatView
from cf_env.viz.record import engine_actions, write_record
from training.report import check_writable, format_markdown, output_paths, plot, write_report
from training.stats import METRIC_DOCS, METRICS, game_values, mean_ci, openskill_ratings

# Re-exported: callers import these from here (the CLI's outputs, the error a policy raises).
__all__ = [
    "BLOCK_DEALS",
    "EvaluationPlan",
    "IllegalPolicyActionError",
    "check_writable",
    "deal_seed",
    "evaluate",
    "fail",
    "format_markdown",
    "lineup",
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
    if isinstance(item, str):
        policy = load_policy(item, config, seed)
    else:
        policy = item(config=config, seed=seed)
    if not callable(getattr(policy, "act", None)):
        raise ValueError(f"policy {policy_label(item)!r} built no object with an act() method")
    return policy


def _play_block(job: tuple) -> list[dict]:
    """Play deals [start, stop) of block `block` with every rotation. Runs in a worker."""
    items, config_dict, seed, block, start, stop, record = job
    config = ChickenFootConfig.from_dict(config_dict)
    n = config.num_players
    owners = lineup(len(items), n)
    labels = _unique_labels(items)
    policies = [_build(items[i], config, policy_seed(seed, block, j)) for j, i in enumerate(owners)]
    engine, encoder = Engine(config, seed=0), Encoder(config)
    views = [SeatView(encoder) for _ in range(n)]  # per seat, whoever sits there
    arenas = []  # one per rotation: the policies at their seats
    for rotation in range(n):
        slots = rotation_seats(n, rotation)
        seat_labels = [labels[owners[j]] for j in slots]
        arenas.append(Arena(engine, [policies[j] for j in slots], seat_labels, views=views))
    results = []
    for deal in range(start, stop):
        engine_seed = deal_seed(seed, deal)
        games = []
        for rotation, arena in enumerate(arenas):
            engine.reset(engine_seed)
            arena.reset_policies()
            arena.play()
            game = {"slots": rotation_seats(n, rotation),
                    "scores": [list(s) for s in engine.scores], "winners": list(engine.winners)}
            if record:  # what a game record needs beyond the deal's seed (cf_env.record)
                game["actions"] = engine_actions(engine)
                game["players"] = list(arena.labels)
            games.append(game)
        results.append({"deal": deal, "engine_seed": engine_seed, "games": games})
    return results


def _unique_labels(items: Sequence[PolicyItem]) -> list[str]:
    labels, seen = [], {}
    for item in items:
        label = policy_label(item)
        seen[label] = seen.get(label, 0) + 1
        labels.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return labels


def _run_blocks(jobs: list[tuple], workers: int) -> Iterator[list[dict]]:
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield _play_block(job)
        return
    # "spawn": safe with torch or threads in the parent, and the same on every platform.
    context = multiprocessing.get_context("spawn")
    with context.Pool(min(workers, len(jobs))) as pool:
        yield from pool.imap(_play_block, jobs)


# --------------------------------------------------------------------------- evaluate
@dataclass(frozen=True)
class EvaluationPlan:
    """An evaluation whose inputs were all checked (`plan_evaluation`); `run_evaluation` plays it.

    `config` is the config played (`num_rounds=1` for single rounds); `owners[j]` is the index
    of the policy holding slot j (`lineup`); `labels` are the policies' unique names.
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


def plan_evaluation(
    policies: list[str | Callable[..., Policy]],
    config: ChickenFootConfig,
    deals: int,
    seed: int = 0,
    workers: int = 1,
    single_round: bool = False,
    *,
    record: str | Path | None = None,
) -> EvaluationPlan:
    """Check everything `evaluate` is given before a game is played (see `evaluate`).

    Each policy is built once here, so a bad spec, checkpoint or factory fails now; the record
    folder is created and must be empty and writable. Raises `ValueError` naming the problem.
    """
    if not isinstance(config, ChickenFootConfig):
        raise ValueError(f"config must be a ChickenFootConfig; got {type(config).__name__}")
    if isinstance(deals, bool) or not isinstance(deals, int) or deals < 2:
        raise ValueError(f"deals must be an int >= 2 (intervals are computed over deals); got {deals!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int; got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}")
    items = tuple(policies)
    for item in items:
        if not (isinstance(item, str) and item) and not callable(item):
            raise ValueError(f"each policy is a spec string or a factory; got {item!r}")
    cfg = config.replace(num_rounds=1) if single_round else config
    owners = lineup(len(items), cfg.num_players)
    labels = _unique_labels(items)
    for item in items:
        _build(item, cfg, 0)
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
    folder = None if record is None else prepare_record_folder(record)
    return EvaluationPlan(items, cfg, deals, seed, workers, bool(single_round), tuple(owners),
                          tuple(labels), folder)


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
) -> dict:
    """Evaluate `policies[0]` against `policies[1:]` over `deals` duplicate deals.

    Each item is a policy spec (see `cf_env.policies.load_policy`) or a factory
    `f(config=..., seed=...) -> Policy` (picklable when `workers > 1`). Returns a JSON-serialisable
    dict (see the module docstring and `format_markdown`). `record`, if given, is a folder (new or
    empty) that receives one game record per game (`cf_env.record`, readable by
    `cf_env.record.read_record` and `python -m cf_env.replay`), named by `record_name`: the deal's
    engine seed, every action, the result and the policy at each seat.
    """
    plan = plan_evaluation(policies, config, deals, seed, workers, single_round, record=record)
    return run_evaluation(plan, progress)


def run_evaluation(plan: EvaluationPlan, progress: bool = False) -> dict:
    """Play a checked evaluation (`plan_evaluation`) and return the result dict (`evaluate`)."""
    items, cfg, deals, seed = plan.items, plan.config, plan.deals, plan.seed
    owners, labels, single_round = list(plan.owners), list(plan.labels), plan.single_round
    n = cfg.num_players
    jobs = []
    for block, start in enumerate(range(0, deals, BLOCK_DEALS)):
        stop = min(start + BLOCK_DEALS, deals)
        jobs.append((items, cfg.to_dict(), seed, block, start, stop, plan.record is not None))

    per_deal = {m: np.zeros((deals, len(items))) for m in METRICS}
    games_in_order: list[tuple[int, dict]] = []
    bar = _progress_bar(deals, progress)
    try:
        for block_results in _run_blocks(jobs, plan.workers):
            for deal_result in block_results:
                d = deal_result["deal"]
                sums = {m: np.zeros(len(items)) for m in METRICS}
                held = np.zeros(len(items))
                for rotation, game in enumerate(deal_result["games"]):
                    values = game_values(cfg, game)
                    for seat, slot in enumerate(game["slots"]):
                        owner = owners[slot]
                        held[owner] += 1
                        for m in METRICS:
                            sums[m][owner] += values[m][seat]
                    games_in_order.append((rotation, {**game, "rank": values["rank"]}))
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
                    per_deal[m][d] = sums[m] / held
            if bar is not None:
                bar.update(len(block_results))
    finally:
        if bar is not None:
            bar.close()

    result_policies = []
    for i, label in enumerate(labels):
        entry = {"name": label, "seats": owners.count(i)}
        for m in METRICS:
            entry[m] = mean_ci(per_deal[m][:, i])
        result_policies.append(entry)
    differences = []
    for j in range(1, len(items)):
        diff = {"agent": labels[0], "opponent": labels[j]}
        for m in METRICS:
            diff[m] = mean_ci(per_deal[m][:, 0] - per_deal[m][:, j])
        differences.append(diff)
    ratings = openskill_ratings(labels, owners, games_in_order)
    for entry, rating in zip(result_policies, ratings):
        entry["rating"] = {k: rating[k] for k in ("mu", "sigma", "ordinal")}
    return {
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
            "interval": "95% Student-t over deals (the rotation group is the unit)",
            "differences": "agent minus opponent, per deal",
            "rating": "OpenSkill Plackett-Luce, every game in deal order; "
            "a policy on several seats is ranked by its mean seat rank",
            "metrics": METRIC_DOCS,
        },
    }


def _progress_bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="deal", desc="evaluate", file=sys.stderr)


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
        return text


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate",
        description="Evaluate a policy against opponents over duplicate deals with seat rotation.",
    )
    parser.add_argument("--agent", required=True, help="policy spec under test, e.g. heuristic")
    parser.add_argument("--opponents", required=True,
                        help="comma-separated opponent specs, e.g. greedy,random "
                        "(repeated cyclically to fill the seats)")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--max-pips", type=int, default=9)
    rounds = parser.add_mutually_exclusive_group()
    rounds.add_argument("--rounds", type=int, default=None, help="rounds per game (default N+1)")
    rounds.add_argument("--single-round", action="store_true", help="evaluate single rounds")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="any other ChickenFootConfig field, e.g. --set double_blank_value=25")
    parser.add_argument("--deals", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", default="results/eval.json",
                        help="output path X.json: writes X.json, X.md and X.png (X is the path "
                        "less a .json/.md/.png suffix)")
    parser.add_argument("--record", default=None, metavar="FOLDER",
                        help="save every game as a game record (cf_env.record, for "
                        "python -m cf_env.replay) in this new or empty folder")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    # Everything the user gave is checked here, before the first game (exit 2 on a problem).
    try:
        fields = {"max_pips": args.max_pips, "num_players": args.players, "num_rounds": args.rounds}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"--set takes FIELD=VALUE (a ChickenFootConfig field); got {item!r}")
            fields[key.strip()] = _parse_value(value.strip())
        config = ChickenFootConfig.from_dict(fields)
        opponents = [s.strip() for s in args.opponents.split(",") if s.strip()]
        outputs = output_paths(args.out)
        check_writable(outputs)
        plan = plan_evaluation([args.agent, *opponents], config, args.deals, seed=args.seed,
                               workers=args.workers, single_round=args.single_round,
                               record=args.record)
    except (ValueError, OSError) as err:  # OSError: e.g. a ppo: checkpoint that is not there
        fail(err, 2)
    started = time.perf_counter()
    try:
        result = run_evaluation(plan, progress=not args.no_progress)
    except IllegalPolicyActionError as err:
        fail(err, 1)
    elapsed = time.perf_counter() - started
    table = write_report(result, outputs)
    json_path, md_path, png_path = outputs
    print(table)
    print(f"{result['games']} games in {elapsed:.1f} s with {args.workers} worker(s); "
          f"wrote {json_path}, {md_path}, {png_path}"
          + (f"; game records in {plan.record}/" if plan.record is not None else ""))
    return result


if __name__ == "__main__":
    main()
