"""The self-play collector: many games stepped in one process, every learner decision of every
game batched into one forward pass (`training.selfplay.learner` trains on what it collects).

The games are one `cf_env.envs.batch.ChickenFootBatch`, the driver the vector env
(`cf_env.envs.vector_env`) runs on, so an episode of self-play is an episode of the vector env:
the same deals, rules, bots, rewards, episode ends and re-deals (tests/training/
test_selfplay_driver.py plays the same seeded episodes through both). The collector gives the
batch a seat sampler (`_Seats`, drawing from each game's own seeder as the vector env's does): at
a game's start every seat is, independently, an opponent with probability `selfplay.pool_share`
(a bot or a frozen past learner, drawn with the `opponents.*` weights) or else a *learner seat*,
played by the current policy; at least one seat per game is a learner seat, and the learner's
seats differ from game to game, so seat effects average out. With `one_learner_seat`
(`selfplay.one_learner_seat`) each game instead has exactly one learner seat, drawn uniformly,
and every other seat is an opponent, drawn in the vector env's order: a best response against a
fixed pool (`training.selfplay.exploit`). The bots that have a compiled form (`random`, `greedy`,
`heuristic`: `cf_env.agents.kernel_bots`) and every forced decision are played inside the
compiled code; networks (a `ppo:` spec, a pool snapshot) are the batch's *policy seats*: one
`NetworkSeat` per network, asked once per turn of the batch's loop for every game whose seat to
move it holds, i.e. ONE `NumpyPolicy.logits` pass over a (k, D) batch; any other spec is an
`ActSeat` asked with its `act(obs)`. So between two collector steps every game waits at a learner
seat's real choice (two or more legal actions), and one step is: the batch's observations, masks
and (for the critic) privileged rows copied into the rollout, ONE batched forward of the actor and
the critic, a sample from each masked categorical (Gumbel-max with the collector's own seeded
torch Generator: never a global RNG), and one `ChickenFootBatch.step`, which plays every game to
its next learner decision.

The compiled bots choose what the Python bots choose, ties broken on a per-game splitmix64 stream
seeded with the game's engine seed (`ChickenFootBatch.game_seeds`); tests/training/
test_selfplay.py replays collected games through the AEC env with the bots' Python twins on it.

A *learner decision* is one such transition: forced decisions are never recorded (as in the
SB3 path, `env.learner_skip_forced`). `num_games x rollout_steps` of them make a rollout.

Trajectories (`Rollout`): a flat buffer of transitions (state = observation + privileged
vector, mask, action, log-probability, value, reward, done) where `next[i]` links each
transition to the next one of the same (game, seat) chain, -1 at the chain's end within this
rollout. Rewards arrive at round ends (the batch's: `cf_env.core.rewards`, plus the optional zero-sum
`win_bonus`) and are added to the last transition of each learner seat's chain in that game; with
`env.episode: round` (the default) the chain's episode ends there (`done`), with `"game"` at the
game's end. A round that ends before any learner decision of the next episode is paid to nobody,
as in the vector env; the statistics (`wins`, `rounds`) count the paid rounds. A chain still open
when the rollout ends is *bootstrapped* with the critic's value of that seat's current view (its
observation and privileged vector now): the simplest exact choice (nothing carries over between
rollouts, so every rollout is a complete dataset), at the cost of one extra batched critic pass
per seat per rollout. GAE (`compute_gae`) is one reverse pass over the buffer following the links
(`next[i] > i` always).

Expert iteration (`search_share` > 0, `selfplay.search_*`): after the actor's pass, a
`search_share` of the step's decisions, drawn from the collector's own search stream, are
searched one by one with `cf_env.agents.ismcts.ISMCTSPolicy.root_statistics` from the seat's
observation alone (the actor's softmax as the root's PUCT prior); the row keeps the target made
of the root's statistics (`training.selfplay.targets`: the visit distribution at temperature
`search_temperature`, or the improved policy at `search_scale`) and `searched` = True, the action
played is drawn from the target (or its argmax) and `logp` is the actor's log-probability of it.
With share 0 no search exists and nothing is drawn: the rollout is plain PPO's, number for number.
docs/training.md, "Search-distilled self-play", has the design and its cost.

Privileged vector (the critic's extra input, training only; `Encoder.privileged`, laid out by
`cf_env.core.observation.privileged_layout`): the other seats' hands, egocentric (the seat's left
neighbour first, clockwise: (n-1)*T bits) and the boneyard's contents (T bits). The actor never reads it (`tests/training/test_selfplay.py` swaps hidden tiles and
checks the actor's output is unchanged).

Speed: the rules, the bots, the observations, masks and privileged rows are compiled code over
the whole batch; what is left in Python per step is the forward passes (the learner's, the
networks' seats'), the sample and the bookkeeping of chains. Figures are in docs/speed/training.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import ThreadpoolController

from cf_env.agents.kernel_bots import BOT_KINDS
from cf_env.agents.policies import load_policy
from cf_env.core.config import ChickenFootConfig, DriverOptions
from cf_env.core.kernel import KernelBatch
from cf_env.core.observation import observation_layout, privileged_layout
from cf_env.envs.batch import ChickenFootBatch
from training.artifacts.checkpoints import NumpyPolicy, load_ppo_policy, read_card
from training.selfplay.opponents import pool_entries
from training.selfplay.targets import search_target

_BLAS = ThreadpoolController()  # `NetworkSeat`'s products run on one BLAS thread (see there)
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
    target: np.ndarray  # (N, A) float32: the search's policy on searched rows, else zeros
    searched: np.ndarray  # (N,) bool: the decision was played by the search (`search_share`)
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


class NetworkSeat:
    """A frozen network's seats (a `ppo:` spec or a pool snapshot), one object for all of them: a
    `ChickenFootBatch` policy seat (`choose`), so that every game whose seat to move it holds is
    decided by ONE batched forward pass, `NumpyPolicy.logits` of the (k, D) observations. Greedy
    (`policy.deterministic`): the argmax over legal actions (what `act` chooses, up to the float
    rounding of a matrix product against a matrix-vector one at a near-tie). Sampling: one draw per
    row from the masked softmax (Gumbel-max) on `rng`, the collector's generator. The products
    run on one BLAS thread: at these sizes OpenBLAS starts its own threads, which beside the
    trainer's busy process made collection ~10x slower (as `cf_env.agents.lookahead`)."""

    def __init__(self, policy: NumpyPolicy, rng: np.random.Generator):
        self.policy, self.rng = policy, rng

    def choose(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        with _BLAS.limit(limits=1, user_api="blas"):
            logits = self.policy.logits(observation)
        logits[~action_mask] = -np.inf
        if not self.policy.deterministic:
            logits -= np.log(-np.log(self.rng.random(logits.shape).clip(min=1e-300)))
        return logits.argmax(axis=1)


class ActSeat:
    """Any other opponent spec: one instance per seat of one game (its own state and seed), asked
    with its `act(obs)` row by row (a `ChickenFootBatch` policy seat)."""

    def __init__(self, policy):
        self.policy = policy
        if callable(getattr(policy, "reset", None)):
            policy.reset()

    def choose(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return np.array([self.policy.act({"observation": o.copy(), "action_mask": m.astype(np.int8)})
                         for o, m in zip(observation, action_mask)], np.int64)


class _Seats:
    """The collector's seat sampler (`ChickenFootBatch`'s callable `bots`): who plays each seat
    of a new game, drawn from that game's seeder (module docstring). Its seat sets are valid by
    construction (a learner seat in every game), so the batch trusts it (`always_valid`)."""

    always_valid = True

    def __init__(self, collector: Collector):
        self.collector = collector

    def __call__(self, rng: np.random.Generator) -> list:
        c = self.collector
        n = c.config.num_players
        names, cumulative = c.entries()
        if c.one_learner_seat:  # the vector env's order of draws (`ChickenFootVectorEnv._seats`)
            learner = int(rng.integers(n))
            opponents = [(learner + 1 + k) % n for k in range(n - 1)]
        else:
            opponent = [rng.random() < c.pool_share for _ in range(n)]
            if all(opponent):  # at least one learner seat per game
                opponent[int(rng.integers(n))] = False
            opponents = [seat for seat in range(n) if opponent[seat]]
        seats: list = ["outside"] * n
        top = len(cumulative) - 1
        for seat, u in zip(opponents, rng.random(len(opponents)).tolist()):
            name = names[min(int(np.searchsorted(cumulative, u, side="right")), top)]
            seats[seat] = name if name in BOT_KINDS else c.seat_policy(name)
        return seats


def make_search(config: ChickenFootConfig, seed: int, operator: str, iterations: int,
                teacher: str | None):
    """The expert-iteration search (`selfplay.search_operator`): the compiled ISMCTS
    ("guided": the root prior is given per decision) or `lookahead:` over `teacher`'s actor and
    value head ("lookahead": `iterations` determinizations). Anything with
    `root_statistics(observation, prior)`."""
    if operator == "guided":
        from cf_env.agents.ismcts import ISMCTSPolicy

        return ISMCTSPolicy(config, seed, iterations=iterations)
    if operator != "lookahead":
        raise ValueError(f"search operator must be 'guided' or 'lookahead'; got {operator!r}")
    if teacher is None:
        raise ValueError("the lookahead search operator needs a teacher checkpoint with a value "
                         "head (selfplay.search_teacher)")
    from cf_env.agents.checkpoint import load_ppo_policy, load_value_head
    from cf_env.agents.ismcts import NetworkGuide
    from cf_env.agents.lookahead import LookaheadPolicy

    network = load_ppo_policy(teacher, config=config, seed=seed)
    value = load_value_head(teacher, config)  # CheckpointError naming what is missing
    return LookaheadPolicy(config, seed, NetworkGuide(network, config, label=teacher), value,
                           determinizations=iterations)


class Collector:
    """`num_games` games and the opponent pool; `collect(actor, critic, steps)` returns a Rollout.

    Everything random comes from `seed`: the games' seeders (their deals and seat draws), the
    Python opponents' seeds, the snapshots' samples (numpy Generators) and the learner's action
    samples (a torch Generator).
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
        search_share: float = 0.0,
        search_iterations: int = 64,
        search_operator: str = "guided",
        search_teacher: str | None = None,
        search_target: str = "visits",
        search_temperature: float = 1.0,
        search_scale: float = 0.1,
        search_play: str = "sample",
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
        self._networks: dict[str, NetworkSeat] = {}  # by spec: one per network (`seat_policy`)
        self._entries: tuple[list[str], list[float]] | None = None
        self.privileged = privileged
        self.win_bonus = float(win_bonus)
        self.episode = episode
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator().manual_seed(int(self.rng.integers(2**62)))
        self.opponent_rng = np.random.default_rng(int(self.rng.integers(2**62)))
        self.obs_size = observation_layout(config).size
        self.priv_size = privileged_size(config)
        self.num_actions = config.num_actions
        # Expert iteration (`search_share` > 0): the search and its own streams, seeded apart
        # from `rng` (nothing above draws differently), so share 0 collects today's rollouts.
        self.search_share = float(search_share)
        self.search_form = search_target
        self.search_temperature = float(search_temperature)
        self.search_scale = float(search_scale)
        self.search_play = search_play
        self.search = None
        if self.search_share > 0:
            search_seed = np.random.SeedSequence([seed, 0x5EA2C4])
            self.search_rng = np.random.default_rng(search_seed)
            self.search = make_search(config, int(self.search_rng.integers(2**62)),
                                      search_operator, int(search_iterations), search_teacher)
        self.open = np.full((num_games, config.num_players), -1, np.int64)  # chains' last rows
        for path in snapshots:
            self.add_snapshot(path)
        self.batch = ChickenFootBatch(
            config, num_games, bots=_Seats(self), reward_mode=self.options.reward_mode,
            episode=episode, skip_forced=True, privileged=bool(privileged),
            win_bonus=self.win_bonus)
        # The games' seeder seeds: `ChickenFootVectorEnv.reset(seed=seeder_seeds)` deals the same
        # games (with the same seats, under `one_learner_seat` and the same bots).
        self.seeder_seeds = self.rng.integers(2**63, size=num_games).tolist()
        self._out = self.batch.reset(seed=self.seeder_seeds)
        # Statistics of the current rollout (reset by `collect`).
        self.wins: list[float] = []
        self.rounds = 0

    # ------------------------------------------------------------------ the pool
    def add_snapshot(self, path: str) -> int:
        """Freeze a learner checkpoint into the pool (only the newest `max_snapshots` play)."""
        self.snapshots.append(str(path))
        del self.snapshots[: -self.max_snapshots]
        self._entries = None
        live = set(self.entries()[0])  # networks that left the pool: dropped (games hold theirs)
        self._networks = {name: seat for name, seat in self._networks.items() if name in live}
        return len(self.snapshots)

    def entries(self) -> tuple[list[str], list[float]]:
        """Opponent names (bot specs, `snapshot:<path>`) and the cumulative probabilities."""
        if self._entries is None:
            names, probs = pool_entries(self.bots, self.snapshots, self.snapshot_weight)
            self._entries = (names, np.cumsum(probs).tolist())
        return self._entries

    def seat_policy(self, name: str):
        """The policy seat of an opponent that has no compiled form: a network (a snapshot, a
        `ppo:` spec) is one `NetworkSeat` shared by all its seats; any other spec a new `ActSeat`."""
        seat = self._networks.get(name)
        if seat is not None:
            return seat
        seed = int(self.opponent_rng.integers(2**31))
        if name.startswith("snapshot:"):
            path = name[len("snapshot:"):]
            loaded = load_ppo_policy(path, config=self.config)
            policy = NumpyPolicy(loaded.weights, read_card(path)["activation"],
                                 deterministic=self.snapshot_greedy, adapt=loaded.adapt)
        else:
            policy = load_policy(name, self.config, seed=seed)
            if not isinstance(policy, NumpyPolicy):
                return ActSeat(policy)
        seat = self._networks[name] = NetworkSeat(policy, self.opponent_rng)
        return seat

    # ------------------------------------------------------------------ who plays
    @property
    def learners(self) -> np.ndarray:
        """(num_games, P) bool: the learner seats of each running game."""
        return self.batch.learner_seats

    @property
    def kinds(self) -> np.ndarray:
        """(num_games, P) int8: each seat's compiled bot kind (OUTSIDE for learner and policy
        seats; `cf_env.agents.kernel_bots`)."""
        return self.batch.seat_kinds

    # ------------------------------------------------------------------ batch rows
    def write_states(self, batch: KernelBatch, rows: np.ndarray, seats=None) -> None:
        """Write each game's observation for its seat to move (or seats[i]) and, with a
        privileged critic, its privileged vector into rows (num_games, state width).

        Into arrays of its own, never the kernel's buffers: those are the batch's output
        (`BatchOutput.observation`), which the next rollout's first step reads; another seat's
        view written there would be the acting seat's observation."""
        d, n = self.obs_size, batch.num_games
        rows[:, :d] = batch.observe(out=np.empty((n, d), np.float32), seats=seats)
        if self.privileged:
            rows[:, d:] = batch.privileged(out=np.empty((n, self.priv_size), np.float32),
                                           seats=seats)

    # ------------------------------------------------------------------ collecting
    @torch.no_grad()
    def collect(self, actor: torch.nn.Module, critic: torch.nn.Module, steps: int) -> Rollout:
        """`steps` batched decisions of every game: `steps * num_games` learner transitions."""
        g, d = self.num_games, self.obs_size
        width = d + (self.priv_size if self.privileged else 0)
        buf = _Buffer(steps * g, width, self.num_actions)
        self.wins, self.rounds = [], 0
        self.open.fill(-1)
        every = np.arange(g)
        out = self._out
        for step in range(steps):
            base = step * g
            rows = buf.state[base : base + g]
            rows[:, :d] = out.observation
            if self.privileged:
                rows[:, d:] = out.privileged
            mask = buf.mask[base : base + g]
            mask[:] = out.action_mask
            seats = out.current_player.copy()
            buf.game[base : base + g] = every
            buf.seat[base : base + g] = seats
            x = torch.from_numpy(rows)
            logits = actor(x[:, :d])
            actions, logp = sample_masked(logits, torch.from_numpy(mask), self.generator)
            buf.value[base : base + g] = critic(x).squeeze(1).numpy()
            buf.logp[base : base + g] = logp.numpy()
            chosen = actions.numpy()
            if self.search is not None:
                self._search_step(out, chosen, buf, base, logits)
            buf.action[base : base + g] = chosen
            previous = self.open[every, seats]
            linked = previous >= 0
            buf.next[previous[linked]] = base + every[linked]
            self.open[every, seats] = base + every
            learners = self.batch.learner_seats  # of the games the actions are for
            out = self._out = self.batch.step(chosen)
            self._settle(out, learners, buf)
        self._bootstrap(critic, buf)
        return buf.rollout()

    def search_target(self, observation: np.ndarray, mask: np.ndarray,
                      prior: np.ndarray) -> np.ndarray:
        """(A,) float32: the search's improved policy at one learner decision
        (`training.selfplay.targets`, the form `search_target` names) from one ISMCTS search of
        that seat's observation alone (`ISMCTSPolicy.root_statistics`, deals of the hidden tiles
        sampled consistently with what it saw), `prior` (the actor's softmax, zero on illegal
        actions) at the root. Mass only on legal actions."""
        visits, totals = self.search.root_statistics(
            {"observation": observation, "action_mask": mask}, prior.astype(np.float64))
        return search_target(self.search_form, visits, totals, mask, prior,
                             self.search_temperature, self.search_scale)

    def _search_step(self, out, chosen: np.ndarray, buf: _Buffer, base: int,
                     logits: torch.Tensor) -> None:
        """Search a `search_share` of this step's decisions: their targets, `searched` flags and
        the action played (sampled from the target, or its argmax), and the behaviour
        log-probability of that action under the actor (PPO leaves these rows out)."""
        g = self.num_games
        picked = np.flatnonzero(self.search_rng.random(g) < self.search_share)
        if not picked.size:
            return
        mask = torch.from_numpy(buf.mask[base : base + g])
        log_probs = torch.log_softmax(logits.masked_fill(~mask, ILLEGAL_LOGIT), dim=1).numpy()
        for i in picked.tolist():
            row = base + i
            legal = buf.mask[row]
            prior = np.where(legal, np.exp(log_probs[i].astype(np.float64)), 0.0)
            prior /= prior.sum()
            target = self.search_target(buf.state[row, : self.obs_size], legal, prior)
            if self.search_play == "argmax":
                action = int(target.argmax())
            else:
                action = int(self.search_rng.choice(target.size, p=target / target.sum()))
            buf.target[row] = target
            buf.searched[row] = True
            chosen[i] = action
            buf.logp[row] = log_probs[i, action]

    def _settle(self, out, learners: np.ndarray, buf: _Buffer) -> None:
        """Pay the step's rewards (every round it paid) on each open chain's last transition,
        close the chains whose episode ended, count the learner seats' round wins."""
        games = np.flatnonzero(out.round_over)
        if not games.size:
            return
        self.rounds += int(games.size)
        wins = self.batch.round_wins
        self.wins.extend(wins[games][learners[games]].tolist())
        chains = self.open[games]
        paying = chains >= 0
        buf.reward[chains[paying]] += out.rewards[games][paying]
        ended = out.terminated[games]
        closing = chains[paying & ended[:, None]]
        buf.done[closing] = True
        self.open[games[ended]] = -1

    def _bootstrap(self, critic: torch.nn.Module, buf: _Buffer) -> None:
        """Critic values of each open chain's seat at the rollout's end (see the docstring):
        one batch of rows per seat."""
        kernel = self.batch.kernel
        for seat in range(self.config.num_players):
            games = np.flatnonzero(self.open[:, seat] >= 0)
            if not games.size:
                continue
            rows = np.zeros((self.num_games, buf.state.shape[1]), dtype=np.float32)
            self.write_states(kernel, rows, seats=np.full(self.num_games, seat, np.int32))
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
            "target": (np.float32, (size, num_actions)), "searched": (np.bool_, vector),
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
