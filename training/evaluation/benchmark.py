"""`python -m training.benchmark <agent spec>`: "Chicken Foot benchmark v1", a fixed, versioned
evaluation protocol whose score card can be cited.

A **protocol** (`Protocol`) is data: a version string and a tuple of rows (`Row`), each a table
(players, double-N set, the default rules otherwise), a unit (single rounds or full games of N+1
rounds, R4), the opponent on every other seat, the number of duplicate deals and the master seed
of those deals. Every row is played by `training.evaluation.evaluate` exactly as the
`python -m training.evaluate` command plays it: duplicate deals with seat rotation, 95%
intervals over deals (the rotation group is the unit). `BENCHMARK_V1` is the published protocol;
docs/benchmark.md says what it means.

* **Versions never change.** `REGISTERED` maps each published version to the sha256 of its
  canonical definition (`Protocol.definition`: the rows with every rule of their config spelled
  out, the opponents with the digests of their checkpoints, deals and seeds, as sorted compact
  JSON). `check_registered` refuses a protocol whose definition no longer hashes to its
  version's digest: a changed protocol needs a new version. An opponent that plays a checkpoint
  is pinned by digest (`Row.opponent_sha256`), so replacing that checkpoint is refused too.
* **Rows fit the agent's table.** A spec that plays a checkpoint (`ppo:`, `guided:`, ...) plays
  only the game its card says it was trained for (`cf_env.agents.checkpoint.check_compatible`):
  it gets the rows of that table and the others are listed as skipped; a bot fits every row. An
  agent that fits no row is refused, naming its table and the protocol's.
* **The score card** (`run_benchmark`) is a JSON dict: the protocol version and digest, the
  agent's spec and digest (`agent_digest`: sha256 of policy.npz + card.json for a checkpoint,
  the spec string for a bot), per row the agent's win rate and its **points margin** (the agent's
  mean round score minus the opponents' mean, per deal, from `evaluate`'s differences: negative
  is better, R12 points are bad) with 95% intervals, the command that reproduces it and the
  package versions. It holds nothing that depends on the machine, the workers or the time, so
  the same agent gives the same card byte for byte; the time taken goes to a separate
  `<name>.run.json`. The card is written as `<name>.json`, `<name>.md` (a table, includable in
  a docs page) and `<name>.png` (win rate per row with its interval and the row's parity).

Everything is checked before the first game (`plan_benchmark`): the protocol's registration, the
agent (built once per row), the pinned opponents, the output paths. A problem there prints one
``error:`` line and exits 2 (as `training.evaluate` does); a policy that fails during play exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cf_env.agents.checkpoint import (
    CheckpointError,
    CheckpointMismatchError,
    check_compatible,
    read_card,
    resolve_checkpoint,
)
from cf_env.agents.policies import spec_checkpoint
from cf_env.core import atomic
from cf_env.core.config import ChickenFootConfig
from cf_env.tools.cli import HelpFormatter, limit_threads
from training.artifacts.provenance import package_versions
from training.evaluation.evaluate import (
    EvaluationPlan,
    PolicyError,
    WorkerDiedError,
    check_writable,
    fail,
    output_paths,
    plan_evaluation,
    run_evaluation,
)

REPOSITORY = Path(__file__).resolve().parents[2]  # where the protocol's opponent checkpoints live
UNITS = {"round": "single rounds", "game": "full games"}
PACKAGES = ("chickenfoot", "numpy")  # the versions a card records (beside Python's)


# --------------------------------------------------------------------------- the protocol
def card_name(spec: str) -> str:
    """A file-name part for a spec: a checkpoint's folder name (with the spec's kind and
    budget unless it is `ppo:`), else the spec itself ("heuristic", "ismcts-200")."""
    path = spec_checkpoint(spec)
    if path:
        kind, _, arg = spec.partition(":")
        rest = arg[len(path):].lstrip(":") if arg.startswith(path) else ""
        name = Path(path.rstrip("/")).name
        spec = name if kind == "ppo" else "-".join(part for part in (kind, name, rest) if part)
    return re.sub(r"[^A-Za-z0-9._=+-]+", "-", spec).strip("-.") or "agent"


@dataclass(frozen=True)
class Row:
    """One line of a protocol: the agent on one seat, `opponent` on every other seat."""

    num_players: int
    """Players at the table (R2); the other rules are `ChickenFootConfig`'s defaults."""
    max_pips: int
    """The double-N set (R1)."""
    unit: str
    """"round": a deal is one round's shuffle; "game": a deal is a full game of N+1 rounds (R4)."""
    opponent: str
    """The policy spec on every other seat. A checkpoint path is relative to the repository."""
    deals: int
    """Duplicate deals, each replayed with the seats rotated `num_players` times."""
    seed: int
    """The master seed of the deals and of the policies' own randomness (`evaluate`)."""
    opponent_sha256: str | None = None
    """For an opponent that plays a checkpoint: `agent_digest` of it, which it must still have."""

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"row unit must be one of {sorted(UNITS)}; got {self.unit!r}")
        for name, least in (("num_players", 2), ("max_pips", 1), ("deals", 2), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"row {name} must be an int >= {least}; got {value!r}")
        if not isinstance(self.opponent, str) or not self.opponent:
            raise ValueError(f"row opponent must be a policy spec string; got {self.opponent!r}")
        if (spec_checkpoint(self.opponent) is None) != (self.opponent_sha256 is None):
            raise ValueError(f"row opponent {self.opponent!r}: opponent_sha256 is given exactly "
                             "when the opponent plays a checkpoint (its agent_digest)")
        self.config()  # the rules must be a valid table

    @property
    def single_round(self) -> bool:
        return self.unit == "round"

    @property
    def table(self) -> str:
        return f"{self.num_players}p-d{self.max_pips}"

    @property
    def name(self) -> str:
        """"4p-d9-rounds-vs-heuristic": table, unit and opponent (its checkpoint's folder)."""
        return f"{self.table}-{self.unit}s-vs-{card_name(self.opponent)}"

    def config(self) -> ChickenFootConfig:
        """The rules the row plays (a single round is a game of one round, as `evaluate` plays it)."""
        config = ChickenFootConfig(num_players=self.num_players, max_pips=self.max_pips)
        return config.replace(num_rounds=1) if self.single_round else config

    def definition(self) -> dict:
        return {
            "name": self.name,
            "rules": self.config().to_dict(),
            "unit": self.unit,
            "lineup": {"agent": 1, self.opponent: self.num_players - 1},
            "opponent_sha256": self.opponent_sha256,
            "deals": self.deals,
            "seed": self.seed,
            "method": "training.evaluation.evaluate: duplicate deals with seat rotation, 95% "
                      "intervals over deals",
        }


@dataclass(frozen=True)
class Protocol:
    """A named, versioned list of rows; `definition` is what its digest covers."""

    version: str
    rows: tuple[Row, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.version, str) or not self.version.strip():
            raise ValueError(f"protocol version must be a non-empty string; got {self.version!r}")
        if not self.rows or not all(isinstance(row, Row) for row in self.rows):
            raise ValueError("a protocol needs at least one Row")
        names = [row.name for row in self.rows]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"protocol {self.version!r} has rows named twice: {twice}")

    def definition(self) -> dict:
        return {"version": self.version, "rows": [row.definition() for row in self.rows]}

    def digest(self) -> str:
        """sha256 of the canonical definition (sorted, compact JSON)."""
        text = json.dumps(self.definition(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def tables(self) -> list[str]:
        return list(dict.fromkeys(f"{row.num_players} players double-{row.max_pips}"
                                  for row in self.rows))


SELFPLAY_4P_D9 = "ppo:checkpoints/selfplay-4p-d9"  # the shipped agents the protocol plays against
SELFPLAY_2P_D6 = "ppo:checkpoints/selfplay-2p-d6"
SELFPLAY_DIGESTS = {  # their agent_digest: the protocol is defined against these files
    SELFPLAY_4P_D9: "1d2b6b937676bb11a3665ca95c36f04c22b6ec92a054389bafd09e1081aac07a",
    SELFPLAY_2P_D6: "c44eb7232484815d909efc0d3a9534c42e1554653264b1f060b4213004a7592c",
}


def _table(players: int, pips: int, unit: str, deals: int, seed: int, selfplay: str) -> list[Row]:
    """The four lineups of one table: random, greedy, heuristic, the shipped self-play agent."""
    return [Row(players, pips, unit, opponent, deals, seed, SELFPLAY_DIGESTS.get(opponent))
            for opponent in ("random", "greedy", "heuristic", selfplay)]


# Seeds 101..104, one per table and unit: the four lineups of a table play the same deals, and
# none of them is a seed training selects checkpoints on (0) or `training.ship` reports (1).
BENCHMARK_V1 = Protocol(
    version="Chicken Foot benchmark v1",
    rows=tuple(
        _table(4, 9, "round", 3000, 101, SELFPLAY_4P_D9)
        + _table(4, 9, "game", 500, 102, SELFPLAY_4P_D9)
        + _table(2, 6, "round", 2000, 103, SELFPLAY_2P_D6)
        + _table(2, 6, "game", 500, 104, SELFPLAY_2P_D6)
    ),
)

REGISTERED: dict[str, str] = {  # version -> Protocol.digest(); a published entry never changes
    "Chicken Foot benchmark v1": "8a8a64e23432edfd479772eb007905145aaf99e139d7ad44fc72b0c8096da93a",
}

CURRENT = BENCHMARK_V1


class ProtocolChangedError(ValueError):
    """A protocol whose definition is not the one registered for its version."""


def check_registered(protocol: Protocol, registry: Mapping[str, str] = REGISTERED) -> str:
    """The protocol's digest, if it is the one `registry` holds for its version; else
    `ProtocolChangedError` saying what to do."""
    digest = protocol.digest()
    known = registry.get(protocol.version)
    if known is None:
        raise ProtocolChangedError(
            f"protocol {protocol.version!r} is not registered (registered: "
            f"{sorted(registry)}); add {protocol.version!r}: {digest!r} to REGISTERED in "
            "training/evaluation/benchmark.py when it is published")
    if known != digest:
        raise ProtocolChangedError(
            f"protocol {protocol.version!r} was changed without a new version: its definition "
            f"hashes to {digest}, registered {known}. A published version never changes (cards "
            "citing it must stay comparable): undo the change, or give the changed protocol a "
            "new version string and register its digest beside the old one")
    return digest


# --------------------------------------------------------------------------- the agent
def _checkpoint(spec: str, path: str, base: Path | None = None) -> tuple[Path, dict]:
    """The checkpoint folder and card a spec plays, or `ValueError` naming the spec."""
    where = Path(path) if base is None or Path(path).is_absolute() else base / path
    try:
        folder = resolve_checkpoint(where)
        return folder, read_card(folder)
    except (CheckpointError, OSError) as err:
        raise ValueError(f"policy spec {spec!r}: {err}") from err


def agent_digest(spec: str, base: Path | None = None) -> dict:
    """What identifies the policy a spec plays: for a checkpoint, the sha256 of its policy.npz
    followed by its card.json (and value.npz for the specs other than `ppo:` that read it), with
    each file's own sha256; for a bot or user code, the spec string itself."""
    path = spec_checkpoint(spec)
    if path is None:
        return {"spec": spec, "digest": spec}
    folder, _card = _checkpoint(spec, path, base)
    names = ["policy.npz", "card.json"]
    if not spec.startswith("ppo:") and (folder / "value.npz").is_file():
        names.append("value.npz")
    whole, files = hashlib.sha256(), {}
    for name in names:
        one = hashlib.sha256()
        with open(folder / name, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                whole.update(chunk)
                one.update(chunk)
        files[name] = one.hexdigest()
    return {"spec": spec, "digest": whole.hexdigest(), "files": files}


def _describe(config: Mapping) -> str:
    return f"{config['num_players']} players double-{config['max_pips']}"


def fitting_rows(spec: str, protocol: Protocol) -> tuple[list[Row], list[dict]]:
    """(rows the agent plays, [{"row", "why"}] of the rows skipped): a checkpoint plays the rows
    its card allows (`check_compatible`), a bot every row. `ValueError` when no row fits."""
    path = spec_checkpoint(spec)
    if path is None:
        return list(protocol.rows), []
    _folder, card = _checkpoint(spec, path)
    rows, skipped = [], []
    for row in protocol.rows:
        try:
            check_compatible(card, row.config())
        except CheckpointMismatchError as err:
            skipped.append({"row": row.name, "why": str(err)})
        else:
            rows.append(row)
    if not rows:
        trained = ChickenFootConfig.from_dict(card["env_config"]).to_dict()
        raise ValueError(
            f"{spec} fits no row of {protocol.version!r}: its card says it plays "
            f"{_describe(trained)}, and the protocol's tables are "
            f"{', '.join(protocol.tables())} with the default rules ({skipped[0]['why']}); "
            "benchmark an agent trained for one of those tables")
    return rows, skipped


def _opponent_spec(row: Row) -> str:
    """The row's opponent as `evaluate` is given it: a checkpoint path made absolute (it is
    relative to the repository, wherever the command runs), checked against its pinned digest."""
    path = spec_checkpoint(row.opponent)
    if path is None:
        return row.opponent
    digest = agent_digest(row.opponent, REPOSITORY)["digest"]
    if digest != row.opponent_sha256:
        raise ValueError(
            f"row {row.name}: the opponent {row.opponent} (in {REPOSITORY}) now has digest "
            f"{digest}, but the protocol pins {row.opponent_sha256}; the protocol is defined "
            "against that checkpoint: restore it from git, or declare a new protocol version "
            "against the new one")
    absolute = str((REPOSITORY / path).resolve())
    kind, _, arg = row.opponent.partition(":")
    return f"{kind}:{absolute}{arg[len(path):]}"


# --------------------------------------------------------------------------- playing
@dataclass(frozen=True)
class BenchmarkPlan:
    """A checked benchmark (`plan_benchmark`): the rows the agent plays, their evaluations."""

    protocol: Protocol
    protocol_sha256: str
    agent: dict  # agent_digest
    rows: tuple[Row, ...]
    skipped: tuple[dict, ...]
    evaluations: tuple[EvaluationPlan, ...]


def plan_benchmark(spec: str, protocol: Protocol = CURRENT, workers: int = 2,
                   registry: Mapping[str, str] = REGISTERED) -> BenchmarkPlan:
    """Check everything before a game: the protocol's registration, the agent's rows, the
    pinned opponents, and each evaluation (the agent built once per row). `ValueError` says
    what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"the agent is a policy spec string (e.g. heuristic, "
                         f"{SELFPLAY_4P_D9}); got {spec!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int; got {workers!r}")
    digest = check_registered(protocol, registry)
    agent = agent_digest(spec)
    rows, skipped = fitting_rows(spec, protocol)
    evaluations = []
    for row in rows:
        try:
            evaluations.append(plan_evaluation([spec, _opponent_spec(row)], row.config(),
                                               row.deals, seed=row.seed, workers=workers,
                                               single_round=row.single_round))
        except ValueError as err:
            raise ValueError(f"row {row.name}: {err}") from err
    return BenchmarkPlan(protocol, digest, agent, tuple(rows), tuple(skipped), tuple(evaluations))


def _row_entry(row: Row, result: dict) -> dict:
    me, diff = result["policies"][0], result["differences"][0]
    config = ChickenFootConfig(num_players=row.num_players, max_pips=row.max_pips)
    copies = row.num_players - 1
    return {
        "row": row.name,
        "table": f"{row.num_players} players, double-{row.max_pips}",
        "unit": "single round" if row.single_round else f"full game ({config.num_rounds} rounds)",
        "opponents": f"{copies}× {row.opponent}",
        "deals": row.deals,
        "games": result["games"],
        "seed": row.seed,
        "parity": 1.0 / row.num_players,
        "win_rate": me["win_rate"],
        "points_margin": diff["round_score"],
        "round_score": me["round_score"],
        "win_rate_minus_opponent": diff["win_rate"],
    }


def command_line(spec: str) -> str:
    """The command that reproduces a card (workers and output paths change nothing in it)."""
    return f"python -m training.benchmark {shlex.quote(spec)}"


def run_benchmark(plan: BenchmarkPlan, progress: bool = False) -> tuple[dict, dict]:
    """Play a checked benchmark; returns (the score card, the timing: wall and CPU seconds)."""
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    entries, times = [], []
    for number, (row, evaluation) in enumerate(zip(plan.rows, plan.evaluations), 1):
        row_started = time.perf_counter()
        entry = _row_entry(row, run_evaluation(evaluation))
        entries.append(entry)
        times.append({"row": row.name, "wall_s": round(time.perf_counter() - row_started, 2)})
        if progress:
            print(f"[{number}/{len(plan.rows)}] {row.name}: win {_pct(entry['win_rate'])} "
                  f"(parity {entry['parity']:.0%}), points margin "
                  f"{_num(entry['points_margin'])} ({times[-1]['wall_s']:.1f} s)",
                  file=sys.stderr, flush=True)
    card = {
        "benchmark": plan.protocol.version,
        "protocol_sha256": plan.protocol_sha256,
        "agent": plan.agent,
        "rows": entries,
        "skipped": list(plan.skipped),
        "command": command_line(plan.agent["spec"]),
        "packages": package_versions(PACKAGES),
        "method": {
            "deal": "duplicate deals with seat rotation (training.evaluation.evaluate): each deal "
                    "replayed once per seat with the lineup rotated; a single round's shuffle, or "
                    "a whole game's",
            "interval": "95% over deals (the rotation group is the unit): Wilson score for win "
                        "rates, Student-t for the points margin",
            "points_margin": "the agent's mean round score minus the opponents' mean, per deal "
                             "(R12 points left in hand: negative is better)",
            "parity": "1 / players, the win rate of a policy as good as its opponents",
        },
    }
    timing = {
        "benchmark": plan.protocol.version,
        "agent": plan.agent["spec"],
        "workers": plan.evaluations[0].workers if plan.evaluations else None,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(_cpu_seconds() - cpu_started, 1),
        "cpus": os.cpu_count(),
        "load_average_at_start": None if load is None else [round(x, 2) for x in load],
        "rows": times,
    }
    return card, timing


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the evaluation workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# --------------------------------------------------------------------------- the card's files
def _pct(ci: Mapping) -> str:
    return f"{ci['mean']:.1%} [{ci['ci_low']:.1%}, {ci['ci_high']:.1%}]"


def _num(ci: Mapping) -> str:
    def show(x: float) -> str:
        return f"{round(x, 2) + 0.0:+.2f}"  # + 0.0: a rounding error of 0 shows as +0.00, not -0.00

    return f"{show(ci['mean'])} [{show(ci['ci_low'])}, {show(ci['ci_high'])}]"


def format_card(card: Mapping, image: str | None = None) -> str:
    """The score card as Markdown without a title (a docs page can include it): the agent, one
    table row per protocol row, the rows skipped, the command and versions."""
    agent = card["agent"]
    identity = (f"`{agent['digest']}`" if agent["digest"] != agent["spec"]
                else "the spec itself (a bot)")
    packages = ", ".join(f"{k} {v}" for k, v in card["packages"].items())
    lines = [
        f"**{card['benchmark']}** score card of `{agent['spec']}`",
        "",
        f"- agent digest: {identity}",
        f"- protocol digest: `{card['protocol_sha256']}`",
        f"- command: `{card['command']}`",
        f"- packages: {packages}",
        "",
        "| table | unit | opponents | deals | win rate [95% CI] | parity | points margin [95% CI] |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in card["rows"]:
        lines.append(f"| {r['table']} | {r['unit']} | {r['opponents']} | {r['deals']} | "
                     f"{_pct(r['win_rate'])} | {r['parity']:.0%} | {_num(r['points_margin'])} |")
    lines += ["", "Points margin: the agent's mean round score minus its opponents' mean (points "
              "left in hand, R12: negative is better). Intervals are over deals, the rotation "
              "group being the unit."]
    if card["skipped"]:
        lines += ["", "Rows not played (another table than the agent's): "
                  + ", ".join(f"`{s['row']}`" for s in card["skipped"]) + "."]
    if image:
        lines += ["", f"![{card['benchmark']}: win rate per row]({image})"]
    return "\n".join(lines) + "\n"


def plot_card(card: Mapping, path: str | Path) -> None:
    """Win rate per row with its 95% interval (horizontal bars) and each row's parity, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = card["rows"]
    fig, ax = plt.subplots(figsize=(7.5, 1.4 + 0.32 * len(rows)))
    colours: dict[str, str] = {}  # one per table and unit
    for y, r in enumerate(rows):
        colour = colours.setdefault(f"{r['table']}, {r['unit']}", f"C{len(colours)}")
        ci = r["win_rate"]
        low, high = 100 * (ci["mean"] - ci["ci_low"]), 100 * (ci["ci_high"] - ci["mean"])
        ax.barh(y, 100 * ci["mean"], color=colour, alpha=0.8, xerr=[[low], [high]], capsize=3)
        ax.plot([100 * r["parity"]] * 2, [y - 0.45, y + 0.45], color="black", ls="--", lw=1)
    ax.legend(handles=[Patch(color=c, alpha=0.8, label=k) for k, c in colours.items()],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    ax.set_yticks(range(len(rows)), [r["opponents"].split(" ", 1)[1].replace("ppo:checkpoints/",
                                     "") for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("agent win rate (%), 95% CI; dashed: parity (1 / players)")
    ax.grid(axis="x", alpha=0.3)
    agent = card["agent"]["spec"]
    ax.set_title(f"{card['benchmark']}: {agent}", fontsize=10)
    fig.tight_layout()
    with atomic.atomic_path(path) as temporary:
        fig.savefig(temporary, dpi=90, format="png", bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)


def benchmark_paths(out: str | Path) -> tuple[Path, Path, Path, Path]:
    """The card's JSON, Markdown and PNG (`output_paths`), and the timing file `<name>.run.json`."""
    json_path, md_path, png_path = output_paths(out)
    return json_path, md_path, png_path, json_path.with_name(json_path.stem + ".run.json")


def write_card(card: Mapping, timing: Mapping | None, paths: Sequence[Path]) -> None:
    """Write the card's files (each atomically); the timing file only when `timing` is given."""
    json_path, md_path, png_path, run_path = paths
    atomic.write_json(json_path, card)
    atomic.write_text(md_path, format_card(card, png_path.name))
    plot_card(card, png_path)
    if timing is not None:
        atomic.write_json(run_path, timing)


# --------------------------------------------------------------------------- the command
DEFAULT_DIR = "results/benchmark"


def main(argv: list[str] | None = None, *, protocol: Protocol = CURRENT,
         registry: Mapping[str, str] = REGISTERED) -> dict:
    """The command; returns the score card. `protocol` and `registry` are for tests."""
    parser = argparse.ArgumentParser(
        prog="python -m training.benchmark",
        description=f"Play {protocol.version} (docs/benchmark.md) for an agent and write its "
                    "score card: JSON, Markdown and PNG.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("agent", help=f"the policy spec under test, e.g. heuristic or "
                        f"{SELFPLAY_4P_D9}")
    parser.add_argument("--out", default=None,
                        help="output path X.json: writes X.json, X.md, X.png and X.run.json (the "
                        f"time taken); default: {DEFAULT_DIR}/<agent>.json")
    parser.add_argument("--workers", type=int, default=2, help="evaluation worker processes")
    parser.add_argument("--force", action="store_true",
                        help="overwrite output files that exist (without it they are refused)")
    parser.add_argument("--no-progress", action="store_true", help="no line per row on stderr")
    args = parser.parse_args(argv)
    limit_threads()
    try:
        paths = benchmark_paths(args.out or f"{DEFAULT_DIR}/{card_name(args.agent)}")
        existing = [str(p) for p in paths if p.exists()]
        if existing and not args.force:
            raise ValueError(f"{', '.join(existing)} already exist(s); pass --force to overwrite, "
                             "or give another --out (nothing was written)")
        check_writable(paths)
        plan = plan_benchmark(args.agent, protocol, args.workers, registry)
    except (ValueError, OSError) as err:
        fail(err, 2)
    try:
        card, timing = run_benchmark(plan, progress=not args.no_progress)
    except (PolicyError, WorkerDiedError) as err:
        fail(err, 1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    timing["argv"] = ["python", "-m", "training.benchmark", *(sys.argv[1:] if argv is None
                                                              else argv)]
    write_card(card, timing, paths)
    print(format_card(card))
    print(f"{sum(r['games'] for r in card['rows'])} games in {timing['wall_s']:.1f} s "
          f"({timing['cpu_s']:.1f} CPU s) with {args.workers} worker(s); wrote "
          f"{', '.join(map(str, paths))}")
    return card

