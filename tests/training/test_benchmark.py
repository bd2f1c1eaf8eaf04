"""`training.evaluation.benchmark`: a versioned protocol whose score cards are byte-for-byte
reproducible, whose definition cannot change without a new version, and whose rows follow the
agent's table.

The real protocol is minutes long, so the cards here are played with a tiny protocol through the
same code path (`main` with `protocol=` and a registry holding its digest)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from cli_errors import user_error

from training.evaluation.benchmark import (
    BENCHMARK_V1,
    REGISTERED,
    REPOSITORY,
    SELFPLAY_2P_D6,
    SELFPLAY_4P_D9,
    SELFPLAY_DIGESTS,
    Protocol,
    ProtocolChangedError,
    Row,
    agent_digest,
    benchmark_paths,
    check_registered,
    fitting_rows,
    main,
    plan_benchmark,
)
from training.evaluation.evaluate import evaluate

TINY = Protocol("tiny test protocol", (
    Row(4, 9, "round", "random", 10, 5),  # two blocks of deals: workers=2 plays them in two processes
    Row(4, 9, "game", "greedy", 2, 6),
    Row(2, 6, "round", SELFPLAY_2P_D6, 4, 7, SELFPLAY_DIGESTS[SELFPLAY_2P_D6]),
))
TINY_REGISTRY = {TINY.version: TINY.digest()}


def run(argv, protocol=TINY, registry=None):
    return main(argv + ["--no-progress"], protocol=protocol,
                registry=TINY_REGISTRY if registry is None else registry)


# --------------------------------------------------------------------------- reproducible cards
def test_same_agent_same_card_byte_for_byte_whatever_the_workers(tmp_path):
    run(["greedy", "--out", str(tmp_path / "one"), "--workers", "1"])
    run(["greedy", "--out", str(tmp_path / "two"), "--workers", "2"])
    one, two = benchmark_paths(tmp_path / "one"), benchmark_paths(tmp_path / "two")
    assert one[0].read_bytes() == two[0].read_bytes()
    # The Markdown names no time either, only its picture.
    assert one[1].read_text().replace("one.png", "two.png") == two[1].read_text()
    assert one[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    card = json.loads(one[0].read_text())
    assert "wall_s" not in json.dumps(card)
    timing = json.loads(one[3].read_text())  # the time taken lives beside the card
    assert timing["workers"] == 1 and timing["wall_s"] >= 0 and len(timing["rows"]) == 3
    assert card["benchmark"] == TINY.version and card["protocol_sha256"] == TINY.digest()
    assert card["agent"] == {"spec": "greedy", "digest": "greedy"}
    assert card["command"] == "python -m training.benchmark greedy"
    assert set(card["packages"]) >= {"python", "chickenfoot", "numpy"}


def test_card_rows_are_the_evaluations_of_the_protocol(tmp_path):
    """Each row's win rate and points margin are `evaluate`'s, for the row's rules and seed."""
    card = run(["greedy", "--out", str(tmp_path / "card"), "--workers", "1"])
    for row, entry in zip(TINY.rows, card["rows"]):
        opponent = row.opponent.replace("ppo:", "ppo:" + str(REPOSITORY) + "/")
        result = evaluate(["greedy", opponent], row.config(), row.deals, seed=row.seed,
                          single_round=row.single_round)
        assert entry["row"] == row.name and entry["deals"] == row.deals
        assert entry["win_rate"] == result["policies"][0]["win_rate"]
        assert entry["points_margin"] == result["differences"][0]["round_score"]
        assert entry["parity"] == 1 / row.num_players
        assert entry["opponents"] == f"{row.num_players - 1}× {row.opponent}"
    margin = card["rows"][0]["points_margin"]
    assert margin["ci_low"] <= margin["mean"] <= margin["ci_high"]


def test_checkpoint_agent_digest_covers_its_weights_and_card(tmp_path):
    digest = agent_digest(SELFPLAY_4P_D9)
    assert digest["digest"] == SELFPLAY_DIGESTS[SELFPLAY_4P_D9]
    assert set(digest["files"]) == {"policy.npz", "card.json"}
    copy = tmp_path / "agent"
    copy.mkdir()
    for name in ("policy.npz", "card.json"):
        (copy / name).write_bytes((REPOSITORY / "checkpoints/selfplay-4p-d9" / name).read_bytes())
    assert agent_digest(f"ppo:{copy}")["digest"] == digest["digest"]
    card = json.loads((copy / "card.json").read_text())
    card["notes"] = "edited"
    (copy / "card.json").write_text(json.dumps(card))
    assert agent_digest(f"ppo:{copy}")["digest"] != digest["digest"]


# --------------------------------------------------------------------------- versions
def test_published_protocol_hashes_to_its_registered_digest():
    assert check_registered(BENCHMARK_V1) == REGISTERED["Chicken Foot benchmark v1"]
    assert BENCHMARK_V1.version == "Chicken Foot benchmark v1"


@pytest.mark.parametrize("opponent", sorted(SELFPLAY_DIGESTS))
def test_pinned_opponents_are_the_checkpoints_in_the_repository(opponent):
    """Replacing a shipped agent the protocol plays against is a new protocol version."""
    assert agent_digest(opponent, REPOSITORY)["digest"] == SELFPLAY_DIGESTS[opponent]


def _rows(protocol, index, **change):
    rows = list(protocol.rows)
    rows[index] = dataclasses.replace(rows[index], **change)
    return tuple(rows)


ALTERED = {
    "more deals": lambda p: _rows(p, 0, deals=p.rows[0].deals + 1),
    "another seed": lambda p: _rows(p, 5, seed=p.rows[5].seed + 1),
    "another opponent": lambda p: _rows(p, 2, opponent="ismcts:10"),
    "another set": lambda p: _rows(p, 0, max_pips=12),
    "a row dropped": lambda p: p.rows[:-1],
    "rows reordered": lambda p: p.rows[1:] + p.rows[:1],
}


@pytest.mark.parametrize("change", sorted(ALTERED))
def test_protocol_changed_without_a_new_version_is_refused(change):
    altered = Protocol(BENCHMARK_V1.version, ALTERED[change](BENCHMARK_V1))
    assert altered.digest() != BENCHMARK_V1.digest()
    with pytest.raises(ProtocolChangedError, match="changed without a new version"):
        check_registered(altered)


def test_changed_default_rules_change_the_digest(monkeypatch):
    """The digest covers every rule of a row's table, the defaults included."""
    from cf_env.core.config import ChickenFootConfig

    before = BENCHMARK_V1.digest()
    real = ChickenFootConfig.to_dict
    monkeypatch.setattr(ChickenFootConfig, "to_dict",
                        lambda self: {**real(self), "double_blank_value": 25})
    assert BENCHMARK_V1.digest() != before
    with pytest.raises(ProtocolChangedError):
        check_registered(BENCHMARK_V1)


def test_unregistered_version_is_refused_naming_its_digest():
    renamed = Protocol("Chicken Foot benchmark v2", BENCHMARK_V1.rows)
    with pytest.raises(ProtocolChangedError, match=renamed.digest()):
        check_registered(renamed)


def test_changed_protocol_is_refused_before_any_game(tmp_path, capsys):
    altered = Protocol(TINY.version, _rows(TINY, 0, deals=5))
    with pytest.raises(SystemExit) as exited:
        run(["greedy", "--out", str(tmp_path / "card")], protocol=altered)
    assert "changed without a new version" in user_error(capsys, exited)
    assert list(tmp_path.iterdir()) == []


def test_replaced_opponent_checkpoint_is_refused():
    pinned = Protocol("pinned", (Row(4, 9, "round", SELFPLAY_4P_D9, 2, 0, "0" * 64),))
    with pytest.raises(ValueError, match="pins"):
        plan_benchmark("greedy", pinned, 1, {pinned.version: pinned.digest()})


def test_checkpoint_opponent_must_be_pinned():
    with pytest.raises(ValueError, match="opponent_sha256"):
        Row(4, 9, "round", SELFPLAY_4P_D9, 2, 0)
    with pytest.raises(ValueError, match="unit"):
        Row(4, 9, "hand", "random", 2, 0)


# --------------------------------------------------------------------------- the agent's table
def test_rows_follow_the_agents_table():
    rows, skipped = fitting_rows(SELFPLAY_2P_D6, BENCHMARK_V1)
    assert {(r.num_players, r.max_pips) for r in rows} == {(2, 6)} and len(rows) == 8
    assert [s["row"] for s in skipped] == [r.name for r in BENCHMARK_V1.rows[:8]]
    rows, skipped = fitting_rows(SELFPLAY_4P_D9, BENCHMARK_V1)
    assert {(r.num_players, r.max_pips) for r in rows} == {(4, 9)} and len(rows) == 8
    assert fitting_rows("heuristic", BENCHMARK_V1) == (list(BENCHMARK_V1.rows), [])


def test_checkpoint_card_lists_the_rows_it_skipped(tmp_path):
    card = run([SELFPLAY_4P_D9, "--out", str(tmp_path / "card"), "--workers", "1"])
    assert [r["row"] for r in card["rows"]] == [r.name for r in TINY.rows[:2]]
    assert [s["row"] for s in card["skipped"]] == [TINY.rows[2].name]
    assert card["agent"]["digest"] == SELFPLAY_DIGESTS[SELFPLAY_4P_D9]
    assert TINY.rows[2].name in benchmark_paths(tmp_path / "card")[1].read_text()


def test_agent_that_fits_no_row_is_refused(tmp_path, capsys):
    four_only = Protocol("four only", TINY.rows[:2])
    with pytest.raises(SystemExit) as exited:
        run([SELFPLAY_2P_D6, "--out", str(tmp_path / "card")], protocol=four_only,
            registry={four_only.version: four_only.digest()})
    line = user_error(capsys, exited)
    assert "fits no row" in line and "2 players double-6" in line
    assert "4 players double-9" in line


@pytest.mark.parametrize(("spec", "says"), [
    ("no-such-bot", "no-such-bot"),
    ("ppo:/nonexistent/checkpoint", "no checkpoint"),
])
def test_bad_agent_spec_is_refused_clearly(tmp_path, capsys, spec, says):
    with pytest.raises(SystemExit) as exited:
        run([spec, "--out", str(tmp_path / "card")])
    assert says in user_error(capsys, exited)


def test_existing_output_is_refused_without_force(tmp_path, capsys):
    out = tmp_path / "card"
    benchmark_paths(out)[1].write_text("mine\n")
    with pytest.raises(SystemExit) as exited:
        run(["random", "--out", str(out), "--workers", "1"])
    assert "--force" in user_error(capsys, exited)
    assert benchmark_paths(out)[1].read_text() == "mine\n"
    run(["random", "--out", str(out), "--workers", "1", "--force"])
    assert "tiny test protocol" in benchmark_paths(out)[1].read_text()
