"""The self-play collector: many games stepped in one process, every learner decision of every
game batched into one forward pass (`training.selfplay.learner` trains on what it collects).

The games are one `cf_env.core.kernel.KernelBatch` (the compiled rules core). At a game's start
every seat is, independently, an opponent with probability `selfplay.pool_share` (a bot or a
frozen past learner, drawn with the `opponents.*` weights) or else a *learner seat*, played by the
current policy; at least one seat per game is a learner seat, and the learner's seats differ from
game to game, so seat effects average out. With `one_learner_seat` (`selfplay.one_learner_seat`)
each game instead has exactly one learner seat, drawn uniformly, and every other seat is an
opponent: a best response against a fixed pool (`training.selfplay.exploit`). The bots that have a compiled form (`random`,
`greedy`, `heuristic`: `cf_env.agents.kernel_bots`) and every forced decision are played inside
the compiled code (`batch_advance`); other opponents (snapshots through `NumpyPolicy`, any other
spec) are asked with their `act(obs)`. So between two collector steps every game waits at a
learner seat's real choice (two or more legal actions), and one step is: every game's
observation, legal mask and (for the critic) privileged vector written by compiled code into
the batch rows, ONE batched forward of the actor and the critic, a sample from each masked
categorical (Gumbel-max with the collector's own seeded torch Generator: never a global RNG), one
batched step, and the games advanced to their next learner decisions.

The compiled bots choose what the Python bots choose, ties broken on a per-game splitmix64
stream (`_Game.bot_seed`) instead of each bot's numpy Generator; tests/training/test_selfplay.py
replays collected games through the AEC env with the bots' Python twins on that stream.

A *learner decision* is one such transition: forced decisions are never recorded (as in the
SB3 path, `env.learner_skip_forced`). `num_games x rollout_steps` of them make a rollout.

Trajectories (`Rollout`): a flat buffer of transitions (state = observation + privileged
vector, mask, action, log-probability, value, reward, done) where `next[i]` links each
transition to the next one of the same (game, seat) chain, -1 at the chain's end within this
rollout. Rewards arrive at round ends (`cf_env.core.rewards.round_rewards`, plus the optional
zero-sum `win_bonus`) and are added to the last transition of each learner seat's chain in that
game; with `env.episode: round` (the default) the chain's episode ends there (`done`), with
`"game"` at the game's end. A chain still open when the rollout ends is *bootstrapped* with the
critic's value of that seat's current view (its observation and privileged vector now): the
simplest exact choice (nothing carries over between rollouts, so every rollout is a complete
dataset), at the cost of one extra batched critic pass per seat per rollout. GAE (`compute_gae`) is one
reverse pass over the buffer following the links (`next[i] > i` always).

Privileged vector (the critic's extra input, training only; `Encoder.privileged`, laid out by
`cf_env.core.observation.privileged_layout`): the other seats' hands, egocentric (the seat's left
neighbour first, clockwise: (n-1)*T bits) and the boneyard's contents (T bits). The actor never reads it (`tests/training/test_selfplay.py` swaps hidden tiles and
checks the actor's output is unchanged).

Speed: the rules, the bots, the observations, masks and privileged rows are compiled code over
the whole batch; what is left in Python per step is the forward pass, the sample and the
bookkeeping of chains. Figures are in docs/speed/training.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import ThreadpoolController

from cf_env.agents.kernel_bots import (
    BOT_KINDS,
    GAME_OVER,
    OUTSIDE,
    ROUND_ENDED,
    batch_advance,
    bot_scratch,
    heuristic_weights,
)
from cf_env.agents.policies import load_policy
from cf_env.core.config import ChickenFootConfig, DriverOptions
from cf_env.core.kernel import KernelBatch
from cf_env.core.observation import privileged_layout
from cf_env.core.rewards import game_rewards, round_rewards, win_bonus
from training.artifacts.checkpoints import NumpyPolicy, load_ppo_policy, read_card
from training.selfplay.opponents import pool_entries

LEARNER = None  # a seat's policy entry when the learner plays it
_BLAS = ThreadpoolController()  # `_ask`'s products run on one BLAS thread (see there)
ILLEGAL_LOGIT = -1e8  # masked logits: large and finite, so the entropy has no NaN (0 * -1e8 = 0)


def privileged_size(config: ChickenFootConfig) -> int:
    """Length of the privileged vector (`cf_env.core.observation.privileged_layout`): the other
    seats' hands and the boneyard."""
    return privileged_layout(config).size


def sample_masked(logits: torch.Tensor, mask: torch.Tensor, generator: torch.Generator):
    """Actions sampled from the masked categorical (Gumbel-max: one uniform draw per logit
    from `generator`) and their log-probabilities. Illegal logits are ILLEGAL_LOGIT, so an
    illegal action is never chosen (the noise is bounded by ~-log(-log(1 - 2^-24)) = 17)."""
    masked = logits.masked_fill(~mask, ILLEGAL_LOGIT)
    uniform = torch.rand(masked.shape, generator=generator).clamp_(min=1e-20)
    actions = (masked - torch.log(-torch.log(uniform))).argmax(dim=1)
    logp = torch.log_softmax(masked, dim=1).gather(1, actions[:, None]).squeeze(1)
    return actions, logp


@dataclass
class Rollout:
    """A rollout's transitions (row i of every array), with GAE once `compute_gae` ran."""

    state: np.ndarray  # (N, D + P) float32: observation, then the privileged vector
    mask: np.ndarray  # (N, A) bool
    action: np.ndarray  # (N,) int64
    logp: np.ndarray  # (N,) float32: behaviour log-probability
    value: np.ndarray  # (N,) float32: behaviour critic value
    reward: np.ndarray  # (N,) float32
    done: np.ndarray  # (N,) bool: the chain's episode ends after this transition
    next: np.ndarray  # (N,) int64: next transition of the same (game, seat), -1 if none here
    boot: np.ndarray  # (N,) float32: critic value of the seat's view at rollout end (open chains)
    game: np.ndarray  # (N,) int32
    seat: np.ndarray  # (N,) int8
    advantage: np.ndarray | None = None
    returns: np.ndarray | None = None


def compute_gae(r: Rollout, gamma: float, lam: float) -> None:
    """Generalised advantage estimation along each (game, seat) chain; sets advantage, returns."""
    n = len(r.action)
    adv = np.zeros(n, dtype=np.float32)
    value, reward, nxt, boot = r.value.tolist(), r.reward.tolist(), r.next.tolist(), r.boot.tolist()
    done = r.done.tolist()
    out = [0.0] * n
    for i in range(n - 1, -1, -1):
        if done[i]:
            delta, carry = reward[i] - value[i], 0.0
        elif nxt[i] >= 0:
            j = nxt[i]
            delta, carry = reward[i] + gamma * value[j] - value[i], out[j]
        else:  # open at the rollout's end: bootstrap from the seat's current view
            delta, carry = reward[i] + gamma * boot[i] - value[i], 0.0
        out[i] = delta + gamma * lam * carry
    adv[:] = out
    r.advantage = adv
    r.returns = adv + r.value


class _Game:
    """Who plays one game of the collector: its seed (the AEC env's `reset(seed=...)` replays
    it), the seed of its compiled bots' tie-break stream, and per seat a learner, a compiled
    bot (`kinds`) or a Python policy (`policies`: snapshots, specs without a compiled form)."""

    __slots__ = ("seed", "bot_seed", "policies")

    def __init__(self, players: int):
        self.seed = -1
        self.bot_seed = 0
        self.policies: list = [LEARNER] * players


class Collector:
    """`num_games` games and the opponent pool; `collect(actor, critic, steps)` returns a Rollout.

    Everything random comes from `seed`: the games' deals and seat draws (a numpy Generator),
    the bots' seeds (drawn from it) and the action samples (a torch Generator).
    """

    def __init__(
        self,
        config: ChickenFootConfig,
        num_games: int,
        *,
        seed: int,
        pool_share: float,
        bots: dict[str, float],
        snapshot_weight: float = 0.0,
        max_snapshots: int = 8,
        snapshot_greedy: bool = False,
        snapshots: list[str] = (),
        privileged: bool = True,
        win_bonus: float = 0.0,
        episode: str = "round",
        options: DriverOptions | None = None,
        one_learner_seat: bool = False,
    ):
        self.config = config
        # The driver options of `env.rules` (reward_mode; illegal actions raise). Forced
        # decisions are never recorded, whatever skip_forced says: the games skip them.
        self.options = options if options is not None else DriverOptions()
        self.num_games = num_games
        self.pool_share = float(pool_share)
        self.one_learner_seat = bool(one_learner_seat)
        self.bots = {str(k): float(v) for k, v in bots.items() if v > 0}
        self.snapshot_weight = float(snapshot_weight)
        self.max_snapshots = int(max_snapshots)
        self.snapshot_greedy = bool(snapshot_greedy)
        self.snapshots: list[str] = []
        self._templates: dict[str, NumpyPolicy] = {}
        self._shared: dict[str, NumpyPolicy] = {}  # greedy networks by spec (`_policy`)
        self.privileged = privileged
        self.win_bonus = float(win_bonus)
        self.episode = episode
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator().manual_seed(int(self.rng.integers(2**62)))
        self.batch = KernelBatch(config, num_games)
        self.obs_size = self.batch.obs_tables.size
        self.priv_size = privileged_size(config)
        self.num_actions = config.num_actions
        n = config.num_players
        self.kinds = np.zeros((num_games, n), np.int8)  # OUTSIDE: a learner or Python policy
        self.learners = np.ones((num_games, n), bool)
        self.open = np.full((num_games, n), -1, np.int64)  # each chain's last transition
        self.bot_rng = np.zeros(num_games, np.uint64)
        self.stop = np.zeros(num_games, np.int8)
        self.weights = heuristic_weights()
        self.scratch = bot_scratch(config)
        self._built: dict[tuple[int, int, str], object] = {}
        for path in snapshots:
            self.add_snapshot(path)
        self.games = [_Game(n) for _ in range(num_games)]
        for game in range(num_games):
            self._new_game(game)
        self._advance(None)
        # Statistics of the current rollout (reset by `collect`).
        self.wins: list[float] = []
        self.rounds = 0

    # ------------------------------------------------------------------ the pool
    def add_snapshot(self, path: str) -> int:
        """Freeze a learner checkpoint into the pool (only the newest `max_snapshots` play)."""
        self.snapshots.append(str(path))
        del self.snapshots[: -self.max_snapshots]
        return len(self.snapshots)

    def entries(self) -> tuple[list[str], list[float]]:
        """Opponent names (bot specs, `snapshot:<path>`) and the cumulative probabilities."""
        names, probs = pool_entries(self.bots, self.snapshots, self.snapshot_weight)
        return names, np.cumsum(probs).tolist()

    def _policy(self, game: int, seat: int, name: str):
        key = (game, seat, name)
        policy = self._built.get(key)
        if policy is None:
            seed = int(self.rng.integers(2**31))
            if name.startswith("snapshot:"):
                path = name[len("snapshot:"):]
                template = self._templates.get(path)
                if template is None:  # read once per snapshot; each seat gets its own RNG
                    loaded = load_ppo_policy(path, config=self.config)
                    template = (loaded.weights, read_card(path)["activation"], loaded.adapt)
                    self._templates[path] = template
                weights, activation, adapt = template
                policy = NumpyPolicy(weights, activation, deterministic=self.snapshot_greedy,
                                     seed=seed, adapt=adapt)
            else:
                # A greedy network (a `ppo:` spec) has no state: one instance serves every seat,
                # so `_ask` batches its seats; any other spec gets its own instance per seat.
                policy = self._shared.get(name) or load_policy(name, self.config, seed=seed)
                if isinstance(policy, NumpyPolicy) and policy.deterministic:
                    self._shared[name] = policy
            self._built[key] = policy
            if len(self._built) > 2 * self.num_games * self.config.num_players * 4:
                live = set(self.entries()[0])
                self._built = {k: v for k, v in self._built.items() if k[2] in live}
                self._templates = {p: t for p, t in self._templates.items()
                                   if f"snapshot:{p}" in live}
        return policy

    # ------------------------------------------------------------------ games
    def _new_game(self, index: int) -> None:
        """Deal a new game with a fresh seed and draw who plays each seat: the bots that have a
        compiled form (`cf_env.agents.kernel_bots.BOT_KINDS`) play inside the batch, other specs
        and snapshots through their `act(obs)`."""
        game, rng, n = self.games[index], self.rng, self.config.num_players
        names, cumulative = self.entries()
        if self.one_learner_seat:
            learner = int(rng.integers(n))
            opponent = [seat != learner for seat in range(n)]
        else:
            opponent = [rng.random() < self.pool_share for _ in range(n)]
            if all(opponent):  # at least one learner seat per game
                opponent[int(rng.integers(n))] = False
        for seat in range(n):
            self.kinds[index, seat] = OUTSIDE
            self.learners[index, seat] = not opponent[seat]
            self.open[index, seat] = -1
            game.policies[seat] = LEARNER
            if opponent[seat]:
                u = rng.random()
                k = 0
                while k < len(cumulative) - 1 and u >= cumulative[k]:
                    k += 1
                if names[k] in BOT_KINDS:
                    self.kinds[index, seat] = BOT_KINDS[names[k]]
                    continue
                policy = self._policy(index, seat, names[k])
                if callable(getattr(policy, "reset", None)):
                    policy.reset()
                game.policies[seat] = policy
        # A game seed, turned into the engine's seed as `cf_env.raw_env().reset(seed=...)` does,
        # so any collected game replays through the AEC env from its `seed`.
        game.seed = int(rng.integers(2**63))
        game.bot_seed = int(rng.integers(2**63))
        self.bot_rng[index] = game.bot_seed
        engine_seed = int(np.random.default_rng(game.seed).integers(2**63))
        self.batch.reset([engine_seed], games=[index])

    def _advance(self, buffer: _Buffer | None) -> None:
        """Play every game until a learner seat has a real choice: bots and forced decisions
        inside the batch (`batch_advance`), Python opponents asked here; rounds paid as they
        end, finished games re-dealt."""
        batch, st, stop = self.batch, self.batch.state, self.stop
        scores, counts = self.scratch
        while True:
            batch_advance(st, batch.tables, self.weights, self.kinds, self.bot_rng, True,
                          batch.legal_words, stop, scores, counts)
            batch.refill()
            ended = np.flatnonzero(stop == ROUND_ENDED)
            for i in ended.tolist():
                self._round_ended(i, buffer)
            over = np.flatnonzero(stop == GAME_OVER)  # over at its deal: no round to pay
            for i in over.tolist():
                self._new_game(i)
            if ended.size or over.size:
                continue
            waiting = np.flatnonzero(~self.learners[np.arange(self.num_games), st.current])
            if not waiting.size:
                return
            # Python opponents with a real choice (forced ones were played in the batch).
            batch.step_games(waiting, self._ask(waiting))
            for i in waiting[st.round_ended[waiting]].tolist():
                self._round_ended(i, buffer)

    def _ask(self, waiting: np.ndarray) -> np.ndarray:
        """The actions of the Python opponents to move at the games `waiting`. A network played
        greedily (a `ppo:` spec, or a snapshot with `snapshot_greedy`) chooses for all its
        seats in one batched forward pass: the argmax over legal actions its `act` takes, up to
        the float rounding of a matrix product against a matrix-vector one (a near-tie may
        break the other way). Every other policy is asked with its `act(obs)`. The products run
        on one BLAS thread: at these sizes OpenBLAS starts its own threads, which beside the
        trainer's busy process made collection ~10x slower (as `cf_env.agents.lookahead`)."""
        st = self.batch.state
        observations, masks = self.batch.observe(), self.batch.legal_mask()
        actions = np.empty(len(waiting), np.int64)
        groups: dict[int, tuple[NumpyPolicy, list[int]]] = {}
        for k, i in enumerate(waiting.tolist()):
            policy = self.games[i].policies[st.current[i]]
            if isinstance(policy, NumpyPolicy) and policy.deterministic:
                groups.setdefault(id(policy.weights), (policy, []))[1].append(k)
            else:
                actions[k] = policy.act({"observation": observations[i].copy(),
                                         "action_mask": masks[i].astype(np.int8)})
        if not groups:
            return actions
        with _BLAS.limit(limits=1, user_api="blas"):
            for policy, rows in groups.values():
                games = waiting[rows]
                x = observations[games]
                if policy.adapt is not None:
                    x = np.stack([policy.adapt(row) for row in x])
                for w, b in policy.weights[:-1]:
                    x = policy.activation(x @ w.T + b)
                w, b = policy.weights[-1]
                logits = np.where(masks[games], x @ w.T + b, -np.inf)
                actions[rows] = logits.argmax(axis=1)
        return actions

    def _round_ended(self, index: int, buffer: _Buffer | None) -> None:
        """Pay every learner seat its round reward on its chain's last transition; close the
        chain at the episode's end; count the learner seats' wins; re-deal a finished game."""
        st, cfg, n = self.batch.state, self.config, self.config.num_players
        mode = self.options.reward_mode
        points = st.round_points[index].tolist()
        game_over = bool(st.game_over[index])
        rewards = round_rewards(cfg, mode, points)
        low = min(points)
        winners = [s for s in range(n) if points[s] == low]
        if self.win_bonus:
            rewards = [r + b for r, b in zip(rewards, win_bonus(points, self.win_bonus))]
        if game_over:
            game_winners = np.flatnonzero(st.winners[index]).tolist()
            rewards = [a + b for a, b in zip(rewards, game_rewards(cfg, mode, game_winners))]
        ends = self.episode == "round" or game_over
        self.rounds += 1
        for seat in range(n):
            if not self.learners[index, seat]:
                continue
            self.wins.append(1.0 / len(winners) if seat in winners else 0.0)
            last = self.open[index, seat]
            if last >= 0 and buffer is not None:
                buffer.reward[last] += rewards[seat]
                if ends:
                    buffer.done[last] = True
                    self.open[index, seat] = -1
        if game_over:
            self._new_game(index)

    # ------------------------------------------------------------------ batch rows
    def write_states(self, batch: KernelBatch, rows: np.ndarray, seats=None) -> None:
        """Write each game's observation for its seat to move (or seats[i]) and, with a
        privileged critic, its privileged vector into rows (num_games, state width)."""
        d = self.obs_size
        rows[:, :d] = batch.observe(seats=seats)
        if self.privileged:
            rows[:, d:] = batch.privileged(seats=seats)

    # ------------------------------------------------------------------ collecting
    @torch.no_grad()
    def collect(self, actor: torch.nn.Module, critic: torch.nn.Module, steps: int) -> Rollout:
        """`steps` batched decisions of every game: `steps * num_games` learner transitions."""
        g, d = self.num_games, self.obs_size
        width = d + (self.priv_size if self.privileged else 0)
        buf = _Buffer(steps * g, width, self.num_actions)
        self.wins, self.rounds = [], 0
        self.open.fill(-1)
        batch, st = self.batch, self.batch.state
        every = np.arange(g)
        for step in range(steps):
            base = step * g
            rows = buf.state[base : base + g]
            self.write_states(batch, rows)
            buf.mask[base : base + g] = batch.legal_mask()
            seats = st.current.copy()
            buf.game[base : base + g] = every
            buf.seat[base : base + g] = seats
            x = torch.from_numpy(rows)
            mask = torch.from_numpy(buf.mask[base : base + g])
            actions, logp = sample_masked(actor(x[:, :d]), mask, self.generator)
            buf.value[base : base + g] = critic(x).squeeze(1).numpy()
            buf.logp[base : base + g] = logp.numpy()
            chosen = actions.numpy()
            buf.action[base : base + g] = chosen
            previous = self.open[every, seats]
            linked = previous >= 0
            buf.next[previous[linked]] = base + every[linked]
            self.open[every, seats] = base + every
            batch.step(chosen)
            for i in np.flatnonzero(st.round_ended).tolist():
                self._round_ended(i, buf)
            self._advance(buf)
        self._bootstrap(critic, buf)
        return buf.rollout()

    def _bootstrap(self, critic: torch.nn.Module, buf: _Buffer) -> None:
        """Critic values of each open chain's seat at the rollout's end (see the docstring):
        one batch of rows per seat."""
        for seat in range(self.config.num_players):
            games = np.flatnonzero(self.open[:, seat] >= 0)
            if not games.size:
                continue
            rows = np.zeros((self.num_games, buf.state.shape[1]), dtype=np.float32)
            self.write_states(self.batch, rows, seats=np.full(self.num_games, seat, np.int32))
            values = critic(torch.from_numpy(rows[games])).squeeze(1).numpy()
            buf.boot[self.open[games, seat]] = values


def rollout_fields(size: int, width: int, num_actions: int) -> dict[str, tuple[type, tuple]]:
    """dtype and shape of every `Rollout` array of `size` transitions (GAE's included)."""
    vector = (size,)
    return {"state": (np.float32, (size, width)), "mask": (np.bool_, (size, num_actions)),
            "action": (np.int64, vector), "logp": (np.float32, vector),
            "value": (np.float32, vector), "reward": (np.float32, vector),
            "done": (np.bool_, vector), "next": (np.int64, vector), "boot": (np.float32, vector),
            "game": (np.int32, vector), "seat": (np.int8, vector),
            "advantage": (np.float32, vector), "returns": (np.float32, vector)}


class _Buffer:
    """Preallocated arrays of one rollout (see `Rollout`)."""

    def __init__(self, size: int, width: int, num_actions: int):
        fields = rollout_fields(size, width, num_actions)
        del fields["advantage"], fields["returns"]  # compute_gae's
        self.arrays = {name: np.zeros(shape, dtype) for name, (dtype, shape) in fields.items()}
        self.arrays["next"].fill(-1)
        for name, array in self.arrays.items():
            setattr(self, name, array)

    def rollout(self) -> Rollout:
        return Rollout(**self.arrays)
