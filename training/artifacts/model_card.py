"""A shipped agent's model card, `checkpoints/<name>/card.md`: written from its `card.json` and the
published results about it, with a Hugging Face model-card header.

`python -m training.model_card checkpoints/<name> [...]` rewrites each card (atomically;
no network use); `training.ship` writes the same card when it ships an agent. A card is:

* **the header**: YAML front matter between `---` lines, as the Hugging Face Hub reads it
  (`library_name`, `license`, `tags`, `pipeline_tag`, and a `model-index` whose results are the
  agent's "Chicken Foot benchmark v1" rows: task reinforcement-learning, dataset the benchmark,
  the row as its config, metrics the win rate and the points margin);
* **the body**, from `card.json` alone (`card_body`): the learner, the training command, how to
  play it, the files, and the evaluation table `training.ship` measured;
* then, for each of these files that exists, a section: the benchmark score card
  (`docs/benchmark/<name>.json`, written by `python -m training.benchmark ppo:checkpoints/<name>`
  --out docs/benchmark/<name>), the leaderboard rating (`docs/leaderboard.json`, by
  `python -m training.leaderboard`), the exploitability probe (`docs/exploit/<name>.json`, by
  `python -m training.exploit`) and a replay (`replay.gif` beside the card, made by `--gif`:
  `make_replay_gif`). A result is about the weights it was measured with: one whose recorded
  `policy.npz` digest is not the card's `policy_sha256` is left out and reported (`render`'s
  notes), never shown beside weights it did not measure.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cf_env.agents.checkpoint import read_card
from cf_env.agents.policies import spec_checkpoint
from cf_env.core import atomic
from cf_env.core.config import ChickenFootConfig
from cf_env.tools.cli import HelpFormatter, limit_threads
from training.evaluation.benchmark import format_card

REPOSITORY = Path(__file__).resolve().parents[2]
DOCS = REPOSITORY / "docs"  # where the published results live
REPLAY_FILE = "replay.gif"
MAX_GIF_BYTES = 1_000_000
LEARNERS = {  # the card's `algo` (cards before the self-play trainer have none: MaskablePPO)
    "maskable_ppo": "Masked PPO (sb3-contrib MaskablePPO, one learning seat per game)",
    "selfplay": "Self-play masked PPO (training.selfplay: every seat learns, privileged critic)",
}


def _pct(ci: Mapping) -> str:
    return f"{ci['mean']:.1%} [{ci['ci_low']:.1%}, {ci['ci_high']:.1%}]"


# --------------------------------------------------------------------------- the body
def card_body(card: Mapping, dest: Path) -> str:
    """The card's Markdown from `card.json` alone: what was trained, how, and its evaluation."""
    t, e = card["training"], card["evaluation"]
    cfg = card["env_config"]
    minutes = "an unrecorded time" if t["wall_time_s"] is None else f"{t['wall_time_s'] / 60:.0f} min"
    lines = [
        f"# Shipped agent `{dest.name}`",
        "",
        f"{LEARNERS.get(card.get('algo', 'maskable_ppo'), card.get('algo'))}, MLP "
        f"{card['net_arch']} ({card['activation']}), trained for "
        f"**{t['steps']:,} learner steps** in **{minutes}** on {t['hardware']}.",
        "",
        f"- game: {cfg['num_players']} players, double-{cfg['max_pips']}, {cfg['num_rounds']} "
        f"rounds (default rules); observation version {card['observation_version']}",
        "- command" + ("s, in order" if len(t["commands"]) > 1 else "") + ": "
        + "; then ".join(f"`{c}`" for c in t["commands"])
        + f" (run `{t['run']}`, checkpoint {t['checkpoint']})",
        f"- play it: `ppo:{dest}` in any policy spec, e.g. `python -m training.evaluate --agent "
        f"ppo:{dest} --opponents greedy --single-round`",
        "- files: `card.json` + `policy.npz` (weights only, loaded without pickle; see README "
        "\"Security: loading checkpoints\"). No `model.zip`: to resume training, use the run "
        "directory's own checkpoint",
    ]
    if "value" in card:
        reward = card["value"]["reward"]
        lines.append(
            f"- value head: `value.npz`, the privileged critic (MLP {card['value']['net_arch']}; "
            f"reads the observation and the hidden tiles; predicts the {reward['reward_mode']} "
            f"round reward plus a win bonus of {reward['win_bonus']:g}), for search: "
            f"`lookahead:{dest}`")
        fit = card["value"].get("fit")
        if fit is not None:
            lines.append(f"  - fitted by policy evaluation of this actor in pure self-play "
                         f"({fit['decisions']:,} decisions, from {fit['init']}): "
                         f"`{fit.get('command', 'python -m training.fit_value')}`")
    lines += [
        "",
        f"## Evaluation ({e['deals']} duplicate deals, seed {e['seed']}, parity "
        f"{1 / cfg['num_players']:.0%})",
        "",
        "| opponents | unit | win rate [95% CI] | agent − opponent win rate | mean round score |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in e["results"]:
        unit = "single round" if r["single_round"] else "full game"
        lines.append(f"| {r['opponents']} | {unit} | {_pct(r['win_rate'])} | "
                     f"{_pct(r['win_rate_minus_opponent'])} | {r['round_score']['mean']:.2f} |")
    lines += ["", "![learning curve](learning_curve.png)", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the results
@dataclass
class Results:
    """The published results found for one agent (None: no file, or left out: `notes` say why)."""

    benchmark: dict | None = None
    leaderboard: dict | None = None  # {"entry", "place", "entries", "config"}
    exploit: dict | None = None
    replay: str | None = None  # the GIF's file name, beside card.md
    replay_info: dict = field(default_factory=dict)  # replay.gif.json: its command, its weights
    notes: list[str] = field(default_factory=list)


def _read_json(path: Path, notes: list[str]) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        notes.append(f"{path}: left out, not readable JSON ({err})")
        return None
    if not isinstance(data, dict):
        notes.append(f"{path}: left out, not a JSON object")
        return None
    return data


def _plays(spec: object, dest: Path) -> bool:
    """Whether a spec is `ppo:` of the agent at `dest` (by the checkpoint folder's name)."""
    if not isinstance(spec, str) or not spec.startswith("ppo:"):
        return False
    path = spec_checkpoint(spec)
    return bool(path) and Path(path.rstrip("/")).name == dest.name


def find_results(card: Mapping, dest: Path, docs: Path = DOCS) -> Results:
    """The score card, leaderboard entry, exploit probe and replay of the agent at `dest`."""
    found = Results()
    weights = card["policy_sha256"]
    name = dest.name

    path = docs / "benchmark" / f"{name}.json"
    score = _read_json(path, found.notes)
    if score is not None:
        measured = score.get("agent", {}).get("files", {}).get("policy.npz")
        if not _plays(score.get("agent", {}).get("spec"), dest) or measured != weights:
            found.notes.append(f"{path}: left out, it measured other weights (policy.npz "
                               f"{str(measured)[:12]}…, this agent's {weights[:12]}…); rerun "
                               f"{score.get('command', 'python -m training.benchmark')}")
        elif not score.get("rows"):
            found.notes.append(f"{path}: left out, it has no rows")
        else:
            found.benchmark = score

    path = docs / "leaderboard.json"
    board = _read_json(path, found.notes)
    entries = board.get("entries") if board is not None else None
    if isinstance(entries, list):
        mine = [e for e in entries if isinstance(e, dict) and _plays(e.get("spec"), dest)]
        if mine and mine[0].get("checkpoint_sha256") not in (None, weights):
            found.notes.append(f"{path}: left out, its entry {mine[0]['spec']} rated other "
                               "weights; re-rate it (python -m training.leaderboard)")
        elif mine and isinstance(mine[0].get("rating"), dict):
            order = sorted(entries, key=lambda e: -e["rating"]["mu"])
            found.leaderboard = {"entry": mine[0], "place": order.index(mine[0]) + 1,
                                 "entries": len(entries), "config": board.get("config", {})}

    path = docs / "exploit" / f"{name}.json"
    probe = _read_json(path, found.notes)
    if probe is not None:
        if not _plays(probe.get("target"), dest) or not isinstance(probe.get("win_rate"), dict):
            found.notes.append(f"{path}: left out, not a probe of ppo:{dest} with a win rate")
        else:
            found.exploit = probe

    if (dest / REPLAY_FILE).is_file():
        info = _read_json(dest / f"{REPLAY_FILE}.json", found.notes) or {}
        if info.get("policy_sha256") not in (None, weights):
            found.notes.append(f"{dest / REPLAY_FILE}: left out, it shows other weights; remake "
                               "it (--gif)")
        else:
            found.replay, found.replay_info = REPLAY_FILE, info
    return found


# --------------------------------------------------------------------------- the header
def _round(x: float) -> float:
    return round(float(x), 4)


def front_matter(card: Mapping, dest: Path, results: Results) -> dict:
    """The Hugging Face model-card metadata: the benchmark rows as model-index results."""
    cfg = card["env_config"]
    tags = ["reinforcement-learning", "pettingzoo", "chicken-foot", "dominoes",
            "multi-agent-reinforcement-learning", "imperfect-information", "masked-ppo"]
    if card.get("algo") == "selfplay":
        tags.append("self-play")
    tags.append(f"{cfg['num_players']}-players-double-{cfg['max_pips']}")
    meta = {"library_name": "chickenfoot", "license": "mit", "pipeline_tag": "reinforcement-learning",
            "tags": tags}
    score = results.benchmark
    if score is not None:
        entries = []
        for row in score["rows"]:
            what = f"{row['opponents']}, {row['table']}, {row['unit']}"
            entries.append({
                "task": {"type": "reinforcement-learning", "name": "reinforcement-learning"},
                "dataset": {"type": "chicken-foot-benchmark", "name": score["benchmark"],
                            "config": row["row"],
                            "split": f"{row['deals']} duplicate deals, seed {row['seed']}"},
                "metrics": [
                    {"type": "win_rate", "name": f"win rate vs {what} (parity "
                     f"{row['parity']:.0%})", "value": _round(row["win_rate"]["mean"]),
                     "verified": False},
                    {"type": "points_margin", "name": f"points margin vs {what} (agent minus "
                     "opponents, points per round; negative is better)",
                     "value": _round(row["points_margin"]["mean"]), "verified": False},
                ],
            })
        meta["model-index"] = [{"name": dest.name, "results": entries}]
    return meta


# --------------------------------------------------------------------------- the sections
def _benchmark_section(score: Mapping, dest: Path) -> list[str]:
    return [f"## {score['benchmark']}", "",
            f"The fixed protocol of docs/benchmark.md; the score card's files are "
            f"`docs/benchmark/{dest.name}.json` / `.md` / `.png`.", "",
            format_card(score).rstrip("\n"), ""]


def _leaderboard_section(board: Mapping) -> list[str]:
    e, r, cfg = board["entry"], board["entry"]["rating"], board["config"]
    table = (f" at a {cfg['num_players']}-player double-{cfg['max_pips']} table"
             if {"num_players", "max_pips"} <= set(cfg) else "")
    lines = ["## Leaderboard", "",
             f"Place **{board['place']} of {board['entries']}** on the leaderboard{table} "
             "(docs/leaderboard.md; `python -m training.leaderboard`): OpenSkill μ "
             f"{r['mu']:.2f}"]
    if "ci_low" in r and "ci_high" in r:
        lines[-1] += f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}] (95% bootstrap over deals)"
    if isinstance(e.get("win_rate"), float) and "games" in e:
        lines[-1] += f", win rate {e['win_rate']:.1%} over {e['games']:,} games"
    lines[-1] += "."
    return [*lines, ""]


def _exploit_section(probe: Mapping, dest: Path) -> list[str]:
    parity = probe.get("parity") or 1 / int(probe.get("players", 4))
    found = probe["win_rate"]["ci_low"] > parity
    budget = f" for {probe['budget']:,} learner decisions" if "budget" in probe else ""
    lines = ["## Exploitability probe", "",
             f"A best response trained against this agent{budget} (docs/exploit.md; "
             f"`docs/exploit/{dest.name}.json`) wins **{_pct(probe['win_rate'])}** against "
             f"copies of it on every other seat (parity {parity:.0%}): "
             + ("it found an exploit (the interval lies above parity)." if found else
                "it found no exploit (the interval does not lie above parity); a lower bound on "
                "the exploitability, not a proof that there is none.")]
    if probe.get("command"):
        lines += ["", f"    {probe['command']}"]
    return [*lines, ""]


def _replay_section(name: str, info: Mapping) -> list[str]:
    lines = ["## A game", "", f"![a single round played by this agent]({name})"]
    if info.get("command"):
        lines += ["", f"Made by `{info['command']}`."]
    return [*lines, ""]


def render(card: Mapping, dest: Path, docs: Path = DOCS) -> tuple[str, list[str]]:
    """(the card's Markdown with its YAML header, notes on the results left out)."""
    dest = Path(dest)
    results = find_results(card, dest, docs)
    header = yaml.safe_dump(front_matter(card, dest, results), sort_keys=False,
                            allow_unicode=True, width=1000)
    parts = ["---", header.rstrip("\n"), "---", "", card_body(card, dest).rstrip("\n"), ""]
    if results.benchmark is not None:
        parts += _benchmark_section(results.benchmark, dest)
    if results.leaderboard is not None:
        parts += _leaderboard_section(results.leaderboard)
    if results.exploit is not None:
        parts += _exploit_section(results.exploit, dest)
    if results.replay is not None:
        parts += _replay_section(results.replay, results.replay_info)
    return "\n".join(parts), results.notes


def read_front_matter(text: str) -> dict:
    """The YAML header of a card (`ValueError` when it has none)."""
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise ValueError("a model card starts with a YAML header between two '---' lines")
    return yaml.safe_load(text[4:text.index("\n---\n", 4)])


def write_model_card(dest: str | Path, docs: Path = DOCS) -> list[str]:
    """Rewrite `dest/card.md` from `dest/card.json` and the published results (atomically);
    returns the notes on results left out."""
    dest = Path(dest)
    if not (dest / "card.json").is_file():
        raise ValueError(f"{dest} is not a shipped agent (no card.json); give a folder such as "
                         "checkpoints/selfplay-4p-d9")
    card = read_card(dest)
    missing = [k for k in ("training", "evaluation") if k not in card]
    if missing:
        raise ValueError(f"{dest}/card.json has no {' or '.join(missing)} section: it is a "
                         "training checkpoint, not a shipped agent (python -m training.ship "
                         "writes those sections)")
    text, notes = render(card, dest, docs)
    atomic.write_text(dest / "card.md", text)
    return notes


# --------------------------------------------------------------------------- the replay
def make_replay_gif(dest: str | Path, opponent: str = "heuristic", seed: int = 0,
                    scales: tuple[float, ...] = (0.5, 0.4, 0.3, 0.25)) -> Path:
    """`dest/replay.gif`: one single round of the agent against `opponent` on every other seat
    (deal 0 of `seed`, the agent at seat 0), at the largest scale whose GIF stays under
    `MAX_GIF_BYTES`; the commands that remake it go to `dest/replay.gif.json`."""
    from cf_env.viz.record import read_record
    from cf_env.viz.replay import write_gif
    from training.evaluation.evaluate import evaluate, record_name

    dest = Path(dest)
    spec = f"ppo:{dest}"
    config = ChickenFootConfig.from_dict(read_card(dest)["env_config"])
    out = dest / REPLAY_FILE
    with tempfile.TemporaryDirectory() as folder:
        evaluate([spec, opponent], config, 2, seed=seed, single_round=True, record=folder)
        record = read_record(Path(folder) / record_name(0, 0, 2))
        for scale in scales:
            write_gif(record, out, scale=scale)
            if out.stat().st_size <= MAX_GIF_BYTES:
                break
        else:
            out.unlink()
            raise ValueError(f"a replay of {spec} is over {MAX_GIF_BYTES:,} bytes even at scale "
                             f"{scales[-1]}; none was written")
    games = "results/games"
    command = (f"python -m training.evaluate --agent {shlex.quote(spec)} --opponents "
               f"{shlex.quote(opponent)} --single-round --deals 2 --seed {seed} --record {games} "
               f"&& python -m cf_env.viz.replay {games}/{record_name(0, 0, 2)} --out {out} "
               f"--scale {scale}")
    atomic.write_json(dest / f"{REPLAY_FILE}.json", {
        "command": command, "scale": scale, "bytes": out.stat().st_size,
        "policy_sha256": read_card(dest)["policy_sha256"]})
    return out


# --------------------------------------------------------------------------- the command
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.model_card",
        description="Rewrite shipped agents' card.md from card.json and the published results "
                    "(benchmark score card, leaderboard, exploit probe, replay GIF).",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("agents", nargs="+", metavar="CHECKPOINT",
                        help="shipped agents' folders, e.g. checkpoints/selfplay-4p-d9")
    parser.add_argument("--docs", default=str(DOCS), help="the folder of the published results")
    parser.add_argument("--gif", action="store_true",
                        help=f"first (re)make {REPLAY_FILE}: a single round against heuristic")
    args = parser.parse_args(argv)
    limit_threads()
    for agent in args.agents:
        try:
            if args.gif:
                gif = make_replay_gif(agent)
                print(f"wrote {gif} ({gif.stat().st_size:,} bytes)")
            notes = write_model_card(agent, Path(args.docs))
        except (ValueError, OSError) as err:
            print("error: " + " ".join(str(err).split()), file=sys.stderr)
            return 2
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        print(f"wrote {Path(agent) / 'card.md'}")
    return 0

