"""The report of an evaluation (`training.evaluation.evaluate`'s result dict): Markdown tables, the
plot and the files `python -m training.evaluate --out X` writes (X.json, X.md, X.png).

Reads only the result dict; plays nothing and computes no statistics (`training.evaluation.stats`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cf_env.core import atomic


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
    if "variance_reduction" in result:
        lines += _corrected_tables(result["variance_reduction"])
    return "\n".join(lines) + "\n"


def _ratio(entry: dict) -> str:
    terms = entry.get("terms")
    extra = (f" (draws {terms['draws']:.2f}, actions {terms['actions']:.2f})"
             if terms else "")
    return f"{entry['variance_ratio']:.2f}{extra}"


def _corrected_tables(corrected: dict) -> list[str]:
    """The variance-reduced estimates: per policy, its corrected win rate and round score with
    the variance ratio of each (and, for AIVAT's fitted route, the ratio per term)."""
    lines = ["", "Variance-reduced (docs/variance-reduction.md): the same games, each estimate "
             "corrected by its control variates; the ratio is plain variance / corrected.", "",
             "| policy | win rate | ratio | round score | ratio |", "|" + " --- |" * 5]
    for p in corrected["policies"]:
        lines.append(f"| {p['name']} | {_fmt(p['win_rate'], 1, True)} | {_ratio(p['win_rate'])} "
                     f"| {_fmt(p['round_score'], 2)} | {_ratio(p['round_score'])} |")
    return lines


def plot(result: dict, path: str | Path) -> None:
    """Win rate and mean round score per policy with their 95% intervals, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [_tick_label(p["name"]) for p in result["policies"]]
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(4 + 1.6 * len(names), 4.5))
    for ax, metric, title, scale in (
        (axes[0], "win_rate", "win rate (%)", 100.0),
        (axes[1], "round_score", "mean round score\n(lower is better)", 1.0),
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
    axes[0].legend(loc="upper right", fontsize=8)
    cfg = result["config"]
    what = "single rounds" if result["single_round"] else "full games"
    fig.suptitle(f"{cfg['num_players']}p double-{cfg['max_pips']}, {what}, "
                 f"{result['deals']} duplicate deals (95% CI)")
    fig.tight_layout()
    with atomic.atomic_path(path) as temporary:
        # "tight": the saved area grows to every label, so long names clip nothing.
        fig.savefig(temporary, dpi=100, format="png", bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)


def _tick_label(name: str, most: int = 28) -> str:
    """A policy's name short enough for an axis ("ppo:checkpoints/x" -> "ppo:…/x")."""
    kind, _, arg = name.partition(":")
    if len(name) > most and "/" in arg:
        name = f"{kind}:…/{arg.rstrip('/').rsplit('/', 1)[-1]}"
    return name if len(name) <= most else name[: most - 1] + "…"


# --------------------------------------------------------------------------- output files
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


def result_json(result: dict) -> str:
    """The result as JSON, indented, with each of its "per_game" rows on one line."""
    rows = result.get("per_game")
    if not rows:
        return json.dumps(result, indent=2) + "\n"
    rest = {key: value for key, value in result.items() if key != "per_game"}
    text = json.dumps({**rest, "per_game": None}, indent=2)  # per_game last: its null ends it
    body = "[\n" + ",\n".join("    " + json.dumps(row) for row in rows) + "\n  ]"
    head, _, tail = text.rpartition("null")
    return head + body + tail + "\n"


def write_report(result: dict, outputs: Sequence[Path]) -> str:
    """Write the result to the JSON, Markdown and PNG paths of `output_paths`; returns the
    Markdown table."""
    table = format_markdown(result)
    json_path, md_path, png_path = outputs
    atomic.write_text(json_path, result_json(result))
    atomic.write_text(md_path, table)
    plot(result, png_path)
    return table
