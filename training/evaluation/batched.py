"""Batched evaluation: the games of a duplicate-deal evaluation played many at once on the
compiled rules core, one forward pass per network per step.

`training.evaluation.evaluate` plays a lineup here (``batch=True``, or ``"auto"`` when it can)
when every policy in it is *batchable* (`batch_kind`):

* a compiled bot: exactly `RandomPolicy`, `GreedyPolicy` or `HeuristicPolicy`
  (`cf_env.agents.bots`, the `random`/`greedy`/`heuristic` specs), played by its compiled twin
  (`cf_env.agents.kernel_bots`) inside `batch_advance`;
* a network played greedily: a `NumpyPolicy` with `deterministic=True` (every `ppo:` spec),
  asked for all the games whose seat to move it holds in one batched forward pass
  (`NumpyPolicy.act_batch`).

Anything else (search agents, user policies, a sampling network) keeps the per-game path.

What is the same as the per-game path (`evaluate`'s `_play_block`): the deals — deal d is
engine seed `deal_seed(seed, d)`, replayed once per rotation with slot j at seat (j + k) mod n
(`rotation_seats`), and game i of a `KernelBatch` seeded s plays exactly `Engine(config, seed=s)`
given the same actions; forced decisions are taken without asking (`skip_forced`); a network's
choice is the argmax of its masked logits, up to the float rounding of a matrix product against
a matrix-vector one (only a near-tie can break the other way). What differs: the bots break
ties (and `random` draws) from a splitmix64 stream per game, seeded `bot_stream_seed(engine
seed, rotation)`, instead of each bot's numpy Generator seeded per block (`policy_seed`). So a
game in which no bot broke a tie is the same game on both paths; the others are other draws of
the same distribution (tests/training/test_evaluate_batched.py checks both).

Determinism: a game's play depends only on its seeds (and, at a near-tie of a network's logits,
on the rounding of the product it shared with other games), and the deals are cut into fixed
jobs of `CHUNK_DEALS` deals whatever `workers`, so the same command gives the same result;
within a job at most `batch_size` games are in flight and a finished game's slot takes the
job's next game. The results are those of the per-game
path's format (`{"deal", "engine_seed", "games": [{"slots", "scores", "winners"}]}` per deal),
so `evaluate` aggregates both alike.

This module owns the batched play only; the method (seeds, lineup, rotations, aggregation) is
`training.evaluation.evaluate`'s. It drives `cf_env.core.kernel.KernelBatch` and
`cf_env.agents.kernel_bots.batch_advance` directly (their public API), not
`cf_env.envs.batch.ChickenFootBatch`: an evaluation seats a different lineup in every game (the
rotation), may seat no outside seat at all (bots only), and needs each game's per-round points,
not rewards.
"""

from __future__ import annotations

import gc

import numpy as np
from threadpoolctl import ThreadpoolController

from cf_env.agents.bots import GreedyPolicy, HeuristicPolicy, RandomPolicy
from cf_env.agents.checkpoint import NumpyPolicy
from cf_env.agents.kernel_bots import (
    GREEDY,
    HEURISTIC,
    OUTSIDE,
    RANDOM,
    ROUND_ENDED,
    WAITING,
    batch_advance,
    bot_scratch,
    heuristic_weights,
)
from cf_env.core.config import ChickenFootConfig
from cf_env.core.kernel import KernelBatch

CHUNK_DEALS = 256  # deals per job: fixed, so that the results never depend on `workers`
DEFAULT_BATCH_SIZE = 512  # games in flight per job
MAX_BATCH_SIZE = 1 << 16
NETWORK = -1  # batch_kind of a network played greedily

_BOT_TYPES = {RandomPolicy: RANDOM, GreedyPolicy: GREEDY, HeuristicPolicy: HEURISTIC}
BLAS = ThreadpoolController()


def batch_kind(policy: object) -> int | None:
    """How the batched path plays `policy`: a compiled bot's kind code (`RANDOM`, `GREEDY`,
    `HEURISTIC`), `NETWORK` for a `NumpyPolicy` played greedily, None when it cannot (search
    agents, user policies, subclasses of the bots, a sampling network)."""
    kind = _BOT_TYPES.get(type(policy))
    if kind is not None:
        return kind
    if isinstance(policy, NumpyPolicy) and policy.deterministic:
        return NETWORK
    return None


def check_batch_size(batch_size: object) -> int:
    """`batch_size` as an int in 1..MAX_BATCH_SIZE, else `ValueError` naming the range."""
    if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
            or not 1 <= batch_size <= MAX_BATCH_SIZE):
        raise ValueError(f"batch_size must be an int in 1..{MAX_BATCH_SIZE} (games in flight); "
                         f"got {batch_size!r}")
    return int(batch_size)


_MASK = (1 << 64) - 1
# splitmix64 adds this to a stream's state per draw (`kernel_bots.next_uniform`): the inverse
# turns a game's state change into its number of tie-break (or `random`) draws.
_GAMMA_INVERSE = pow(0x9E3779B97F4A7C15, -1, 1 << 64)


def _mix64(x: int) -> int:
    """splitmix64's finalizer: a bijection of 64-bit ints that scatters every input bit."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def bot_stream_seed(engine_seed: int, rotation: int) -> int:
    """The compiled bots' tie-break stream of one game: its deal's engine seed (`deal_seed`,
    itself drawn from the master seed) and its rotation, mixed (`_mix64`) so that the rotations
    of a deal start far apart on splitmix64's sequence."""
    return _mix64((engine_seed ^ _mix64(rotation + 1)) & _MASK)


def play_batched(policies: list, owners: list[int], config: ChickenFootConfig,
                 engine_seeds: dict[int, int], batch_size: int = DEFAULT_BATCH_SIZE) -> list[dict]:
    """Play every rotation of the deals `engine_seeds` (deal -> engine seed, in deal order) with
    `policies` (one per policy of the lineup, each batchable: `batch_kind`), slot j held by
    policies[owners[j]]; returns one result per deal as `evaluate`'s per-game path does, each
    game also with "bot_draws": how many draws the compiled bots took from its stream (tie-breaks
    and `random`'s choices; 0: no bot broke a tie)."""
    n = config.num_players
    kinds = [batch_kind(policy) for policy in policies]
    if None in kinds:
        label = type(policies[kinds.index(None)]).__name__
        raise ValueError(f"policy {label} cannot be played batched (module docstring)")
    networks = sorted({i for i, kind in enumerate(kinds) if kind == NETWORK})
    deals = list(engine_seeds)
    queue = [(d, k) for d in deals for k in range(n)]  # (deal, rotation), in order
    size = max(1, min(batch_size, len(queue)))
    kb = KernelBatch(config, size)
    st, tables = kb.state, kb.tables
    seat_kind = np.zeros((size, n), np.int8)  # OUTSIDE for a network's seat
    seat_owner = np.full((size, n), -1, np.int64)  # the policy index at each seat
    bot_rng = np.zeros(size, np.uint64)
    bot_start = np.zeros(size, np.uint64)  # each game's stream seed: its draws are counted
    weights = heuristic_weights()
    scores, counts = bot_scratch(config)
    stop = np.zeros(size, np.int8)
    playing = np.full(size, -1, np.int64)  # queue index of the game in each slot, -1: none
    rounds: list[list[list[int]]] = [[] for _ in range(size)]  # per slot: each round's points
    games: dict[int, dict] = {}
    nxt = 0
    # Per rotation: the policy at each seat and its seat kind, and the slot at each seat.
    slots_of = [_rotation_seats(n, rotation) for rotation in range(n)]
    owner_rows = np.array([[owners[slot] for slot in slots] for slots in slots_of], np.int64)
    kind_rows = np.array([[OUTSIDE if kinds[o] == NETWORK else kinds[o] for o in row]
                          for row in owner_rows], np.int8)

    def deal_into(slots: list[int]) -> None:
        nonlocal nxt
        given, seeds = [], []
        for i in slots:
            if nxt >= len(queue):
                playing[i] = -1
                continue
            deal, rotation = queue[nxt]
            playing[i] = nxt
            nxt += 1
            seat_owner[i] = owner_rows[rotation]
            seat_kind[i] = kind_rows[rotation]
            bot_rng[i] = bot_start[i] = bot_stream_seed(engine_seeds[deal], rotation)
            rounds[i] = []
            given.append(i)
            seeds.append(engine_seeds[deal])
        if given:
            kb.reset(seeds, given)

    def round_ended(slots: np.ndarray) -> list[int]:
        """Record the points of the rounds just ended; the slots whose game is over."""
        finished = []
        points, over = st.round_points[slots].tolist(), st.game_over[slots].tolist()
        for k, i in enumerate(slots.tolist()):
            rounds[i].append(points[k])
            if over[k]:
                q = int(playing[i])
                won = st.winners[i].tolist()
                draws = ((int(bot_rng[i]) - int(bot_start[i])) * _GAMMA_INVERSE) & _MASK
                games[q] = {"slots": list(slots_of[queue[q][1]]),
                            "scores": [list(seat) for seat in zip(*rounds[i])],
                            "winners": [seat for seat in range(n) if won[seat]],
                            "bot_draws": draws}
                finished.append(i)
        return finished

    def play() -> None:
        """Every game of the queue, to its end."""
        while (playing >= 0).any():
            batch_advance(st, tables, weights, seat_kind, bot_rng, True, kb.legal_words, stop,
                          scores, counts)
            kb.refill()
            live = playing >= 0
            ended = np.flatnonzero(live & (stop == ROUND_ENDED))
            if ended.size:
                deal_into(round_ended(ended))
                continue
            waiting = np.flatnonzero(live & (stop == WAITING))
            if not waiting.size:  # a game over before its first round ended: cannot be (R4)
                raise RuntimeError("batched evaluation: live games neither waiting nor ended")
            owner = seat_owner[waiting, st.current[waiting]]
            observations = kb.observe()
            actions = np.empty(waiting.size, np.int64)
            masks = masks_from_bitsets(kb.legal_words[waiting], config.num_actions)
            for index in networks:
                mine = np.flatnonzero(owner == index)
                if mine.size:
                    actions[mine] = policies[index].act_batch(observations[waiting[mine]],
                                                              masks[mine])
            kb.step_games(waiting, actions)
            ended = waiting[st.round_ended[waiting]]
            if ended.size:
                deal_into(round_ended(ended))

    deal_into(list(range(size)))
    collecting = gc.isenabled()
    gc.disable()  # the loop makes many small objects and no cycle: no collection passes meanwhile
    try:
        with BLAS.limit(limits=1, user_api="blas"):  # one thread: workers are the parallelism
            play()
    finally:
        if collecting:
            gc.enable()
    return [{"deal": d, "engine_seed": engine_seeds[d],
             "games": [games[j * n + k] for k in range(n)]} for j, d in enumerate(deals)]


def _rotation_seats(n: int, rotation: int) -> list[int]:
    """Slot held by each seat in rotation k (`evaluate.rotation_seats`, stated here again so
    that this module does not import `evaluate`, which imports it)."""
    return [(seat - rotation) % n for seat in range(n)]


def masks_from_bitsets(words: np.ndarray, num_actions: int) -> np.ndarray:
    """(k, A) bool masks from (k, W) uint64 legal bitsets (little-endian words)."""
    raw = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(raw, axis=1, count=num_actions, bitorder="little").view(bool)
