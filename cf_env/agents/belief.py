"""What the opponents' moves say about their hands: a posterior over deals, for `belief:` search.

A uniform sampler over the deals consistent with what I saw (`cf_env.core.deals.DealSampler`)
ignores *how* the opponents played: a seat that laid its 9|2 on the foot instead of the 9|9 it
would have laid, had it held it, probably does not hold the 9|9. `OpponentEvidence` keeps, for
each opponent, the decisions it made since it last kept a drawn tile (its **events**), and weighs
a sampled deal by how likely a checkpoint's actor was to make those decisions with the hands that
deal gives it (Bayes: deals uniform over the consistent ones, times the likelihood of the moves
seen). `belief:` search (`cf_env.agents.lookahead`) draws its determinizations from that
posterior (`OpponentEvidence.posterior`, below).

**An event** is an opponent's play from its hand (not the play of a tile it had just drawn):
its observation at that moment with the hand piece left out (everything else in it is public, so
the same for every deal), the values it could attach to then, the action it took, and the tiles
it has played since (the hand it held then is the hand a deal gives it now plus those tiles). A
seat that keeps a drawn tile loses its events: which of its tiles came later is not known.

**Where the events come from.** I see only my own observations, so the opponents' observations
at their decisions are rebuilt by a **replay**. At each of my decisions (forced ones too: the
policy sets `ask_forced`, which `cf_env.agents.arena` honours, so that between two of them each
opponent has one turn) the position of my previous decision (a copy of its root engine,
`ISMCTSPolicy._root_engine`) is re-dealt: each opponent holds the tiles the current root gives it
plus those it has played since, and the boneyard the tiles drawn since. Then my move and the
opponents' moves (read off the tiles each has played since and its hand size) are played on it,
the draws taking the tiles they must, until I am to choose; the observation reached must equal
the one I hold, bit for bit. When the reading leaves room (several turns between my decisions,
which plays came from the stock), a depth-first search tries each way; an interval that no way,
or more than one, explains adds no event and keeps what was known. Only my own observations are
read: the real engine is never looked at.

**The likelihood** of an event under a deal is the actor's masked softmax (at `temperature`)
probability of the action taken, with the legal set that deal's hand gives; a deal's log-weight
is the sum over every opponent's events. The hand piece enters the first layer linearly, so its
product with the first weight matrix is taken once per deal, and the rest of the network runs on
one batch of (events × deals) rows.

**Sampling the posterior.** It is sharp: against copies of the actor the real deal is some 15
nats more likely than a uniform consistent one, so weighting or resampling uniform deals finds
almost nothing (64 resampled from 256 match the real hands worse than 64 uniform ones:
docs/search/belief/posterior.py). `posterior` runs Metropolis chains instead, all at once: each
step proposes to swap two unseen tiles between two holders (hands or the boneyard; sizes and
voids kept), accepted by the likelihood ratio; a symmetric proposal and a uniform prior make the
posterior the chains' target (a test checks it by enumeration on a small position).
"""

from __future__ import annotations

import itertools
from functools import reduce
from operator import or_

import numpy as np

from cf_env.core.actions import actions_in, legal_masks
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import ObservedState
from cf_env.core.tiles import tile_tables


class Event:
    """One opponent decision: a play from its hand (module docstring)."""

    __slots__ = ("seat", "public", "base", "attach", "action", "later")

    def __init__(self, seat: int, public: np.ndarray, base: np.ndarray, attach: np.ndarray,
                 action: int, tile: int):
        self.seat = seat  # egocentric: 1..n-1
        self.public = public  # its observation then, the hand piece zeroed
        self.base = base  # the first layer's pre-activation of `public`
        self.attach = attach  # (A,) bool: actions attaching to a value playable then
        self.action = action
        self.later = [tile]  # tiles it has played since, this one included


class OpponentEvidence:
    """Per opponent, the decisions since its last kept draw; log-weights of deals (module doc).

    `guide` is the `NetworkGuide` whose actor models the opponents; `max_events` bounds each
    opponent's list (the most recent kept)."""

    MAX_SPLITS = 16  # ways of reading which plays came from the stock, tried per interval
    MAX_STEPS = 96  # moves one replay may take before it gives up
    MAX_NODES = 1500  # moves all the replays of one interval may take

    def __init__(self, config: ChickenFootConfig, guide, temperature: float = 1.0,
                 max_events: int = 8):
        if not (temperature > 0 and np.isfinite(temperature)):
            raise ValueError(f"belief temperature must be a positive number; got {temperature!r}")
        if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
            raise ValueError(f"belief max_events must be a positive int; got {max_events!r}")
        self.config = config
        self.guide = guide
        self.temperature = float(temperature)
        self.max_events = max_events
        self.encoder = guide.encoder
        self.tables = tile_tables(config.max_pips)
        self.n = config.num_players
        self._hand = self.encoder.layout.slices["hand"]
        w1, b1 = guide.layers[0]
        self._w1, self._b1 = w1, b1
        self._w_hand = np.ascontiguousarray(w1[self._hand])  # (T, h)
        actions = config.num_actions
        # tile -> the actions playing it, as a matrix: a hand's one-hot row times it counts them
        self._plays_of = legal_masks(list(self.tables.tile_bits), actions).astype(np.float32)
        self._engines: dict[ChickenFootConfig, tuple[Engine, Engine]] = {}
        # Diagnostics: intervals replayed, not explained, and explained more than one way.
        self.replays = self.failures = self.ambiguous = 0
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new game)."""
        self.events: list[list[Event]] = [[] for _ in range(self.n)]
        self._prev: tuple[ObservedState, int] | None = None
        # My own voids as the opponents see them (`_start`); None while not known.
        self._my_voids: np.ndarray | None = None

    def _start(self, state: ObservedState) -> None:
        """My first decision of a round. The opponents' views hold my voids (R8), which my own
        observation does not: none yet (the draws of the search for the start double show
        nothing), and each replay then keeps them as the rules set them. Exact when I am asked
        every decision, forced ones too (`ask_forced`, which the arena honours); a driver that
        skips my forced draws leaves them stale, and the weights a little off."""
        self.reset()
        self._my_voids = np.zeros(self.config.max_pips + 1, bool)

    @property
    def count(self) -> int:
        return sum(map(len, self.events))

    # ------------------------------------------------------------------ tracking
    def remember(self, state: ObservedState, root: Engine, action: int) -> None:
        """My decision: its position (a copy of its root engine) and the action I took."""
        prev, _ = self._pair(root.config)
        prev.copy_from(root, rng=False)
        self._prev = (state, int(action))

    def update(self, state: ObservedState, vector: np.ndarray, root: Engine) -> None:
        """Fold in the moves made since my last decision (`remember`), before this one's search.
        `root` holds one deal consistent with `state` (the replay is built from it)."""
        previous, self._prev = self._prev, None
        if previous is None:
            self._start(state)
            return
        pstate, action = previous
        prev_engine, replay = self._pair(root.config)
        if state.round != pstate.round or np.any(pstate.table & ~state.table):
            self._start(state)  # a new round or game
            return
        reading = self._read_interval(pstate, state)
        if reading is None:
            self.reset()
            return
        played, drew = reading
        self.replays += 1
        found = self._replay(prev_engine, replay, root, pstate, state, vector, action, played, drew)
        if found is None:
            self.failures += 1
            self._my_voids = None
        for seat in range(1, self.n):
            # Unexplained, which plays came from the stock is known only for a seat that drew none.
            stock = found[1][seat] if found is not None else (None if drew[seat] else set())
            if stock is None or drew[seat] > len(stock):  # it kept a drawn tile
                self.events[seat] = []
                continue
            for event in self.events[seat]:
                event.later += [t for t in played[seat] if t not in stock]
        for event in found[0] if found is not None else []:
            events = self.events[event.seat]
            events.append(event)
            del events[:-self.max_events]

    def _pair(self, config: ChickenFootConfig) -> tuple[Engine, Engine]:
        if config not in self._engines:
            self._engines[config] = (Engine(config, seed=0), Engine(config, seed=0))
        return self._engines[config]

    def _read_interval(self, pstate: ObservedState, state: ObservedState):
        """(tiles each seat played, how many each opponent drew) since my last decision, read off
        the two observations; None when they do not fit one interval of one round. (My own draws
        are known tile by tile: `_replay` reads them off my hand.)"""
        played, drew = [[] for _ in range(self.n)], [0] * self.n
        laid = state.table & ~pstate.table
        for seat in range(1, self.n):
            new = state.played[seat - 1] & ~pstate.played[seat - 1]
            laid &= ~new
            played[seat] = np.flatnonzero(new).tolist()
            drew[seat] = int(state.hand_sizes[seat]) - int(pstate.hand_sizes[seat]) + len(played[seat])
            if drew[seat] < 0:
                return None
        if np.any(pstate.hand & ~state.hand & ~laid):
            return None
        played[0] = np.flatnonzero(laid).tolist()
        return played, drew

    def _replay(self, prev_engine: Engine, replay: Engine, root: Engine, pstate: ObservedState,
                state: ObservedState, vector: np.ndarray, action: int, played: list[list[int]],
                drew: list[int]):
        """(the interval's events, per seat the tiles it played straight after drawing them) from
        a replay that reaches my observation (module docstring), or None."""
        mine_new = np.flatnonzero(state.hand & ~pstate.hand).tolist()
        my_stock = [t for t in played[0] if not pstate.hand[t]]
        # Which of an opponent's plays came straight from the stock: every split its draws allow,
        # those with more such plays first (one turn that drew and played is the common case).
        splits = []
        for seat in range(1, self.n):
            tiles, k = played[seat], drew[seat]
            options = [set(c) for size in range(min(k, len(tiles)), -1, -1)
                       for c in itertools.combinations(tiles, size)]
            splits.append([o for o in options if k - len(o) <= len(root.hand(seat))])
        # Every reading that reaches my observation, up to two: the order of the plays, and so
        # the positions the opponents chose in, is known only when one reading does.
        found: list[tuple[list, tuple]] = []
        self._nodes = 0
        for tried, split in enumerate(itertools.product(*splits)):
            if tried == self.MAX_SPLITS or len(found) > 1:
                break
            hands, plan, pool = [np.flatnonzero(pstate.hand).tolist()], [None] * self.n, list(root.boneyard)
            plan[0] = ({t for t in played[0] if pstate.hand[t]}, set(my_stock), list(mine_new))
            pool += my_stock + mine_new
            for seat, stock in enumerate(split, start=1):
                now = root.hand(seat)
                kept = drew[seat] - len(stock)
                hands.append(now[kept:] + [t for t in played[seat] if t not in stock])
                plan[seat] = ({t for t in played[seat] if t not in stock}, set(stock), now[:kept])
                pool += now[:kept] + sorted(stock)
            replay.copy_from(prev_engine, rng=False)
            replay.skip_forced = False
            if self._my_voids is not None:
                replay.voids[0] = self._my_voids
            try:
                replay.redeal(hands, pool)
                if action == self.config.draw_action:  # what I drew is in my hand now
                    replay.set_next_draws([plan[0][2].pop()])
                replay.step(action)
            except (ValueError, IndexError):
                continue
            traces: list[list] = []
            self._play_on(replay, vector, plan, [], state.drawn_tile, traces)
            found += [(trace, voids, split) for trace, voids in traces]
        if len(found) != 1:
            self.ambiguous += len(found) > 1
            self._my_voids = None
            return None
        trace, voids, split = found[0]
        # The opponents saw my voids right only if I was known before, or drew (which resets them).
        known = self._my_voids is not None
        drew_mine = any(step[0] == 0 and step[4] == self.config.draw_action for step in trace)
        self._my_voids = voids if known or drew_mine else None
        return (self._events(trace) if known else []), [None, *split]

    def _play_on(self, engine: Engine, vector: np.ndarray, plan: list, trace: list,
                 last_drawn: int, found: list, steps: int = 0) -> bool:
        """Play the interval on `engine` until I hold `vector`: each seat plays the tiles of its
        plan (from hand, or straight after drawing them) and draws the ones it kept, in an order
        the rules allow, found by depth-first search (a clone per branch: most steps have one
        way). Each trace that gets there, a list of (seat, what, tile, event base or None,
        action), goes to `found`; True once two have (the search stops)."""
        draw_action, pass_action = self.config.draw_action, self.config.pass_action
        while steps < self.MAX_STEPS and self._nodes < self.MAX_NODES:
            steps += 1
            self._nodes += 1
            if engine.game_over or engine.between_rounds:
                return False
            seat, options = engine.current, actions_in(engine.legal_bits())
            if seat == 0 and np.array_equal(self.encoder.observe(engine, 0), vector):
                found.append((trace, engine.voids[0].copy()))
                return len(found) > 1
            hand_plays, stock, kept = plan[seat]
            ways = []  # (action, what, tile): what is "hand", "stock", "kept" (a draw) or "pass"
            if options == [draw_action]:
                ways = [(draw_action, "stock", t) for t in sorted(stock)]
                ways += [(draw_action, "kept", t) for t in kept if t != last_drawn or len(kept) == 1]
            elif engine.drawn_tile >= 0:
                if engine.drawn_tile in stock:
                    ways = [(a, "play", engine.drawn_tile) for a in options if a != pass_action]
                elif pass_action in options:
                    ways = [(pass_action, "pass", -1)]
            elif options == [pass_action]:
                ways = [(pass_action, "pass", -1)]
            else:
                ways = [(a, "hand", a // 2) for a in options if a < draw_action and a // 2 in hand_plays]
            for k, (choice, what, tile) in enumerate(ways):
                last = k == len(ways) - 1
                branch = engine if last else engine.clone()
                branch.skip_forced = False
                step = [seat, what, tile, None]
                if what == "hand" and seat:
                    step[3] = self._base(branch, seat)
                if choice == draw_action:
                    branch.set_next_draws([tile])
                todo = [(set(h), set(s), list(kp)) for h, s, kp in plan] if not last else plan
                h, s, kp = todo[seat]
                if what == "hand":
                    h.discard(tile)
                elif what == "play":
                    s.discard(tile)
                elif what == "kept":
                    kp.remove(tile)
                step.append(choice)
                branch.step(choice)
                if last:
                    trace.append(step)
                    engine, plan = branch, todo
                    break
                if self._play_on(branch, vector, todo, trace + [step], last_drawn, found, steps):
                    return True
            else:
                return False
        return False

    def _base(self, engine: Engine, seat: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """An opponent's observation now without its hand, its first-layer pre-activation, and
        the actions attaching to a value it may play to."""
        observed = self.encoder.observe(engine, seat)
        observed[self._hand] = 0.0
        attach_bits = self.tables.attach_bits
        attach = legal_masks([reduce(or_, (attach_bits[v] for v in engine.playable_values()), 0)],
                             self.config.num_actions)[0]
        return observed, observed @ self._w1 + self._b1, attach

    def _events(self, trace: list) -> list[Event]:
        """The plays from hand in a trace as events, each with the tiles its seat played from
        hand after it; a seat that kept a drawn tile loses the events before that draw."""
        events: list[list[Event]] = [[] for _ in range(self.n)]
        for seat, what, tile, base, action in trace:
            if not seat:
                continue
            if what == "kept":
                events[seat] = []
            elif what == "hand":
                for event in events[seat]:
                    event.later.append(tile)
                events[seat].append(Event(seat, *base, action, tile))
        return [e for seat_events in events for e in seat_events]

    # ------------------------------------------------------------------ weights
    def log_weights(self, deals: list[list[list[int]]]) -> np.ndarray:
        """(len(deals),): each deal's log-likelihood of the opponents' events. `deals[d][k]` is
        opponent k+1's hand (egocentric, as `DealSampler.sample` gives them)."""
        held = np.zeros((self.n, len(deals), self.config.num_tiles), np.float32)
        for d, deal in enumerate(deals):
            for seat, hand in enumerate(deal, start=1):
                held[seat, d, hand] = 1.0
        return self._log_likelihood(held)

    def _log_likelihood(self, held: np.ndarray) -> np.ndarray:
        """(deals,) from `held[seat, deal, tile]` (1 where the deal gives the seat the tile)."""
        size = held.shape[1]
        seats = [s for s in range(1, self.n) if self.events[s]]
        if not seats or not size:
            return np.zeros(size)
        pre, hands, attach, actions = [], [], [], []
        for seat in seats:
            q = held[seat] @ self._w_hand
            for event in self.events[seat]:
                pre.append(q + (event.base + self._w_hand[event.later].sum(axis=0)))
                then = held[seat].copy()
                then[:, event.later] = 1.0
                hands.append(then)
                attach.append(event.attach)
                actions.append(event.action)
        guide = self.guide
        x = guide.activation(np.concatenate(pre))
        for w, b in guide.layers[1:-1]:
            x = guide.activation(x @ w + b)
        w, b = guide.layers[-1]
        logits = (x @ w + b) / self.temperature  # (events * deals, A)
        legal = (np.concatenate(hands) @ self._plays_of > 0) & np.repeat(np.stack(attach), size, axis=0)
        logits = np.where(legal, logits, -np.inf)
        top = logits.max(axis=1, keepdims=True)
        norm = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
        taken = logits[np.arange(logits.shape[0]), np.repeat(actions, size)]
        return (taken - norm).reshape(len(actions), size).sum(axis=0).astype(np.float64)

    def posterior(self, deals: list[tuple[list[list[int]], list[int]]], sampler,
                  steps: int, rng: np.random.Generator, keep: int = 1,
                  every: int = 1) -> list[tuple[list[list[int]], list[int]]]:
        """`deals` (uniform consistent ones, `DealSampler.sample`'s form) moved towards the
        posterior by `steps` Metropolis steps each, all chains at once: a step proposes to swap
        two unseen tiles between two holders (hands or the boneyard; sizes kept, voids kept by
        `sampler`'s), and takes it with probability min(1, likelihood ratio). The proposal is
        symmetric and the prior uniform over consistent deals, so the chains' target is the
        posterior. Each chain gives its last `keep` states, `every` steps apart (the chains'
        states, chain by chain). The boneyard's order comes out shuffled (every order is as
        likely)."""
        if not self.count or not deals or steps < 1:
            return deals
        n, k = self.n, len(deals)
        unseen = np.array(sorted(t for t in (*itertools.chain(*deals[0][0]), *deals[0][1])))
        where = {int(t): u for u, t in enumerate(unseen)}
        owner = np.empty((k, unseen.size), np.int64)  # 0..n-2: opponent 1..n-1; n-1: boneyard
        for c, (hands, boneyard) in enumerate(deals):
            for seat, hand in enumerate(hands):
                owner[c, [where[t] for t in hand]] = seat
            owner[c, [where[t] for t in boneyard]] = n - 1
        allowed = np.ones((n, unseen.size), bool)
        for seat in range(n - 1):
            allowed[seat] = [sampler.allowed(int(t), seat) for t in unseen]
        # A swap between holders with no events leaves the likelihood as it is: only the
        # proposals that touch an opponent with events go through the network.
        evented = np.array([bool(self.events[seat + 1]) for seat in range(n - 1)] + [False])

        def likelihood(owners: np.ndarray) -> np.ndarray:
            held = np.zeros((n, len(owners), self.config.num_tiles), np.float32)
            for seat in range(1, n):
                held[seat][:, unseen] = owners == seat - 1
            return self._log_likelihood(held)

        current, rows = likelihood(owner), np.arange(k)
        kept = []
        for step in range(steps):
            i, j = rng.integers(unseen.size, size=(2, k))
            a, b = owner[rows, i], owner[rows, j]
            ok = (a != b) & allowed[b, i] & allowed[a, j]
            proposed = owner.copy()
            proposed[rows, i], proposed[rows, j] = b, a
            new = current.copy()
            scored = ok & (evented[a] | evented[b])
            if scored.any():
                new[scored] = likelihood(proposed[scored])
            take = ok & (np.log(rng.random(k)) < new - current)
            owner[take], current[take] = proposed[take], new[take]
            if (steps - 1 - step) % every == 0 and (steps - 1 - step) // every < keep:
                kept.append(owner.copy())
        out = []
        for c in range(k):
            for state in kept:
                hands = [unseen[state[c] == seat].tolist() for seat in range(n - 1)]
                out.append((hands, rng.permutation(unseen[state[c] == n - 1]).tolist()))
        return out
