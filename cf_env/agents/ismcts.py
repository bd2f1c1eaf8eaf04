"""Determinized information-set Monte-Carlo tree search: `ismcts:<budget>`, `guided:<ckpt>:<budget>`.

Single-observer ISMCTS (Cowling, Powley & Whitehouse 2012): one tree over the acting player's
information set, keyed by action sequences; every iteration samples a fresh **determinization**
(a full deal consistent with what the player has seen) and plays it down the tree.

Only the acting player's observation is used (decoded with `ObservationDecoder`; no engine is
peeked at). Seats are egocentric in the search: I am seat 0, the opponents 1..n-1 clockwise; no
rule within a round depends on absolute seats.

**Determinizations without a snapshot per iteration.** Once per decision the observation is
turned into a root engine through the public `restore()` (every rules invariant checked once),
and that position is loaded into a root slot of the compiled rules core (`KernelBatch.load`).
Each iteration then copies the root to a work slot and deals the hidden tiles there, in compiled
code (`cf_env.agents.kernel_search`). The deals are `cf_env.core.deals.DealSampler`'s: exactly
uniform over the deals consistent with the hand sizes, the tiles seen and the opponents' voids
(R8), tabulated once per decision in Python and drawn from those tables in compiled code
(`kernel_search.Deals`; the sampler's rejection fallback draws in Python). Forced
draws and passes are not decisions (the engine's `skip_forced`), and the search's kernel tables
make the current round the game's last, so that a round's end ends its game: no next round is
dealt in a rollout.

Scores: the observation has each seat's total, not its per-round history, and a snapshot must
list exactly `round` finished rounds per seat; the root puts each total in the first finished
round and zeros after. Search never looks at them: it stops at the end of the current round and
scores it by the round's points (R12), so the fake history cannot change a decision.

**Plain search** (`ismcts:<budget>`): selection by UCB1 with availability counts (an action's
statistics are compared only over the iterations in which it was legal), expansion of one
untried action, a rollout to the end of the round, and back-propagation of each seat's zero-sum
round reward ((mean of the others' points − own points) / points_scale) to the nodes where that
seat chose. The whole iteration runs in compiled code on the kernel (`kernel_search.search`: the
tree as arrays, the rollouts `kernel_search.playout`, the rules the kernel's `apply_action`), a
block of iterations per call; expansions and rollout ties draw from the policy's own splitmix64
stream (`uniform`), the deals from another. `search_on="engine"` runs the same
search with the tree in Python over `Engine` and the rule as a chooser through `Engine.advance`
(what the schemes in which a network chooses inside the iterations run on); the tests check that
both make the same decisions and draw the same numbers. The move played is the root action with
the most visits. Exploration is 0.25, at the scale of these rewards (a 20-point swing is 0.22).
The rollout rule ("follow", the default) plays the legal action of highest value: the tile's
points, a double `ROLLOUT_DOUBLE_BONUS` more, and `FOLLOW_WEIGHT` per other tile in the mover's
hand carrying the end the move opens (the heuristic bot's W_DOUBLE and W_FOLLOW); "greedy" plays
by the points and the double bonus only.

**Guided search** (`guided:<checkpoint>:<budget>`): the checkpoint's actor (numpy weights, read
by the `ppo:` loader, `cf_env.agents.checkpoint`) gives the root a PUCT prior, computed once per decision from the real
observation, which is exactly the acting player's information set:
score(a) = Q(a) + `PUCT_C` · P(a) · sqrt(N) / (1 + n(a)), unvisited actions valued 0 (the mean
zero-sum reward). Below the root it searches as the plain search, with the same rollouts.

The other schemes the constructor offers: a prior at every node too (`node_priors`, computed once
per node from the acting seat's observation in the determinization that reaches it), and the
network choosing the first `rollout_net` moves of each rollout (an observation and a forward pass
per move; network calls are not batched: there is one per decision). The measurements that chose
the defaults (root prior only, `PUCT_C`, "follow" rollouts, the exploration) are in
docs/search/results.md, with their commands (docs/search/scheme.sh, docs/search/variants.py).
Self-play agents now ship a value head too, which `lookahead:` (`cf_env.agents.lookahead`)
scores positions with.

Budgets: an iteration count, or `ms=<milliseconds>` of this process's CPU time per decision (on
an idle core the same as wall time; a loaded machine slows the clock, not the thinking). An
iteration count is reproducible from the seed; a time budget is not (the count it reaches
depends on the machine). Both are bounded, in the spec and in the constructor alike
(`check_budget`): at most `MAX_ITERATIONS` = 100,000 iterations and `MAX_MS` = 60,000 ms (a
minute); what a decision at those bounds costs in time and tree memory is in
docs/search/results.md. Without a bound `ismcts:1000000000000` would never return from its first
decision while its tree grew.

    python -m cf_env.tools.search_bench      # µs per iteration by set size (docs/search/speed.md)
"""

from __future__ import annotations

import itertools
import math
import operator
import time
from collections.abc import Mapping

import numpy as np

from cf_env.agents.checkpoint import load_ppo_policy, mlp_forward
from cf_env.agents.kernel_bots import next_uniform
from cf_env.agents.kernel_search import Deals, KernelSearch, root_children, rule_tables
from cf_env.core.actions import actions_in
from cf_env.core.config import ChickenFootConfig
from cf_env.core.deals import DealSampler
from cf_env.core.engine import Engine
from cf_env.core.kernel import num_words
from cf_env.core.observation import Encoder, ObservationDecoder, ObservedState
from cf_env.core.tiles import tile_tables

DEFAULT_ITERATIONS = 200
MAX_ITERATIONS = 100_000  # iterations (determinizations) per decision: see the module docstring
MAX_MS = 60_000.0  # milliseconds of CPU time per decision
# Spec forms, for error messages.
ISMCTS_FORMS = "ismcts, ismcts:<iterations> or ismcts:ms=<milliseconds> (e.g. ismcts:200, ismcts:ms=100)"
GUIDED_FORMS = (
    "guided:<checkpoint>, guided:<checkpoint>:<iterations> or guided:<checkpoint>:ms=<milliseconds> "
    "(e.g. guided:checkpoints/selfplay-4p-d9:200)"
)


class _Node:
    __slots__ = ("player", "children", "visits", "total", "avail", "tried", "prior")

    def __init__(self, player: int):
        self.player = player  # the seat whose action led here
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.total = 0.0
        self.avail = 1
        self.tried = 0  # bitset of the actions with a child
        self.prior: list[float] | None = None  # per action id (guided root only)


def _shown(value: object) -> str:
    """A budget value for an error message: numbers as written, other things by type only (a
    huge int or str is not printed)."""
    if isinstance(value, float) or (isinstance(value, int) and -10**18 < value < 10**18):
        return repr(value)
    if isinstance(value, int):
        return f"an int of {value.bit_length()} bits"
    return f"a {type(value).__name__}"


def check_budget(what: str, iterations: object, ms: object,
                 max_iterations: int = MAX_ITERATIONS) -> None:
    """ValueError, naming `what` and the allowed range, unless `iterations` is an int in
    1..`max_iterations` and `ms` is None or a number of milliseconds in (0, `MAX_MS`]."""
    if (isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer))
            or not 1 <= iterations <= max_iterations):
        raise ValueError(f"{what} iterations must be a positive int, at most {max_iterations}; "
                         f"got {_shown(iterations)}")
    if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float, np.integer, np.floating))
                           or not 0 < ms <= MAX_MS):
        raise ValueError(f"{what} ms must be a positive number of milliseconds, at most "
                         f"{MAX_MS:.0f}; got {_shown(ms)}")


def parse_budget(text: str, spec: str, forms: str,
                 max_iterations: int = MAX_ITERATIONS) -> tuple[int | None, float | None]:
    """(iterations, ms) from '<iterations>' (1..`max_iterations`) or 'ms=<milliseconds>' (at most
    `MAX_MS`); ValueError naming `spec`, the allowed range and the valid forms."""
    if text.startswith("ms="):
        try:
            ms = float(text[3:])
        except ValueError:
            ms = -1.0
        if not 0 < ms <= MAX_MS:  # NaN fails too
            raise ValueError(f"policy spec {spec!r}: ms must be a positive number of milliseconds, "
                             f"at most {MAX_MS:.0f}; valid forms: {forms}")
        return None, ms
    try:
        iterations = int(text)
    except ValueError:
        iterations = -1
    if not 1 <= iterations <= max_iterations:
        raise ValueError(f"policy spec {spec!r}: iterations must be a positive int, at most "
                         f"{max_iterations}; valid forms: {forms}")
    return iterations, None


def split_guided(arg: str) -> tuple[str, str]:
    """('<checkpoint>', '<budget>' or '') from the argument of a `guided:` spec. The budget is
    the last ':'-separated part when it looks like one (digits, or ms=…), so checkpoint paths may
    hold ':' themselves."""
    path, sep, tail = arg.rpartition(":")
    if sep and path and (tail.isdigit() or tail.startswith("ms=") or tail.lstrip("-").isdigit()):
        return path, tail
    return arg, ""


def checkpoint_budget(spec: str, arg: str, forms: str,
                      max_iterations: int = MAX_ITERATIONS) -> tuple[str, int | None, float | None]:
    """(checkpoint path, iterations, ms) from a `<checkpoint>[:<budget>]` spec argument
    (`guided:`, `lookahead:`), the budget bounded as `parse_budget` bounds it; ValueError naming
    `spec` and its valid `forms`."""
    path, budget = split_guided(arg)
    if not path:
        raise ValueError(f"policy spec {spec!r} needs a checkpoint path; valid forms: {forms}")
    iterations, ms = parse_budget(budget, spec, forms, max_iterations) if budget else (None, None)
    return path, iterations, ms


def guided_checkpoint(arg: str) -> str:
    """The checkpoint path in the argument of a `guided:` spec (`spec_checkpoint`)."""
    return split_guided(arg)[0]


class NetworkGuide:
    """A checkpoint's actor as search guidance: masked softmax priors from observations.

    Built from a loaded `ppo:` policy (`cf_env.agents.checkpoint.NumpyPolicy`: its `weights`,
    `activation` and `adapt`). The observation adapter
    (zero-padding of the round piece when the env plays fewer rounds than the checkpoint) is
    linear, so it is folded into the first layer once; the forward pass then takes a batch of
    rows in one matrix product per layer."""

    def __init__(self, policy, config: ChickenFootConfig, label: str = ""):
        weights = [(np.asarray(W, np.float32), np.asarray(b, np.float32)) for W, b in policy.weights]
        adapt = getattr(policy, "adapt", None)
        self.encoder = Encoder(config)
        size = self.encoder.layout.size
        if adapt is not None:
            basis = np.eye(size, dtype=np.float32)
            lifted = np.stack([adapt(row) for row in basis], axis=1)  # (checkpoint inputs, env)
            if np.any(adapt(np.zeros(size, np.float32))):
                raise ValueError(f"{label or 'checkpoint'}: its observation adapter is not linear")
            weights[0] = (weights[0][0] @ lifted, weights[0][1])
        if weights[0][0].shape[1] != size:
            raise ValueError(
                f"{label or 'checkpoint'}: the network takes {weights[0][0].shape[1]} inputs, the "
                f"env's observation has {size}"
            )
        # Transposed once: rows are observations, x @ W.T.
        self.layers = [(np.ascontiguousarray(W.T), b) for W, b in weights]
        self.activation = policy.activation
        self.label = label

    def logits(self, rows: np.ndarray) -> np.ndarray:
        return mlp_forward(self.layers, self.activation, rows)

    def prior(self, vector: np.ndarray, legal: list[int]) -> list[float]:
        """P(a) over the legal actions (softmax of their logits), as a list over action ids."""
        z = self.logits(vector[None, :])[0]
        legal_logits = z[legal].astype(np.float64)
        p = np.exp(legal_logits - legal_logits.max())
        p /= p.sum()
        out = [0.0] * z.size
        for a, pa in zip(legal, p.tolist()):
            out[a] = pa
        return out


class ISMCTSPolicy:
    """`ismcts:<budget>`: information-set MCTS; with `guide`, the guided search (`guided:`).

    `iterations` determinizations per decision, or `ms` milliseconds of CPU time (then
    `iterations` is ignored). `rollout` is "follow" (the default) or "greedy"; `puct`,
    `node_priors` and `rollout_net` set the guided scheme (the module docstring describes them;
    docs/search/results.md has the runs that chose the defaults)."""

    # Rollouts value a double 8 points above its pips, as the heuristic bot does (W_DOUBLE):
    # doubles attach one way only and are worth shedding early.
    ROLLOUT_DOUBLE_BONUS = 8.0
    # "follow" rollouts add this per other tile in the mover's hand carrying the end a move
    # opens, as the heuristic bot's W_FOLLOW: an end it can extend on its next turn.
    FOLLOW_WEIGHT = 3.0
    PUCT_C = 0.25  # chosen against 1 and 0.1 (docs/search/results.md)

    def __init__(
        self,
        config: ChickenFootConfig,
        seed: int | None = None,
        iterations: int = DEFAULT_ITERATIONS,
        exploration: float = 0.25,
        ms: float | None = None,
        guide: NetworkGuide | None = None,
        puct: float | None = None,
        node_priors: str = "root",
        rollout_net: int = 0,
        rollout: str = "follow",
        search_on: str = "kernel",
    ):
        check_budget("ismcts", iterations, ms)
        if search_on not in ("kernel", "engine"):
            raise ValueError(f"search_on must be 'kernel' or 'engine'; got {search_on!r}")
        if isinstance(rollout_net, bool) or not isinstance(rollout_net, int) or rollout_net < 0:
            raise ValueError(f"rollout_net must be an int >= 0; got {_shown(rollout_net)}")
        self.config = config
        self.iterations = int(iterations)
        self.ms = None if ms is None else float(ms)
        self.exploration = exploration
        self.guide = guide
        self.puct = self.PUCT_C if puct is None else puct
        # The guided scheme's alternatives (docs/search/results.md): priors also at the
        # nodes of seat 0 ("mine") or of every seat ("all"), computed once per node from the
        # determinization that first reaches it twice; the network choosing the first
        # `rollout_net` real decisions of each rollout before the greedy rule.
        if node_priors not in ("root", "mine", "all"):
            raise ValueError(f"node_priors must be 'root', 'mine' or 'all'; got {node_priors!r}")
        if rollout not in ("greedy", "follow"):
            raise ValueError(f"rollout must be 'greedy' or 'follow'; got {rollout!r}")
        self.rollout = rollout
        # "kernel": the iterations in compiled code (`cf_env.agents.kernel_search`); "engine":
        # the tree in Python over `Engine`, the rollouts by `rollout_rule` through
        # `Engine.advance` (what a network choosing inside the iterations needs: `node_priors`,
        # `rollout_net`; the tests check the two search the same).
        self.node_priors = node_priors if guide is not None else "root"
        self.rollout_net = rollout_net if guide is not None else 0
        self.search_on = "engine" if self.node_priors != "root" or self.rollout_net else search_on
        self.network_calls = 0
        self.rng = np.random.default_rng(seed)
        self.decoder = ObservationDecoder(config)
        self.tables = tile_tables(config.max_pips)
        self.n = config.num_players
        self._points_scale = config.points_scale
        # Per round: (search config, root engine, work engine). See the module docstring.
        self._engines: dict[int, tuple[ChickenFootConfig, Engine, Engine]] = {}
        self._rng_state = np.random.default_rng(0).bit_generator.state
        self.last_iterations = 0  # how many the last decision ran (time budgets vary)
        # Greedy rollout: the actions grouped into bitsets by value, best first.
        points = self.tables.points(config.double_blank_value)
        value = {2 * t + side: float(points[t]) for t in range(config.num_tiles) for side in (0, 1)}
        for t in self.tables.double_id:
            value[2 * int(t)] += self.ROLLOUT_DOUBLE_BONUS
        value[config.draw_action] = value[config.pass_action] = -1.0  # only when forced
        groups: dict[float, int] = {}
        for action, v in value.items():
            groups[v] = groups.get(v, 0) | 1 << action
        self._groups = [groups[v] for v in sorted(groups, reverse=True)]
        # _reach[i]: the actions of groups 0..i, so the best group the legal set meets is found
        # by bisection (5 steps instead of a scan over some 25 groups).
        self._reach = list(itertools.accumulate(self._groups, operator.or_))
        # "follow" rollouts: the greedy value plus FOLLOW_WEIGHT per other tile carrying the
        # end the action opens.
        self._value = [value[a] for a in range(config.num_actions)]
        self._opens = [-1] * config.num_actions  # the open end an action leaves (-1: none)
        for t, (lo, hi) in enumerate(self.tables.pairs):
            if lo != hi:  # a double starts a foot (R9): no end of its own to follow
                self._opens[2 * t], self._opens[2 * t + 1] = hi, lo
        # The rule as the tables of the compiled rollouts (`cf_env.agents.kernel_search`): the
        # score counts every hand tile carrying the new end, the played tile too, so its value
        # is one FOLLOW_WEIGHT lower (exact in floats: small integers).
        attach = self.tables.attach_bits
        if rollout == "follow":
            w = self.FOLLOW_WEIGHT
            value_table = [v - w if e >= 0 else v for v, e in zip(self._value, self._opens)]
            follow = [attach[e] if e >= 0 else 0 for e in self._opens]
        else:
            w, value_table, follow = 0.0, self._value, [0] * config.num_actions
        self._rule = (*rule_tables(value_table, follow, num_words(config)), w)
        # The search's own streams, splitmix64 as the compiled code draws them
        # (`kernel_bots.next_uniform`), seeded from the policy's seed apart from `rng` (the
        # root's deal, the sampler's rejection fallback, the final tie): expansions and rollout
        # ties (`uniform`), and the deals (`kernel_search.Deals`).
        search_seed, deal_seed = np.random.SeedSequence(seed).spawn(2)
        self._search_rng = search_seed.generate_state(1, np.uint64)
        self._deal_rng = deal_seed.generate_state(1, np.uint64)
        self._kernels: dict[int, KernelSearch] = {}  # per round, as `_engines`

    @classmethod
    def from_spec(cls, config: ChickenFootConfig, seed: int | None = None,
                  arg: str = "") -> ISMCTSPolicy:
        """The `ismcts[:<budget>]` spec's factory (`cf_env.agents.policies`): build from the
        `<budget>` part ('' = default)."""
        if not arg:
            return cls(config, seed)
        iterations, ms = parse_budget(arg, f"ismcts:{arg}", ISMCTS_FORMS)
        return cls(config, seed, iterations=iterations or DEFAULT_ITERATIONS, ms=ms)

    # ------------------------------------------------------------------ acting
    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 1:
            return int(legal[0])
        _, sampler, root_engine, work, hand = self._position(observation)
        root = _Node(player=-1)
        if self.guide is not None:
            root.prior = self.guide.prior(
                np.asarray(observation["observation"], np.float32), legal.tolist()
            )
        if self.search_on == "engine":
            stats = self._search_engine(root, root_engine, work, sampler, hand)
        else:
            stats = self._search_kernel(root.prior, root_engine, sampler)
        legal_set = set(legal.tolist())
        stats = [(visits, total / max(visits, 1), a) for a, visits, total in stats
                 if a in legal_set]
        if not stats:
            return int(self.rng.choice(legal))
        best = max(stats)[:2]
        choices = [a for visits, mean, a in stats if (visits, mean) == best]
        return int(choices[0] if len(choices) == 1 else self.rng.choice(choices))

    def root_visits(self, observation: Mapping[str, np.ndarray],
                    prior: np.ndarray | None = None) -> np.ndarray:
        """(A,) int64: the root's visit count per action after one search of the acting
        player's decision (what `act` plays the most visited of); `root_statistics`' first
        half."""
        return self.root_statistics(observation, prior)[0]

    def root_statistics(self, observation: Mapping[str, np.ndarray],
                        prior: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """((A,) int64 visits, (A,) float64 total reward) of the root's children after one
        search of the acting player's decision, from `observation` alone, as `act` searches;
        a child's total is the sum of the mover's zero-sum round rewards (points_scale units)
        over its visits. `prior` (A,) float64, if given, is the root's PUCT prior (for instance
        a learner's softmax over the legal actions), else the guide's or none. Only legal
        actions are counted (the expert-iteration targets, `training.selfplay.targets`)."""
        legal = np.flatnonzero(observation["action_mask"])
        visits = np.zeros(self.config.num_actions, np.int64)
        totals = np.zeros(self.config.num_actions, np.float64)
        if legal.size == 1:
            visits[legal[0]] = 1
            return visits, totals
        _, sampler, root_engine, _, _ = self._position(observation)
        if prior is None and self.guide is not None:
            prior = self.guide.prior(np.asarray(observation["observation"], np.float32),
                                     legal.tolist())
        for a, n, total in self._search_kernel(prior, root_engine, sampler):
            visits[a] += n
            totals[a] += total
        keep = np.zeros_like(visits, dtype=bool)
        keep[legal] = True
        visits[~keep] = 0
        totals[~keep] = 0.0
        return visits, totals

    BLOCK = 64  # iterations per compiled call
    TIMED_BLOCK = 16  # under a time budget: the clock is read between blocks

    def _search_kernel(self, prior: list[float] | None, root_engine: Engine,
                       sampler: DealSampler) -> list[tuple[int, int, float]]:
        """The iterations in compiled code (`kernel_search.search`) from the root engine's
        position; (action, visits, total reward) of the root's children, oldest first."""
        search = self._kernels.get(root_engine.round)
        if search is None:
            search = KernelSearch(root_engine.config, root_engine.round, self.BLOCK)
            self._kernels[root_engine.round] = search
        search.load(root_engine)
        deals = Deals(sampler, self._deal_rng)
        prior_row = None if prior is None else np.asarray(prior, np.float64)
        args = (self._rule, self._search_rng, self.exploration, prior_row, self.puct,
                self._points_scale)
        if self.ms is None:
            done = 0
            while done < self.iterations:
                k = min(self.BLOCK, self.iterations - done)
                search.run(deals, k, *args)
                done += k
        else:
            deadline = time.process_time() + self.ms / 1000.0
            done = 0
            while True:
                search.run(deals, self.TIMED_BLOCK, *args)
                done += self.TIMED_BLOCK
                if time.process_time() >= deadline:
                    break
        self.last_iterations = done
        return root_children(search.tree)

    def _search_engine(self, root: _Node, root_engine: Engine, work: Engine,
                       sampler: DealSampler, hand: list[int]) -> list[tuple[int, int, float]]:
        """The iterations with the tree in Python (`_iterate`; `search_on="engine"`), on the
        deals the compiled search takes (`kernel_search.Deals`)."""
        deals = Deals(sampler, self._deal_rng)
        row = np.zeros((1, self.config.num_tiles), np.int32)

        def iterate() -> None:
            deals.fill(row, 1)
            opponents, boneyard = deals.split(row[0])
            work.copy_from(root_engine, rng=False)
            work.redeal([hand, *opponents], boneyard)
            self._iterate(root, work)

        if self.ms is None:
            for _ in range(self.iterations):
                iterate()
            self.last_iterations = self.iterations
        else:
            deadline = time.process_time() + self.ms / 1000.0
            done = 0
            while True:
                iterate()
                done += 1
                if time.process_time() >= deadline:
                    break
            self.last_iterations = done
        return [(a, child.visits, child.total) for a, child in root.children.items()]

    # ------------------------------------------------------------------ determinization
    def _position(self, observation: Mapping[str, np.ndarray], settle: bool = True):
        """What a decision's determinizations start from: the decoded state, the deal sampler,
        the root and work engines (`_root_engine`, `settle` as there) and my hand's tile ids."""
        state = self.decoder.decode(observation["observation"])
        sampler = DealSampler.from_state(state, self.tables, self.rng)
        root, work = self._root_engine(state, sampler, settle)
        return state, sampler, root, work, np.flatnonzero(state.hand).tolist()

    def sample_hidden(self, state: ObservedState) -> tuple[list[list[int]], list[int]]:
        """One consistent deal of the unseen tiles (`DealSampler`): the opponents' hands
        (egocentric seats 1..n-1) and the boneyard in draw order."""
        return DealSampler.from_state(state, self.tables, self.rng).sample()

    def determinize(self, state: ObservedState) -> Engine:
        """An engine holding one sampled deal consistent with `state`, me to act as seat 0 (the
        search engine; valid until the next call).

        Called only with a real choice to make: the search engine takes forced moves itself
        (`skip_forced`), so a position with one legal action would be played on at once.
        """
        sampler = DealSampler.from_state(state, self.tables, self.rng)
        root_engine, work = self._root_engine(state, sampler)
        return self._determinize(root_engine, work, sampler, np.flatnonzero(state.hand).tolist())

    def _determinize(self, root: Engine, work: Engine, sampler: DealSampler, hand: list[int]):
        opponents, boneyard = sampler.sample()
        work.copy_from(root, rng=False)
        work.redeal([hand, *opponents], boneyard)
        return work

    def _search_config(self, rnd: int) -> ChickenFootConfig:
        if self.config.target_score is None:
            # The round's end ends the search game: no new deal.
            return self.config.replace(num_rounds=rnd + 1)
        return self.config

    def _root_engine(self, state: ObservedState, sampler: DealSampler,
                     settle: bool = True) -> tuple[Engine, Engine]:
        """The root position (egocentric, one consistent deal) through `restore`, which checks
        every rules invariant once per decision; and the work engine iterations play on.
        `settle=False` keeps a forced decision as it is (the search engine would take it)."""
        if state.round not in self._engines:
            cfg = self._search_config(state.round)
            work = Engine(cfg, seed=0, skip_forced=True)
            self._engines[state.round] = (cfg, Engine(cfg, seed=0, skip_forced=True), work)
        cfg, root, work = self._engines[state.round]
        pairs, n = self.tables.pairs, self.n
        opponents, boneyard = sampler.sample()
        hand = np.flatnonzero(state.hand).tolist()

        def tiles(ids) -> list[list[int]]:
            return [list(pairs[t]) for t in ids]

        table = np.flatnonzero(state.table).tolist()
        played = [np.flatnonzero(row).tolist() for row in state.played]
        others = {t for row in played for t in row}
        start = int(self.tables.double_id[state.center])
        mine = [t for t in table if t != start and t not in others]
        totals = [int(t) for t in state.totals]
        snapshot = {
            "max_pips": cfg.max_pips,
            "num_players": n,
            "num_rounds": cfg.num_rounds,
            "round": state.round,
            "center": state.center,
            "current": 0,
            "hands": [tiles(hand), *(tiles(h) for h in opponents)],
            "boneyard": tiles(boneyard),
            "table": tiles(table),
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
            # What the seats showed (R8) and played: the observations a guide reads from
            # determinized positions are then the ones the real seats would have had.
            "voids": [[], *(np.flatnonzero(row).tolist() for row in state.voids)],
            "played_by": [tiles(mine), *(tiles(row) for row in played)],
            "config": cfg.to_dict(),
            "rng": self._rng_state,
        }
        root.skip_forced = settle
        try:
            root.restore(snapshot)
        finally:
            root.skip_forced = True  # what the work engine copies: the search's own moves
        return root, work

    # ------------------------------------------------------------------ search
    def uniform(self) -> float:
        """A float in [0, 1) from the search's stream, the one the compiled search draws."""
        return next_uniform(self._search_rng, 0)

    def rollout_rule(self, engine: Engine):
        """The rollout rule as a chooser on `engine`'s legal bitsets (`Engine.advance`): the
        rule of the compiled rollouts (`kernel_search.rule_action` over `_rule`'s tables), for
        the searches with the tree in Python (`node_priors`, `rollout_net`) and the tests that
        check the two agree."""
        if self.rollout == "greedy":
            return self._greedy
        return lambda legal: self._follow(engine, legal)

    def _greedy(self, legal: int) -> int:
        """Rollout choice: the most valuable legal action (heaviest tile, doubles preferred),
        ties broken at random."""
        reach = self._reach
        lo, hi = 0, len(reach) - 1
        while lo < hi:  # the first group whose reach meets the legal set
            mid = (lo + hi) >> 1
            if legal & reach[mid]:
                hi = mid
            else:
                lo = mid + 1
        best = legal & self._groups[lo]
        if not best & (best - 1):
            return best.bit_length() - 1
        tied = actions_in(best)
        return tied[int(self.uniform() * len(tied))]

    def _follow(self, engine: Engine, legal: int) -> int:
        """Rollout choice: greedy value plus FOLLOW_WEIGHT per other tile carrying the new end."""
        hand, attach = engine.hand_bits(engine.current), self.tables.attach_bits
        value, opens, w = self._value, self._opens, self.FOLLOW_WEIGHT
        best, top = [], -math.inf
        for a in actions_in(legal):
            v = value[a]
            end = opens[a]
            if end >= 0:
                v += w * ((hand & attach[end]).bit_count() - 1)  # (the tile itself carries it)
            if v > top:
                best, top = [a], v
            elif v == top:
                best.append(a)
        return best[0] if len(best) == 1 else best[int(self.uniform() * len(best))]

    def _iterate(self, root: _Node, engine: Engine) -> None:
        u, c, sqrt, log = self.uniform, self.exploration, math.sqrt, math.log
        node_priors = self.node_priors != "root"
        node, path, finished = root, [], []
        while True:  # selection and expansion
            legal = engine.legal_bits()
            children = node.children
            if (
                node_priors
                and node.prior is None
                and node.visits
                and (self.node_priors == "all" or engine.current == 0)
            ):
                node.prior = self._node_prior(engine, legal)
            if node.prior is not None:
                for a, child in children.items():
                    if legal >> a & 1:
                        child.avail += 1
                action = self._puct(node, legal)
                child = children.get(action)
            elif untried := legal & ~node.tried:
                for a, child in children.items():
                    if legal >> a & 1:
                        child.avail += 1
                if untried & (untried - 1):
                    options = actions_in(untried)
                    action = options[int(u() * len(options))]
                else:
                    action = untried.bit_length() - 1
                child = None
            else:  # UCB1 over the legal children, each availability counted as it is read
                action, best_value = -1, -math.inf
                for a, child in children.items():
                    if legal >> a & 1:
                        child.avail = avail = child.avail + 1
                        visits = child.visits
                        value = child.total / visits + c * sqrt(log(avail) / visits)
                        if value > best_value:
                            action, best_value = a, value
                child = children[action]
            if child is None:  # expansion: the new node's move is the rollout's first
                child = children[action] = _Node(engine.current)
                node.tried |= 1 << action
                path.append(child)
                break
            node = child
            path.append(node)
            finished = engine.step(action)
            if finished:
                break
        if finished:
            points = finished[0]
        elif self.rollout_net:
            finished = engine.step(action)
            points = finished[0] if finished else self._net_rollout(engine)[0]
        else:  # node priors alone: the rule through the chooser (`rollout_rule`)
            rule = self.rollout_rule(engine)
            finished = engine.step(action)
            while not finished:
                finished = engine.advance(choosers=[rule] * self.n)
            points = finished[0]
        n, scale = len(points), self._points_scale
        total = sum(points)
        rewards = [((total - p) / (n - 1) - p) / scale for p in points]
        root.visits += 1
        for child in path:
            child.visits += 1
            child.total += rewards[child.player]

    def _puct(self, node: _Node, legal: int) -> int:
        """argmax over the legal actions of Q + c·P·sqrt(N)/(1 + n), unvisited Q = 0. An action
        legal now but not when the prior was computed (another determinization) gets the
        uniform share 1/|legal|."""
        prior, children = node.prior, node.children
        scale = self.puct * math.sqrt(node.visits + 1)
        options = actions_in(legal)
        action, best_value = -1, -math.inf
        for a in options:
            p = prior[a]
            if p < 0:
                p = 1.0 / len(options)
            child = children.get(a)
            if child is None or not child.visits:
                value = scale * p
            else:
                value = child.total / child.visits + scale * p / (1 + child.visits)
            if value > best_value:
                action, best_value = a, value
        return action

    def _node_prior(self, engine: Engine, legal: int) -> list[float]:
        self.network_calls += 1
        vector = self.guide.encoder.observe(engine, engine.current)
        prior = self.guide.prior(vector, actions_in(legal))
        return [p if p > 0 else -1.0 for p in prior]

    def _net_rollout(self, engine: Engine) -> list[list[int]]:
        """The network (argmax) makes the first `rollout_net` real choices, the rollout rule
        the rest."""
        left = self.rollout_net
        guide = self.guide
        rule = self.rollout_rule(engine)

        def net(legal: int) -> int:
            nonlocal left
            if left <= 0:
                return rule(legal)
            left -= 1
            self.network_calls += 1
            z = guide.logits(guide.encoder.observe(engine, engine.current)[None, :])[0]
            options = actions_in(legal)
            return max(options, key=z.__getitem__)

        return engine.advance(choosers=[net] * self.n)


def guided_from_spec(config: ChickenFootConfig, seed: int | None = None,
                     arg: str = "") -> ISMCTSPolicy:
    """The `guided:` spec's factory (`cf_env.agents.policies`): build from the
    `<checkpoint>[:<budget>]` part."""
    path, iterations, ms = checkpoint_budget(f"guided:{arg}", arg, GUIDED_FORMS)
    network = load_ppo_policy(path, config=config, seed=seed)  # as the spec `ppo:<path>`
    guide = NetworkGuide(network, config, label=path)
    return ISMCTSPolicy(config, seed, iterations=iterations or DEFAULT_ITERATIONS, ms=ms,
                        guide=guide)
