"""Determinized one-move lookahead scored by a checkpoint's value head: `lookahead:<ckpt>[:<budget>]`.

A flat search (perfect-information Monte Carlo) over the acting player's legal moves. Each
determinization is a full deal consistent with what the player has seen (`ISMCTSPolicy`'s: one
`restore()` per decision, then `Engine.copy_from` + `Engine.redeal` on a work engine, uniform
over consistent deals through `DealSampler`); every legal move is played on the same
determinizations (common random numbers), and after it the other seats play the checkpoint's
actor (argmax, as `ppo:` plays) until I am to choose again or the round ends. The position
reached is scored by the checkpoint's **value head** (`value.npz`: the privileged critic trained
beside the actor, which reads the observation and the hidden tiles: on a determinization the
hidden tiles are the sampled ones), a finished round by the reward that critic was trained on
(`cf_env.core.rewards`: the card's `reward_mode` plus its `win_bonus`). The move played has the
best mean value over the determinizations.

All the network calls of a step are batched: every determinization-and-move line waiting at an
opponent's choice goes through one actor pass, every line waiting at my choice through one value
pass. Matrix products of ~100 rows are where OpenBLAS starts its own threads, and beside another
busy process those threads cost far more than they give (docs/search/results.md), so the search
runs them with one BLAS thread (`threadpoolctl`).

**`belief:<ckpt>[:<budget>]`** is the same search over deals that follow the posterior given
the opponents' moves instead of the uniform prior (`cf_env.agents.belief`): the evidence
(`OpponentEvidence`) rebuilds what each opponent saw at its plays and scores a deal by the
actor's probability of those plays with that deal's hands; each chunk of determinizations is
the last `MCMC_KEEP` states of Metropolis chains started from uniform deals. Because the
evidence follows the round through every one of my decisions, the policy sets `ask_forced`.

Budgets: `lookahead:<ckpt>:<determinizations>` (default 64) or `lookahead:<ckpt>:ms=<ms>` of
this process's CPU time per decision (determinizations in chunks of `CHUNK` until the time is
spent). Only the acting player's observation is read (the real engine is never peeked at).
Both are bounded, in the spec and in the constructor: at most `MAX_DETERMINIZATIONS` = 10,000
and `MAX_MS` (ISMCTS's, 60,000 ms). The count's bound is ten times lower than ISMCTS's
`MAX_ITERATIONS`: a determinization plays every legal move, with a batched network pass per
step, so it costs far more than an iteration of ISMCTS. Memory does not grow with the count:
lines are played `CHUNK` determinizations at a time. `prior_weight` (default 0) adds that
weight times log P(move) under the actor to each move's mean value.

What the defaults were chosen by, what a determinization costs, and how strong `lookahead:` and
`belief:` are (with the commands): docs/search/results.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np
from threadpoolctl import ThreadpoolController

from cf_env.agents.belief import OpponentEvidence
from cf_env.agents.checkpoint import ValueHead, load_ppo_policy, load_value_head
from cf_env.agents.ismcts import ISMCTSPolicy, NetworkGuide, check_budget, checkpoint_budget
from cf_env.core.actions import legal_masks
from cf_env.core.config import ChickenFootConfig
from cf_env.core.deals import DealSampler
from cf_env.core.engine import Engine
from cf_env.core.rewards import round_rewards, win_bonus

DEFAULT_DETERMINIZATIONS = 64
MAX_DETERMINIZATIONS = 10_000  # per decision: see the module docstring
LOOKAHEAD_FORMS = (
    "lookahead:<checkpoint>, lookahead:<checkpoint>:<determinizations> or "
    "lookahead:<checkpoint>:ms=<milliseconds> (e.g. lookahead:checkpoints/selfplay-4p-d9-v3:64); "
    "the checkpoint needs a value head (value.npz)"
)
BELIEF_FORMS = LOOKAHEAD_FORMS.replace("lookahead:", "belief:")
_BLAS = ThreadpoolController()


class LookaheadPolicy(ISMCTSPolicy):
    """`lookahead:`: one move deep over determinizations, scored by a value head (module doc)."""

    CHUNK = 16  # determinizations per batch under a time budget
    # `belief:`'s Metropolis chains (measured in docs/search/belief/): 32 chains of 24 steps for
    # 64 determinizations, each giving its states after steps 18 and 24.
    MCMC_STEPS, MCMC_KEEP, MCMC_EVERY = 24, 2, 6

    def __init__(self, config: ChickenFootConfig, seed: int | None, guide: NetworkGuide,
                 value: ValueHead | None, determinizations: int = DEFAULT_DETERMINIZATIONS,
                 ms: float | None = None, horizon: int | None = 0, prior_weight: float = 0.0,
                 evidence: OpponentEvidence | None = None):
        check_budget("lookahead", determinizations, ms, MAX_DETERMINIZATIONS)
        super().__init__(config, seed, iterations=determinizations, ms=ms, guide=guide)
        # With `evidence` (`belief:`), determinizations follow the posterior given the
        # opponents' moves (`cf_env.agents.belief`), not the uniform prior.
        self.evidence = evidence
        # The evidence follows the round through every decision of mine, forced ones too
        # (`cf_env.agents.arena`): between two of them each opponent has had one turn.
        self.ask_forced = evidence is not None
        if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, int)
                                    or horizon < 0):
            raise ValueError(f"horizon must be an int >= 0 or None; got {horizon!r}")
        if value is None and horizon is not None:
            raise ValueError("a lookahead without a value head must play to the round's end "
                             "(horizon=None)")
        # How many of my later choices the actor makes before the value head scores the
        # position (None: the actor plays every seat to the round's end, no value head).
        self.horizon = horizon
        if not (prior_weight >= 0 and math.isfinite(prior_weight)):
            raise ValueError(f"prior_weight must be a finite number >= 0; got {prior_weight!r}")
        # The move played maximises mean value + prior_weight * log P(move) under the actor:
        # 0 trusts the values alone; more keeps the search nearer the actor's own choice.
        self.prior_weight = float(prior_weight)
        self.value = value
        reward = value.reward if value is not None else {"reward_mode": "zero_sum", "win_bonus": 0}
        self.reward_mode = reward["reward_mode"]
        self.bonus = float(reward["win_bonus"])
        encoder = guide.encoder
        self.observation_size = encoder.layout.size
        if value is not None and value.input_size != self.observation_size + encoder.privileged_layout.size:
            raise ValueError(f"value head takes {value.input_size} inputs; this env's observation "
                             f"and privileged vector have {self.observation_size} + "
                             f"{encoder.privileged_layout.size}")
        self._lines: dict[ChickenFootConfig, list[Engine]] = {}

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        evidence = self.evidence
        if legal.size == 1 and evidence is None:
            return int(legal[0])
        state, sampler, root, work, hand = self._position(observation, settle=legal.size > 1)
        if evidence is not None:
            evidence.update(state, observation["observation"], root)
        if legal.size == 1:
            action = int(legal[0])
        else:
            action = self._search(observation, legal.tolist(), sampler, root, work, hand)
        if evidence is not None:
            evidence.remember(state, root, action)
        return action

    def reset(self) -> None:
        """A new game (`Arena.reset_policies`): what was inferred about the hands is dropped."""
        if self.evidence is not None:
            self.evidence.reset()

    def root_statistics(self, observation: Mapping[str, np.ndarray],
                        prior: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """((A,) int64, (A,) float64): for every legal move, the determinizations it was scored
        on and the sum of its values over them, from one search of `observation` as `act`
        searches (`ISMCTSPolicy.root_statistics`' shape, for the expert-iteration targets,
        `training.selfplay.targets`). A flat search has no prior at its root: `prior` is
        accepted for that interface and unused. Uniform deals only: `belief:`'s evidence must
        see every decision of its seat, which a caller of this function does not promise."""
        if self.evidence is not None:
            raise ValueError("root_statistics searches uniform deals only; this policy has "
                             "belief evidence (use lookahead:, not belief:)")
        mask = np.asarray(observation["action_mask"]).astype(bool)
        legal = np.flatnonzero(mask)
        visits = np.zeros(mask.size, np.int64)
        totals = np.zeros(mask.size, np.float64)
        if legal.size == 1:
            visits[legal[0]] = 1
            return visits, totals
        _, sampler, root, work, hand = self._position(observation)
        sums, done = self._move_totals(legal.tolist(), sampler, root, work, hand)
        visits[legal] = done
        totals[legal] = sums
        return visits, totals

    def _search(self, observation: Mapping[str, np.ndarray], moves: list[int],
                sampler: DealSampler, root: Engine, work: Engine, hand: list[int]) -> int:
        totals, done = self._move_totals(moves, sampler, root, work, hand)
        score = totals / done
        if self.prior_weight:
            prior = self.guide.prior(np.asarray(observation["observation"], np.float32), moves)
            score = score + self.prior_weight * np.log(np.maximum([prior[a] for a in moves], 1e-12))
        best = np.flatnonzero(score == score.max())
        return int(moves[best[0]] if best.size == 1 else moves[int(self.rng.choice(best))])

    def _move_totals(self, moves: list[int], sampler: DealSampler, root: Engine, work: Engine,
                     hand: list[int]) -> tuple[np.ndarray, int]:
        """Each move's value summed over the budget's determinizations, and their count."""
        totals = np.zeros(len(moves))
        done = 0
        with _BLAS.limit(limits=1, user_api="blas"):
            if self.ms is None:
                while done < self.iterations:
                    k = min(self.CHUNK, self.iterations - done)
                    totals += self._chunk(root, work, sampler, hand, moves, k)
                    done += k
            else:
                deadline = time.process_time() + self.ms / 1000.0
                while not done or time.process_time() < deadline:
                    totals += self._chunk(root, work, sampler, hand, moves, self.CHUNK)
                    done += self.CHUNK
        self.last_iterations = done
        return totals, done

    def _chunk(self, root: Engine, work: Engine, sampler: DealSampler, hand: list[int],
               moves: list[int], k: int) -> np.ndarray:
        """(len(moves),): each move's value summed over k determinizations: k fresh deals, or,
        with `evidence`, the last `MCMC_KEEP` states of k / `MCMC_KEEP` Metropolis chains
        started from fresh deals and moved `MCMC_STEPS` steps towards the posterior
        (`OpponentEvidence.posterior`)."""
        evidence = self.evidence
        if evidence is None or not evidence.count:
            deals = [sampler.sample() for _ in range(k)]
        else:
            chains = -(-k // self.MCMC_KEEP)
            deals = evidence.posterior([sampler.sample() for _ in range(chains)], sampler,
                                       self.MCMC_STEPS, self.rng, self.MCMC_KEEP,
                                       self.MCMC_EVERY)[:k]
        return self._values(root, work, hand, moves, deals).sum(axis=0)

    def _values(self, root: Engine, work: Engine, hand: list[int], moves: list[int],
                deals: list[tuple[list[list[int]], list[int]]]) -> np.ndarray:
        """(len(deals), len(moves)): the value to me of each move on each determinization."""
        m, k = len(moves), len(deals)
        lines = self._line_engines(root.config, k * m)
        value = np.zeros(k * m)
        waiting = []
        for d, (opponents, boneyard) in enumerate(deals):
            work.copy_from(root, rng=False)
            work.redeal([hand, *opponents], boneyard)
            for j, move in enumerate(moves):
                line = lines[d * m + j]
                line.copy_from(work, rng=False)
                self._score_or_wait(line.step(move), d * m + j, value, waiting)
        left = [self.horizon] * (k * m)  # my choices the actor still makes on each line
        mine = []
        guide = self.guide
        while waiting:
            movers = []
            for i in waiting:
                if lines[i].current or left[i] is None or left[i] > 0:
                    movers.append(i)
                    if not lines[i].current and left[i] is not None:
                        left[i] -= 1
                else:
                    mine.append(i)
            if not movers:
                break
            rows = np.stack([guide.encoder.observe(lines[i], lines[i].current) for i in movers])
            masks = legal_masks([lines[i].legal_bits() for i in movers], self.config.num_actions)
            logits = np.where(masks, guide.logits(rows), -np.inf)
            self.network_calls += 1
            waiting = []
            for i, action in zip(movers, logits.argmax(axis=1).tolist()):
                self._score_or_wait(lines[i].step(action), i, value, waiting)
        if mine:
            encoder, d = guide.encoder, self.observation_size
            rows = np.empty((len(mine), self.value.input_size), np.float32)
            for r, i in enumerate(mine):
                rows[r, :d] = encoder.observe(lines[i], 0)
                encoder.privileged(lines[i], 0, out=rows[r, d:])
            value[mine] = self.value.values(rows)
            self.network_calls += 1
        return value.reshape(k, m)

    def _score_or_wait(self, finished: list[list[int]], line: int, value: np.ndarray,
                waiting: list[int]) -> None:
        """A line whose round ended gets my reward for it; any other waits for its next step."""
        if not finished:
            waiting.append(line)
            return
        points = finished[0]
        reward = round_rewards(self.config, self.reward_mode, points)[0]
        value[line] = reward + (win_bonus(points, self.bonus)[0] if self.bonus else 0.0)

    def _line_engines(self, config: ChickenFootConfig, count: int) -> list[Engine]:
        lines = self._lines.setdefault(config, [])
        while len(lines) < count:
            lines.append(Engine(config, seed=0, skip_forced=True))
        return lines[:count]


def lookahead_from_spec(config: ChickenFootConfig, seed: int | None = None,
                        arg: str = "") -> LookaheadPolicy:
    """The `lookahead:` spec's factory (`cf_env.agents.policies`): build from the
    `<checkpoint>[:<budget>]` part."""
    path, count, ms = checkpoint_budget(f"lookahead:{arg}", arg, LOOKAHEAD_FORMS,
                                       MAX_DETERMINIZATIONS)
    network = load_ppo_policy(path, config=config, seed=seed)
    value = load_value_head(path, config)
    return LookaheadPolicy(config, seed, NetworkGuide(network, config, label=path), value,
                           determinizations=count or DEFAULT_DETERMINIZATIONS, ms=ms)


def belief_from_spec(config: ChickenFootConfig, seed: int | None = None,
                     arg: str = "") -> LookaheadPolicy:
    """The `belief:` spec's factory: `lookahead:` whose determinizations are weighted by the
    opponents' moves (`cf_env.agents.belief`), modelled by the same checkpoint's actor."""
    path, count, ms = checkpoint_budget(f"belief:{arg}", arg, BELIEF_FORMS, MAX_DETERMINIZATIONS)
    network = load_ppo_policy(path, config=config, seed=seed)
    value = load_value_head(path, config)
    guide = NetworkGuide(network, config, label=path)
    return LookaheadPolicy(config, seed, guide, value,
                           determinizations=count or DEFAULT_DETERMINIZATIONS, ms=ms,
                           evidence=OpponentEvidence(config, guide))
