"""Throughput benchmark: our engine and envs against PettingZoo and OpenSpiel peers.

    python -m cf_env.tools.bench            # full run: default and large config, scaling grid (~7 min)
    python -m cf_env.tools.bench --quick    # shorter measurements, no scaling grid (minutes)
    python -m cf_env.tools.bench --libs-only  # only the TorchRL / Tianshou rows, 3 configs (~2.5 min)

Shared machines are noisy (wall-clock rates vary widely from run to run), so every claim is a
**ratio measured in the same process run**, and rates are steps per **CPU second of this process**
(`time.process_time`): time spent waiting for a core held by someone else's job is not counted.
Within each round the loops being compared take turns in 20 ms slices, so they also share
whatever slows a core down; a round's ratio compares their rates over that round, and the median
over rounds is reported next to the median rates. On an idle machine CPU time and wall time agree
for these single-threaded loops.

Every env is driven by the same loop: random legal actions chosen from the action mask
(`agent_iter` / `last` / `step` for AEC envs), one `random.Random` per loop. Peers are optional
(`pip install .[bench]`: PettingZoo classic needs pygame-ce, OpenSpiel is `open_spiel`); a missing
peer is reported as such, never faked. MaskablePPO rows need the `train` extra.

Measured, for the default config and a large one (double-15, 8 players):
* engine-only decisions/s (`Engine.legal_actions` + `Engine.step`), and with the acting seat's
  observation and mask built each decision (what OpenSpiel's "+obs" loop does);
* raw and wrapped AEC steps/s;
* the single-agent adapter's learner steps/s, every opponent `greedy`;
* MaskablePPO learner steps/s (rollouts and updates, the training defaults) with 1 and 16
  in-process envs (`DummyVecEnv`), on our adapter and on a constant-cost env with identical spaces,
  so the env's share of training time is visible;
* memory per env instance after `reset` (tracemalloc);
* the same loops over PettingZoo `connect_four_v3` and OpenSpiel `python_block_dominoes`;
* AEC steps/s through other libraries' own PettingZoo wrappers, on our env and on
  `connect_four_v3` in the same rounds: a TorchRL rollout (`PettingZooWrapper(use_mask=True)`,
  actions drawn from the mask) and a Tianshou collector (`PettingZooEnv`, masked random
  policies); each needs its extra (`pip install .[torchrl]`, `.[tianshou]`);
* (full run) cost per decision by set size and player count.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import gymnasium as gym
import numpy as np

from cf_env.core import atomic
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from cf_env.envs.env import env as wrapped_env
from cf_env.envs.env import raw_env
from cf_env.tools.cli import HelpFormatter

# pygame (imported by PettingZoo classic) prints a banner on import; keep the tables clean.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

DEFAULT = ChickenFootConfig()
LARGE = ChickenFootConfig(max_pips=15, num_players=8)
# connect_four's player count: TorchRL's wrapper does per-agent work every step (one group each).
TWO_PLAYER = ChickenFootConfig(max_pips=6, num_players=2)

# MaskablePPO as `python -m training.ppo` builds it by default (training/config.py: PPOSettings,
# TrainConfig.torch_threads); SB3's defaults for the rest (clip 0.2, vf_coef 0.5, grad norm 0.5).
PPO_SETTINGS = {
    "n_steps": 256,
    "batch_size": 512,
    "n_epochs": 4,
    "learning_rate": 3e-4,
    "gamma": 0.995,
    "gae_lambda": 0.95,
    "ent_coef": 0.01,
}
PPO_NET_ARCH = [256, 256]
TORCH_THREADS = 1


@dataclass(frozen=True)
class Budget:
    """How much to measure."""

    seconds: float = 1.0
    """CPU seconds each loop runs per round."""
    repeats: int = 5
    """Rounds; medians are over rounds."""
    ppo_rollouts: dict[int, int] = field(default_factory=lambda: {1: 8, 16: 1})
    """Per env count: rollouts (of n_steps × envs decisions, plus their update) per timed call."""
    ppo_n_steps: int = PPO_SETTINGS["n_steps"]
    ppo_repeats: int = 7
    """Rounds of the MaskablePPO rows: each is a whole rollout and update (about a second), and
    these vary most from run to run (±5 % on a shared machine), so they get more rounds."""
    memory_instances: int = 20
    scaling: bool = True


FULL = Budget()
# --quick: a look, not a claim. Each MaskablePPO round is whole rollouts and their updates of
# four models per config (seconds each): shorter rollouts and fewer rounds than the full run.
QUICK = Budget(
    seconds=0.25, repeats=3, ppo_rollouts={1: 2, 16: 1}, ppo_n_steps=64, ppo_repeats=3,
    memory_instances=5, scaling=False,
)


# ---------------------------------------------------------------------- loops
# A loop is `run(k) -> steps done` (at least k); it keeps its own state between calls.
Loop = Callable[[int], int]


def engine_loop(cfg: ChickenFootConfig, seed: int = 0, observe: bool = False) -> Loop:
    """Random legal play through the pure engine; with `observe`, also the acting seat's
    observation and mask each decision (what an env must hand to a learner)."""
    engine = Engine(cfg, seed=seed)
    encoder = Encoder(cfg)
    pick = random.Random(seed)

    def run(k: int) -> int:
        for _ in range(k):
            if engine.game_over:
                engine.reset(pick.getrandbits(62))
            if observe:
                encoder.observe(engine, engine.current)
                legal = np.flatnonzero(engine.legal_action_mask())
            else:
                legal = engine.legal_actions()
            engine.step(int(legal[pick.randrange(len(legal))]))
        return k

    return run


def aec_loop(env, seed: int = 0) -> Loop:
    """The standard AEC loop over any PettingZoo env: `last`, a random legal action, `step`."""
    pick = random.Random(seed)
    env.reset(seed=seed)
    agents = iter(env.agent_iter())

    def run(k: int) -> int:
        nonlocal agents
        for _ in range(k):
            if next(agents, None) is None:  # every agent is done: a new game
                env.reset()
                agents = iter(env.agent_iter())
                next(agents)
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[pick.randrange(len(legal))]))
        return k

    return run


def gym_loop(env, seed: int = 0) -> tuple[Loop, Callable[[], float]]:
    """Random legal learner actions through a masked gymnasium env. Also returns a function
    giving the mean episode length seen so far (learner steps)."""
    pick = random.Random(seed)
    env.reset(seed=seed)
    episodes, steps = [0], [0]

    def run(k: int) -> int:
        for _ in range(k):
            legal = np.flatnonzero(env.action_masks())
            _, _, terminated, truncated, _ = env.step(int(legal[pick.randrange(len(legal))]))
            steps[0] += 1
            if terminated or truncated:
                episodes[0] += 1
                env.reset()
        return k

    return run, lambda: steps[0] / max(episodes[0], 1)


def openspiel_loop(seed: int = 0, observe: bool = True) -> Loop:
    """OpenSpiel's `python_block_dominoes`: random legal decisions, chance nodes sampled (not
    counted); with `observe`, the acting player's observation tensor each decision."""
    import pyspiel
    from open_spiel.python.games import block_dominoes  # noqa: F401  (registers the game)

    game = pyspiel.load_game("python_block_dominoes")
    pick = random.Random(seed)
    state = game.new_initial_state()

    def run(k: int) -> int:
        nonlocal state
        done = 0
        while done < k:
            if state.is_terminal():
                state = game.new_initial_state()
            if state.is_chance_node():  # uniform over the tiles left
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[pick.randrange(len(outcomes))][0])
                continue
            if observe:
                state.observation_tensor(state.current_player())
            legal = state.legal_actions()
            state.apply_action(legal[pick.randrange(len(legal))])
            done += 1
        return done

    return run


def connect_four(wrapped: bool):
    from pettingzoo.classic import connect_four_v3

    return connect_four_v3.env() if wrapped else connect_four_v3.raw_env()


def torchrl_loop(aec_env, seed: int = 0) -> Loop:
    """TorchRL rollouts through its own `PettingZooWrapper(env=aec_env, use_mask=True)`: every
    group's action drawn uniformly from its `action_mask`, each call one `env.rollout(k)` going on
    from where the last one stopped (games that end inside it are reset by TorchRL)."""
    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import step_mdp

    env = PettingZooWrapper(env=aec_env, use_mask=True, seed=seed)
    groups = list(env.group_map)
    gen = torch.Generator().manual_seed(seed)

    def policy(td):
        for group in groups:
            mask = td[group, "action_mask"].float()
            td[group, "action"] = torch.multinomial(mask, 1, generator=gen).squeeze(-1)
        return td

    state = env.reset()

    def run(k: int) -> int:
        nonlocal state
        rollout = env.rollout(k, policy, auto_reset=False, tensordict=state,
                              break_when_any_done=False)
        state = step_mdp(rollout[-1])  # the last step is never reset by rollout itself
        if state["done"].any():
            state = env.reset()
        return rollout.batch_size[0]

    return run


def tianshou_loop(aec_env, seed: int = 0) -> Loop:
    """A Tianshou `Collector` over its own `PettingZooEnv(aec_env)` (one env, a plain replay
    buffer), every agent Tianshou's masked random policy; each call one `collect(n_step=k)`."""
    from tianshou.algorithm.multiagent.marl import MultiAgentPolicy
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector, ReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    # Its episode-return summary expects one reward per step and warns at every finished game
    # about ours (one per player, as its PettingZooEnv returns them).
    logging.getLogger("tianshou.data.stats").setLevel(logging.ERROR)
    env = PettingZooEnv(aec_env)
    policy = MultiAgentPolicy({
        agent: MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space).policy
        for agent in env.agents
    })
    envs = DummyVectorEnv([lambda: env])
    envs.seed(seed)
    collector = Collector(policy, envs, ReplayBuffer(20_000))
    collector.reset()

    def run(k: int) -> int:
        return collector.collect(n_step=k).n_collected_steps

    return run


def single_agent_env(cfg: ChickenFootConfig, opponent: str = "greedy"):
    from cf_env.envs.single_agent import ChickenFootSingleAgentEnv

    return ChickenFootSingleAgentEnv(cfg, opponents=[opponent])


class ConstantEnv(gym.Env):
    """A gymnasium env with the given spaces whose every call costs (almost) nothing: the same
    observation and mask every step, an episode every `length` steps."""

    def __init__(self, observation_space, action_space, mask: np.ndarray, length: int):
        self.observation_space, self.action_space = observation_space, action_space
        self._obs = observation_space.low.copy()
        self._mask = mask.copy()
        self._length = length
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._obs, {}

    def step(self, action):
        self._t += 1
        return self._obs, 0.0, self._t >= self._length, False, {}

    def action_masks(self) -> np.ndarray:
        return self._mask


# ---------------------------------------------------------------------- measuring
def measure_rate(loop: Loop, seconds: float) -> float:
    """Steps per CPU second of `loop` run for about `seconds` of CPU time."""
    done, start = 0, time.process_time()
    chunk = 16
    while True:
        done += loop(chunk)
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return done / elapsed
        chunk = min(chunk * 2, 1024)


@dataclass
class Group:
    """Loops measured in the same rounds; rates[name] holds one rate per round."""

    rates: dict[str, list[float]] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.rates[name])

    def ratio(self, a: str, b: str) -> float:
        """Median over rounds of rate(a) / rate(b), each pair measured in the same round."""
        return statistics.median(x / y for x, y in zip(self.rates[a], self.rates[b]))

    def spread(self, name: str) -> float:
        """(max - min) / median over rounds."""
        values = self.rates[name]
        return (max(values) - min(values)) / statistics.median(values)


def measure_group(loops: dict[str, Loop], budget: Budget, slice_seconds: float = 0.02) -> Group:
    """Measure `loops` in `budget.repeats` rounds. Within a round the loops take turns in short
    slices until each has run `budget.seconds`, so every loop sees the same background load;
    a round's rate is its steps over its own CPU time."""
    chunk = {}
    for name, loop in loops.items():  # warm-up (first resets, lazy imports) and calibration
        chunk[name] = max(1, int(measure_rate(loop, min(0.1, budget.seconds / 4)) * slice_seconds))
    group = Group({name: [] for name in loops})
    for _ in range(budget.repeats):
        steps = dict.fromkeys(loops, 0)
        spent = dict.fromkeys(loops, 0.0)
        while min(spent.values()) < budget.seconds:
            for name, loop in loops.items():
                start = time.process_time()
                steps[name] += loop(chunk[name])
                spent[name] += time.process_time() - start
        for name in loops:
            group.rates[name].append(steps[name] / spent[name])
    return group


def memory_per_instance(factory: Callable[[], object], count: int) -> float:
    """Bytes traced per instance, shared tables and imports excluded (one is built first)."""
    factory()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        keep = [factory() for _ in range(count)]
        used = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    del keep
    return used / count


def available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------- sections
def throughput(cfg: ChickenFootConfig, budget: Budget, peers: bool) -> Group:
    kw = cfg.to_dict()
    loops: dict[str, Loop] = {
        "engine": engine_loop(cfg),
        "engine+obs": engine_loop(cfg, observe=True),
        "raw AEC": aec_loop(raw_env(**kw)),
        "wrapped AEC": aec_loop(wrapped_env(**kw)),
        "single-agent": gym_loop(single_agent_env(cfg))[0],
    }
    if peers and available("pygame"):
        loops["connect_four raw"] = aec_loop(connect_four(wrapped=False))
        loops["connect_four wrapped"] = aec_loop(connect_four(wrapped=True))
    if peers and available("pyspiel"):
        loops["openspiel dominoes"] = openspiel_loop(observe=False)
        loops["openspiel dominoes+obs"] = openspiel_loop(observe=True)
    return measure_group(loops, budget)


# Libraries with their own PettingZoo wrapper: (name, module, extra, loop factory).
LIBRARIES = (
    ("torchrl", "torchrl", "torchrl", torchrl_loop),
    ("tianshou", "tianshou", "tianshou", tianshou_loop),
)
LIBRARY_SLICE_SECONDS = 0.2
"""Longer turns than the plain loops' 20 ms: each turn is one `rollout` / `collect` call, whose
fixed cost (stacking, statistics) must not weigh on the per-step rate."""


def library_rates(cfg: ChickenFootConfig, budget: Budget, peers: bool) -> Group:
    """AEC steps per CPU second through each installed library's PettingZoo wrapper, on our
    (wrapped) env and on connect_four_v3, with the plain wrapped AEC loop as reference; all in
    the same rounds."""
    loops: dict[str, Loop] = {"wrapped AEC": aec_loop(wrapped_env(**cfg.to_dict()))}
    libraries = [lib for lib in LIBRARIES if available(lib[1])]
    if libraries:
        import torch

        torch.set_num_threads(TORCH_THREADS)  # rates are per CPU second of this process
    for name, _, _, factory in libraries:
        loops[f"{name} ours"] = factory(wrapped_env(**cfg.to_dict()))
        if peers and available("pygame"):
            loops[f"{name} connect_four"] = factory(connect_four(wrapped=True))
    return measure_group(loops, budget, slice_seconds=LIBRARY_SLICE_SECONDS)


def library_ratio_rows(group: Group) -> list[tuple]:
    """Per library: ours / connect_four through it, and its cost: the plain AEC loop's rate
    over ours through it (how many times slower a step gets)."""
    rows: list[tuple] = []
    for name, module, extra, _ in LIBRARIES:
        ours = f"{name} ours"
        if ours not in group.rates:
            missing = f"{module} not installed (pip install .[{extra}])"
            rows.append((f"{name}: ours / connect_four", None, None, missing))
            rows.append((f"{name}: plain wrapped AEC loop / ours through {name}", None, None,
                         missing))
            continue
        peer = f"{name} connect_four"
        rows.append((f"{name}: ours / connect_four",
                     group.ratio(ours, peer) if peer in group.rates else None, None))
        rows.append((f"{name}: plain wrapped AEC loop / ours through {name}",
                     group.ratio("wrapped AEC", ours), None))
    return rows


def episode_length(cfg: ChickenFootConfig, steps: int = 2000) -> float:
    """Mean learner steps per episode of the adapter under random legal play."""
    loop, mean_length = gym_loop(single_agent_env(cfg), seed=1)
    loop(steps)
    return mean_length()


def ppo_rates(cfg: ChickenFootConfig, budget: Budget, length: float) -> Group:
    """MaskablePPO learner steps per CPU second (rollouts + updates) on our adapter and on a
    ConstantEnv with the same spaces and episode length; calls alternate within each round."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(TORCH_THREADS)
    probe = single_agent_env(cfg)
    probe.reset(seed=0)
    mask = probe.action_masks()
    makers = {
        "ours": lambda: single_agent_env(cfg),
        "constant": lambda: ConstantEnv(
            probe.observation_space, probe.action_space, mask, max(1, round(length))
        ),
    }
    models, steps = {}, {}
    for n_envs, rollouts in budget.ppo_rollouts.items():
        n_steps = budget.ppo_n_steps
        settings = {**PPO_SETTINGS, "n_steps": n_steps}
        settings["batch_size"] = min(settings["batch_size"], n_steps * n_envs)
        for kind, make in makers.items():
            model = MaskablePPO(
                "MlpPolicy",
                DummyVecEnv([make for _ in range(n_envs)]),
                policy_kwargs={
                    "net_arch": {"pi": PPO_NET_ARCH, "vf": PPO_NET_ARCH},
                    "activation_fn": torch.nn.Tanh,
                },
                seed=0,
                device="cpu",
                verbose=0,
                **settings,
            )
            model.learn(n_steps * n_envs)  # warm-up: first rollout and update
            name = f"{kind} x{n_envs}"
            models[name], steps[name] = model, rollouts * n_steps * n_envs
    group = Group({name: [] for name in models})
    for _ in range(budget.ppo_repeats):
        for name, model in models.items():
            start = time.process_time()
            model.learn(steps[name], reset_num_timesteps=False)
            group.rates[name].append(steps[name] / (time.process_time() - start))
    return group


def _reset(env):
    env.reset(seed=0)
    return env


def memory(cfg: ChickenFootConfig, budget: Budget, peers: bool) -> dict[str, float]:
    kw = cfg.to_dict()
    factories: dict[str, Callable[[], object]] = {
        "Engine": lambda: Engine(cfg, seed=0),
        "raw AEC": lambda: _reset(raw_env(**kw)),
        "wrapped AEC": lambda: _reset(wrapped_env(**kw)),
        "single-agent": lambda: _reset(single_agent_env(cfg)),
    }
    if peers and available("pygame"):
        factories["connect_four raw"] = lambda: _reset(connect_four(wrapped=False))
        factories["connect_four wrapped"] = lambda: _reset(connect_four(wrapped=True))
    return {name: memory_per_instance(f, budget.memory_instances) for name, f in factories.items()}


SCALING_GRID = tuple(ChickenFootConfig(max_pips=p, num_players=4) for p in (6, 9, 12, 15, 18)) + tuple(
    ChickenFootConfig(max_pips=12, num_players=n) for n in (2, 6, 8, 10)
)


def scaling(budget: Budget, grid=SCALING_GRID) -> list[dict]:
    """Cost per decision of the engine, the observation and raw AEC across set sizes and player
    counts; each config's loops are measured together."""
    rows = []
    for cfg in grid:
        group = measure_group(
            {
                "engine": engine_loop(cfg),
                "engine+obs": engine_loop(cfg, observe=True),
                "raw AEC": aec_loop(raw_env(**cfg.to_dict())),
            },
            replace(budget, seconds=budget.seconds / 2),
        )
        rows.append(
            {
                "max_pips": cfg.max_pips,
                "players": cfg.num_players,
                "tiles": cfg.num_tiles,
                "obs_size": Encoder(cfg).layout.size,
                **{f"{name} µs": 1e6 / group.median(name) for name in group.rates},
            }
        )
    return rows


# ---------------------------------------------------------------------- report
TARGETS = (
    # (label, numerator, denominator, the ratio targeted on the default config or None)
    ("wrapped AEC / connect_four wrapped", "wrapped AEC", "connect_four wrapped", 1.5),
    ("raw AEC / connect_four raw", "raw AEC", "connect_four raw", 1.5),
    ("engine / openspiel dominoes", "engine", "openspiel dominoes", 3.0),
    ("engine+obs / openspiel dominoes+obs", "engine+obs", "openspiel dominoes+obs", None),
)


def _table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _print_rates(title: str, group: Group, unit: str) -> None:
    print(f"\n### {title}\n")
    _table(
        ["loop", f"median {unit}", "µs each", "spread"],
        [
            [name, f"{group.median(name):,.0f}", f"{1e6 / group.median(name):.1f}",
             f"±{group.spread(name) / 2:.0%}"]
            for name in group.rates
        ],
    )


PEER_MISSING = "peer not installed (pip install .[bench])"


def _print_ratios(rows: list[tuple]) -> None:
    """rows: (label, ratio or None when a side is missing, target or None[, what is missing])."""
    print()
    table = []
    for label, ratio, target, *missing in rows:
        if ratio is None:
            table.append([label, missing[0] if missing else PEER_MISSING, "", ""])
            continue
        goal = f"≥ {target:g}×" if target else ""
        met = ("yes" if ratio >= target else "**no**") if target else ""
        table.append([label, f"{ratio:.2f}×", goal, met])
    _table(["ratio, same rounds (median)", "value", "target", "met"], table)


def library_section(desc: str, cfg: ChickenFootConfig, budget: Budget, peers: bool) -> dict:
    """The TorchRL / Tianshou rows: rates, ratios, and what is missing."""
    group = library_rates(cfg, budget, peers)
    _print_rates(
        f"Through other libraries' PettingZoo wrappers, {desc} (AEC steps/CPU-s; random masked "
        f"actions; {TORCH_THREADS} torch thread)",
        group,
        "steps/CPU-s",
    )
    rows = library_ratio_rows(group)
    _print_ratios(rows)
    return {"rates": {n: group.median(n) for n in group.rates},
            "ratios": {label: ratio for label, ratio, *_ in rows}}


def section(label: str, cfg: ChickenFootConfig, budget: Budget, peers: bool, ppo: bool,
            libs: bool = True, libs_only: bool = False) -> dict:
    desc = f"{label} config: double-{cfg.max_pips}, {cfg.num_players} players"
    if libs_only:
        return {"libraries": library_section(desc, cfg, budget, peers)}
    targeted = cfg == DEFAULT
    group = throughput(cfg, budget, peers)
    _print_rates(f"Throughput, {desc}", group, "steps/CPU-s")
    out: dict = {"rates": {n: group.median(n) for n in group.rates}, "ratios": {}}
    rows = []
    for text, a, b, target in TARGETS:
        ratio = group.ratio(a, b) if a in group.rates and b in group.rates else None
        rows.append((text, ratio, target if targeted else None))
        out["ratios"][text] = ratio
    _print_ratios(rows)

    if ppo and available("sb3_contrib"):
        length = episode_length(cfg)
        pgroup = ppo_rates(cfg, budget, length)
        _print_rates(
            f"MaskablePPO learner steps, {desc} (rollouts + updates, training defaults, "
            f"{TORCH_THREADS} torch thread; opponents greedy; constant env: episodes of "
            f"{max(1, round(length))} steps)",
            pgroup,
            "steps/CPU-s",
        )
        rows = []
        for n_envs in budget.ppo_rollouts:
            ratio = pgroup.ratio(f"ours x{n_envs}", f"constant x{n_envs}")
            target = 0.8 if targeted and n_envs == 16 else None
            rows.append((f"ours / constant env, {n_envs} env(s)", ratio, target))
            out["ratios"][f"ppo ours/constant x{n_envs}"] = ratio
        _print_ratios(rows)
        out["ppo"] = {n: pgroup.median(n) for n in pgroup.rates}
    elif ppo:
        print("\n(MaskablePPO rows skipped: sb3-contrib is not installed; pip install .[train])")

    if libs:
        out["libraries"] = library_section(desc, cfg, budget, peers)

    mem = memory(cfg, budget, peers)
    print(f"\n### Memory per instance after reset, {desc} (tracemalloc)\n")
    _table(["object", "KiB"], [[name, f"{size / 1024:.1f}"] for name, size in mem.items()])
    out["memory_bytes"] = mem
    return out


def run(budget: Budget, peers: bool = True, ppo: bool = True, configs=None, libs: bool = True,
        libs_only: bool = False) -> dict:
    """Measure everything (with `libs_only`, only the other libraries' rows), print markdown
    tables, return the figures."""
    configs = configs if configs is not None else {"default": DEFAULT, "large": LARGE}
    print(
        f"# cf_env.tools.bench: {budget.repeats} rounds × {budget.seconds:g} CPU-s per loop, medians; "
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores"
    )
    results: dict = {"budget": asdict(budget), "configs": {}}
    for label, cfg in configs.items():
        results["configs"][label] = section(label, cfg, budget, peers, ppo, libs, libs_only)
    if budget.scaling and not libs_only:
        rows = scaling(budget)
        print("\n### Cost per decision by set size and player count (CPU µs per decision or step)\n")
        _table(
            ["set", "players", "tiles", "obs floats", "engine", "engine+obs", "raw AEC"],
            [
                [f"double-{r['max_pips']}", str(r["players"]), str(r["tiles"]), str(r["obs_size"]),
                 f"{r['engine µs']:.1f}", f"{r['engine+obs µs']:.1f}", f"{r['raw AEC µs']:.1f}"]
                for r in rows
            ],
        )
        results["scaling"] = rows
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.tools.bench", description=__doc__.split("\n")[0],
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="shorter measurements, no scaling")
    parser.add_argument("--seconds", type=float,
                        help=f"CPU seconds per loop per round (default: {FULL.seconds:g}, "
                        f"--quick {QUICK.seconds:g})")
    parser.add_argument("--repeats", type=int,
                        help=f"rounds, medians are over rounds (default: {FULL.repeats}, "
                        f"--quick {QUICK.repeats})")
    parser.add_argument("--no-peers", action="store_true", help="skip connect_four and OpenSpiel")
    parser.add_argument("--no-ppo", action="store_true", help="skip the MaskablePPO rows")
    parser.add_argument("--no-libs", action="store_true",
                        help="skip the TorchRL and Tianshou rows")
    parser.add_argument("--libs-only", action="store_true",
                        help="only the TorchRL and Tianshou rows (with their connect_four "
                        "peers), on the default, a two-player and the large config")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    budget = QUICK if args.quick else FULL
    if args.seconds is not None:
        if not args.seconds > 0:
            parser.error(f"--seconds must be > 0; got {args.seconds}")
        budget = replace(budget, seconds=args.seconds)
    if args.repeats is not None:
        if args.repeats < 1:
            parser.error(f"--repeats must be >= 1; got {args.repeats}")
        budget = replace(budget, repeats=args.repeats)
    if args.no_libs and args.libs_only:
        parser.error("--no-libs and --libs-only exclude each other")
    configs = None
    if args.libs_only:  # also at connect_four's player count
        configs = {"default": DEFAULT, "two-player": TWO_PLAYER, "large": LARGE}
    results = run(budget, peers=not args.no_peers, ppo=not args.no_ppo, configs=configs,
                  libs=not args.no_libs, libs_only=args.libs_only)
    if args.json:
        atomic.write_json(args.json, results, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
