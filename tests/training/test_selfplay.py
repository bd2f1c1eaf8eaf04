"""The self-play trainer (`training.selfplay.collector`, `training.selfplay.learner`): the collector's
trajectories replay exactly through the AEC env, the privileged input reaches the critic and
never the actor, masked sampling never picks an illegal action, resume continues the step count
and the pool, a tiny run is deterministic, and both algorithms run on configs/smoke.yaml."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

try:  # pytest.importorskip's skip, written so that the imports below may follow it
    import torch
    import yaml
except ImportError as missing:
    pytest.skip(f"{missing}: needs the train extra: pip install -e '.[train]'", allow_module_level=True)

from bot_twins import PythonBots, Stream

from cf_env import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.kernel import KernelBatch
from cf_env.envs.env import raw_env
from training import ppo
from training.artifacts import checkpoints as ckpt
from training.config import load_config
from training.selfplay.collector import Collector, compute_gae, sample_masked
from training.selfplay.learner import (
    TRAINER_FILE,
    LocalCollection,
    ProcessCollection,
    SelfPlayTrainer,
    build_networks,
    load_trainer_state,
    ppo_update,
    precision_line,
    update_dtype,
)

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs" / "smoke.yaml")
QUIET = ["--set", "progress_bar=false"]


def small_nets(config: ChickenFootConfig, privileged: bool = True, seed: int = 0):
    torch.manual_seed(seed)
    sets = ["ppo.net_arch=[16]", f"selfplay.privileged_critic={str(privileged).lower()}"]
    cfg = load_config(SMOKE, sets)
    assert cfg.rules() == config
    return build_networks(cfg)


def make_collector(games: int = 3, pool_share: float = 0.5, seed: int = 1, **kw) -> Collector:
    return Collector(ChickenFootConfig(), games, seed=seed, pool_share=pool_share,
                     bots={"greedy": 1.0, "random": 1.0, "heuristic": 1.0}, **kw)


# ------------------------------------------------------------------------------ trajectories
class _EngineSeed:
    """Stands for an AEC env's seeder whose next game has engine seed `seed`."""

    def __init__(self, seed: int):
        self.seed = seed

    def integers(self, high):
        return self.seed


def test_collector_trajectories_replay_through_the_aec_env():
    """Every recorded transition is what the AEC env shows that seat at that decision (same
    observation, mask), the action is the one the game played, and each round's reward sits on
    the seat's last transition of the round, equal to the AEC env's reward. The opponents'
    moves are replayed by the compiled bots' Python twins (tests/bot_twins.py) on the game's
    bot stream (seeded with the game's engine seed, as `ChickenFootBatch` seeds it): the replay
    only goes through if the collector's games are the AEC env's."""
    collector = make_collector()
    actor, critic = small_nets(ChickenFootConfig())
    seeds = collector.batch.game_seeds.tolist()  # the engine seeds (the bots' streams' too)
    roll = collector.collect(actor, critic, steps=40)
    assert collector.batch.game_seeds.tolist() == seeds, "a game was re-dealt: shorten the test"
    d = collector.obs_size
    twins = PythonBots(collector.config)
    checked_rewards = bot_moves = 0
    for i, seed in enumerate(seeds):
        rows = np.flatnonzero(roll.game == i).tolist()
        assert len(rows) == 40
        env = raw_env()
        env.reset(seed=0)
        env._seeder = _EngineSeed(seed)  # the env's next game: the engine seed the batch dealt
        env.reset()
        stream = Stream(seed)
        k = 0  # next recorded transition of this game
        last_of_seat: dict[int, int] = {}
        while k < len(rows):
            agent = env.agent_selection
            seat = env.agents.index(agent)
            obs = env.observe(agent)
            legal = np.flatnonzero(obs["action_mask"])
            if len(legal) == 1:
                action = int(legal[0])
            elif collector.learners[i, seat]:
                row = rows[k]
                k += 1
                assert roll.seat[row] == seat
                np.testing.assert_array_equal(roll.state[row, :d], obs["observation"])
                np.testing.assert_array_equal(roll.mask[row], obs["action_mask"].astype(bool))
                action = int(roll.action[row])
                if seat in last_of_seat:
                    assert roll.next[last_of_seat[seat]] == row  # chain links follow the seat
                last_of_seat[seat] = row
            else:
                engine = env.unwrapped.engine
                choose = twins.chooser(int(collector.kinds[i, seat]), engine, stream)
                action = choose(engine.legal_bits())
                bot_moves += 1
            env.step(action)
            if any(env.rewards.values()):  # a round ended: compare each learner seat's reward
                for s, name in enumerate(env.agents):
                    if collector.learners[i, s] and s in last_of_seat:
                        row = last_of_seat.pop(s)
                        assert roll.done[row]
                        assert roll.reward[row] == pytest.approx(env.rewards[name], abs=1e-6)
                        checked_rewards += 1
    assert checked_rewards >= 3 and bot_moves > 10
    assert not roll.reward[~roll.done].any()  # episode = round: rewards only at its end
    # Open chains are bootstrapped with the critic's value of the seat's view now; GAE follows
    # the links.
    assert roll.boot[roll.next < 0].any()
    compute_gae(roll, 0.99, 0.95)
    assert np.isfinite(roll.advantage).all()


def test_collector_plays_opponents_without_a_compiled_form_through_their_act():
    """A spec that is not a compiled bot's name (here the random bot by its module path) plays
    through `act(obs)`: its seats are never learner rows, and the rollout stays legal."""
    collector = Collector(ChickenFootConfig(), 4, seed=3, pool_share=0.6,
                          bots={"cf_env.agents.bots:RandomPolicy": 1.0})
    assert any(p is not None for p in collector.batch.seat_policies.ravel())
    assert not collector.kinds.any()  # no compiled bot seat
    roll = collector.collect(*small_nets(ChickenFootConfig()), steps=30)
    assert collector.learners[roll.game, roll.seat].all()
    assert roll.mask[np.arange(len(roll.action)), roll.action].all()


def test_forced_decisions_are_never_recorded():
    roll = make_collector(pool_share=0.0).collect(*small_nets(ChickenFootConfig()), steps=30)
    assert (roll.mask.sum(axis=1) >= 2).all()


@pytest.mark.slow
def test_win_bonus_keeps_rewards_zero_sum():
    collector = make_collector(games=2, pool_share=0.0, win_bonus=1.0)
    roll = collector.collect(*small_nets(ChickenFootConfig()), steps=60)
    done = roll.done
    # With every seat a learner, each round's done rewards (one per seat that decided) sum to 0
    # when all four seats decided in it; check the sum over all rounds stays near zero.
    assert done.sum() >= 4
    assert abs(roll.reward.sum()) < 1.0 * done.sum()  # bounded; and the rewards differ from plain
    plain = make_collector(games=2, pool_share=0.0).collect(*small_nets(ChickenFootConfig()), steps=60)
    assert not np.array_equal(plain.reward, roll.reward)


# ------------------------------------------------------------------------------ privileged input
def _swapped_hidden_tile(engine: Engine, seat: int) -> Engine:
    """A copy of `engine` in which an opponent's hidden tile and a boneyard tile are exchanged:
    the same position for `seat`'s observation, a different full-information state."""
    snap = engine.snapshot()
    opponent = (seat + 1) % engine.num_players
    snap["hands"][opponent][0], snap["boneyard"][0] = snap["boneyard"][0], snap["hands"][opponent][0]
    other = Engine(engine.config, seed=0)
    other.restore(snap)
    return other


def _rows(collector: Collector, *engines: Engine) -> np.ndarray:
    """The collector's state rows (observation, privileged vector) of each engine's position
    for its seat to move, the positions loaded into a kernel batch."""
    batch = KernelBatch(engines[0].config, len(engines))
    for i, engine in enumerate(engines):
        batch.load(i, engine)
    rows = np.zeros((len(engines), collector.obs_size + (collector.priv_size if
                                                           collector.privileged else 0)), np.float32)
    collector.write_states(batch, rows)
    return rows


def test_every_rollout_starts_from_the_acting_seats_own_view():
    """The rollout's first rows are each game's observation and privileged vector for its seat
    to move, also after a rollout whose end bootstrapped the other seats' values (those views
    must not land in the batch's output, which the next rollout reads)."""
    config = ChickenFootConfig()
    collector = make_collector(games=6, pool_share=0.4)
    actor, critic = small_nets(config)
    kernel = collector.batch.kernel
    d, g = collector.obs_size, collector.num_games
    for _ in range(3):
        view = np.empty((g, d), np.float32)
        hidden = np.empty((g, collector.priv_size), np.float32)
        kernel.observe(out=view)
        kernel.privileged(out=hidden)
        roll = collector.collect(actor, critic, 5)
        np.testing.assert_array_equal(roll.state[:g, :d], view)
        np.testing.assert_array_equal(roll.state[:g, d:], hidden)


def test_privileged_input_reaches_the_critic_never_the_actor():
    config = ChickenFootConfig()
    engine = Engine(config, seed=5)
    seat = engine.current
    collector = make_collector(games=1)
    actor, critic = small_nets(config)
    swapped = _swapped_hidden_tile(engine, seat)
    width = collector.obs_size + collector.priv_size
    both = _rows(collector, engine, swapped)
    a, b = both[:1], both[1:]
    assert a.shape[1] == width
    d = collector.obs_size
    np.testing.assert_array_equal(a[:, :d], b[:, :d])  # the seat sees the same thing
    assert not np.array_equal(a[:, d:], b[:, d:])  # the privileged vector differs
    with torch.no_grad():
        xa, xb = torch.from_numpy(a), torch.from_numpy(b)
        assert torch.equal(actor(xa[:, :d]), actor(xb[:, :d]))
        assert not torch.equal(critic(xa), critic(xb))
    # The actor's first layer takes exactly the observation: it cannot read anything else.
    assert actor[0].in_features == d and critic[0].in_features == width
    # The privileged vector is the other seats' hands, egocentric, then the boneyard.
    hands = engine.hands
    others = [(seat + k) % config.num_players for k in range(1, config.num_players)]
    np.testing.assert_array_equal(a[0, d : d + 3 * config.num_tiles],
                                  hands[others].reshape(-1).astype(np.float32))
    boneyard = np.zeros(config.num_tiles, np.float32)
    boneyard[engine.boneyard] = 1
    np.testing.assert_array_equal(a[0, d + 3 * config.num_tiles :], boneyard)
    # Ablation: without the privileged critic the state is the observation alone.
    plain = make_collector(games=1, privileged=False)
    row = _rows(plain, engine)
    assert row.shape == (1, plain.obs_size)
    np.testing.assert_array_equal(row[0], a[0, :d])


# ------------------------------------------------------------------------------ masking
@pytest.mark.slow
def test_masked_sampling_never_picks_an_illegal_action():
    generator = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        mask = torch.from_numpy(rng.random((64, 112)) < 0.05)
        mask[torch.arange(64), torch.from_numpy(rng.integers(0, 112, 64))] = True
        logits = torch.from_numpy(rng.normal(0, 1, (64, 112)).astype(np.float32))
        logits[~mask] = 1e6  # illegal actions made overwhelmingly likely before masking
        actions, logp = sample_masked(logits, mask, generator)
        assert mask[torch.arange(64), actions].all()
        assert torch.isfinite(logp).all()
    roll = make_collector().collect(*small_nets(ChickenFootConfig()), steps=20)
    assert roll.mask[np.arange(len(roll.action)), roll.action].all()


# ------------------------------------------------------------------------------ runs
def plays_legal_moves(policy, env, seed: int, moves: int) -> None:
    """`policy` plays every seat of `env` for `moves` steps; every action it picks is legal."""
    env.reset(seed=seed)
    for _ in env.agent_iter(max_iter=moves):
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else policy.act(obs)
        assert action is None or obs["action_mask"][action]
        env.step(action)


def run(runs: Path, name: str, *sets: str) -> Path:
    args = ["--config", SMOKE, "--set", f"runs_dir={runs}", "--set", f"run_name={name}", *QUIET]
    for s in sets:
        args += ["--set", s]
    ppo.main(args)
    return runs / name


@pytest.fixture(scope="module")
def selfplay_run(tmp_path_factory) -> Path:
    return run(tmp_path_factory.mktemp("runs"), "sp")


@pytest.mark.slow
def test_smoke_selfplay_run_writes_the_shared_run_directory(selfplay_run):
    config = yaml.safe_load((selfplay_run / "config.yaml").read_text())
    assert config["algo"] == "selfplay"
    latest = ckpt.resolve_checkpoint(selfplay_run)
    card = ckpt.read_card(latest)
    assert card["steps"] == 512 and card["algo"] == "selfplay"
    assert card["update_dtype"] == update_dtype(card["train_config"]["selfplay"]["update_dtype"])
    assert (latest / TRAINER_FILE).is_file() and not (latest / "model.zip").exists()
    assert list((selfplay_run / "tb").rglob("events.out.tfevents.*"))
    evals = [json.loads(line) for line in (selfplay_run / "evals.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in evals] == [256, 512]
    assert (selfplay_run / "checkpoints" / "best.json").is_file()
    snapshots = sorted(p.name for p in (selfplay_run / "snapshots").iterdir())
    assert snapshots == [f"step_{s:09d}" for s in (128, 256, 384, 512)]
    # The actor ships in the weights-only format and plays as a ppo: spec, legal moves only.
    from cf_env.agents.policies import load_policy

    plays_legal_moves(load_policy(f"ppo:{selfplay_run}", ChickenFootConfig(), seed=0), raw_env(),
                      seed=3, moves=200)
    # trainer.pt is plain state dicts: torch.load(weights_only=True) reads it.
    state = load_trainer_state(latest)
    assert state["steps"] == 512 and len(state["snapshots"]) == 2  # opponents.max_snapshots
    assert tuple(state["actor"]["0.weight"].shape) == (16, card["observation_size"])


@pytest.mark.slow
def test_export_of_a_selfplay_run_is_weights_only(selfplay_run, tmp_path):
    from training.artifacts import export

    out = export.main([str(selfplay_run), str(tmp_path / "exported")])
    assert not (out / TRAINER_FILE).exists() and (out / "policy.npz").is_file()
    assert ckpt.read_card(out)["policy_sha256"] == ckpt.read_card(
        ckpt.resolve_checkpoint(selfplay_run))["policy_sha256"]


@pytest.mark.slow
def test_ship_writes_the_privileged_critic_as_the_value_head(selfplay_run, tmp_path):
    """A shipped self-play agent carries its critic (value.npz): numpy values equal the
    trainer's torch critic on collector rows, and `lookahead:` plays with it."""
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    from cf_env.agents.policies import load_policy
    from training.artifacts import ship

    dest = tmp_path / "agent"
    card = ship.main([str(selfplay_run), str(dest), "--deals", "2", "--full-games", ""])
    assert card["value"]["reward"] == {"reward_mode": "zero_sum", "win_bonus": 0.0,
                                       "episode": "round"}
    assert card["value"]["net_arch"] == [16] and (dest / "value.npz").is_file()
    assert f"`lookahead:{dest}`" in (dest / "card.md").read_text()
    head = ckpt.load_value_head(dest, ChickenFootConfig())
    critic = build_networks(load_config(str(selfplay_run / "config.yaml")))[1]
    critic.load_state_dict(load_trainer_state(ckpt.resolve_checkpoint(selfplay_run))["critic"])
    roll = make_collector(games=2).collect(*small_nets(ChickenFootConfig()), steps=6)
    with torch.no_grad():
        theirs = critic(torch.from_numpy(roll.state)).squeeze(1).numpy()
    assert np.allclose(head.values(roll.state), theirs, atol=1e-5)
    policy = load_policy(f"lookahead:{dest}:4", ChickenFootConfig(num_rounds=1), seed=0)
    plays_legal_moves(policy, raw_env(num_rounds=1), seed=2, moves=40)


@pytest.mark.slow
def test_resume_continues_the_step_count_and_the_pool(selfplay_run, tmp_path):
    copy = tmp_path / "sp"
    shutil.copytree(selfplay_run, copy)
    before = load_trainer_state(ckpt.resolve_checkpoint(copy))
    ppo.main(["--resume", str(copy), "--set", "total_steps=640", "--set", "eval.every_steps=0"])
    latest = ckpt.resolve_checkpoint(copy)
    after = load_trainer_state(latest)
    assert ckpt.read_card(latest)["steps"] == after["steps"] == 640
    assert after["updates"] == before["updates"] + 2
    # The pool carried on (by folder name, inside the copied run): the saved snapshots, then the
    # ones this session added, the newest opponents.max_snapshots (2) kept.
    assert before["snapshots"] == ["step_000000384", "step_000000512"]
    assert after["snapshots"] == ["step_000000512", "step_000000640"]
    assert (copy / "snapshots" / "step_000000640" / "card.json").is_file()
    assert len(json.loads((copy / "run.json").read_text())["sessions"]) == 2
    with pytest.raises(SystemExit) as exit_info:
        ppo.main(["--resume", str(copy), "--set", "total_steps=1024",
                  "--set", "selfplay.privileged_critic=false"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        ppo.main(["--resume", str(copy), "--set", "total_steps=1024", "--set", "algo=maskable_ppo"])


@pytest.mark.slow
@pytest.mark.parametrize("sets", [[], ["selfplay.workers=2", "selfplay.overlap=true",
                                       "selfplay.update_dtype=bfloat16"]],
                         ids=["in-process", "two-workers-overlap-bfloat16"])
def test_a_tiny_run_is_deterministic(tmp_path, sets):
    tiny = ["total_steps=256", "eval.every_steps=0", *sets]
    a = run(tmp_path / "a", "r", *tiny)
    b = run(tmp_path / "b", "r", *tiny)
    card_a = ckpt.read_card(ckpt.resolve_checkpoint(a))
    card_b = ckpt.read_card(ckpt.resolve_checkpoint(b))
    assert card_a["policy_sha256"] == card_b["policy_sha256"]
    state_a = load_trainer_state(ckpt.resolve_checkpoint(a))
    state_b = load_trainer_state(ckpt.resolve_checkpoint(b))
    for key, value in state_a["critic"].items():
        assert torch.equal(value, state_b["critic"][key])


def test_a_collector_process_hands_over_the_same_rollout_as_the_trainers_process():
    """The worker writes its rollout into shared memory and the trainer copies it out: every
    array equals what the same collector (same seed) gives in the trainer's own process."""
    config = load_config(SMOKE, ["ppo.net_arch=[16]", "selfplay.num_games=4",
                                 "selfplay.rollout_steps=8"])
    actor, critic = build_networks(config)
    local = LocalCollection(config, seed=3, snapshots=[])
    remote = ProcessCollection(config, seed=3, snapshots=[])
    try:
        for _ in range(2):  # the second rollout overwrites the first's block
            mine, mine_stats = local.collect(actor, critic, [])
            theirs, their_stats = remote.collect(actor, critic, [])
            assert mine_stats == their_stats
            for name, array in vars(mine).items():
                np.testing.assert_array_equal(getattr(theirs, name), array, err_msg=name)
    finally:
        remote.close()
    assert remote.shared == []


def test_smoke_config_runs_maskable_ppo_too(tmp_path):
    path = run(tmp_path, "sb3", "algo=maskable_ppo", "total_steps=128", "eval.every_steps=0")
    latest = ckpt.resolve_checkpoint(path)
    assert (latest / "model.zip").is_file() and ckpt.read_card(latest)["steps"] == 128


def test_config_checks_the_selfplay_fields():
    with pytest.raises(ValueError, match="algo must be"):
        load_config(SMOKE, ["algo=ppo"])
    with pytest.raises(ValueError, match="selfplay.pool_share"):
        load_config(SMOKE, ["selfplay.pool_share=1.0"])
    with pytest.raises(ValueError, match="multiple of selfplay.workers"):
        load_config(SMOKE, ["selfplay.workers=3"])
    with pytest.raises(ValueError, match="selfplay.win_bonus"):
        load_config(SMOKE, ["selfplay.win_bonus=-1"])
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['num_game'\] in selfplay"):
        load_config(SMOKE, ["selfplay.num_game=4"])
    assert load_config(ROOT / "configs" / "default.yaml").algo == "selfplay"


def test_anneal_lr_decays_linearly_to_zero_and_is_self_play_only(tmp_path):
    """ppo.anneal_lr: each update's step size is learning_rate * (1 - steps / total_steps)."""
    config = load_config(SMOKE, ["ppo.anneal_lr=true", "total_steps=400", "eval.every_steps=0",
                                f"runs_dir={tmp_path}"])
    trainer = SelfPlayTrainer(config, seed=config.seed)
    try:
        seen = []
        while trainer.steps < config.total_steps:
            before = trainer.steps
            stats = trainer.iterate()
            seen.append(stats["learning_rate"])
            assert stats["learning_rate"] == pytest.approx(
                config.ppo.learning_rate * (1 - before / config.total_steps))
        assert seen[0] == config.ppo.learning_rate and seen == sorted(seen, reverse=True)
        assert trainer.learning_rate() == 0.0  # past total_steps nothing moves
    finally:
        trainer.close()
    constant = load_config(SMOKE, [f"runs_dir={tmp_path}"])
    assert not constant.ppo.anneal_lr
    with pytest.raises(ValueError, match="ppo.anneal_lr must be false for algo maskable_ppo"):
        load_config(SMOKE, ["ppo.anneal_lr=true", "algo=maskable_ppo"])
    with pytest.raises(ValueError, match="ppo.anneal_lr must be bool"):
        load_config(SMOKE, ["ppo.anneal_lr=1"])


def test_bfloat16_update_is_mixed_precision_close_to_float32():
    """selfplay.update_dtype=bfloat16 autocasts the update's matmuls only: the weights stay
    float32 and move like the float32 update's (same rollout, same minibatches), not identically."""
    rules = ChickenFootConfig()
    roll = make_collector(games=4).collect(*small_nets(rules), steps=8)
    compute_gae(roll, 0.99, 0.95)
    moved = {}
    for dtype in ("float32", "bfloat16"):
        config = load_config(SMOKE, ["ppo.net_arch=[16]", f"selfplay.update_dtype={dtype}"])
        actor, critic = small_nets(rules)
        start = [w.detach().clone() for w in actor.parameters()]
        optimizer = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=1e-3)
        stats = ppo_update(actor, critic, optimizer, roll, config, torch.Generator().manual_seed(0))
        assert np.isfinite(stats["policy_loss"]) and np.isfinite(stats["value_loss"])
        assert all(w.dtype == torch.float32 for w in actor.parameters())
        moved[dtype] = torch.cat([(w.detach() - s).flatten() for w, s in zip(actor.parameters(), start)])
    a, b = moved["float32"], moved["bfloat16"]
    assert not torch.equal(a, b)
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.95
    with pytest.raises(ValueError,
                       match="selfplay.update_dtype must be one of 'float32', 'bfloat16', 'auto'"):
        load_config(SMOKE, ["selfplay.update_dtype=float16"])


@pytest.mark.parametrize("native", [True, False])
def test_auto_update_dtype_is_bfloat16_only_where_the_cpu_has_it(monkeypatch, native):
    """Emulated bf16 is several times slower than float32, so "auto" picks it only on CPUs
    with AVX512-BF16 or AMX; an explicit setting is kept as is."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    assert update_dtype("auto") == ("bfloat16" if native else "float32")
    assert update_dtype("float32") == "float32" and update_dtype("bfloat16") == "bfloat16"


@pytest.mark.parametrize("native", [True, False])
def test_a_run_says_once_which_precision_its_update_uses(monkeypatch, capsys, tmp_path, native):
    """Where the CPU has no bf16 matmuls, "auto" runs float32 and the run says so in one line."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    ppo.main(["--config", SMOKE, *QUIET, "--set", f"run_name=p{native}", "--set",
              f"runs_dir={tmp_path}", "--set", "total_steps=64", "--set", "eval.every_steps=0",
              "--set", "selfplay.num_games=4", "--set", "selfplay.rollout_steps=16",
              "--set", "selfplay.overlap=false", "--set", "selfplay.update_dtype=auto"])
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.startswith("update:")]
    assert lines == [precision_line("auto")]
    assert lines[0].startswith("update: bfloat16" if native else "update: float32 (this CPU")
    assert precision_line("float32") == "update: float32"


@pytest.mark.slow
def test_fit_value_gives_a_shipped_actor_a_value_head(selfplay_run, tmp_path):
    """training.selfplay.fit_value: policy evaluation of the frozen actor writes a valid value head (the
    error on fresh rollouts falls), leaves the actor alone, and refuses what it cannot fit."""
    from cf_env.agents.policies import load_policy
    from training.artifacts import export
    from training.selfplay import fit_value

    agent = export.main([str(selfplay_run), str(tmp_path / "agent")])
    twin = tmp_path / "twin"
    shutil.copytree(agent, twin)
    before = ckpt.read_card(agent)
    assert "value" not in before
    args = ["--decisions", "3000", "--games", "8", "--rollout-steps", "16", "--init", "fresh",
            "--learning-rate", "3e-3"]
    assert fit_value.main([str(agent), *args]) == 0
    assert fit_value.main([str(twin), *args]) == 0  # the same seed: the same value head
    assert ckpt.read_card(twin)["value"]["sha256"] == ckpt.read_card(agent)["value"]["sha256"]
    card = ckpt.read_card(agent)
    assert card["value"]["fit"]["command"] == " ".join(["python -m training.fit_value", str(agent), *args])
    assert card["policy_sha256"] == before["policy_sha256"]
    entry = card["value"]
    assert entry["reward"] == {"reward_mode": "zero_sum", "win_bonus": 0.0, "episode": "round"}
    assert entry["fit"]["decisions"] >= 3000 and entry["fit"]["init"] == "fresh"
    assert entry["fit"]["last_mse"] < entry["fit"]["first_mse"]
    head = ckpt.load_value_head(agent, ChickenFootConfig())
    assert head.input_size == card["observation_size"] + 220
    policy = load_policy(f"lookahead:{agent}:4", ChickenFootConfig(num_rounds=1), seed=0)
    plays_legal_moves(policy, raw_env(num_rounds=1), seed=2, moves=40)
    # Refused: an SB3 checkpoint (no self-play config) and an observation-only critic.
    with pytest.raises(ckpt.CheckpointError, match="not a self-play checkpoint"):
        fit_value.fit(ROOT / "checkpoints" / "ppo-4p-d9", decisions=64)
    card["train_config"]["selfplay"]["privileged_critic"] = False
    (agent / "card.json").write_text(json.dumps(card))
    with pytest.raises(ckpt.CheckpointError, match="observation-only critic"):
        fit_value.fit(agent, decisions=64)
