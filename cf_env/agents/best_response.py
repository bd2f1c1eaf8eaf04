"""Search best response to a fixed agent: `br:<target>[:<determinizations> | :ms=<ms>]`.

A search probe of exploitability, beside the learned one (`training.selfplay.exploit`): the
*approximate exploitability* of Timbers et al. (2022, "Approximate Exploitability: Learning a
Best Response"), where a best response that *knows the target's policy* is computed by search
at the probe's own seat. Whatever it wins above parity against copies of the target is
something the target gives away, so its win rate is a lower bound on the target's
exploitability (a deeper search, or a better model of the hidden tiles, can only find more).

**The search** (flat Monte Carlo, one move deep at the probe's seat). At each of the probe's
real decisions (one legal action is played without a search):

* **determinizations**: deals of the hidden tiles (the other hands and the boneyard in draw
  order) consistent with what the probe has seen, uniform over those deals: the deal sampler of
  `ismcts:` and `lookahead:` (`cf_env.core.deals.DealSampler` through `kernel_search.Deals`);
  the position is rebuilt from the probe's observation alone (`ISMCTSPolicy._position`:
  `restore()` of the decoded observation), never from the real game;
* **every legal move** is played on the same determinizations (common random numbers), and the
  round is then played to its end with **the target's policy on every seat**: the three other
  seats, as the model of the target the probe is exploiting, and the probe's own later
  decisions, as its rollout policy;
* **the outcome** of a line is the probe's R13 win share of the round (the lowest R12 points
  win, a tie shares the win): the figure the evaluation reports. The move played has the best
  mean win share (ties: uniform, from the policy's seed).

Why the target's policy for the probe's own later decisions, and not a tree over them (ISMCTS
restricted to the probe's seat): with it the search is a *rollout algorithm*, one step of
policy improvement over the target itself. Against three copies of the target the probe starts
from the target's own play (parity, up to the cost of determinizing) and every move it changes
is one the model says wins more: the same question as the learned probe's warm start, asked
by search at every decision. A tree over the probe's decisions needs many more playouts per
decision to beat that, and the network target's playouts are a batched forward pass per step:
at the budgets that fit a published probe (hundreds of deals in minutes on two shared cores)
the flat search is what fits. A search that did better would raise the bound, never lower it.

**The target** is a spec as it plays everywhere else:

* `random`, `greedy`, `heuristic`: the compiled bots (`cf_env.agents.kernel_bots.bot_action`,
  the same best legal actions as the Python bots; ties from a splitmix64 stream seeded by the
  policy's seed). A whole block of lines (every determinization and move) is played in one
  compiled call (`play_lines`) on a two-game kernel batch (`KernelSearch`: the root loaded once
  per decision, the lines played one after another on the work slot, whose game ends at the
  round's end, `search_tables`).
* `ppo:<checkpoint>`: the checkpoint's actor, argmax over the legal actions, as `ppo:` plays.
  The lines are `Engine`s; every line waiting at a choice goes through one batched forward pass
  per step (`NetworkGuide.logits`, one BLAS thread as `lookahead:` runs it).

Other targets (search agents, user policies, `br:` itself) are refused: the model must be
cheap enough to play every line out.

**Budgets** are bounded as `lookahead:`'s: `br:<target>:<determinizations>` (default
`DEFAULT_DETERMINIZATIONS`, at most `MAX_DETERMINIZATIONS` = 10,000, each playing every legal
move to the round's end) or `br:<target>:ms=<ms>` of this process's CPU time per decision (in
chunks of `CHUNK` determinizations until the time is spent; at most `cf_env.agents.ismcts.MAX_MS` = 60,000).
Memory does not grow with the count: lines are played `CHUNK` determinizations at a time.

Published probes, with what each number bounds: docs/exploit.md ("Search best response").
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
from threadpoolctl import ThreadpoolController

from cf_env.agents.checkpoint import load_ppo_policy
from cf_env.agents.ismcts import (
    ISMCTSPolicy,
    NetworkGuide,
    check_budget,
    parse_budget,
    split_guided,
)
from cf_env.agents.kernel_bots import BOT_KINDS, bot_action, bot_scratch, heuristic_weights
from cf_env.agents.kernel_search import ROOT, WORK, Deals, KernelSearch, copy_game, deal_hidden
from cf_env.core.actions import legal_masks
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.kernel import P_PLAYERS, apply_action, count_bits, jit, legal_into, nth_bit
from cf_env.core.raw import raw

DEFAULT_DETERMINIZATIONS = 32
MAX_DETERMINIZATIONS = 10_000  # per decision, as lookahead's: each plays every legal move out
TARGETS = "random, greedy, heuristic or ppo:<checkpoint>"
BR_FORMS = (
    "br:<target>, br:<target>:<determinizations> or br:<target>:ms=<milliseconds>, the target "
    f"{TARGETS} (e.g. br:greedy:32, br:ppo:checkpoints/selfplay-4p-d9:16)"
)
_BLAS = ThreadpoolController()


@jit
def play_lines(st, tb, weights, kind, bot_rng, deals, count, moves, legal, scores, counts, out):
    """For each of the first `count` deals (rows of `deal_hidden`'s layout) and each move of
    `moves` (legal for seat 0 at the root): the root game copied to the work slot, its hidden
    tiles dealt as the row says, the move played, then the round played to its end with the bot
    `kind` on every seat (one legal action is played without a draw); out[d, j] is seat 0's
    win share of that round (R13 on the round's R12 points: the lowest win, ties share)."""
    st, tb, weights, bot_rng, deals = raw(st), raw(tb), raw(weights), raw(bot_rng), raw(deals)
    moves, legal, scores, counts, out = raw(moves), raw(legal), raw(scores), raw(counts), raw(out)
    n = tb.params[P_PLAYERS]
    for d in range(count):
        for j in range(moves.shape[0]):
            copy_game(st, ROOT, WORK)
            deal_hidden(st, tb, WORK, deals[d])
            action = moves[j]
            while True:
                st.round_ended[WORK] = False
                apply_action(st, tb, WORK, action)
                if st.round_ended[WORK]:
                    break
                legal_into(st, tb, WORK, legal)
                if count_bits(legal, WORK) == 1:
                    action = nth_bit(legal, WORK, 0)
                else:
                    action = bot_action(st, tb, weights, kind, bot_rng, WORK, legal, scores,
                                        counts)
            points = st.round_points
            low, tied = points[WORK, 0], 0
            for s in range(n):
                if points[WORK, s] < low:
                    low = points[WORK, s]
            for s in range(n):
                if points[WORK, s] == low:
                    tied += 1
            out[d, j] = 1.0 / tied if points[WORK, 0] == low else 0.0


def win_share(points: list[int]) -> float:
    """Seat 0's R13 share of a round with these R12 points: the lowest win, a tie shares."""
    low = min(points)
    return 1.0 / points.count(low) if points[0] == low else 0.0


class BestResponsePolicy(ISMCTSPolicy):
    """`br:<target>`: flat Monte Carlo best response to `target` (module docstring). `target`
    is a bot name (`random`, `greedy`, `heuristic`) or a `NetworkGuide` of a `ppo:` checkpoint."""

    CHUNK = 16  # determinizations per block of lines

    def __init__(self, config: ChickenFootConfig, seed: int | None, target: str | NetworkGuide,
                 determinizations: int = DEFAULT_DETERMINIZATIONS, ms: float | None = None):
        check_budget("br", determinizations, ms, MAX_DETERMINIZATIONS)
        if isinstance(target, NetworkGuide):
            self.kind, guide = None, target
        elif target in BOT_KINDS:
            self.kind, guide = BOT_KINDS[target], None
        else:
            raise ValueError(f"br: the target is {TARGETS}; got {target!r}")
        super().__init__(config, seed, iterations=determinizations, ms=ms, guide=guide)
        self.target = target if guide is None else f"ppo:{guide.label}"
        self._weights = heuristic_weights()
        self._scores, self._counts = bot_scratch(config)
        # The compiled bots' ties: a splitmix64 stream (read at the work slot's index).
        self._bot_rng = np.random.SeedSequence(seed).spawn(3)[2].generate_state(2, np.uint64)
        self._lines: dict[ChickenFootConfig, list[Engine]] = {}
        self._rows = np.zeros((self.CHUNK, config.num_tiles), np.int32)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        legal = np.flatnonzero(observation["action_mask"])
        if legal.size == 1:
            return int(legal[0])
        _, sampler, root, work, hand = self._position(observation)
        moves = legal.tolist()
        totals = np.zeros(len(moves))
        done = 0
        deals = Deals(sampler, self._deal_rng)
        with _BLAS.limit(limits=1, user_api="blas"):
            if self.kind is not None:
                search = self._kernels.get(root.round)
                if search is None:
                    search = self._kernels[root.round] = KernelSearch(root.config, root.round, 1)
                search.load(root)
            if self.ms is None:
                while done < self.iterations:
                    k = min(self.CHUNK, self.iterations - done)
                    totals += self._block(root, work, hand, moves, deals, k)
                    done += k
            else:
                deadline = time.process_time() + self.ms / 1000.0
                while not done or time.process_time() < deadline:
                    totals += self._block(root, work, hand, moves, deals, self.CHUNK)
                    done += self.CHUNK
        self.last_iterations = done
        best = np.flatnonzero(totals == totals.max())
        return int(moves[best[0]] if best.size == 1 else moves[int(self.rng.choice(best))])

    def _block(self, root: Engine, work: Engine, hand: list[int], moves: list[int],
               deals: Deals, k: int) -> np.ndarray:
        """(len(moves),): each move's win share summed over k new determinizations."""
        deals.fill(self._rows, k)
        if self.kind is not None:
            search = self._kernels[root.round]
            out = np.zeros((k, len(moves)))
            play_lines(search.batch.state, search.tables, self._weights, self.kind,
                       self._bot_rng, self._rows, k, np.asarray(moves, np.int64), search.legal,
                       self._scores, self._counts, out)
            return out.sum(axis=0)
        return self._network_lines(root, work, hand, moves, deals, k).sum(axis=0)

    def _network_lines(self, root: Engine, work: Engine, hand: list[int], moves: list[int],
                       deals: Deals, k: int) -> np.ndarray:
        """(k, len(moves)): my win share on each line, the target's actor (argmax) choosing
        every decision after my move, all waiting lines through one forward pass per step."""
        m = len(moves)
        lines = self._line_engines(root.config, k * m)
        share = np.zeros(k * m)
        waiting: list[int] = []

        def score_or_wait(finished: list[list[int]], i: int) -> None:
            if finished:
                share[i] = win_share(finished[0])
            else:
                waiting.append(i)

        for d in range(k):
            opponents, boneyard = deals.split(self._rows[d])
            work.copy_from(root, rng=False)
            work.redeal([hand, *opponents], boneyard)
            for j, move in enumerate(moves):
                line = lines[d * m + j]
                line.copy_from(work, rng=False)
                score_or_wait(line.step(move), d * m + j)
        guide = self.guide
        while waiting:
            movers, waiting = waiting, []
            rows = np.stack([guide.encoder.observe(lines[i], lines[i].current) for i in movers])
            masks = legal_masks([lines[i].legal_bits() for i in movers], self.config.num_actions)
            logits = np.where(masks, guide.logits(rows), -np.inf)
            self.network_calls += 1
            for i, action in zip(movers, logits.argmax(axis=1).tolist()):
                score_or_wait(lines[i].step(action), i)
        return share.reshape(k, m)

    def _line_engines(self, config: ChickenFootConfig, count: int) -> list[Engine]:
        lines = self._lines.setdefault(config, [])
        while len(lines) < count:
            lines.append(Engine(config, seed=0, skip_forced=True))
        return lines[:count]


def _split(arg: str) -> tuple[str, int | None, float | None]:
    """(target spec, determinizations, ms) of a `br:` spec's argument; ValueError naming it."""
    spec = f"br:{arg}"
    target, budget = split_guided(arg)
    if not target:
        raise ValueError(f"policy spec {spec!r} needs a target; valid forms: {BR_FORMS}")
    count, ms = parse_budget(budget, spec, BR_FORMS, MAX_DETERMINIZATIONS) if budget else (None, None)
    if target not in BOT_KINDS and not (target.startswith("ppo:") and len(target) > 4):
        raise ValueError(f"policy spec {spec!r}: the target is {TARGETS} (the model of every "
                         f"other seat must be cheap enough to play every line out); got "
                         f"{target!r}; valid forms: {BR_FORMS}")
    return target, count, ms


def br_checkpoint(arg: str) -> str:
    """The checkpoint a `br:` spec's target plays (`spec_checkpoint`), else ''."""
    target = split_guided(arg)[0]
    return target[4:] if target.startswith("ppo:") else ""


def br_from_spec(config: ChickenFootConfig, seed: int | None = None,
                 arg: str = "") -> BestResponsePolicy:
    """The `br:` spec's factory (`cf_env.agents.policies`): build from `<target>[:<budget>]`."""
    target, count, ms = _split(arg)
    if target.startswith("ppo:"):
        path = target[4:]
        target = NetworkGuide(load_ppo_policy(path, config=config, seed=seed), config, label=path)
    return BestResponsePolicy(config, seed, target,
                              determinizations=count or DEFAULT_DETERMINIZATIONS, ms=ms)
