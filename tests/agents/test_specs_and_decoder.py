"""Agents without an import cycle: the policy-spec table (`cf_env.agents.policies`)
names every spec form and loads its agents only when a policy is built; a shipped checkpoint
plays (`ppo:`, `guided:`) with `training` unimportable (`cf_env.agents.checkpoint` reads it);
the observation decoder, beside the encoder in `cf_env.core.observation`, inverts it exactly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cf_env.agents import checkpoint, policies
from cf_env.agents.bots import HeuristicPolicy
from cf_env.agents.ismcts import ISMCTSPolicy
from cf_env.agents.policies import load_policy, policy_specs, spec_checkpoint
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder, ObservationDecoder, ObservedState
from training.artifacts import checkpoints

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "checkpoints" / "selfplay-4p-d9")  # 4 players double-9, the default game
VALUED = str(ROOT / "checkpoints" / "selfplay-4p-d9-v3")  # the same game, with a value head

# One working spec per form of the table, and the class it builds.
SPECS = {
    "random": ("random", "RandomPolicy"),
    "greedy": ("greedy", "GreedyPolicy"),
    "heuristic": ("heuristic", "HeuristicPolicy"),
    "ismcts": ("ismcts:3", "ISMCTSPolicy"),
    "guided": (f"guided:{CKPT}:3", "ISMCTSPolicy"),
    "lookahead": (f"lookahead:{VALUED}:3", "LookaheadPolicy"),
    "belief": (f"belief:{VALUED}:3", "LookaheadPolicy"),
    "br": ("br:greedy:3", "BestResponsePolicy"),
    "ppo": (f"ppo:{CKPT}", "NumpyPolicy"),
}


def _run(script: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def _observations(config: ChickenFootConfig, seed: int):
    """(engine, seat, observation) for every seat at every position of a seeded random game."""
    engine, encoder = Engine(config, seed=seed), Encoder(config)
    rng = np.random.default_rng(seed)
    while not engine.game_over:
        for seat in range(config.num_players):
            yield engine, seat, encoder.observe(engine, seat)
        legal = engine.legal_actions()
        engine.step(legal[int(rng.integers(len(legal)))])


# --------------------------------------------------------------------------- the spec table
def test_the_table_names_every_spec_form_and_each_builds_its_policy():
    assert set(policies.POLICY_SPECS) == set(SPECS)
    forms = [spec.form for spec in policy_specs()]
    assert "module:factory" in forms and "ppo:<checkpoint>" in forms
    config = ChickenFootConfig()
    engine = Engine(config, seed=0)
    observation = {"observation": Encoder(config).observe(engine, engine.current),
                   "action_mask": engine.legal_action_mask()}
    for name, (spec, kind) in SPECS.items():
        entry = policies.POLICY_SPECS[name]
        assert entry.takes_arg == (":" in entry.form), name
        policy = load_policy(spec, config, seed=1)
        assert type(policy).__name__ == kind, spec
        assert observation["action_mask"][policy.act(observation)] == 1, spec
    assert spec_checkpoint(SPECS["guided"][0]) == CKPT == spec_checkpoint(SPECS["ppo"][0])
    assert spec_checkpoint(SPECS["lookahead"][0]) == VALUED == spec_checkpoint(SPECS["belief"][0])
    assert spec_checkpoint("ismcts:3") is None and spec_checkpoint("random") is None


def test_importing_the_specs_loads_no_agent_and_agents_need_no_specs():
    """The table names factories by path: `import cf_env.agents.policies` imports no bot,
    search or checkpoint reader, and building a bot imports only its own module (no agent
    registers itself, none imports the spec module)."""
    lines = _run("""
        import sys
        from cf_env.agents.policies import load_policy
        from cf_env.core.config import ChickenFootConfig
        agents = ("cf_env.agents.bots", "cf_env.agents.ismcts", "cf_env.agents.checkpoint")
        print([m for m in agents if m in sys.modules])
        load_policy("greedy", ChickenFootConfig(), seed=0)
        print([m for m in agents if m in sys.modules])
    """)
    assert lines == ["[]", "['cf_env.agents.bots']"]
    lines = _run("""
        import sys
        import cf_env.agents.ismcts, cf_env.agents.bots, cf_env.agents.checkpoint
        print("cf_env.agents.policies" in sys.modules)
    """)
    assert lines == ["False"]


def test_identical_decisions_through_the_table_and_the_classes():
    """A spec builds exactly the policy its class builds: the same seed, the same actions."""
    config = ChickenFootConfig(num_players=3, max_pips=6)
    pairs = [(load_policy("heuristic", config, seed=4), HeuristicPolicy(config, seed=4)),
             (load_policy("ismcts:8", config, seed=4), ISMCTSPolicy(config, seed=4, iterations=8))]
    mask_engine = Engine(config, seed=2)
    encoder, rng = Encoder(config), np.random.default_rng(2)
    decisions = 0
    while not mask_engine.game_over and decisions < 30:
        legal = mask_engine.legal_actions()
        if len(legal) > 1:
            obs = {"observation": encoder.observe(mask_engine, mask_engine.current),
                   "action_mask": mask_engine.legal_action_mask()}
            for by_spec, by_class in pairs:
                assert by_spec.act(obs) == by_class.act(obs)
            decisions += 1
        mask_engine.step(legal[int(rng.integers(len(legal)))])
    assert decisions >= 10


# --------------------------------------------------------------------------- checkpoints without training
def test_a_shipped_checkpoint_plays_with_training_unimportable():
    """`ppo:` and `guided:` read the checkpoint through `cf_env.agents.checkpoint`: with
    `import training` made to fail, they load, play the same actions as here, and a checkpoint
    for another variant is still refused with the same error."""
    config = ChickenFootConfig()
    engine = Engine(config, seed=5)
    obs = {"observation": Encoder(config).observe(engine, engine.current),
           "action_mask": engine.legal_action_mask()}
    here = [load_policy(spec, config, seed=1).act(obs)
            for spec in (f"ppo:{CKPT}", f"guided:{CKPT}:6")]
    lines = _run(f"""
        import sys
        sys.modules["training"] = None  # any import of training raises ImportError
        from cf_env.agents.policies import load_policy
        from cf_env.core.config import ChickenFootConfig
        from cf_env.core.engine import Engine
        from cf_env.core.observation import Encoder
        config = ChickenFootConfig()
        engine = Engine(config, seed=5)
        obs = {{"observation": Encoder(config).observe(engine, engine.current),
                "action_mask": engine.legal_action_mask()}}
        print([load_policy(s, config, seed=1).act(obs) for s in ("ppo:{CKPT}", "guided:{CKPT}:6")])
        try:
            load_policy("ppo:{CKPT}", ChickenFootConfig(num_players=3), seed=1)
        except ValueError as err:
            print(type(err).__name__, err)
        print(any(m == "training" or m.startswith("training.") for m in sys.modules
                  if sys.modules[m] is not None))
    """)
    assert lines[0] == str(here)
    assert lines[1].startswith("CheckpointMismatchError checkpoint was trained for a different "
                               "game or observation encoding — num_players: checkpoint 4 vs env 3")
    assert lines[2] == "False"


def test_training_checkpoints_reexports_the_one_reader():
    for name in ("load_ppo_policy", "NumpyPolicy", "read_card", "resolve_checkpoint",
                 "check_compatible", "CheckpointError", "NEUTRAL_FIELDS"):
        assert getattr(checkpoints, name) is getattr(checkpoint, name), name


# --------------------------------------------------------------------------- decoder
def _reencode(state: ObservedState, config: ChickenFootConfig) -> np.ndarray:
    """The observation vector written back from the decoded integers, piece by piece."""
    layout = Encoder(config).layout
    s, out = layout.slices, np.zeros(layout.size, np.float64)
    written = set()

    def put(name, value):
        out[s[name]] = np.ravel(value)
        written.add(name)

    def one_hot(name, index):
        put(name, 0)
        if index >= 0:
            out[s[name].start + index] = 1
        written.add(name)

    put("hand", state.hand)
    put("table", state.table)
    put("open_ends", state.open_counts)
    put("playable_values", state.playable)
    put("spinner_arms_empty", state.spinner_empty)
    one_hot("foot_double", state.foot)
    put("foot_toes_left", state.toes_left)
    one_hot("drawn_tile", state.drawn_tile)
    put("boneyard_size", state.boneyard / config.num_tiles)
    put("hand_sizes", state.hand_sizes / config.hand_size)
    put("opponent_voids", state.voids)
    put("opponent_played", state.played)
    one_hot("round", state.round)
    one_hot("center", state.center)
    put("scores", state.totals / config.points_scale)
    assert written == set(s), set(s) ^ written  # a new piece needs the decoder too
    return out.astype(np.float32)


@pytest.mark.parametrize("fields", [
    {"num_rounds": 3},
    {"num_players": 2, "max_pips": 6, "num_rounds": 2},
    {"num_players": 6, "max_pips": 12, "num_rounds": 1, "spinner_arms": 6, "hand_size": 5},
    {"num_players": 3, "draw_until_playable": True, "must_play_drawn": True, "num_rounds": 2},
])
def test_the_decoder_round_trips_the_encoder(fields):
    """Every seat's observation at every position of random games decodes to integers that
    encode back to the same vector, and they are the engine's truth from that seat."""
    config = ChickenFootConfig(**fields)
    decoder, n = ObservationDecoder(config), config.num_players
    checked = drawn = feet = 0
    for seed in range(2):
        for engine, seat, vector in _observations(config, seed):
            state = decoder.decode(vector)
            assert np.array_equal(_reencode(state, config), vector)
            order = [(seat + k) % n for k in range(n)]
            assert np.array_equal(state.hand, engine.hands[seat])
            assert state.hand_sizes.tolist() == [engine.hand_counts[s] for s in order]
            assert state.totals.tolist() == [engine.totals()[s] for s in order]
            assert np.array_equal(state.played, engine.played_by[order[1:]])
            mine = engine.drawn_tile >= 0 and engine.current == seat
            assert state.drawn_tile == (engine.drawn_tile if mine else -1)
            checked += 1
            drawn += mine
            feet += state.foot >= 0
    assert checked > 200 and drawn and feet  # the rare pieces were exercised
