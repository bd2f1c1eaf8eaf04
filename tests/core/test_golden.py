"""Golden games: fixed seeds must replay the recorded games exactly, step by step.

They pin the deal (R3/R5), the rules (R6-R13), the rewards and the observation encoding across
refactors. Each game is stored as a readable text transcript in `tests/core/golden/<name>.txt` (like
OpenSpiel's playthroughs): per round the deal; per step the acting seat, its hand, a short hash of
its observation and mask, its reward, the legal actions by name and the action taken; per round
end the layout, the hands, the points and the scores. A failure shows a diff of the first lines
that changed, so what changed (a deal, a legal set, an arm, a score) reads off the diff.

If a change is *meant* to alter games or observations, regenerate (never done by CI):

    python -m tests.core.test_golden --regen

and bump OBSERVATION_VERSION when the observation changed.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

import cf_env
from cf_env.core.actions import describe
from cf_env.core.tiles import tile_tables

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "default": ({}, 0),
    "double12_8p_six_arms": ({"max_pips": 12, "num_players": 8, "spinner_arms": 6, "num_rounds": 2}, 1),
    "variants": (
        {"num_players": 3, "draw_until_playable": True, "must_play_drawn": True,
         "double_blank_value": 25, "skip_forced": True, "num_rounds": 4, "reward_mode": "score"},
        2,
    ),
}


def tiles_text(pairs, tiles) -> str:
    return " ".join(f"{lo}|{hi}" for lo, hi in (pairs[t] for t in tiles)) or "-"


def transcript(name: str) -> str:
    """The game of case `name` as text. Each decision is uniform over the action mask, drawn
    from numpy's default_rng(seed); the whole-game digest at the end hashes every observation
    and mask `last()` handed out (the old JSON golden format's digest, unchanged)."""
    config, seed = CASES[name]
    env = cf_env.env(**config)
    env.reset(seed=seed)
    engine = env.unwrapped.engine
    fields = {**engine.config.to_dict(), **env.unwrapped.options.to_dict()}  # rules, then options
    tables = tile_tables(engine.config.max_pips)
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()
    out = [
        f"# Golden game {name!r}: cf_env.env(**{config!r}), reset(seed={seed}); every decision",
        "# uniform over the mask from numpy default_rng(seed). Regenerate: python -m tests.core.test_golden --regen",
        "config " + " ".join(f"{k}={v}" for k, v in fields.items()),
    ]

    def forced(entries) -> None:  # actions the env took itself (skip_forced)
        out.extend(f"  forced p{seat}: {a} {describe(tables, a)}" for _, seat, a in entries)

    def round_start() -> None:
        out.append(f"== round {len(engine.scores[0])}: centre {engine.center}|{engine.center}")
        for seat in range(engine.num_players):
            out.append(f"  hand p{seat}: {tiles_text(tables.pairs, engine.hand(seat))}")
        out.append(f"  boneyard (next first): {tiles_text(tables.pairs, engine.boneyard[::-1])}")

    def round_end(index: int, arms) -> None:
        out.append(f"== round {index} ends; the layout before its last decision:")
        for k, arm in enumerate(arms):
            where = "spinner" if arm["parent"] < 0 else f"toe of arm {arm['parent']}"
            tiles = " ".join(f"{lo}|{hi}" for lo, hi in arm["tiles"])
            out.append(f"  arm {k} ({where}): {tiles}")
        points = [s[index] for s in engine.scores]
        out.append(f"  points {points}  totals {[sum(s[: index + 1]) for s in engine.scores]}")

    forced(engine.history)
    for index in range(len(engine.scores[0])):  # rounds skip_forced played inside reset
        round_end(index, [])
    if not engine.game_over:
        round_start()
    rewards: list[float] = []
    step = 0
    for _agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        seen = obs["observation"].tobytes() + obs["action_mask"].tobytes()
        digest.update(seen)
        short = hashlib.sha256(seen).hexdigest()[:10]
        rewards.append(round(float(reward), 9))
        seat = int(env.agent_selection.rsplit("_", 1)[1])
        if term or trunc:
            out.append(f"end p{seat}  obs {short}  reward {reward:+.6g}")
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        action = int(rng.choice(legal))
        step += 1
        out.append(f"step {step} p{seat}  obs {short}  reward {reward:+.6g}")
        out.append(f"  hand {tiles_text(tables.pairs, engine.hand(seat))}")
        out.append("  legal " + "; ".join(f"{a} {describe(tables, int(a))}" for a in legal))
        out.append(f"  -> {action} {describe(tables, action)}")
        arms = engine.snapshot()["arms"]
        rounds, played = len(engine.scores[0]), len(engine.history)
        env.step(action)
        forced(engine.history[played + 1 :])
        if len(engine.scores[0]) == rounds:  # where the tiles went
            for k, arm in enumerate(engine.snapshot()["arms"]):
                old = arms[k]["tiles"] if k < len(arms) else []
                if arm["tiles"] != old:
                    tiles = " ".join(f"{lo}|{hi}" for lo, hi in arm["tiles"][len(old) :])
                    out.append(f"  arm {k} + {tiles}")
            continue
        for index in range(rounds, len(engine.scores[0])):
            round_end(index, arms if index == rounds else [])
        if not engine.game_over:
            round_start()
    out.append(f"scores {engine.scores}")
    out.append(f"winners {engine.winners}")
    out.append(f"reward sum {round(sum(rewards), 6)}")
    out.append(f"observations sha256 {digest.hexdigest()}")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_transcript(name):
    expected = (GOLDEN / f"{name}.txt").read_text()
    got = transcript(name)
    if got != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), got.splitlines(), "golden", "now", n=6, lineterm=""
        )
        pytest.fail(f"game {name!r} changed:\n" + "\n".join(list(diff)[:80]), pytrace=False)


def test_golden_cases_are_all_stored():
    """Every stored transcript is a case here (a renamed case leaves no stale file behind)."""
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(CASES)


if __name__ == "__main__":
    if "--regen" not in sys.argv[1:]:
        sys.exit("usage: python -m tests.core.test_golden --regen   (rewrites tests/core/golden/*.txt)")
    for case in CASES:
        path = GOLDEN / f"{case}.txt"
        path.write_text(transcript(case))
        print(f"wrote {path}")
