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
* Decisions with exactly one legal action are taken without asking the policy (the outcome is the
  same and it saves most of the time); every other action is checked against the engine's mask
  and an illegal one raises `IllegalPolicyActionError` naming the policy. Policies with the
  mask-only fast path (`act_bits`, `cf_env.policies`) get the legal bitset and no observation:
  the same choices, without building the observation.
* **records** — with `record=FOLDER` every game is saved as its own game record
  (`cf_env.record`, `deal<NNNN>-rot<k>.json`), which `python -m cf_env.replay` replays: the deal's
  engine seed, every action, the result and the policy at each seat (`players`).

The CLI checks everything the user gave (config, specs, by building each policy once, the output
and record paths, by opening them for writing) before the first game; a problem there prints one
``error:`` line and exits 2. An illegal action from a policy during play prints one ``error:``
line and exits 1. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import math
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

from cf_env.agents.policies import Policy, legal_fast_path, load_policy
from cf_env.core.actions import describe
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from cf_env.viz.record import engine_actions, write_record

from .stats import fractional_ranks, mean_ci

BLOCK_DEALS = 8  # deals per work unit; fixed so that results never depend on `workers`
METRICS = ("win_rate", "round_score", "game_total", "rank")
METRIC_DOCS = {
    "win_rate": "share of games won (R13; a shared win is split), per seat held",
    "round_score": "mean points left in hand per round (R12; lower is better)",
    "game_total": "mean game total (sum of round points; lower is better)",
    "rank": "mean finishing rank, 1 = best (R13 order; tied seats share ranks)",
}

PolicyItem = str | Callable[..., Policy]


class IllegalPolicyActionError(ValueError):
    """A policy returned an action that is malformed or not legal in the position it was given."""


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


def _checked_action(action: object, mask: np.ndarray, engine: Engine, label: str, seat: int) -> int:
    legal = np.flatnonzero(mask)
    if isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
        action = action[()]  # what SB3's predict() returns for one observation
    ok = isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))
    if ok and 0 <= int(action) < mask.size and mask[int(action)]:
        return int(action)
    tables = engine.tables
    what = describe(tables, int(action)) if ok and 0 <= int(action) < mask.size else "invalid"
    named = ", ".join(f"{a} ({describe(tables, int(a))})" for a in legal)
    raise IllegalPolicyActionError(
        f"policy {label!r} at seat {seat} returned illegal action {action!r} ({what}); "
        f"legal actions: {named}"
    )


def play_game(
    engine: Engine,
    encoder: Encoder,
    seat_policies: Sequence[Policy],
    seat_labels: Sequence[str],
    engine_seed: int,
) -> Engine:
    """Play one game from `engine.reset(engine_seed)`; returns the finished engine."""
    engine.reset(engine_seed)
    for policy in seat_policies:
        reset = getattr(policy, "reset", None)
        if callable(reset):
            reset()
    fast = [legal_fast_path(policy) for policy in seat_policies]
    while not engine.game_over:
        legal = engine.legal_bits()
        seat = engine.current
        if not legal & (legal - 1):  # forced: one legal action
            action = legal.bit_length() - 1
        elif fast[seat] is not None:
            raw = fast[seat](legal)
            if type(raw) is int and raw >= 0 and legal >> raw & 1:
                action = raw
            else:
                mask = engine.legal_action_mask()
                action = _checked_action(raw, mask, engine, seat_labels[seat], seat)
        else:
            mask = engine.legal_action_mask()
            observation = {"observation": encoder.observe(engine, seat), "action_mask": mask}
            raw = seat_policies[seat].act(observation)
            action = _checked_action(raw, mask, engine, seat_labels[seat], seat)
        engine.step(action)
    return engine


def _play_block(job: tuple) -> list[dict]:
    """Play deals [start, stop) of block `block` with every rotation. Runs in a worker."""
    items, config_dict, seed, block, start, stop, record = job
    config = ChickenFootConfig.from_dict(config_dict)
    n = config.num_players
    owners = lineup(len(items), n)
    labels = _unique_labels(items)
    policies = [_build(items[i], config, policy_seed(seed, block, j)) for j, i in enumerate(owners)]
    engine, encoder = Engine(config, seed=0), Encoder(config)
    results = []
    for deal in range(start, stop):
        engine_seed = deal_seed(seed, deal)
        games = []
        for rotation in range(n):
            slots = rotation_seats(n, rotation)
            seat_policies = [policies[j] for j in slots]
            seat_labels = [labels[owners[j]] for j in slots]
            play_game(engine, encoder, seat_policies, seat_labels, engine_seed)
            game = {"slots": slots, "scores": [list(s) for s in engine.scores],
                    "winners": list(engine.winners)}
            if record:  # what a game record needs beyond the deal's seed (cf_env.record)
                game["actions"] = engine_actions(engine)
                game["players"] = seat_labels
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


# --------------------------------------------------------------------------- scoring one game
def _seat_keys(config: ChickenFootConfig, scores: list[list[int]]) -> list[tuple]:
    """Sort keys per seat in R13 order (lower is better)."""
    keys = []
    for rows in scores:
        total = sum(rows)
        if config.tie_break == "r13":
            nonzero = min((s for s in rows if s), default=math.inf)
            keys.append((total, -rows.count(0), nonzero))
        else:
            keys.append((total,))
    return keys


def _game_values(config: ChickenFootConfig, game: dict) -> dict[str, list[float]]:
    scores, winners = game["scores"], game["winners"]
    n = len(scores)
    totals = [float(sum(rows)) for rows in scores]
    return {
        "win_rate": [1.0 / len(winners) if seat in winners else 0.0 for seat in range(n)],
        "round_score": [totals[seat] / len(scores[seat]) for seat in range(n)],
        "game_total": totals,
        "rank": fractional_ranks(_seat_keys(config, scores)),
    }


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
                    values = _game_values(cfg, game)
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
    ratings = _ratings(labels, owners, games_in_order)
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


def _ratings(labels: list[str], owners: list[int], games: list[tuple[int, dict]]) -> list[dict]:
    """OpenSkill Plackett-Luce ratings over every game, in deal order (deterministic).

    Every seat is a separate entrant ranked by its R13 rank; a policy holding several seats
    enters with its rating on each and then takes the mean of its seats' updated mu and sigma.
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=label) for label in labels]
    for _, game in games:
        seats = [owners[slot] for slot in game["slots"]]
        updated = model.rate([[ratings[i]] for i in seats], ranks=list(game["rank"]))
        for i in set(seats):
            mine = [team[0] for team, owner in zip(updated, seats) if owner == i]
            ratings[i] = model.rating(
                mu=sum(r.mu for r in mine) / len(mine),
                sigma=sum(r.sigma for r in mine) / len(mine),
                name=labels[i],
            )
    return [
        {"name": label, "mu": r.mu, "sigma": r.sigma, "ordinal": r.ordinal()}
        for label, r in zip(labels, ratings)
    ]


# --------------------------------------------------------------------------- reporting
def _fmt(ci: dict, digits: int, percent: bool = False) -> str:
    scale = 100.0 if percent else 1.0
    unit = "%" if percent else ""
    return (
        f"{ci['mean'] * scale:.{digits}f}{unit} "
        f"[{ci['ci_low'] * scale:.{digits}f}, {ci['ci_high'] * scale:.{digits}f}]"
    )


def format_markdown(result: dict) -> str:
    """The result as Markdown tables: per policy, then the agent's differences."""
    cfg, single = result["config"], result["single_round"]
    what = "single rounds" if single else f"full games of {cfg['num_rounds']} rounds"
    lines = [
        f"{cfg['num_players']} players, double-{cfg['max_pips']}, {what}; "
        f"{result['deals']} duplicate deals × {cfg['num_players']} rotations = "
        f"{result['games']} games; seed {result['seed']}. 95% CI in brackets.",
        "",
    ]
    head = "| policy | seats | win rate | round score | "
    head += "" if single else "game total | "
    head += "rank | rating μ ± σ |"
    lines += [head, "|" + " --- |" * (6 if single else 7)]
    for p in result["policies"]:
        row = f"| {p['name']} | {p['seats']} | {_fmt(p['win_rate'], 1, True)} | "
        row += f"{_fmt(p['round_score'], 2)} | "
        row += "" if single else f"{_fmt(p['game_total'], 1)} | "
        row += f"{_fmt(p['rank'], 2)} | {p['rating']['mu']:.1f} ± {p['rating']['sigma']:.1f} |"
        lines.append(row)
    lines += ["", "| agent − opponent | win rate | round score | " + ("" if single else "game total | ")
              + "rank |", "|" + " --- |" * (4 if single else 5)]
    for d in result["differences"]:
        row = f"| {d['agent']} − {d['opponent']} | {_fmt(d['win_rate'], 1, True)} | "
        row += f"{_fmt(d['round_score'], 2)} | "
        row += "" if single else f"{_fmt(d['game_total'], 1)} | "
        row += f"{_fmt(d['rank'], 2)} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def plot(result: dict, path: str | Path) -> None:
    """Win rate and mean round score per policy with their 95% intervals, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [p["name"] for p in result["policies"]]
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(4 + 1.6 * len(names), 4))
    for ax, metric, title, scale in (
        (axes[0], "win_rate", "win rate (%)", 100.0),
        (axes[1], "round_score", "mean round score (lower is better)", 1.0),
    ):
        cis = [p[metric] for p in result["policies"]]
        means = np.array([c["mean"] for c in cis]) * scale
        err = np.array([[c["mean"] - c["ci_low"], c["ci_high"] - c["mean"]] for c in cis]).T * scale
        ax.bar(x, means, yerr=err, capsize=6, color="tab:blue", alpha=0.8)
        ax.set_xticks(x, names, rotation=20, ha="right")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].axhline(100.0 / result["config"]["num_players"], color="grey", ls="--", lw=1,
                    label="fair share")
    axes[0].legend(loc="best")
    cfg = result["config"]
    what = "single rounds" if result["single_round"] else "full games"
    fig.suptitle(f"{cfg['num_players']}p double-{cfg['max_pips']}, {what}, "
                 f"{result['deals']} duplicate deals (95% CI)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- CLI
OUTPUT_SUFFIXES = (".json", ".md", ".png")


def output_paths(out: str | Path) -> tuple[Path, Path, Path]:
    """The JSON, Markdown and PNG files that `--out` names: the path less a .json/.md/.png suffix,
    plus each of those suffixes. `results/x`, `results/x.json` and `results/x.md` all give
    results/x.json, results/x.md and results/x.png; any other suffix is part of the name
    (`eval-v1.2` gives eval-v1.2.json, ...), so no output ever overwrites another."""
    path = Path(out)
    if path.name in ("", ".", ".."):
        raise ValueError(f"--out needs a file name, e.g. results/eval.json; got {str(out)!r}")
    if path.suffix.lower() in OUTPUT_SUFFIXES:
        path = path.with_suffix("")
    json_path, md_path, png_path = (path.with_name(path.name + s) for s in OUTPUT_SUFFIXES)
    return json_path, md_path, png_path


def check_writable(paths: Sequence[Path]) -> None:
    """Open each output for writing now, so that a bad path fails before the games, not after.

    Appending writes nothing to an existing file, and a file made only for the check is removed.
    """
    for path in paths:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            existed = path.exists()
            with open(path, "a"):
                pass
            if not existed:
                path.unlink()
        except OSError as err:
            raise ValueError(f"cannot write {str(path)!r}: {err.strerror or err}") from err


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
    table = format_markdown(result)
    json_path, md_path, png_path = outputs
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    md_path.write_text(table)
    plot(result, png_path)
    print(table)
    print(f"{result['games']} games in {elapsed:.1f} s with {args.workers} worker(s); "
          f"wrote {json_path}, {md_path}, {png_path}"
          + (f"; game records in {plan.record}/" if plan.record is not None else ""))
    return result


if __name__ == "__main__":
    main()
