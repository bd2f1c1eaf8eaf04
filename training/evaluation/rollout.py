"""Values from rollouts on the compiled rules core, for `training.evaluation.aivat`'s terms.

`RolloutValue.outcome_values(engine, outcomes, is_draw, seed)` gives, for the position `engine`
is in (a round in play, before a draw or a random choice) and each of its possible outcomes,
every seat's win share (R13: a shared win split) and R12 points at the end of the round when
the outcome is applied and the round then played out, `reps` times, averaged. Who plays each
seat is set per game (`RolloutValue.seat`, `rollout_players`): a compiled bot
(`cf_env.agents.kernel_bots`, the twin of `random`, `greedy`, `heuristic`) or a network played
greedily (`NumpyPolicy.act_batch`, one forward pass per step over every rollout whose seat to
move it holds). Every outcome's rollouts are played at once, each in a slot of one kernel batch
(`cf_env.core.kernel`) copied from the position, by `apply_action` with `search_tables` so that
the round's end ends the rollout: nothing here restates a rule.

**What the outcomes mean, and why each term keeps mean zero.**

* A draw (`is_draw`): the outcomes are the tiles of the boneyard. The rollout of tile c is
  played on the position's real boneyard order with c swapped to the front (the place of the
  tile that is drawn next), then the DRAW applied. Given the history, the boneyard's order is
  uniform; the order with c swapped to the front is then uniform among the orders that start
  with c, for each c, so the mean over c of E[V(swap_c order)] is E[V(order)], the value of the
  tile that is really drawn: the draw term V(drawn) - mean_c V(c) has mean exactly zero,
  though every V(c) reads the same future draws (common random numbers: it values the tile
  drawn against the others on one future).
* A decision (not `is_draw`): the outcomes are actions, each applied, the rest played on the
  real boneyard order. The policy's tie-break is drawn independently of the order, so the
  action term has mean zero given the position whatever V reads.

The rollouts' own tie-breaks (and `random` seats) draw from a splitmix64 stream per rollout,
seeded from `seed`, the outcome and the repetition: a stream the caller keeps apart from the
game's chance and the policies' (`training.evaluation.aivat.rollout_seed`), so V is a fixed
function of the position, the outcome and that seed.
"""

from __future__ import annotations

import numpy as np

from cf_env.agents.kernel_bots import (
    BOT_KINDS,
    HEURISTIC,
    OUTSIDE,
    WAITING,
    add64,
    batch_advance,
    bot_scratch,
    heuristic_weights,
    mul64,
)
from cf_env.agents.kernel_search import copy_game, search_tables
from cf_env.core.config import ChickenFootConfig
from cf_env.core.kernel import (
    P_DRAW,
    P_PLAYERS,
    P_TILES,
    KernelBatch,
    apply_action,
    games_step,
    jit,
)
from cf_env.core.raw import raw
from training.evaluation.batched import masks_from_bitsets

ROLLOUT_POLICIES = tuple(BOT_KINDS)  # the bots a rollout seat can be played by
DEFAULT_ROLLOUT_POLICY = "heuristic"  # for the seats of a policy that is not one of them
ROOT, WORK = 0, 1


@jit
def _mix(x):
    """splitmix64's finaliser: a well-spread uint64 of a uint64."""
    z = add64(x, np.uint64(0x9E3779B97F4A7C15))
    z = mul64(z ^ (z >> np.uint64(30)), np.uint64(0xBF58476D1CE4E5B9))
    z = mul64(z ^ (z >> np.uint64(27)), np.uint64(0x94D049BB133111EB))
    return z ^ (z >> np.uint64(31))


@jit
def _start(st, tb, rng, outcomes, is_draw, reps, seed):
    """Slot 1 + j * reps + r: the root (slot 0) with outcome j applied (module docstring), its
    rollout stream seeded from `seed`, the outcome and r; the root and the slots after the last
    one marked over, so that `batch_advance` leaves them alone."""
    st, tb, rng, outcomes, is_draw = raw(st), raw(tb), raw(rng), raw(outcomes), raw(is_draw)
    draw = tb.params[P_DRAW]
    slot = 1
    for j in range(outcomes.shape[0]):
        for r in range(reps):
            copy_game(st, ROOT, slot)
            rng[slot] = _mix(add64(_mix(seed ^ np.uint64(outcomes[j])), np.uint64(r)))
            st.round_ended[slot] = False
            if is_draw:
                front = st.bone_pos[slot]
                for k in range(front, tb.params[P_TILES]):
                    if st.boneyard[slot, k] == outcomes[j]:
                        st.boneyard[slot, k] = st.boneyard[slot, front]
                        st.boneyard[slot, front] = outcomes[j]
                        break
                apply_action(st, tb, slot, draw)
            else:
                apply_action(st, tb, slot, outcomes[j])
            slot += 1
    st.game_over[ROOT] = True
    for i in range(slot, st.game_over.shape[0]):
        st.game_over[i] = True


@jit
def _shares(st, tb, count, reps, out):
    """out[j, s] = (seat s's mean win share, its mean R12 points) over outcome j's rollouts."""
    st, tb, out = raw(st), raw(tb), raw(out)
    n = tb.params[P_PLAYERS]
    for j in range(count):
        for s in range(n):
            out[j, s, 0] = 0.0
            out[j, s, 1] = 0.0
        for r in range(reps):
            slot = 1 + j * reps + r
            winners = 0
            for s in range(n):
                if st.winners[slot, s]:
                    winners += 1
            for s in range(n):
                if st.winners[slot, s]:
                    out[j, s, 0] += 1.0 / winners
                out[j, s, 1] += st.round_points[slot, s]
        for s in range(n):
            out[j, s, 0] /= reps
            out[j, s, 1] /= reps


class RolloutValue:
    """Rollout values (module docstring) for games of `config`, `reps` rollouts per outcome,
    every outcome's rollouts played at once in one kernel batch. Who plays each seat is set per
    game (`seat`): a compiled bot's kind (`cf_env.agents.kernel_bots.BOT_KINDS`), or a network
    played greedily (`NumpyPolicy.act_batch`, one forward pass per step over every rollout
    whose seat to move it holds)."""

    def __init__(self, config: ChickenFootConfig, reps: int = 1):
        self.config = config
        self.reps = int(reps)
        self.capacity = 1 + max(config.num_tiles, config.num_actions) * self.reps
        self.batch = KernelBatch(config, self.capacity)
        n = config.num_players
        self.kinds = np.full((self.capacity, n), HEURISTIC, np.int8)
        self.networks: list = [None] * n
        self.weights = heuristic_weights()
        self.scores, self.counts = bot_scratch(config)
        self.stop = np.zeros(self.capacity, np.int8)
        self._rng = np.zeros(self.capacity, np.uint64)
        self._tables: dict[int, object] = {}
        self.rollouts = 0  # rollouts played so far

    def seat(self, players) -> None:
        """Who plays each seat in the rollouts: per seat a bot kind code (int) or a network
        (an object with `act_batch`)."""
        for s, player in enumerate(players):
            if isinstance(player, (int, np.integer)):
                self.kinds[:, s] = int(player)
                self.networks[s] = None
            else:
                self.kinds[:, s] = OUTSIDE
                self.networks[s] = player

    def outcome_values(self, engine, outcomes, is_draw: bool, seed: int) -> np.ndarray:
        """(len(outcomes), num_players, 2) float64: each seat's mean win share and mean R12
        points after each outcome (tiles of the boneyard for a draw, actions for a decision)
        from `engine`'s position."""
        kb, st = self.batch, self.batch.state
        for dst, src in zip(st, engine.game.state):
            dst[ROOT] = src[0]
        round_index = int(st.round[ROOT])
        tables = self._tables.get(round_index)
        if tables is None:
            tables = self._tables[round_index] = search_tables(kb.tables, round_index)
        outcomes = np.asarray(outcomes, np.int64)
        _start(st, tables, self._rng, outcomes, bool(is_draw), self.reps, np.uint64(seed))
        used = 1 + outcomes.size * self.reps
        while True:
            batch_advance(st, tables, self.weights, self.kinds, self._rng, True, kb.legal_words,
                          self.stop, self.scores, self.counts)
            waiting = np.flatnonzero(self.stop[:used] == WAITING)
            waiting = waiting[~st.game_over[waiting]]
            if not waiting.size:
                break
            observations = kb.observe()
            masks = masks_from_bitsets(kb.legal_words[waiting], self.config.num_actions)
            movers = st.current[waiting]
            actions = np.empty(waiting.size, np.int64)
            for s, network in enumerate(self.networks):
                mine = np.flatnonzero(movers == s)
                if mine.size:
                    actions[mine] = network.act_batch(observations[waiting[mine]], masks[mine])
            games_step(st, tables, waiting, actions)
        out = np.zeros((outcomes.size, self.config.num_players, 2), np.float64)
        _shares(st, tables, outcomes.size, self.reps, out)
        self.rollouts += outcomes.size * self.reps
        return out


def rollout_players(policies, networks: bool = True) -> list:
    """Who plays each of `policies`' seats (one per seat) in the rollouts (`RolloutValue.seat`):
    a compiled bot's Python twin its compiled kind; a network played greedily itself (with
    `networks`, else the heuristic); any other policy the heuristic."""
    from training.evaluation.batched import NETWORK, batch_kind

    out = []
    for policy in policies:
        kind = batch_kind(policy)
        if kind == NETWORK and networks:
            out.append(policy)
        else:
            out.append(HEURISTIC if kind is None or kind == NETWORK else int(kind))
    return out
