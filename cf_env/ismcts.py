"""Determinized information-set Monte-Carlo tree search (`ismcts:<iterations>`).

Single-observer ISMCTS (Cowling, Powley & Whitehouse 2012): one tree over the acting player's
information set, keyed by action sequences; every iteration samples a fresh **determinization**
(a full deal consistent with what the player has seen) and plays it down the tree.

Only the acting player's observation is used (decoded with `ObservationDecoder`; no engine is
peeked at). A determinization deals the unseen tiles (not in my hand, not on the table) to the
opponents, in their known hand sizes, and to the boneyard, in a random order. An opponent known
to lack a value (it drew or passed on it, R8) is dealt no tile carrying it when the remaining
tiles allow (the engine's void record can be stale after a kept drawn tile, so the constraint is
soft). The deal is built into an `Engine` through the public `restore()` of a snapshot without
"arms" (open ends suffice for the rules). Seats are egocentric there: I am seat 0, the opponents
1.. n-1 clockwise; no rule within a round depends on absolute seats.

Scores: the observation has each seat's total, not its per-round history, and a snapshot must
list exactly `round` finished rounds per seat; the determinization puts each total in the first
finished round and zeros after. Search never looks at them: it stops at the end of the current
round and scores it by the round's points (R12), so the fake history cannot change a decision.

Per iteration: selection by UCB1 with availability counts (an action's statistics are compared
only over the iterations in which it was legal), expansion of one untried action, a rollout to
the end of the round with a greedy rule (heaviest playable tile, a double counting
`ROLLOUT_DOUBLE_BONUS` extra), and back-propagation of each seat's zero-sum round reward
((mean of the others' points − own points) / points_scale) to the nodes where that seat chose.
The move played is the root action with the most visits. Exploration 0.25 suits rewards of that
scale (a 20-point swing is 0.22); 0.7 and 0.1 were weaker against `heuristic`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .bots import ObservationDecoder, ObservedState
from .config import ChickenFootConfig
from .engine import Engine
from .tiles import tile_tables

DEFAULT_ITERATIONS = 200


class _Node:
    __slots__ = ("player", "children", "visits", "total", "avail")

    def __init__(self, player: int):
        self.player = player  # the seat whose action led here
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.total = 0.0
        self.avail = 1


class ISMCTSPolicy:
    """`ismcts:<iterations>`: information-set MCTS with `iterations` determinizations per move."""

    # Rollouts value a double 8 points above its pips, as the heuristic bot does (W_DOUBLE):
    # doubles attach one way only and are worth shedding early.
    ROLLOUT_DOUBLE_BONUS = 8.0

    def __init__(
        self,
        config: ChickenFootConfig,
        seed: int | None = None,
        iterations: int = DEFAULT_ITERATIONS,
        exploration: float = 0.25,
    ):
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"ismcts iterations must be a positive int; got {iterations!r}")
        self.config = config
        self.iterations = iterations
        self.exploration = exploration
        self.rng = np.random.default_rng(seed)
        self.decoder = ObservationDecoder(config)
        self.tables = tile_tables(config.max_pips)
        # Forced moves are taken by the search engine itself: they are not decisions.
        self.search_config = config.replace(skip_forced=True, illegal_action="raise")
        self.engine = Engine(self.search_config, seed=0)
        self._rng_state = np.random.default_rng(0).bit_generator.state
        points = self.tables.points(config.double_blank_value)
        self.action_points = [float(points[a // 2]) for a in range(2 * config.num_tiles)]
        self.action_points += [-1.0, -1.0]  # DRAW, PASS: only when forced
        for t in self.tables.double_id:
            self.action_points[2 * int(t)] += self.ROLLOUT_DOUBLE_BONUS
        self.has_value = np.zeros((config.num_tiles, config.max_pips + 1), dtype=bool)
        for t, (lo, hi) in enumerate(self.tables.pairs):
            self.has_value[t, [lo, hi]] = True

    @classmethod
    def from_spec(cls, config: ChickenFootConfig, seed: int | None, arg: str) -> ISMCTSPolicy:
        """Build from the `<iterations>` part of an `ismcts:<iterations>` spec ('' = default)."""
        if not arg:
            return cls(config, seed)
        try:
            iterations = int(arg)
        except ValueError:
            iterations = -1
        if iterations < 1:
            raise ValueError(f"policy spec 'ismcts:{arg}': iterations must be a positive int, "
                             "e.g. ismcts:200")
        return cls(config, seed, iterations=iterations)

    # ------------------------------------------------------------------ acting
    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 1:
            return int(legal[0])
        state = self.decoder.decode(observation["observation"])
        root = _Node(player=-1)
        for _ in range(self.iterations):
            self._iterate(root, self.determinize(state))
        legal_set = {int(a) for a in legal}
        stats = [(child.visits, child.total / max(child.visits, 1), a)
                 for a, child in root.children.items() if a in legal_set]
        if not stats:
            return int(self.rng.choice(legal))
        best = max(stats)[:2]
        choices = [a for visits, mean, a in stats if (visits, mean) == best]
        return int(choices[0] if len(choices) == 1 else self.rng.choice(choices))

    # ------------------------------------------------------------------ determinization
    def sample_hidden(self, state: ObservedState) -> tuple[list[list[int]], list[int]]:
        """Opponents' hands (egocentric seats 1..n-1) and the boneyard in draw order, sampled
        from the unseen tiles: sizes as observed, known voids respected when possible."""
        unseen = np.flatnonzero(~(state.hand | state.table))
        self.rng.shuffle(unseen)
        sizes = [int(k) for k in state.hand_sizes[1:]]
        if sum(sizes) + state.boneyard != unseen.size:
            raise ValueError(
                f"inconsistent observation: {unseen.size} unseen tiles but opponents hold "
                f"{sizes} and the boneyard {state.boneyard}"
            )
        allowed = [~self.has_value[unseen][:, state.voids[k]].any(axis=1) for k in range(len(sizes))]
        taken = np.zeros(unseen.size, dtype=bool)
        hands: list[list[int]] = [[] for _ in sizes]
        # The most constrained opponent picks first, so soft constraints are rarely broken.
        for k in sorted(range(len(sizes)), key=lambda k: int(allowed[k].sum())):
            fits = np.flatnonzero(allowed[k] & ~taken)[: sizes[k]]
            if fits.size < sizes[k]:
                extra = np.flatnonzero(~allowed[k] & ~taken)[: sizes[k] - fits.size]
                fits = np.concatenate([fits, extra])
            taken[fits] = True
            hands[k] = unseen[fits].tolist()
        return hands, unseen[~taken].tolist()

    def determinize(self, state: ObservedState) -> Engine:
        """An engine holding one sampled deal consistent with `state`, me to act as seat 0.

        Called only with a real choice to make: the search engine takes forced moves itself
        (`skip_forced`), so a position with one legal action would be played on at once.
        """
        cfg, pairs = self.config, self.tables.pairs
        opponents, boneyard = self.sample_hidden(state)
        hands = [np.flatnonzero(state.hand).tolist(), *opponents]

        def tiles(ids) -> list[list[int]]:
            return [list(pairs[t]) for t in ids]

        totals = [int(t) for t in state.totals]
        snapshot = {
            "max_pips": cfg.max_pips,
            "num_players": cfg.num_players,
            "num_rounds": cfg.num_rounds,
            "round": state.round,
            "center": state.center,
            "current": 0,
            "hands": [tiles(h) for h in hands],
            "boneyard": tiles(boneyard),
            "table": tiles(np.flatnonzero(state.table)),
            "open_ends": [v for v, c in enumerate(state.open_counts) for _ in range(int(c))],
            "spinner_arms_empty": state.spinner_empty,
            "foot": None
            if state.foot < 0
            else {"double": state.foot, "toes_left": state.toes_left},
            "drawn_tile": None if state.drawn_tile < 0 else list(pairs[state.drawn_tile]),
            # Totals in the first finished round, zeros after (see the module docstring).
            "scores": [[t] + [0] * (state.round - 1) if state.round else [] for t in totals],
            "game_over": False,
            "winners": [],
            "config": self.search_config.to_dict(),
            "rng": self._rng_state,
        }
        self.engine.restore(snapshot)
        return self.engine

    # ------------------------------------------------------------------ search
    def _iterate(self, root: _Node, engine: Engine) -> None:
        rng, c = self.rng, self.exploration
        node, path, finished = root, [], []
        while not finished:  # selection and expansion
            legal = engine.legal_actions()
            untried = [a for a in legal if a not in node.children]
            for a in legal:
                child = node.children.get(a)
                if child is not None:
                    child.avail += 1
            if untried:
                action = untried[int(rng.integers(len(untried)))] if len(untried) > 1 else untried[0]
                child = _Node(engine.current)
                node.children[action] = child
                path.append(child)
                finished = engine.step(action)
                break
            best, best_value = -1, -math.inf
            for a in legal:
                child = node.children[a]
                value = child.total / child.visits + c * math.sqrt(
                    math.log(child.avail) / child.visits
                )
                if value > best_value:
                    best, best_value = a, value
            node = node.children[best]
            path.append(node)
            finished = engine.step(best)
        if not finished:
            finished = self._rollout(engine)
        points = finished[0]
        n, scale = len(points), self.config.points_scale
        total = sum(points)
        rewards = [((total - p) / (n - 1) - p) / scale for p in points]
        for child in path:
            child.visits += 1
            child.total += rewards[child.player]

    def _rollout(self, engine: Engine) -> list[list[int]]:
        """Greedy play (heaviest playable tile, doubles preferred; ties by RNG) to the round's end."""
        rng, points = self.rng, self.action_points
        while True:
            legal = engine.legal_actions()
            if len(legal) == 1:
                action = legal[0]
            else:
                top = max(points[a] for a in legal)
                best = [a for a in legal if points[a] == top]
                action = best[0] if len(best) == 1 else best[int(rng.integers(len(best)))]
            finished = engine.step(action)
            if finished:
                return finished
