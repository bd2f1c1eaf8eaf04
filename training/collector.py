"""The self-play collector: many games stepped in one process, every learner decision of every
game batched into one forward pass (`training.selfplay` trains on what it collects).

Each game is a `cf_env.Engine` with one `SeatView` per seat. At a game's start every seat is,
independently, an opponent with probability `selfplay.pool_share` (a bot or a frozen past
learner, drawn with the `opponents.*` weights) or else a *learner seat*, played by the current
policy; at least one seat per game is a learner seat, and the learner's seats differ from game
to game, so seat effects average out. `Engine.advance` plays every forced decision and every
fast-path bot's choice (`act_bits`: greedy, random) inline; observation-reading opponents
(heuristic, snapshots through `NumpyPolicy`) are asked with their `act(obs)`; the advance stops
at a learner seat's real choice (two or more legal actions). So between two collector steps
every game waits at a learner decision, and one step is: every game's observation, legal mask
and (for the critic) privileged vector written into preallocated batch rows, ONE batched forward
of the actor and the critic, a sample from each masked categorical (Gumbel-max with the
collector's own seeded torch Generator: never a global RNG), and each game stepped and advanced
to its next learner decision.

A *learner decision* is one such transition: forced decisions are never recorded (as in the
SB3 path, `env.learner_skip_forced`). `num_games x rollout_steps` of them make a rollout.

Trajectories (`Rollout`): a flat buffer of transitions (state = observation + privileged
vector, mask, action, log-probability, value, reward, done) where `next[i]` links each
transition to the next one of the same (game, seat) chain, -1 at the chain's end within this
rollout. Rewards arrive at round ends (`cf_env.rewards.round_rewards`, plus the optional
zero-sum `win_bonus`) and are added to the last transition of each learner seat's chain in that
game; with `env.episode: round` (the default) the chain's episode ends there (`done`), with
`"game"` at the game's end. A chain still open when the rollout ends is *bootstrapped* with the
critic's value of that seat's current view (its observation and privileged vector now): the
simplest exact choice (nothing carries over between rollouts, so every rollout is a complete
dataset), at the cost of one extra batched critic pass per rollout. GAE (`compute_gae`) is one
reverse pass over the buffer following the links (`next[i] > i` always).

Privileged vector (the critic's extra input, training only; `Encoder.privileged`, laid out by
`cf_env.core.observation.privileged_layout`): the other seats' hands, egocentric (the seat's left
neighbour first, clockwise: (n-1)*T bits) and the boneyard's contents (T bits). The actor never reads it (`tests/training/test_selfplay.py` swaps hidden tiles and
checks the actor's output is unchanged).

Speed: no per-decision numpy allocation that can be avoided: observations are written straight
into the batch row (`SeatView.observe(out=...)`), masks are made for the whole batch by one
`np.unpackbits` over the legal bitsets' bytes (`cf_env.core.actions.legal_masks`), the
privileged rows by two numpy calls each. Measured figures are in `training/selfplay.py`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cf_env.agents.policies import legal_fast_path, load_policy
from cf_env.core.actions import legal_masks
from cf_env.core.config import ChickenFootConfig, DriverOptions
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder, SeatView, privileged_layout
from cf_env.core.rewards import game_rewards, round_rewards, win_bonus

from .checkpoints import NumpyPolicy, load_ppo_policy, read_card
from .opponents import pool_entries

LEARNER = None  # a seat's policy entry when the learner plays it
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
    """One game in the collector: its engine, who plays each seat, and each learner seat's open
    chain (index of its last transition in the current rollout, -1 when none is open)."""

    __slots__ = ("engine", "views", "policies", "choosers", "learners", "open", "seed")

    def __init__(self, config: ChickenFootConfig, encoder: Encoder, skip_forced: bool = False):
        n = config.num_players
        self.engine = Engine(config, seed=0, skip_forced=skip_forced)
        self.views = [SeatView(encoder) for _ in range(n)]
        self.policies: list = [LEARNER] * n
        self.choosers: list = [None] * n
        self.learners: list[bool] = [True] * n
        self.open: list[int] = [-1] * n
        self.seed = -1  # the game seed (`_new_game`)


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
    ):
        self.config = config
        # The driver options of `env.rules` (reward_mode, skip_forced; illegal actions raise).
        self.options = options if options is not None else DriverOptions()
        self.num_games = num_games
        self.pool_share = float(pool_share)
        self.bots = {str(k): float(v) for k, v in bots.items() if v > 0}
        self.snapshot_weight = float(snapshot_weight)
        self.max_snapshots = int(max_snapshots)
        self.snapshot_greedy = bool(snapshot_greedy)
        self.snapshots: list[str] = []
        self._templates: dict[str, NumpyPolicy] = {}
        self.privileged = privileged
        self.win_bonus = float(win_bonus)
        self.episode = episode
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator().manual_seed(int(self.rng.integers(2**62)))
        self.encoder = Encoder(config)
        self.obs_size = self.encoder.layout.size
        self.priv_size = privileged_size(config)
        self.num_actions = config.num_actions
        self._built: dict[tuple[int, int, str], object] = {}
        for path in snapshots:
            self.add_snapshot(path)
        self.games = [
            _Game(config, self.encoder, self.options.skip_forced) for _ in range(num_games)
        ]
        for game in range(num_games):
            self._new_game(game)
            self._advance(game)
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
                policy = load_policy(name, self.config, seed=seed)
            self._built[key] = policy
            if len(self._built) > 2 * self.num_games * self.config.num_players * 4:
                live = set(self.entries()[0])
                self._built = {k: v for k, v in self._built.items() if k[2] in live}
                self._templates = {p: t for p, t in self._templates.items()
                                   if f"snapshot:{p}" in live}
        return policy

    # ------------------------------------------------------------------ games
    def _new_game(self, index: int) -> None:
        """Deal a new game with a fresh seed and draw who plays each seat."""
        game, rng, n = self.games[index], self.rng, self.config.num_players
        names, cumulative = self.entries()
        opponent = [rng.random() < self.pool_share for _ in range(n)]
        if all(opponent):  # at least one learner seat per game
            opponent[int(rng.integers(n))] = False
        for seat in range(n):
            if opponent[seat]:
                u = rng.random()
                k = 0
                while k < len(cumulative) - 1 and u >= cumulative[k]:
                    k += 1
                policy = self._policy(index, seat, names[k])
                if callable(getattr(policy, "reset", None)):
                    policy.reset()
                game.policies[seat] = policy
                game.choosers[seat] = legal_fast_path(policy)
                game.learners[seat] = False
            else:
                game.policies[seat] = LEARNER
                game.choosers[seat] = None
                game.learners[seat] = True
            game.open[seat] = -1
        # A game seed, turned into the engine's seed as `cf_env.raw_env().reset(seed=...)` does,
        # so any collected game replays through the AEC env from its `seed`.
        game.seed = int(rng.integers(2**63))
        game.engine.reset(int(np.random.default_rng(game.seed).integers(2**63)))

    def _advance(self, index: int, buffer: _Buffer | None = None) -> None:
        """Play the game until a learner seat has a real choice (re-dealing finished games)."""
        game = self.games[index]
        engine, choosers, learners = game.engine, game.choosers, game.learners
        while True:
            finished = engine.advance(-1, choosers)
            if not finished:
                if engine.game_over:  # no round to pay (an engine reset that ended the game)
                    self._new_game(index)
                    continue
                seat = engine.current
                if learners[seat]:
                    return
                obs = {"observation": game.views[seat].observe(engine, seat),
                       "action_mask": engine.legal_action_mask()}
                finished = engine.step(game.policies[seat].act(obs))
            if finished:
                self._rounds_ended(index, finished, buffer)
                if engine.game_over:
                    self._new_game(index)

    def _rounds_ended(self, index: int, finished: list[list[int]], buffer: _Buffer | None) -> None:
        """Pay every learner seat its round reward on its chain's last transition; close the
        chain at the episode's end; count the learner seats' wins."""
        game, cfg, n = self.games[index], self.config, self.config.num_players
        mode = self.options.reward_mode
        for points in finished:
            rewards = round_rewards(cfg, mode, points)
            low = min(points)
            winners = [s for s in range(n) if points[s] == low]
            if self.win_bonus:
                rewards = [r + b for r, b in zip(rewards, win_bonus(points, self.win_bonus))]
            if game.engine.game_over and points is finished[-1]:
                rewards = [a + b for a, b in zip(rewards, game_rewards(cfg, mode, game.engine.winners))]
            ends = self.episode == "round" or (game.engine.game_over and points is finished[-1])
            self.rounds += 1
            for seat in range(n):
                if not game.learners[seat]:
                    continue
                self.wins.append(1.0 / len(winners) if seat in winners else 0.0)
                last = game.open[seat]
                if last >= 0 and buffer is not None:
                    buffer.reward[last] += rewards[seat]
                    if ends:
                        buffer.done[last] = True
                        game.open[seat] = -1

    # ------------------------------------------------------------------ batch rows
    def write_state(self, engine: Engine, view: SeatView, seat: int, state_row: np.ndarray) -> None:
        """Write the seat's observation (through its kept `view`) and, with a privileged critic,
        its privileged vector into `state_row`."""
        d = self.obs_size
        view.observe(engine, seat, out=state_row[:d])
        if self.privileged:
            self.encoder.privileged(engine, seat, out=state_row[d:])

    # ------------------------------------------------------------------ collecting
    @torch.no_grad()
    def collect(self, actor: torch.nn.Module, critic: torch.nn.Module, steps: int) -> Rollout:
        """`steps` batched decisions of every game: `steps * num_games` learner transitions."""
        g, d = self.num_games, self.obs_size
        width = d + (self.priv_size if self.privileged else 0)
        buf = _Buffer(steps * g, width, self.num_actions)
        self.wins, self.rounds = [], 0
        for game in self.games:
            game.open = [-1] * len(game.open)
        games = self.games
        for step in range(steps):
            base = step * g
            rows = buf.state[base : base + g]
            legal = []
            for i, game in enumerate(games):
                seat = game.engine.current
                self.write_state(game.engine, game.views[seat], seat, rows[i])
                legal.append(game.engine.legal_bits())
                buf.game[base + i] = i
                buf.seat[base + i] = seat
            buf.mask[base : base + g] = legal_masks(legal, self.num_actions)
            x = torch.from_numpy(rows)
            mask = torch.from_numpy(buf.mask[base : base + g])
            actions, logp = sample_masked(actor(x[:, :d]), mask, self.generator)
            buf.value[base : base + g] = critic(x).squeeze(1).numpy()
            buf.logp[base : base + g] = logp.numpy()
            chosen = actions.tolist()
            buf.action[base : base + g] = chosen
            for i, game in enumerate(games):
                engine, index = game.engine, base + i
                seat = engine.current
                previous = game.open[seat]
                if previous >= 0:
                    buf.next[previous] = index
                game.open[seat] = index
                finished = engine.step(chosen[i])
                if finished:
                    self._rounds_ended(i, finished, buf)
                    if engine.game_over:
                        self._new_game(i)
                self._advance(i, buf)
        self._bootstrap(critic, buf)
        return buf.rollout()

    def _bootstrap(self, critic: torch.nn.Module, buf: _Buffer) -> None:
        """Critic values of each open chain's seat at the rollout's end (see the docstring)."""
        open_ = [(game, seat, last) for game in self.games
                 for seat, last in enumerate(game.open) if last >= 0]
        if not open_:
            return
        rows = np.zeros((len(open_), buf.state.shape[1]), dtype=np.float32)
        for k, (game, seat, _) in enumerate(open_):
            self.write_state(game.engine, game.views[seat], seat, rows[k])
        values = critic(torch.from_numpy(rows)).squeeze(1).numpy()
        for k, (_, _, last) in enumerate(open_):
            buf.boot[last] = values[k]


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
