"""`python -m training.leaderboard`: one rating for the bots, the shipped agents and the search
agents, from mixed-lineup duplicate matches, and `--add` to rate a newcomer against that frozen
pool.

**Matches.** A *match* seats distinct entries, one per seat, at the board's table (by default 4
players, double-9, single rounds) and plays `deals` duplicate deals with seat rotation through
`training.evaluation.evaluate` (its `evaluate` with as many specs as seats: each deal is replayed
once per rotation, so every entry plays every hand; batched, `training.evaluation.batched`, when
every entry of the match is a bot or a `ppo:` network, the bots' tie-breaks then drawn from a
stream per game); the match's games are `evaluate`'s per-game results. The *schedule* of lineups is fixed by the
seed (`schedule`): lineups are added one at a time, each started from the pair that has met
least and filled greedily with the entries that meet the most new opponents, until every pair
of entries has sat at the same table at least `meetings` times. Match k plays the deals of its
own seed (`match_seed`), so no two matches share deals.

**Cheap entries** (`cheap_games`, `--cheap-games N`; 0, none, by default). The bots and the
`ppo:` networks (`is_cheap`: played batched) cost little per game, the search agents much. With
N > 0, after the pool's schedule the cheap entries meet in matches of their own
(`cheap_schedule`: every pair of them once, on a stream of the seed's own) of `cheap_deals`
deals each, as many as it takes for each to have played at least N games in all; their seeds
continue the pool's match numbering. A cheap newcomer (`--add`) then also meets the cheap pool
entries (each once) until it has played N games; a search newcomer plays the pool's protocol
only.

**Separation.** The page says, for each pair of entries next to each other in the ranking,
whether they are separated (`separation`): their intervals disjoint, or a paired head-to-head
test at 95% (the difference of their win rates per deal where both sat, Student-t over those
deals) excluding 0; one that favours the lower-rated entry is marked reversed.

**Rating.** OpenSkill's Plackett-Luce model (the `openskill` package), every entry starting at
its default prior, fed every game of every match ranked by R13 rank (ties share a rank), with no
drift (`TAU` = 0). OpenSkill's default tau (25/300) adds variance to every rating before each
game, a model of players whose skill changes: σ then levels off (about 1.6 on this table) and μ
follows the last few hundred games an entry played, so more games would not narrow the board's
intervals. The entries are frozen policies; without drift every game counts and the intervals
shrink as games are added. The
games are fed interleaved — deal 0 of every match (in schedule order, each rotation in turn),
then deal 1 of every match, ... — so that no entry's rating is formed against opponents that
have not yet moved from their prior. A sequential rating still depends on the order its games
come in (σ, and with it the size of each update, shrinks as games are fed, so early games weigh
more): on the shipped board one pass in deal order put some entries' μ outside the spread of
the bootstrap below. So the board's μ is **bagged**: `bootstrap` times, every match's deals are
resampled with replacement (the schedule kept) and fed in the resampled order from the prior;
μ is the mean of the replicates' μ and its interval their 2.5% and 97.5% quantiles, which
measure how much the rating depends on which deals were dealt and in what order. σ is the
model's own uncertainty after one pass in deal order (it shrinks with every game whatever the
spread of results, hence not the interval); the conservative rating is μ − 3σ, OpenSkill's
`ordinal`. The pass in deal order is kept as `mu_single_pass`.

**Adding an entry** (`add_entry`, `--add SPEC`). The pool's ratings are frozen. The newcomer
plays `meetings` rounds of matches, each round seating it with every pool entry once (the pool
in a seeded order, in groups of table − 1, the last group filled from the front of the order),
each match of `deals` deals or, if it takes more, of as many as bring it to the fewest games a
pool entry of its kind (cheap or not, below) played;
its rating starts at the prior and is updated by each of its games against the pool entries'
frozen (μ, σ), which are never updated; its interval is the same bootstrap over its own deals.
Nothing else is replayed, and every other entry's figures are left as they were, bit for bit in
the JSON. A spec already on the board is refused; `--replace` re-rates an entry that was added
(dropping its old matches); an entry of the pool cannot be replaced without rebuilding the board.
A pool entry that plays a checkpoint records its `policy_sha256`: `--add` refuses a board whose
checkpoints have changed since (the newcomer would meet other agents than the ratings describe).

**Second view.** The head-to-head table: for each pair, the mean difference of their win rates
(share of games won, R13, a shared win split) over the games where both sat. Used as the payoff
table of a symmetric two-player meta-game, it is ranked by α-Rank (OpenSpiel,
`open_spiel.python.egt.alpharank`, single population, m = 50, α = 100): its stationary mass
says whether the strongest entries form a cycle (mass spread over them) or a strict top (mass on
one); a scalar rating cannot show a cycle. It is recomputed with every write and is not part of
any entry's rating.

**Files.** `<out>.json` holds everything needed to add an entry later: the config, the protocol
(deals, meetings, seed, bootstrap), each entry's spec, rating and counts, the schedule and the
raw result of every game (deal, rotation, the entry at each seat, its points, the winners).
`<out>.md` is the generated page (how to read it, the table, the protocol, the command); a block
of hand-written notes between `NOTES_BEGIN` and `NOTES_END` in an existing page is kept.
`<out>.png` plots μ with its interval. All three are written atomically (`cf_env.core.atomic`).

Specs with a time budget (`ms=`) are refused: what they play depends on the machine's speed, so
the board could not be reproduced. Determinism: every seed comes from
`numpy.random.SeedSequence` of the board's seed, and `evaluate`'s results do not depend on
`workers`, so the same command gives the same JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from cf_env.agents.arena import PolicyError
from cf_env.agents.checkpoint import read_card
from cf_env.agents.policies import load_policy, spec_checkpoint, validate_policy_spec
from cf_env.core import atomic
from cf_env.core.config import ChickenFootConfig
from cf_env.tools.cli import HelpFormatter, limit_threads
from training.evaluation.batched import batch_kind
from training.evaluation.evaluate import WorkerDiedError, evaluate, fail
from training.evaluation.stats import PlackettLuceUpdate, difference_ci, game_values

FORMAT = "chickenfoot-leaderboard"
VERSION = 1
DEFAULT_OUT = "docs/leaderboard"
SHIPPED = "checkpoints/selfplay-4p-d9"
# The board's entries: the bots, every shipped 4-player double-9 agent, and the search agents at
# small fixed budgets (iterations or determinizations, never time: see the module docstring).
DEFAULT_ENTRIES = (
    "random",
    "greedy",
    "heuristic",
    f"ppo:{SHIPPED}",
    f"ppo:{SHIPPED}-v3",
    f"ppo:{SHIPPED}-v2",
    "ppo:checkpoints/ppo-4p-d9",
    "ismcts:50",
    "ismcts:500",
    f"guided:{SHIPPED}:200",
    f"lookahead:{SHIPPED}:16",
    f"belief:{SHIPPED}:16",
)
DEFAULT_DEALS = 48
DEFAULT_MEETINGS = 2
DEFAULT_BOOTSTRAP = 200
DEFAULT_CHEAP_GAMES = 0  # off; docs/leaderboard.md's board gives it on the command line
# The entries are frozen policies, so their skill does not drift: no dynamics term (module
# docstring, "Rating"). A board without "tau" in its protocol was rated with OpenSkill's default.
TAU = 0.0
ALPHARANK = {"m": 50, "alpha": 100.0}
NOTES_BEGIN = "<!-- notes: hand-written, kept when the page is regenerated -->"
NOTES_END = "<!-- end of notes -->"
GAME_FIELDS = ["deal", "rotation", "entry at each seat", "points of each seat", "winners (seats)"]


# --------------------------------------------------------------------------- seeds and schedule
def _seed_int(seed: int, *key: int) -> int:
    """A 63-bit seed for (seed, key...), independent for every key (SeedSequence spawn keys)."""
    state = np.random.SeedSequence(seed, spawn_key=key).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


def match_seed(seed: int, match: int, entry: int | None = None) -> int:
    """The evaluation seed of the pool's match `match`, or of match `match` of added entry
    `entry` (its deals and policy seeds: `training.evaluation.evaluate.deal_seed`)."""
    return _seed_int(seed, 0, match) if entry is None else _seed_int(seed, 1, entry, match)


def _generator(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def schedule(num_entries: int, table: int, meetings: int, seed: int) -> list[list[int]]:
    """Lineups of `table` distinct entries (indices, ascending) until every pair has met at least
    `meetings` times: each starts from the pair that has met least (then: that has played least),
    and takes next the entry that meets most opponents it still has to meet (then: fewest
    matches played); remaining ties are broken by a seeded shuffle."""
    if table < 2 or num_entries < table:
        raise ValueError(f"a schedule needs at least as many entries as seats (>= 2); got "
                         f"{num_entries} entries for a table of {table}")
    rng = _generator(seed, 2)
    met = np.zeros((num_entries, num_entries), dtype=np.int64)
    played = np.zeros(num_entries, dtype=np.int64)
    lineups: list[list[int]] = []
    upper = np.triu_indices(num_entries, 1)
    while met[upper].min() < meetings:
        tie = rng.permutation(num_entries)  # a fresh tie-break order per lineup
        pairs = sorted(zip(*upper), key=lambda p: (met[p], played[p[0]] + played[p[1]],
                                                   tie[p[0]], tie[p[1]]))
        group = list(pairs[0])
        while len(group) < table:
            others = [k for k in range(num_entries) if k not in group]
            group.append(min(others, key=lambda k: (
                -sum(met[k, g] < meetings for g in group), played[k], tie[k])))
        for a in group:
            played[a] += 1
            for b in group:
                if a != b:
                    met[a, b] += 1
        lineups.append(sorted(int(g) for g in group))
    return lineups


def addition_schedule(pool_size: int, table: int, meetings: int, seed: int,
                      entry: int) -> list[list[int]]:
    """The lineups of added entry `entry` (its index first, then pool indices): `meetings`
    rounds, each seating it once with every pool entry, in a seeded order of the pool split into
    groups of table - 1 (the last group filled from the front of the order)."""
    if pool_size < table - 1:
        raise ValueError(f"a table of {table} needs {table - 1} pool entries beside the "
                         f"newcomer; the pool has {pool_size}")
    rng = _generator(seed, 3, entry)
    lineups = []
    size = table - 1
    for _ in range(meetings):
        order = [int(k) for k in rng.permutation(pool_size)]
        for start in range(0, pool_size, size):
            group = order[start:start + size]
            group += [k for k in order if k not in group][:size - len(group)]
            lineups.append([entry, *sorted(group)])
    return lineups


def cheap_schedule(cheap: Sequence[int], table: int, seed: int) -> list[list[int]]:
    """The cheap entries' own lineups (entry indices, ascending): `schedule` over `cheap` until
    every pair of them has met once, on a stream of its own; none with fewer than `table`."""
    if len(cheap) < table:
        return []
    return [[cheap[k] for k in lineup]
            for lineup in schedule(len(cheap), table, 1, _seed_int(seed, 6))]


def cheap_deals(target: int, table: int, lineups: list[list[int]], games: dict[int, int]) -> int:
    """Deals per match of `lineups` so that every entry in them has played at least `target`
    games, counting the `games` it has played already (each deal of a match seats every entry
    of its lineup in `table` games); 0 when none is needed, else at least 2."""
    need = 0
    for entry in {e for lineup in lineups for e in lineup}:
        matches = sum(entry in lineup for lineup in lineups)
        missing = max(0, target - games.get(entry, 0))
        need = max(need, -(-missing // (table * matches)))
    return 0 if need == 0 else max(2, need)


def is_cheap(spec: str, config: ChickenFootConfig) -> bool:
    """Whether `spec` is played batched (`training.evaluation.batched`: a bot or a `ppo:`
    network), so that long matches cost little."""
    return batch_kind(load_policy(spec, config, 0)) is not None


def _games_of(matches: list[dict]) -> dict[int, int]:
    """Games each entry has played in `matches`."""
    count: dict[int, int] = {}
    for match in matches:
        for entry in match["lineup"]:
            count[entry] = count.get(entry, 0) + len(match["games"])
    return count


# --------------------------------------------------------------------------- checks
def _check_spec(spec: str, config: ChickenFootConfig) -> str:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an entry is a non-empty policy spec string; got {spec!r}")
    spec = spec.strip()
    if ":ms=" in spec:
        raise ValueError(f"entry {spec!r} has a time budget (ms=): what it plays would depend on "
                         "the machine's speed and the board could not be reproduced; give an "
                         "iteration or determinization count instead, e.g. ismcts:200")
    validate_policy_spec(spec, config)
    return spec


def _check_entries(specs: Sequence[str], config: ChickenFootConfig) -> list[str]:
    checked = [_check_spec(s, config) for s in specs]
    seen: dict[str, int] = {}
    for i, spec in enumerate(checked):
        if spec in seen:
            raise ValueError(f"entry {spec!r} is listed twice (entries {seen[spec] + 1} and "
                             f"{i + 1}); each entry is rated once: give every spec once")
        seen[spec] = i
    if len(checked) < config.num_players:
        raise ValueError(f"{len(checked)} entries for a {config.num_players}-player table: a "
                         f"match seats {config.num_players} distinct entries, give at least "
                         f"{config.num_players} (or --players {max(2, len(checked))})")
    return checked


def _checkpoint_digest(spec: str) -> str | None:
    path = spec_checkpoint(spec)
    return None if path is None else read_card(path).get("policy_sha256")


def _positive(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an int >= {least}; got {value!r}")
    return value


# --------------------------------------------------------------------------- playing
def play_match(specs: Sequence[str], entries: Sequence[int], config: ChickenFootConfig,
               deals: int, seed: int, workers: int = 1) -> list[list]:
    """Play one match (`evaluate` of a mixed lineup, single rounds, batched when every entry
    of it can be: `training.evaluation.batched`) and return its games in (deal, rotation)
    order, each `[deal, rotation, seats, points, winners]` (`GAME_FIELDS`): `seats` the entry
    index at each seat, `points` each seat's round points (`evaluate`'s per-game results)."""
    result = evaluate(list(specs), config, deals, seed=seed, workers=workers, single_round=True,
                      batch="auto")
    return [[deal, rotation, [entries[p] for p in seats], points, winners]
            for deal, rotation, seats, points, winners in result["per_game"]]


def _ranks(config: ChickenFootConfig, game: list) -> list[float]:
    scores = [[points] for points in game[3]]
    return game_values(config, {"scores": scores, "winners": game[4]})["rank"]


# --------------------------------------------------------------------------- rating
class Rating(NamedTuple):
    """An entry's OpenSkill rating: mean and standard deviation."""

    mu: float
    sigma: float


def _model(tau: float | None = TAU) -> PlackettLuceUpdate:
    """OpenSkill's PlackettLuce update with drift `tau` (None: OpenSkill's default), operation
    for operation (`training.evaluation.stats.PlackettLuceUpdate`: equal to
    `PlackettLuce(tau=tau).rate` bit for bit, without its per-call copies, which were most of a
    board's rating time)."""
    return PlackettLuceUpdate(tau)


def _prior(model: PlackettLuceUpdate) -> Rating:
    return Rating(model.mu, model.sigma)


def _interleaved(matches: list[dict], orders: list[np.ndarray], n: int):
    """Every game, deal position by deal position across the matches (module docstring)."""
    longest = max(len(order) for order in orders)
    for position in range(longest):
        for match, order in zip(matches, orders):
            if position < len(order):
                deal = int(order[position])
                for rotation in range(n):
                    yield match["ranked"][deal * n + rotation]


def _rate(model, ratings: list, games, update: set[int] | None) -> list:
    """Feed `games` ((seats, ranks) pairs) to the model; only the entries in `update` (None:
    every entry) take their updated rating, the others keep theirs."""
    for seats, ranks in games:  # distinct entries: each seat's rating is its own
        new = model.rate([ratings[e] for e in seats], seats, ranks)
        for rating, e in zip(new, seats):
            if update is None or e in update:
                ratings[e] = Rating(*rating)
    return ratings


def _prepare(config: ChickenFootConfig, matches: list[dict]) -> list[dict]:
    """Each match with its games as (seats, ranks), in (deal, rotation) order."""
    return [{**m, "ranked": [(g[2], _ranks(config, g)) for g in m["games"]]} for m in matches]


def rate_pool(config: ChickenFootConfig, num_entries: int, matches: list[dict], seed: int,
              bootstrap: int, tau: float | None = TAU) -> tuple[list, np.ndarray]:
    """The pool's OpenSkill ratings over all its matches, and each entry's μ in each of
    `bootstrap` resamplings of every match's deals (rows: replicates)."""
    model, n = _model(tau), config.num_players
    prepared = _prepare(config, matches)
    full = [np.arange(len(m["games"]) // n) for m in prepared]
    ratings = _rate(model, [_prior(model) for _ in range(num_entries)],
                    _interleaved(prepared, full, n), None)
    rng = _generator(seed, 4)
    samples = np.zeros((bootstrap, num_entries))
    for b in range(bootstrap):
        orders = [rng.integers(0, len(o), size=len(o)) for o in full]
        again = _rate(model, [_prior(model) for _ in range(num_entries)],
                      _interleaved(prepared, orders, n), None)
        samples[b] = [r.mu for r in again]
    return ratings, samples


def rate_newcomer(config: ChickenFootConfig, pool: list[dict], entry: int, matches: list[dict],
                  seed: int, bootstrap: int, tau: float | None = TAU) -> tuple:
    """The newcomer's rating over its matches with the pool's ratings held fixed, and its μ in
    each bootstrap replicate of its deals."""
    model, n = _model(tau), config.num_players
    frozen = [Rating(p["rating"]["mu"], p["rating"]["sigma"]) for p in pool]
    prepared = _prepare(config, matches)
    full = [np.arange(len(m["games"]) // n) for m in prepared]

    def run(orders):
        ratings = dict(enumerate(frozen))
        ratings[entry] = _prior(model)
        return _rate(model, ratings, _interleaved(prepared, orders, n), {entry})[entry]

    rating = run(full)
    rng = _generator(seed, 5, entry)
    samples = np.array([run([rng.integers(0, len(o), size=len(o)) for o in full]).mu
                        for _ in range(bootstrap)])
    return rating, samples


def _entry_stats(entry: int, matches: list[dict]) -> dict:
    """Matches and games played, mean win rate and mean round points, over its games."""
    wins, points, games, played = 0.0, 0.0, 0, 0
    for match in matches:
        if entry not in match["lineup"]:
            continue
        played += 1
        for game in match["games"]:
            seat = game[2].index(entry)
            games += 1
            wins += 1.0 / len(game[4]) if seat in game[4] else 0.0
            points += game[3][seat]
    return {"matches": played, "games": games, "win_rate": wins / games if games else None,
            "round_points": points / games if games else None}


def _rating_dict(rating, samples: np.ndarray) -> dict:
    """μ: the mean over the bootstrap replicates (a single pass depends on the order the games
    are fed in; `mu_single_pass` keeps the pass in deal order); σ that pass's."""
    mu = float(np.mean(samples))
    low, high = np.quantile(samples, [0.025, 0.975])
    sigma = float(rating.sigma)
    return {"mu": mu, "sigma": sigma, "conservative": mu - 3.0 * sigma, "ci_low": float(low),
            "ci_high": float(high), "mu_single_pass": float(rating.mu)}


# --------------------------------------------------------------------------- the board
def _play_all(specs: list[str], lineups: list[list[int]], config: ChickenFootConfig,
              deals: int, seeds: list[int], workers: int, what: str) -> list[dict]:
    matches = []
    for k, (lineup, seed) in enumerate(zip(lineups, seeds)):
        started = time.perf_counter()
        names = [specs[e] for e in lineup]
        games = play_match(names, lineup, config, deals, seed, workers)
        matches.append({"lineup": lineup, "seed": seed, "games": games})
        print(f"{what} match {k + 1}/{len(lineups)} ({', '.join(names)}): "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return matches


def build(specs: Sequence[str], config: ChickenFootConfig, deals: int = DEFAULT_DEALS,
          meetings: int = DEFAULT_MEETINGS, seed: int = 0, bootstrap: int = DEFAULT_BOOTSTRAP,
          workers: int = 1, cheap_games: int = DEFAULT_CHEAP_GAMES) -> dict:
    """Play the pool's schedule (and, with `cheap_games`, the cheap entries' own matches until
    each has played that many games) and rate it: the board dict (module docstring, "Files")."""
    config = _table(config)
    deals, meetings = _positive("deals", deals, 2), _positive("meetings", meetings)
    bootstrap, workers = _positive("bootstrap", bootstrap, 10), _positive("workers", workers)
    _positive("seed", seed, 0)
    cheap_games = _positive("cheap_games", cheap_games, 0)
    specs = _check_entries(specs, config)
    lineups = schedule(len(specs), config.num_players, meetings, seed)
    cheap = [i for i, spec in enumerate(specs) if is_cheap(spec, config)]
    pool_games = _games_of([{"lineup": lineup, "games": range(deals * config.num_players)}
                            for lineup in lineups])
    short = [specs[i] for i in cheap if pool_games.get(i, 0) < cheap_games]
    if short and len(cheap) < config.num_players:
        raise ValueError(f"cheap_games {cheap_games}: {', '.join(short)} would play only "
                         f"{min(pool_games.get(i, 0) for i in cheap if specs[i] in short)} "
                         "games: cheap matches "
                         f"need {config.num_players} cheap entries (bots, ppo: networks) and "
                         f"the pool has {len(cheap)}; give --cheap-games 0 or more cheap entries")
    seeds = [match_seed(seed, k) for k in range(len(lineups))]
    matches = _play_all(specs, lineups, config, deals, seeds, workers, "pool")
    extra: list[list[int]] = []
    per_match = 0
    if cheap_games:
        extra = cheap_schedule(cheap, config.num_players, seed)
        per_match = cheap_deals(cheap_games, config.num_players, extra, _games_of(matches))
        if per_match == 0:
            extra = []
        seeds = [match_seed(seed, len(lineups) + k) for k in range(len(extra))]
        matches += _play_all(specs, extra, config, per_match, seeds, workers, "cheap")
    return rate_board(specs, config, matches, lineups, deals, meetings, seed, bootstrap,
                      cheap={"games": cheap_games, "deals": per_match, "entries": cheap,
                             "schedule": extra})


def rate_board(specs: list[str], config: ChickenFootConfig, matches: list[dict],
               lineups: list[list[int]], deals: int, meetings: int, seed: int,
               bootstrap: int, cheap: dict | None = None) -> dict:
    """The board of a played pool schedule (what `build` returns after playing it); `cheap`:
    the cheap entries' matches, if any (`build`)."""
    cheap = cheap or {"games": 0, "deals": 0, "entries": [], "schedule": []}
    ratings, samples = rate_pool(config, len(specs), matches, seed, bootstrap)
    entries = []
    for i, spec in enumerate(specs):
        entries.append({"spec": spec, "pool": True, "checkpoint_sha256": _checkpoint_digest(spec),
                        "cheap": i in cheap["entries"],
                        "rating": _rating_dict(ratings[i], samples[:, i]),
                        **_entry_stats(i, matches)})
    from openskill import __version__ as openskill_version

    board = {
        "format": FORMAT,
        "version": VERSION,
        "config": config.to_dict(),
        "protocol": {"deals": deals, "meetings": meetings, "seed": seed, "bootstrap": bootstrap,
                     "cheap_games": cheap["games"], "cheap_deals": cheap["deals"], "tau": TAU,
                     "rating": f"OpenSkill {openskill_version} PlackettLuce, default prior, "
                               f"tau {TAU:g} (no drift: the entries are frozen); mu is "
                               "the mean over the bootstrap replicates (each feeds its games in "
                               "its own order), sigma that of one pass fed interleaved by deal "
                               "across matches",
                     "interval": "95% bootstrap over deals (every match's deals resampled), "
                                 "2.5% and 97.5% quantiles of mu",
                     "conservative": "mu - 3 sigma"},
        "game_fields": GAME_FIELDS,
        "entries": entries,
        "schedule": lineups,
        "cheap_schedule": cheap["schedule"],
        "matches": matches,
        "additions": [],
    }
    board["alpharank"] = alpharank_view(board)
    return board


def add_entry(board: dict, spec: str, workers: int = 1, replace: bool = False) -> dict:
    """A new board: `board` with `spec` rated against its frozen pool (module docstring)."""
    check_board(board)
    config = ChickenFootConfig.from_dict(board["config"])
    workers = _positive("workers", workers)
    spec = _check_spec(spec, config)
    specs = [e["spec"] for e in board["entries"]]
    entries = [dict(e) for e in board["entries"]]
    additions = list(board["additions"])
    if spec in specs:
        i = specs.index(spec)
        if entries[i]["pool"]:
            raise ValueError(f"{spec!r} is in the board's pool (entry {i + 1}): the pool's "
                             "ratings were computed together and one cannot be replaced alone; "
                             "rebuild the board (python -m training.leaderboard --force)")
        if not replace:
            raise ValueError(f"{spec!r} is already on the board (entry {i + 1}, added); pass "
                             "--replace to rate it again (its old matches are dropped)")
        entries.pop(i)
        additions = [a for a in additions if a["entry"] != i]
        # The entries after it move down by one (the pool's indices are below every addition's).
        additions = [_renumber(a, i) for a in additions]
    pool = [e for e in entries if e["pool"]]
    for entry in pool:
        digest = entry.get("checkpoint_sha256")
        if digest is not None and _checkpoint_digest(entry["spec"]) != digest:
            raise ValueError(f"pool entry {entry['spec']!r} plays a checkpoint whose policy has "
                             f"changed since the board was built (policy_sha256 was {digest}); "
                             "the newcomer would meet another agent than the one rated: rebuild "
                             "the board")
    index = len(entries)
    protocol = board["protocol"]
    lineups = addition_schedule(len(pool), config.num_players, protocol["meetings"],
                                protocol["seed"], index)
    seeds = [match_seed(protocol["seed"], k, index) for k in range(len(lineups))]
    names = [e["spec"] for e in entries] + [spec]
    cheap = is_cheap(spec, config)
    deals = protocol["deals"]
    if not (cheap and protocol.get("cheap_deals")):  # else the cheap matches below top it up
        # As many games as the pool's entries of its kind (cheap or not; a board from before
        # cheap entries: the whole pool) played, at least: longer matches if need be.
        kind = [e for e in pool if e.get("cheap", cheap) == cheap] or pool
        target = min(e["games"] for e in kind)
        deals = max(deals, -(-target // (config.num_players * len(lineups))))
    matches = _play_all(names, lineups, config, deals, seeds, workers, "added")
    if cheap and protocol.get("cheap_deals"):  # the pool's cheap entries played cheap matches:
        # as many games as they had, in matches against them alone (at least `table` of them)
        pool_cheap = [k for k, e in enumerate(pool) if e.get("cheap")]
        extra = [[index, *(pool_cheap[k] for k in lineup[1:])] for lineup in
                 addition_schedule(len(pool_cheap), config.num_players, 1,
                                   _seed_int(protocol["seed"], 7, index), len(pool_cheap))]
        per_match = cheap_deals(protocol["cheap_games"], config.num_players, extra,
                                _games_of(matches))
        if per_match:
            seeds = [match_seed(protocol["seed"], len(lineups) + k, index)
                     for k in range(len(extra))]
            matches += _play_all(names, extra, config, per_match, seeds, workers, "added cheap")
            lineups = lineups + extra
    rating, samples = rate_newcomer(config, pool, index, matches, protocol["seed"],
                                    protocol["bootstrap"], protocol.get("tau"))
    entries.append({"spec": spec, "pool": False, "checkpoint_sha256": _checkpoint_digest(spec),
                    "cheap": cheap, "rating": _rating_dict(rating, samples),
                    **_entry_stats(index, matches)})
    additions.append({"entry": index, "schedule": lineups, "matches": matches})
    new = {**board, "entries": entries, "additions": additions}
    new["alpharank"] = alpharank_view(new)
    return new


def _renumber(addition: dict, removed: int) -> dict:
    """An addition's record with the entry indices above `removed` moved down by one."""
    def move(e: int) -> int:
        return e - 1 if e > removed else e

    matches = [{**m, "lineup": [move(e) for e in m["lineup"]],
                "games": [[g[0], g[1], [move(e) for e in g[2]], g[3], g[4]] for g in m["games"]]}
               for m in addition["matches"]]
    return {"entry": move(addition["entry"]),
            "schedule": [[move(e) for e in lineup] for lineup in addition["schedule"]],
            "matches": matches}


def check_board(board: object) -> None:
    """Raise `ValueError` if `board` is not a leaderboard this version reads."""
    if not isinstance(board, dict) or board.get("format") != FORMAT:
        raise ValueError(f"not a leaderboard (its format is not {FORMAT!r})")
    if board.get("version") != VERSION:
        raise ValueError(f"leaderboard version {board.get('version')!r}; this code reads "
                         f"version {VERSION}")
    missing = [k for k in ("config", "protocol", "entries", "schedule", "matches", "additions")
               if k not in board]
    if missing:
        raise ValueError(f"leaderboard lacks {', '.join(missing)}")


def _table(config: ChickenFootConfig) -> ChickenFootConfig:
    if not isinstance(config, ChickenFootConfig):
        raise ValueError(f"config must be a ChickenFootConfig; got {type(config).__name__}")
    return config.replace(num_rounds=1)


# --------------------------------------------------------------------------- second view
def all_matches(board: dict) -> list[dict]:
    return list(board["matches"]) + [m for a in board["additions"] for m in a["matches"]]


def head_to_head(board: dict) -> tuple[np.ndarray, np.ndarray]:
    """(diff, games): diff[i, j] the mean of i's win share minus j's over the games where both
    sat (NaN where they never met); games[i, j] how many such games."""
    size = len(board["entries"])
    total, count = np.zeros((size, size)), np.zeros((size, size), dtype=np.int64)
    for match in all_matches(board):
        for game in match["games"]:
            seats, winners = game[2], game[4]
            share = [1.0 / len(winners) if s in winners else 0.0 for s in range(len(seats))]
            for a, ea in enumerate(seats):
                for b, eb in enumerate(seats):
                    if a != b:
                        total[ea, eb] += share[a] - share[b]
                        count[ea, eb] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return diff, count


def separation(board: dict) -> list[dict]:
    """For each pair of entries adjacent in the ranking (`ranked`, the better first): whether
    their bootstrap intervals are disjoint; the paired head-to-head difference of their win
    rates (the better's minus the other's) per deal where both sat, with its 95% Student-t
    interval over those deals (`training.evaluation.stats.difference_ci`; None under 2 deals);
    `separated`: either says they differ at 95%; `reversed`: the head-to-head test says the
    lower-rated one is the better (its interval below 0) while the intervals overlap."""
    n = board["config"]["num_players"]
    order = ranked(board)
    entries = board["entries"]
    rows = []
    for upper, lower in zip(order, order[1:]):
        a, b = entries[upper]["rating"], entries[lower]["rating"]
        disjoint = a["ci_low"] > b["ci_high"] or b["ci_low"] > a["ci_high"]
        per_deal = []
        for match in all_matches(board):
            if upper not in match["lineup"] or lower not in match["lineup"]:
                continue
            by_deal: dict[int, list[float]] = {}
            for deal, _, seats, _, winners in match["games"]:
                share = {s: 1.0 / len(winners) for s in winners}
                by_deal.setdefault(deal, []).append(share.get(seats.index(upper), 0.0)
                                                    - share.get(seats.index(lower), 0.0))
            per_deal += [sum(values) / len(values) for values in by_deal.values()]
        test = difference_ci("win_rate", per_deal, n) if len(per_deal) >= 2 else None
        paired = test is not None and (test["ci_low"] > 0 or test["ci_high"] < 0)
        rows.append({"pair": [upper, lower], "disjoint": bool(disjoint), "deals": len(per_deal),
                     "head_to_head": test, "separated": bool(disjoint or paired),
                     "reversed": bool(not disjoint and paired and test["ci_high"] < 0)})
    return rows


def alpharank_view(board: dict) -> dict | None:
    """α-Rank's stationary mass over the entries, the head-to-head table as the payoff table of
    a symmetric two-player meta-game. Where two added entries never met, over the pool only (the
    added entries' mass is None); None where even the pool has a pair that never met."""
    diff, _ = head_to_head(board)
    over = "all entries"
    used = list(range(len(diff)))
    if np.isnan(diff[np.ix_(used, used)][~np.eye(len(used), dtype=bool)]).any():
        over, used = "the pool", [i for i, e in enumerate(board["entries"]) if e["pool"]]
    payoff = np.where(np.eye(len(used), dtype=bool), 0.0, diff[np.ix_(used, used)])
    if np.isnan(payoff).any():
        return None
    from open_spiel.python.egt import alpharank

    with np.errstate(over="ignore"):  # exp(-m u) of a large u: the fixation probability is 0
        pi = alpharank.compute([payoff], m=ALPHARANK["m"], alpha=ALPHARANK["alpha"])[2]
    mass: list[float | None] = [None] * len(diff)
    for i, p in zip(used, pi):
        mass[i] = round(float(p), 6)
    return {**ALPHARANK, "payoff": "mean win-rate difference in the games where both sat",
            "over": over, "mass": mass}


# --------------------------------------------------------------------------- files
def output_paths(out: str | Path) -> tuple[Path, Path, Path]:
    """(X.json, X.md, X.png) for `out` X (a .json/.md/.png suffix is dropped)."""
    base = Path(out)
    if base.suffix.lower() in (".json", ".md", ".png"):
        base = base.with_suffix("")
    return base.with_suffix(".json"), base.with_suffix(".md"), base.with_suffix(".png")


def dumps(value, indent: int = 0) -> str:
    """JSON with one line per game, lineup and rating (lists of scalars, or of lists of scalars,
    stay on one line)."""
    pad, inner = " " * indent, " " * (indent + 1)

    def flat(v, depth=0):
        if isinstance(v, dict):
            return False
        if isinstance(v, list):
            return depth < 2 and all(flat(x, depth + 1) for x in v)
        return True

    if flat(value) or (isinstance(value, list) and not value) or value == {}:
        return json.dumps(value)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [f"{inner}{dumps(v, indent + 1)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def read_board(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no leaderboard at {str(path)!r}; build one first with "
                         "python -m training.leaderboard (or give --out)")
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{str(path)!r} is not a leaderboard's JSON: {err}") from err
    try:
        check_board(board)
    except ValueError as err:
        raise ValueError(f"{str(path)!r}: {err}") from err
    return board


def write_board(board: dict, out: str | Path) -> tuple[Path, Path, Path]:
    """Write X.json, X.md (keeping an existing page's notes) and X.png; returns the paths."""
    json_path, md_path, png_path = output_paths(out)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    notes = _notes(md_path)
    atomic.write_text(json_path, dumps(board) + "\n")
    atomic.write_text(md_path, format_markdown(board, notes, json_path))
    plot(board, png_path)
    return json_path, md_path, png_path


def _notes(md_path: Path) -> str:
    if not md_path.is_file():
        return ""
    text = md_path.read_text(encoding="utf-8")
    start, end = text.find(NOTES_BEGIN), text.find(NOTES_END)
    return text[start + len(NOTES_BEGIN):end].strip() if 0 <= start < end else ""


def ranked(board: dict) -> list[int]:
    """Entry indices by descending μ (then spec, for a stable order)."""
    entries = board["entries"]
    return sorted(range(len(entries)), key=lambda i: (-entries[i]["rating"]["mu"],
                                                      entries[i]["spec"]))


def build_command(board: dict, out: Path) -> str:
    """The command that rebuilds the pool of `board`."""
    p, cfg = board["protocol"], board["config"]
    pool = [e["spec"] for e in board["entries"] if e["pool"]]
    parts = ["python -m training.leaderboard"]
    if pool != list(DEFAULT_ENTRIES):
        parts.append(f"--entries {','.join(pool)}")
    if (cfg["num_players"], cfg["max_pips"]) != (4, 9):
        parts.append(f"--players {cfg['num_players']} --max-pips {cfg['max_pips']}")
    for option, value, default in (("deals", p["deals"], DEFAULT_DEALS),
                                   ("meetings", p["meetings"], DEFAULT_MEETINGS),
                                   ("seed", p["seed"], 0),
                                   ("bootstrap", p["bootstrap"], DEFAULT_BOOTSTRAP),
                                   ("cheap-games", p.get("cheap_games", 0), DEFAULT_CHEAP_GAMES)):
        if value != default:
            parts.append(f"--{option} {value}")
    json_path = output_paths(out)[0]
    if output_paths(DEFAULT_OUT)[0] != json_path:
        parts.append(f"--out {json_path}")
    return " ".join(parts + ["--workers 2", "--force"])


_GUIDE = """\
**How to read it.** Every entry is a policy spec (`cf_env.agents.policies`); search agents play
at the fixed budget their spec names (iterations for `ismcts`/`guided`, determinizations for
`lookahead`/`belief`). The rating is OpenSkill's Plackett-Luce μ (prior 25) from every single
round the entries played against each other, ranked by R13, averaged over bootstrap resamplings
of the deals (a single sequential pass depends on the order of the games). The interval is the
95% spread of those resamplings: two entries whose intervals overlap are not reliably ordered by
these games. σ is the model's own uncertainty after one pass (it shrinks with every game) and
the conservative rating μ − 3σ is what OpenSkill ranks by when it must be cautious. The win
rate is the mean share of games won (a shared win split) over all seats and lineups; parity is
1 / players, and it depends on the lineups an entry met, which the rating accounts for and the
win rate does not. Entries marked *added* were rated later against the frozen pool (their games
moved no pool rating).

**How to add an agent.** `python -m training.leaderboard --add SPEC` (e.g.
`--add ppo:checkpoints/my-agent` or `--add ismcts:1000`) plays SPEC in {meetings} round(s)
of matches, each round seating it once with every pool entry, {deals} duplicate deals a match
(more if it takes more to play as many games as the pool's entries of its kind){cheap}, and
rewrites these three files: the pool's ratings are unchanged; the newcomer gets a rating,
interval and counts of its own (its interval resamples its own deals, the pool's ratings taken as
exact). A spec already on the board is refused; `--replace` re-rates an
added entry. The spec must play this table (a checkpoint trained for another game is refused)
with a fixed budget (not `ms=`). A pool entry whose checkpoint has changed since the board was
built makes `--add` refuse: rebuild the board with the command below.
"""


def format_markdown(board: dict, notes: str = "", json_path: Path | None = None) -> str:
    cfg, p = board["config"], board["protocol"]
    entries = board["entries"]
    n = cfg["num_players"]
    json_path = Path(json_path or output_paths(DEFAULT_OUT)[0])
    games = sum(len(m["games"]) for m in board["matches"])
    lines = [
        "# Leaderboard",
        "",
        f"One rating for {len(entries)} agents at a {n}-player double-{cfg['max_pips']} table, "
        "single rounds, from mixed-lineup duplicate matches. Generated by "
        "`python -m training.leaderboard` (`training.evaluation.leaderboard`); the raw results "
        f"are in `{json_path.name}`.",
        "",
        _GUIDE.format(meetings=p["meetings"], deals=p["deals"], cheap=(
            f" (a bot or `ppo:` network then also meets the cheap entries until it has played "
            f"{p['cheap_games']} games, as they did)" if p.get("cheap_deals") else "")),
        "## Notes",
        "",
        NOTES_BEGIN,
        notes,
        NOTES_END,
        "",
        "## Ratings",
        "",
        f"![ratings]({json_path.with_suffix('.png').name})",
        "",
        "| # | entry | μ [95% bootstrap] | σ | μ − 3σ | matches | games | win rate | round points |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for place, i in enumerate(ranked(board), 1):
        e, r = entries[i], entries[i]["rating"]
        mark = "" if e["pool"] else " (*added*)"
        lines.append(
            f"| {place} | `{e['spec']}`{mark} | {r['mu']:.2f} [{r['ci_low']:.2f}, "
            f"{r['ci_high']:.2f}] | {r['sigma']:.2f} | {r['conservative']:.2f} | {e['matches']} "
            f"| {e['games']} | {e['win_rate']:.1%} | {e['round_points']:.1f} |")
    pool = [e for e in entries if e["pool"]]
    lines += [
        "",
        "## Protocol",
        "",
        f"* **Table**: {n} players, double-{cfg['max_pips']}, single rounds (R1–R13 with the "
        "default variants: config below).",
        f"* **Pool** ({len(pool)} entries): " + ", ".join(f"`{e['spec']}`" for e in pool) + ".",
        f"* **Schedule**: {len(board['schedule'])} matches of {n} distinct entries, seeded "
        f"(seed {p['seed']}), until every pair of entries had met at least {p['meetings']} "
        "times; the lineups are `schedule` in the JSON.",
        f"* **Deals**: {p['deals']} duplicate deals per match, each replayed {n} times with the "
        f"lineup rotated one seat (`training.evaluation.evaluate`): {games} games in all. Match "
        f"k's deals come from its own seed (`match_seed(seed, k)`), recorded in the JSON.",
        *([f"* **Cheap entries**: the bots and `ppo:` networks (played batched) then met in "
            f"{len(board.get('cheap_schedule', []))} matches of their own, {p['cheap_deals']} "
            f"deals each, so that each played at least {p['cheap_games']} games; the lineups "
            "are `cheap_schedule` in the JSON."] if p.get("cheap_deals") else []),
        f"* **Rating**: {p['rating']}. **Interval**: {p['interval']}, {p['bootstrap']} "
        f"replicates. **Conservative**: {p['conservative']}.",
        f"* **Additions**: {len(board['additions'])} entr{'y' if len(board['additions']) == 1 else 'ies'} "
        "rated against the frozen pool.",
        f"* **Config**: `{json.dumps(cfg)}`",
        "",
        "Rebuild it:",
        "",
        f"    {build_command(board, json_path)}",
        "",
        "## Which neighbours are separated",
        "",
        "Each pair of entries next to each other in the ranking: separated when their intervals "
        "are disjoint, or when the paired head-to-head test says so (the better one's win rate "
        "minus the other's, per deal where both sat, 95% Student-t interval over those deals, "
        "excluding 0). A pair that is not separated is not reliably ordered by these games; "
        "*reversed* marks a pair whose head-to-head test favours the lower-rated entry (the "
        "rating weighs every opponent each met, the test only their games together).",
        "",
        "| pair | intervals disjoint | head to head [95%] | deals | separated |",
        "| --- | --- | --- | --- | --- |",
        *[f"| `{entries[r['pair'][0]]['spec']}` > `{entries[r['pair'][1]]['spec']}` | "
          f"{'yes' if r['disjoint'] else 'no'} | "
          + ("–" if r["head_to_head"] is None else
             f"{100 * r['head_to_head']['mean']:+.1f} [{100 * r['head_to_head']['ci_low']:+.1f}, "
             f"{100 * r['head_to_head']['ci_high']:+.1f}]")
          + f" | {r['deals']} | **{'yes' if r['separated'] else 'no'}**"
          + (" (*reversed*)" if r["reversed"] else "") + " |"
          for r in separation(board)],
        "",
        "## Head to head",
        "",
        "Row minus column: the mean difference of their win rates, in points of percent, over the "
        "games where both sat (the payoff table of the second view).",
        "",
    ]
    order = ranked(board)
    diff, count = head_to_head(board)
    lines.append("| | " + " | ".join(str(k) for k in range(1, len(order) + 1)) + " |")
    lines.append("| --- |" + " --- |" * len(order))
    for place, i in enumerate(order, 1):
        cells = ["" if i == j or count[i, j] == 0 else f"{100 * diff[i, j]:+.1f}" for j in order]
        lines.append(f"| {place} `{entries[i]['spec']}` | " + " | ".join(cells) + " |")
    lines += ["", "## Second view: α-Rank", ""]
    view = board.get("alpharank")
    if view is None:
        lines.append("Not computed: some pair of entries never met.")
    else:
        mass = view["mass"]
        top = sorted((i for i in range(len(mass)) if mass[i] is not None), key=lambda i: -mass[i])
        over = view.get("over", "all entries")
        lines += [
            f"α-Rank (OpenSpiel, single population, m = {view['m']}, α = {view['alpha']:g}) over "
            f"the head-to-head table of {over}"
            + (" (two added entries never met)" if over == "the pool" else "")
            + " as a symmetric two-player meta-game. Its stationary mass "
            "sits on the entries no other entry beats; mass spread over several would show a "
            "cycle of strength that a scalar rating cannot express.",
            "",
            "| entry | α-Rank mass |",
            "| --- | --- |",
        ]
        lines += [f"| `{entries[i]['spec']}` | {mass[i]:.3f} |" for i in top if mass[i] >= 0.001]
        rest = sum(1 for i in top if mass[i] < 0.001)
        if rest:
            lines += ["", f"The other {rest} entries have less than 0.001 each."]
    return "\n".join(lines) + "\n"


def plot(board: dict, path: str | Path) -> None:
    """μ with its bootstrap interval per entry (best at the top), and the conservative rating."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = board["entries"]
    order = ranked(board)[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(order) + 1.4))
    for y, i in enumerate(order):
        r = entries[i]["rating"]
        color = "tab:blue" if entries[i]["pool"] else "tab:orange"
        # The interval is drawn on its own: a bootstrap's quantiles need not straddle μ.
        ax.plot([r["ci_low"], r["ci_high"]], [y, y], "-", color=color, linewidth=2)
        ax.plot([r["ci_low"], r["ci_high"]], [y, y], "|", color=color, markersize=8)
        ax.plot(r["mu"], y, "o", color=color)
        ax.plot(r["conservative"], y, "|", color="grey", markersize=10)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([entries[i]["spec"] + ("" if entries[i]["pool"] else " (added)")
                        for i in order], fontsize=8)
    cfg = board["config"]
    ax.set_xlabel("OpenSkill μ (dot), 95% bootstrap interval over deals (bar), μ − 3σ (grey tick)")
    ax.set_title(f"Leaderboard: {cfg['num_players']} players, double-{cfg['max_pips']}, "
                 "single rounds")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    with atomic.atomic_path(path) as temporary:
        fig.savefig(temporary, format="png", dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- the command
def main(argv: list[str] | None = None) -> dict:
    """The command; returns the board written."""
    parser = argparse.ArgumentParser(
        prog="python -m training.leaderboard",
        description="Rate bots, shipped agents and search agents in one OpenSkill rating from "
        "mixed-lineup duplicate matches, or (--add) rate one more agent against the frozen pool.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--add", default=None, metavar="SPEC",
                        help="rate SPEC against the board's frozen pool (read from --out) "
                        "instead of building a board; the other entries are left unchanged")
    parser.add_argument("--render", action="store_true",
                        help="rewrite X.md and X.png from X.json (nothing is played; the JSON is "
                        "left as it is), e.g. after editing the page's notes")
    parser.add_argument("--replace", action="store_true",
                        help="with --add: re-rate a spec that was added before")
    parser.add_argument("--entries", default=None,
                        help=f"comma-separated specs of the pool (default: {','.join(DEFAULT_ENTRIES)})")
    parser.add_argument("--players", type=int, default=None, help="players at the table (default 4)")
    parser.add_argument("--max-pips", type=int, default=None, help="double-N set (default 9)")
    parser.add_argument("--deals", type=int, default=None,
                        help=f"duplicate deals per match (default {DEFAULT_DEALS})")
    parser.add_argument("--meetings", type=int, default=None,
                        help=f"times every pair of entries meets, at least (default {DEFAULT_MEETINGS})")
    parser.add_argument("--cheap-games", type=int, default=None, metavar="N",
                        help="after the pool's schedule, the cheap entries (bots and ppo: "
                        "networks, played batched) play matches among themselves until each has "
                        f"played at least N games (default {DEFAULT_CHEAP_GAMES}: none); a cheap "
                        "--add newcomer then gets as many")
    parser.add_argument("--seed", type=int, default=None, help="master seed (default 0)")
    parser.add_argument("--bootstrap", type=int, default=None,
                        help=f"bootstrap replicates of the interval (default {DEFAULT_BOOTSTRAP})")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes per match (the results do not depend on it)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="X: writes X.json, X.md, X.png (with --add: reads X.json too)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite an existing board when building one")
    args = parser.parse_args(argv)
    limit_threads()
    paths = output_paths(args.out)
    if args.render:
        try:
            if args.add is not None or args.entries is not None:
                raise ValueError("--render plays nothing: give it without --add or --entries")
            board = read_board(paths[0])
            _, md_path, png_path = paths
            atomic.write_text(md_path, format_markdown(board, _notes(md_path), paths[0]))
            plot(board, png_path)
        except (ValueError, OSError) as err:
            fail(err, 2)
        print(f"wrote {md_path}, {png_path}")
        return board
    try:
        if args.add is not None:
            given = [f"--{name.replace('_', '-')}" for name in
                     ("entries", "players", "max_pips", "deals", "meetings", "seed", "bootstrap",
                      "cheap_games")
                     if getattr(args, name) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} cannot be given with --add: a newcomer is "
                                 "rated under the board's own table and protocol")
            board = read_board(paths[0])
        else:
            if args.replace:
                raise ValueError("--replace goes with --add SPEC (it re-rates an added entry)")
            existing = [str(p) for p in paths if p.is_file()]
            if existing and not args.force:
                raise ValueError(f"{', '.join(existing)} already exist(s); pass --force to "
                                 "rebuild the board, --add SPEC to add an entry to it, or give "
                                 "another --out (nothing was written)")
            specs = (list(DEFAULT_ENTRIES) if args.entries is None
                     else [s.strip() for s in args.entries.split(",") if s.strip()])
            config = ChickenFootConfig(num_players=4 if args.players is None else args.players,
                                       max_pips=9 if args.max_pips is None else args.max_pips,
                                       num_rounds=1)
            _check_entries(specs, config)
        started = time.perf_counter()
        if args.add is not None:
            board = add_entry(board, args.add, workers=args.workers, replace=args.replace)
        else:
            board = build(specs, config,
                          deals=DEFAULT_DEALS if args.deals is None else args.deals,
                          meetings=DEFAULT_MEETINGS if args.meetings is None else args.meetings,
                          seed=0 if args.seed is None else args.seed,
                          bootstrap=DEFAULT_BOOTSTRAP if args.bootstrap is None else args.bootstrap,
                          workers=args.workers,
                          cheap_games=(DEFAULT_CHEAP_GAMES if args.cheap_games is None
                                       else args.cheap_games))
    except (ValueError, OSError) as err:
        fail(err, 2)
    except (PolicyError, WorkerDiedError) as err:
        fail(err, 1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    written = write_board(board, args.out)
    print(f"{len(board['entries'])} entries in {time.perf_counter() - started:.0f} s; wrote "
          f"{', '.join(map(str, written))}")
    return board
