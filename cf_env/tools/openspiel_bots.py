"""Bots on the OpenSpiel game: our policies as `pyspiel.Bot`s, OpenSpiel's own ISMCTS, and a
measurement of OpenSpiel's ISMCTS against our `heuristic` and our `ismcts:<n>`.

    python -m cf_env.tools.openspiel_bots --games 200 --simulations 200

`PolicyBot` lets OpenSpiel's `evaluate_bots` (or any OpenSpiel driver) play any policy spec of
ours (`cf_env.agents.policies.load_policy`): at its turn it gives the policy the observation
`cf_env.env()` would give (the game's observation tensor, which is that vector) and the legal
mask, and plays the action it returns; a decision with one legal action is played without
asking, as every driver of ours does. `openspiel_ismcts_bot` is OpenSpiel's
`open_spiel.python.algorithms.ismcts.ISMCTSBot` with random-rollout evaluation, its own
determinizations coming from the game's `resample_from_infostate` (subclassed only to add the
`restart_at` and `inform_action` that `evaluate_bots` calls and OpenSpiel's class lacks).

`measure` (and the command line) seats OpenSpiel's ISMCTS at one seat of each game (seat g mod n
in game g) and the opponent policy at every other seat, plays the games with `evaluate_bots`,
and reports the ISMCTS seat's **win share**: 1 for a win (R13), 1/k for a win shared by k, 0
otherwise, averaged over the games, with a 95% Wilson interval, next to the fair share 1/n.
Game g's deal and draws come from seed + g, the same for every opponent, so the opponents are
compared on the same deals. By default a game is one round (4 players, double-9): OpenSpiel's
ISMCTS rolls out to the end of the game, so a full game of ten rounds costs ten times more per
rollout and per decision; `--rounds` changes it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyspiel
from open_spiel.python.algorithms import evaluate_bots, ismcts, mcts

from cf_env.agents.ismcts import MAX_ITERATIONS
from cf_env.agents.policies import Policy, load_policy, validate_policy_spec
from cf_env.core.config import ChickenFootConfig
from cf_env.envs.openspiel_game import load_game
from cf_env.tools.cli import HelpFormatter


class PolicyBot(pyspiel.Bot):
    """One of our policies playing seat `player_id` of a `python_chicken_foot` game."""

    def __init__(self, policy: Policy, player_id: int):
        pyspiel.Bot.__init__(self)
        self.policy = policy
        self.player_id = player_id

    def restart_at(self, state) -> None:
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            reset()  # the policy protocol: reset() before each game

    def inform_action(self, state, player_id, action) -> None:
        pass  # our policies read the observation at their turn; nothing to track

    def step(self, state) -> int:
        if state.current_player() != self.player_id:
            raise ValueError(
                f"PolicyBot for player {self.player_id} asked to act at a node of player "
                f"{state.current_player()}"
            )
        legal = state.legal_actions()
        if len(legal) == 1:  # a forced decision is not asked (cf_env.agents.policies)
            return legal[0]
        mask = np.zeros(state.get_game().num_distinct_actions(), dtype=np.int8)
        mask[legal] = 1
        observation = np.asarray(state.observation_tensor(self.player_id), dtype=np.float32)
        action = int(self.policy.act({"observation": observation, "action_mask": mask}))
        if not (0 <= action < mask.size and mask[action]):
            raise ValueError(f"policy {self.policy!r} returned {action}, not a legal action {legal}")
        return action


def policy_bot(spec: str, config: ChickenFootConfig, player_id: int, seed: int | None = None) -> PolicyBot:
    """A `PolicyBot` for the policy spec (e.g. "heuristic", "ismcts:200")."""
    return PolicyBot(load_policy(spec, config, seed=seed), player_id)


class ISMCTSBot(ismcts.ISMCTSBot):
    """OpenSpiel's `ISMCTSBot` as it is, plus the two `pyspiel.Bot` methods `evaluate_bots`
    calls and it lacks (it searches afresh at every decision, so both have nothing to do)."""

    def restart_at(self, state) -> None:
        self.reset()

    def inform_action(self, state, player_id, action) -> None:
        pass


def openspiel_ismcts_bot(
    game: pyspiel.Game, simulations: int, seed: int, uct_c: float = 2.0
) -> ISMCTSBot:
    """OpenSpiel's ISMCTS bot: `simulations` per decision, one random rollout to the end of the
    game per leaf, UCT constant `uct_c` (returns lie in [-1/(n-1), 1]), the most visited action.
    Seeded: its determinizations come from `resample_from_infostate` with samplers seeded from
    `seed` (OpenSpiel's default sampler is not seeded). `simulations` is bounded as our search
    budgets are (1..`MAX_ITERATIONS`); ValueError otherwise."""
    if not isinstance(simulations, int) or isinstance(simulations, bool) or not 1 <= simulations <= MAX_ITERATIONS:
        small = isinstance(simulations, int) and -(10**18) < simulations < 10**18
        shown = repr(simulations) if small else type(simulations).__name__
        raise ValueError(f"simulations must be an int in 1..{MAX_ITERATIONS}; got {shown}")
    rng = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(seed + 1))
    bot = ISMCTSBot(
        game,
        evaluator,
        uct_c,
        simulations,
        random_state=rng,
        final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
    )
    bot.set_resampler(
        lambda state, player: state.resample_from_infostate(
            player, pyspiel.UniformProbabilitySampler(int(rng.randint(2**31 - 1)), 0.0, 1.0)
        )
    )
    return bot


def wilson_interval(share: float, games: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% for z = 1.96) of a proportion `share` over `games`."""
    if games <= 0:
        return (0.0, 1.0)
    centre = share + z * z / (2 * games)
    spread = z * math.sqrt(share * (1 - share) / games + z * z / (4 * games * games))
    scale = 1 + z * z / games
    return (max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale))


@dataclass(frozen=True)
class MatchResult:
    opponent: str
    games: int
    share: float  # the ISMCTS seat's mean win share
    low: float  # 95% Wilson interval
    high: float
    fair: float  # 1 / num_players
    seconds: float

    def line(self, simulations: int) -> str:
        return (
            f"OpenSpiel ISMCTS ({simulations} simulations) vs {self.opponent}: {self.games} games, "
            f"win share {self.share:.3f} [95% {self.low:.3f}, {self.high:.3f}], fair share "
            f"{self.fair:.3f} ({self.seconds / max(self.games, 1):.1f} s/game)"
        )


def play_match(
    config: ChickenFootConfig, opponent: str, games: int, simulations: int, seed: int = 0
) -> MatchResult:
    """`games` games of OpenSpiel's ISMCTS (one seat, rotating) against `opponent` (all others)."""
    game = load_game(config)
    n = config.num_players
    credit, start = 0.0, time.perf_counter()
    for g in range(games):
        seat = g % n
        bots = [
            openspiel_ismcts_bot(game, simulations, seed=seed * 7919 + g)
            if s == seat
            else policy_bot(opponent, config, s, seed=(seed * 7919 + g) * n + s)
            for s in range(n)
        ]
        returns = evaluate_bots.evaluate_bots(
            game.new_initial_state(), bots, np.random.RandomState(seed + g)
        )
        best = max(returns)
        winners = [s for s in range(n) if returns[s] == best]
        credit += 1.0 / len(winners) if seat in winners else 0.0
    share = credit / games if games else 0.0
    low, high = wilson_interval(share, games)
    return MatchResult(opponent, games, share, low, high, 1.0 / n, time.perf_counter() - start)


def measure(
    config: ChickenFootConfig,
    simulations: int = 200,
    opponents: Sequence[str] | None = None,
    games: int = 200,
    seed: int = 0,
) -> list[MatchResult]:
    """OpenSpiel's ISMCTS against each opponent spec (default: our `heuristic` and our ISMCTS
    at the same number of simulations, `ismcts:<simulations>`)."""
    opponents = list(opponents) if opponents else ["heuristic", f"ismcts:{simulations}"]
    return [play_match(config, spec, games, simulations, seed) for spec in opponents]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.tools.openspiel_bots",
        description="OpenSpiel's ISMCTS bot against our policies on python_chicken_foot: win "
        "shares with 95% intervals (see the module docstring).",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--games", type=int, default=200, help="games per opponent (default 200)")
    parser.add_argument("--simulations", type=int, default=200,
                        help="OpenSpiel ISMCTS simulations per decision (default 200)")
    parser.add_argument("--opponents", nargs="+", default=None,
                        help="opponent policy specs (default: heuristic ismcts:<simulations>)")
    parser.add_argument("--players", type=int, default=4, help="num_players (default 4)")
    parser.add_argument("--max-pips", type=int, default=9, help="max_pips (default 9)")
    parser.add_argument("--rounds", type=int, default=1, help="num_rounds per game (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and bots (default 0)")
    args = parser.parse_args(argv)
    if args.games < 1 or not 1 <= args.simulations <= MAX_ITERATIONS:
        parser.error(f"--games must be positive and --simulations in 1..{MAX_ITERATIONS}")
    try:
        config = ChickenFootConfig(max_pips=args.max_pips, num_players=args.players, num_rounds=args.rounds)
    except ValueError as err:
        parser.error(str(err))
    specs = args.opponents or ["heuristic", f"ismcts:{args.simulations}"]
    for spec in specs:
        try:
            validate_policy_spec(spec, config)
        except ValueError as err:
            parser.error(str(err))
    print(
        f"{config.num_players} players, double-{config.max_pips}, {config.num_rounds} round(s) "
        f"per game, seed {args.seed}",
        flush=True,
    )
    for spec in specs:
        result = play_match(config, spec, args.games, args.simulations, args.seed)
        print(result.line(args.simulations), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
