"""`training.artifacts.model_card`: a shipped agent's card.md with a Hugging Face YAML header whose
numbers are its benchmark score card's, the body `card.json` gives, and the published results
about the same weights only."""

from __future__ import annotations

import json
import shutil

import pytest

from training.artifacts.model_card import (
    MAX_GIF_BYTES,
    card_body,
    main,
    make_replay_gif,
    read_front_matter,
    write_model_card,
)
from training.evaluation.benchmark import (
    REPOSITORY,
    SELFPLAY_2P_D6,
    SELFPLAY_DIGESTS,
    Protocol,
    Row,
    benchmark_paths,
)
from training.evaluation.benchmark import main as benchmark

SHIPPED = "checkpoints/selfplay-2p-d6"
TINY = Protocol("tiny model-card protocol", (
    Row(2, 6, "round", "random", 4, 3),
    Row(2, 6, "round", SELFPLAY_2P_D6, 4, 4, SELFPLAY_DIGESTS[SELFPLAY_2P_D6]),
))


@pytest.fixture
def agent(tmp_path):
    """A copy of a shipped agent (same folder name, so the published results' names match) and
    a docs folder holding its score card."""
    dest = tmp_path / "checkpoints" / "selfplay-2p-d6"
    dest.mkdir(parents=True)
    for name in ("card.json", "policy.npz", "card.md", "learning_curve.png"):
        shutil.copy(REPOSITORY / SHIPPED / name, dest / name)
    docs = tmp_path / "docs"
    benchmark([f"ppo:{dest}", "--out", str(docs / "benchmark" / dest.name), "--workers", "1",
               "--no-progress"], protocol=TINY, registry={TINY.version: TINY.digest()})
    return dest, docs


def test_header_parses_with_the_hub_keys_and_the_score_cards_numbers(agent):
    dest, docs = agent
    assert write_model_card(dest, docs) == []
    meta = read_front_matter((dest / "card.md").read_text())
    assert meta["license"] == "mit" and meta["library_name"] == "chickenfoot"
    assert {"reinforcement-learning", "pettingzoo", "chicken-foot"} <= set(meta["tags"])
    (index,) = meta["model-index"]
    assert index["name"] == dest.name
    score = json.loads(benchmark_paths(docs / "benchmark" / dest.name)[0].read_text())
    assert len(index["results"]) == len(score["rows"]) == 2
    for result, row in zip(index["results"], score["rows"]):
        assert result["task"]["type"] == "reinforcement-learning"
        assert result["dataset"]["name"] == TINY.version and result["dataset"]["config"] == row["row"]
        metrics = {m["type"]: m["value"] for m in result["metrics"]}
        assert metrics["win_rate"] == round(row["win_rate"]["mean"], 4)
        assert metrics["points_margin"] == round(row["points_margin"]["mean"], 4)


def test_card_keeps_the_shipped_content_and_adds_the_score_card(agent):
    dest, docs = agent
    # What training.ship wrote: the card.md in the repository less its header and added sections.
    shipped = (dest / "card.md").read_text().replace(SHIPPED, str(dest))
    shipped = shipped[shipped.index("# Shipped agent"):]
    before = shipped[:shipped.index("![learning curve]")]
    write_model_card(dest, docs)
    text = (dest / "card.md").read_text()
    assert text.startswith("---\n")
    for line in before.splitlines():  # the evaluation table, the training command, ...
        assert line in text
    assert f"## {TINY.version}" in text and "| 2 players, double-6 | single round |" in text
    assert card_body(json.loads((dest / "card.json").read_text()), dest) in text


def test_results_about_other_weights_are_left_out(agent):
    dest, docs = agent
    path = benchmark_paths(docs / "benchmark" / dest.name)[0]
    score = json.loads(path.read_text())
    score["agent"]["files"]["policy.npz"] = "0" * 64
    path.write_text(json.dumps(score))
    notes = write_model_card(dest, docs)
    assert len(notes) == 1 and "other weights" in notes[0]
    text = (dest / "card.md").read_text()
    assert "model-index" not in read_front_matter(text) and TINY.version not in text


def test_leaderboard_and_exploit_probe_sections(agent):
    dest, docs = agent
    sha = json.loads((dest / "card.json").read_text())["policy_sha256"]
    rating = {"mu": 27.5, "sigma": 0.4, "conservative": 26.3, "ci_low": 27.0, "ci_high": 28.0}
    board = {"config": {"num_players": 2, "max_pips": 6}, "entries": [
        {"spec": "greedy", "rating": {**rating, "mu": 20.0}},
        {"spec": f"ppo:{dest}", "checkpoint_sha256": sha, "rating": rating,
         "games": 4000, "win_rate": 0.61},
    ]}
    (docs / "leaderboard.json").write_text(json.dumps(board))
    (docs / "exploit").mkdir()
    probe = {"target": f"ppo:{dest}", "players": 2, "parity": 0.5, "budget": 2_000_000,
             "win_rate": {"mean": 0.53, "ci_low": 0.51, "ci_high": 0.55},
             "command": f"python -m training.exploit ppo:{dest}"}
    (docs / "exploit" / f"{dest.name}.json").write_text(json.dumps(probe))
    assert write_model_card(dest, docs) == []
    text = (dest / "card.md").read_text()
    assert "Place **1 of 2**" in text and "27.50 [27.00, 28.00]" in text
    assert "53.0% [51.0%, 55.0%]" in text and "found an exploit" in text
    board["entries"][1]["checkpoint_sha256"] = "0" * 64
    (docs / "leaderboard.json").write_text(json.dumps(board))
    assert any("leaderboard.json" in note for note in write_model_card(dest, docs))
    assert "## Leaderboard" not in (dest / "card.md").read_text()


def test_replay_gif_is_small_and_shown(agent):
    dest, docs = agent
    gif = make_replay_gif(dest)
    assert gif.read_bytes()[:6] in (b"GIF87a", b"GIF89a") and gif.stat().st_size <= MAX_GIF_BYTES
    write_model_card(dest, docs)
    text = (dest / "card.md").read_text()
    assert "](replay.gif)" in text and "python -m cf_env.viz.replay" in text


def test_command_refuses_a_folder_that_is_not_a_shipped_agent(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no card.json" in err


def test_front_matter_is_required_yaml():
    with pytest.raises(ValueError, match="YAML header"):
        read_front_matter("# no header\n")


def test_ship_writes_the_same_model_card(agent):
    from training.artifacts.ship import card_markdown

    dest, docs = agent
    card = json.loads((dest / "card.json").read_text())
    text = card_markdown(card, dest)  # the repository's docs: no score card for a copy in tmp
    assert read_front_matter(text)["license"] == "mit"
    assert card_body(card, dest) in text
