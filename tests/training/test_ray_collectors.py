"""Self-play collectors as Ray actors (`training.selfplay.ray_collection`) on a real two-node
Ray cluster made on this machine (`ray.cluster_utils.Cluster`: a head and a second node of one
CPU each, so that the two actors are placed on different nodes).

Needs Ray (the rllib extra, `make test-rllib`); skipped without it. The actors collect exactly
the rollouts of the local collector processes (snapshots shipped through the object store
included); a run through the command line writes the checkpoint a local run writes, which
plays as a `ppo:` spec and resumes; a killed actor stops the collection with a
`CollectorError` naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (optional extra: "
                                        "pip install -e '.[rllib]')")
torch = pytest.importorskip("torch")

from ray.cluster_utils import Cluster  # noqa: E402

from cf_env import OBSERVATION_VERSION, ChickenFootConfig  # noqa: E402
from cf_env.agents.policies import load_policy  # noqa: E402
from cf_env.core.observation import observation_layout  # noqa: E402
from cf_env.envs.env import raw_env  # noqa: E402
from training import ppo  # noqa: E402
from training.artifacts import checkpoints as ckpt  # noqa: E402
from training.config import load_config  # noqa: E402
from training.processes import CollectorError  # noqa: E402
from training.selfplay.learner import (  # noqa: E402
    TRAINER_FILE,
    ProcessCollection,
    actor_weights,
    build_networks,
    load_trainer_state,
)
from training.selfplay.ray_collection import RayCollection  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs" / "smoke.yaml")


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes of one CPU each on this machine, this process connected as the driver."""
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    made.add_node(num_cpus=1)
    made.wait_for_nodes()
    ray.init(address=made.address, log_to_driver=False)
    try:
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


def tiny(address: str, *sets: str):
    return load_config(SMOKE, ["selfplay.workers=2", "selfplay.num_games=4",
                               "selfplay.rollout_steps=8", f"selfplay.ray_address={address}",
                               *sets])


def write_snapshot(folder: Path, actor, seed: int) -> str:
    """A pool snapshot (`snapshots/step_<N>/`'s format) of `actor` with weights drawn from
    `seed`."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in actor.parameters():
            p.normal_(std=0.3)
    rules = ChickenFootConfig()
    card = {"format": ckpt.CHECKPOINT_FORMAT, "algo": "selfplay", "steps": seed,
            "env_config": rules.to_dict(), "observation_version": OBSERVATION_VERSION,
            "observation_size": observation_layout(rules).size,
            "num_actions": rules.num_actions, "activation": "tanh", "net_arch": [16]}
    return str(ckpt.write_weights_checkpoint(folder / f"step_{seed:09d}", actor_weights(actor),
                                             card))


def test_actors_on_two_nodes_collect_the_local_processes_rollouts(cluster, tmp_path):
    """Same seed, same workers: the Ray actors' rollouts equal the local processes', array by
    array, with an opponent-pool snapshot at the start and one added later (shipped through the
    object store into each actor's own folder, not read from the learner's path)."""
    config = tiny(cluster.address, "opponents.snapshot_weight=4.0")
    actor, critic = build_networks(config)
    snapshot_net = build_networks(config)[0]
    first = write_snapshot(tmp_path, snapshot_net, 1)
    local = ProcessCollection(config, seed=5, snapshots=[first])
    remote = RayCollection(config, seed=5, snapshots=[first])
    try:
        assert len(set(remote.nodes)) == 2, remote.where  # one actor on each node
        assert not remote.owns_ray  # the driver's connection, kept for the other tests
        for new in ([], [write_snapshot(tmp_path, snapshot_net, 2)]):
            mine, mine_stats = local.collect(actor, critic, new)
            theirs, their_stats = remote.collect(actor, critic, new)
            assert their_stats == mine_stats
            for name, array in vars(mine).items():
                np.testing.assert_array_equal(getattr(theirs, name), array, err_msg=name)
            with torch.no_grad():  # the next rollout is collected with other weights
                for p in actor.parameters():
                    p.add_(0.05)
    finally:
        local.close()
        remote.close()
    assert remote.actors == []


def test_a_killed_actor_stops_the_collection_naming_it(cluster):
    config = tiny(cluster.address)
    actor, critic = build_networks(config)
    collection = RayCollection(config, seed=0, snapshots=[])
    try:
        collection.collect(actor, critic, [])
        collection.start(actor, critic, [])
        ray.kill(collection.actors[1])
        pid = collection.where[1]["pid"]
        with pytest.raises(CollectorError, match=rf"collector actor 1 \(node \w+, host .+, pid "
                                                 rf"{pid}\) died while collecting: .*ray\.kill"):
            collection.result()
    finally:
        collection.close()


def test_a_cluster_too_small_for_the_actors_is_one_clear_error(cluster, monkeypatch):
    from training.selfplay import ray_collection

    monkeypatch.setattr(ray_collection, "START_TIMEOUT_S", 3.0)
    config = load_config(SMOKE, ["selfplay.workers=4", "selfplay.num_games=4",
                                 f"selfplay.ray_address={cluster.address}"])
    with pytest.raises(CollectorError, match=r"did not start 4 collector actors of 1 CPU each "
                                             r"within 3 s \([0-3] ready; .*lower selfplay.workers"):
        RayCollection(config, seed=0, snapshots=[])


def test_a_run_on_two_nodes_survives_a_killed_actor_and_its_checkpoint_plays(
        cluster, tmp_path, monkeypatch, capsys):
    """`python -m training.ppo --ray ADDRESS` for a few hundred decisions, snapshots shipped to
    the actors. An actor killed mid-run stops it with one error line naming the actor and how to
    go on (exit 1) and its latest checkpoint intact; `--resume` finishes the run on the cluster;
    the checkpoint is a local run's (card, policy.npz, trainer.pt) and `ppo:<run>` plays a game
    of legal moves."""
    calls = []
    result = RayCollection.result

    def kill_at_the_fourth_rollout(self):
        calls.append(1)
        if len(calls) == 4:  # after the checkpoint of step 128: rollouts are 64 decisions
            ray.kill(self.actors[1])
        return result(self)

    monkeypatch.setattr(RayCollection, "result", kill_at_the_fourth_rollout)
    run = tmp_path / "r"
    base = ["--config", SMOKE, "--ray", cluster.address, "--set", f"runs_dir={tmp_path}",
            "--set", "run_name=r", "--set", "total_steps=320", "--set", "eval.every_steps=0",
            "--set", "selfplay.workers=2"]
    with pytest.raises(SystemExit) as stopped:
        ppo.main(base)
    assert stopped.value.code == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: the run stopped: collector actor 1 (node ")
    assert "died while collecting" in error and "ray.kill" in error
    assert error.endswith(f"its latest checkpoint is intact: python -m training.ppo --resume {run}")
    assert ckpt.read_card(ckpt.resolve_checkpoint(run))["steps"] == 128

    monkeypatch.setattr(RayCollection, "result", result)
    ppo.main(["--resume", str(run)])
    latest = ckpt.resolve_checkpoint(run)
    card = ckpt.read_card(latest)
    assert card["steps"] == 320 and card["algo"] == "selfplay"
    assert card["train_config"]["selfplay"]["ray_address"] == cluster.address
    assert (latest / TRAINER_FILE).is_file() and (latest / "policy.npz").is_file()
    assert load_trainer_state(latest)["steps"] == 320
    assert len(list((run / "snapshots").iterdir())) == 2  # steps 128 and 256: both shipped

    policy = load_policy(f"ppo:{run}", ChickenFootConfig(), seed=0)
    env = raw_env()
    env.reset(seed=1)
    moves = 0
    for _agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        action = policy.act(obs)
        assert obs["action_mask"][action] == 1
        env.step(action)
        moves += 1
    assert moves > 0
