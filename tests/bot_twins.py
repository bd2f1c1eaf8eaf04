"""Python twins of the compiled bots (cf_env.agents.kernel_bots): the Python bots' rules with ties
broken on a copy of the compiled splitmix64 stream, so that an `Engine` driven by them plays the
games the compiled bots play (tests/agents/test_kernel_bots.py, the collector's replay test)."""

from __future__ import annotations

import numpy as np

from cf_env import ChickenFootConfig, Engine
from cf_env.agents.bots import GreedyPolicy, HeuristicPolicy
from cf_env.agents.kernel_bots import GREEDY, RANDOM, TIE
from cf_env.core.actions import actions_in
from cf_env.core.observation import Encoder, ObservationDecoder

MASK64 = 2**64 - 1


class Stream:
    """Python copy of kernel_bots.next_uniform (splitmix64) for one game."""

    def __init__(self, seed: int):
        self.x = seed & MASK64

    def uniform(self) -> float:
        self.x = (self.x + 0x9E3779B97F4A7C15) & MASK64
        z = self.x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z ^= z >> 31
        return (z >> 11) / 2.0**53


class PythonBots:
    """The Python bots' rules for one config, choosing as the compiled bots do."""

    def __init__(self, config: ChickenFootConfig):
        self.config = config
        self.encoder = Encoder(config)
        self.decoder = ObservationDecoder(config)
        self.greedy = GreedyPolicy(config)
        self.heuristic = HeuristicPolicy(config)

    def heuristic_values(self, engine: Engine, plays: list[int]) -> np.ndarray:
        observed = self.decoder.decode(self.encoder.observe(engine, engine.current))
        return self.heuristic.scores(observed, np.array(plays))

    def chooser(self, kind: int, engine: Engine, stream: Stream):
        def tie(options: list[int]) -> int:
            return options[0] if len(options) == 1 else options[int(stream.uniform() * len(options))]

        def choose(legal: int) -> int:
            actions = actions_in(legal)
            if kind == RANDOM:
                return actions[int(stream.uniform() * len(actions))]
            if kind == GREEDY:
                values = self.greedy.action_points[actions]
                return tie([a for a, v in zip(actions, values) if v == values.max()])
            plays = [a for a in actions if a < self.config.draw_action]
            if not plays:
                return actions[0]
            values = self.heuristic_values(engine, plays)
            return tie([a for a, v in zip(plays, values) if v >= values.max() - TIE])

        return choose
