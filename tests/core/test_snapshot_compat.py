"""Snapshots written by chickenfoot 0.1.0 (format 2) restore in this version and continue the
same game; format 1, from before 0.1.0, is refused with one error naming the version.

tests/core/golden/snapshots-0.1.0.json was written by the 0.1.0 code (commit e27f404): an engine
snapshot mid-game, the 120 decisions that followed it there (each legal set and the action
taken, across a round's end dealt from the snapshot's RNG) and the snapshot after them, and an
AEC env's snapshot."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import cf_env
from cf_env import ChickenFootConfig, Engine, SnapshotError

GOLDEN = json.loads((Path(__file__).parent / "golden" / "snapshots-0.1.0.json").read_text())


def test_the_golden_snapshots_were_written_by_0_1_0():
    assert GOLDEN["chickenfoot_version"] == "0.1.0" and GOLDEN["engine"]["version"] == 2


def test_an_engine_snapshot_of_0_1_0_restores_and_plays_on_as_it_did_there():
    engine = Engine(ChickenFootConfig())
    engine.restore(copy.deepcopy(GOLDEN["engine"]))
    assert engine.snapshot() == GOLDEN["engine"]  # the same position, layout and RNG
    rounds = {engine.round}
    for legal, action in GOLDEN["then"]:
        assert engine.legal_actions() == legal
        engine.step(action)
        rounds.add(engine.round)
    assert len(rounds) == 2  # the next round was dealt from the restored RNG, as in 0.1.0
    assert engine.snapshot() == GOLDEN["engine_after"]


def test_an_aec_env_snapshot_of_0_1_0_restores():
    env = cf_env.raw_env(num_players=3, max_pips=6)
    env.reset(seed=0)
    env.restore(copy.deepcopy(GOLDEN["aec_env"]))
    assert env.snapshot() == GOLDEN["aec_env"]


def test_a_format_1_snapshot_is_refused_naming_its_version():
    snap = copy.deepcopy(GOLDEN["engine"])
    snap["version"] = 1
    engine = Engine(ChickenFootConfig(), seed=3)
    before = engine.snapshot()
    with pytest.raises(SnapshotError, match="snapshot version 1 was written before chickenfoot "
                                            "0.1.0 and is no longer read"):
        engine.restore(snap)
    assert engine.snapshot() == before
