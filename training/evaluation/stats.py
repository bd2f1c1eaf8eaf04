"""The statistics of an evaluation (`training.evaluation.evaluate`): each game's metrics per seat,
Student-t confidence intervals (Wilson score intervals for win rates), fractional ranks and
OpenSkill ratings.

Every interval stays inside the values its metric can take: a win rate's is a Wilson score
interval (`proportion_ci`), which never leaves [0, 1]; any other mean's is Student-t, clipped to
the metric's range when it has one (`mean_ci(bounds=...)`: a rank lies in 1..players, a
difference of win rates in -1..1).

The metrics (`METRICS`, described in `METRIC_DOCS`) are read from a played game's scores and
winners (`game_values`); the intervals and ratings are computed over them. Pure Python + numpy
(scipy is not a dependency): the t quantile is found by bisection on the t CDF, which is computed
from the regularized incomplete beta function (continued fraction, as in Numerical Recipes
§6.4). Accurate to ~1e-10, far below what a confidence interval needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from cf_env.core.config import ChickenFootConfig
from cf_env.core.scoring import r13_key

METRICS = ("win_rate", "round_score", "game_total", "rank")
METRIC_DOCS = {
    "win_rate": "share of games won (R13; a shared win is split), per seat held",
    "round_score": "mean points left in hand per round (R12; lower is better)",
    "game_total": "mean game total (sum of round points; lower is better)",
    "rank": "mean finishing rank, 1 = best (R13 order; tied seats share ranks)",
}


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1; got {x}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # The continued fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with `df` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (0.5 < p < 1), by bisection on `t_cdf`."""
    if not 0.5 < p < 1.0:
        raise ValueError(f"t_quantile needs 0.5 < p < 1; got {p}")
    if df <= 0:
        raise ValueError(f"t_quantile needs df > 0; got {df}")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95,
            bounds: tuple[float, float] | None = None) -> dict[str, float]:
    """Mean and two-sided Student-t confidence interval: {"mean", "ci_low", "ci_high"}.

    The values are treated as independent samples (here: one per duplicate deal). `bounds`
    (low, high), the range the metric can take, clips the interval to it: with few samples a
    t-interval of a bounded mean can reach past what is possible.
    """
    x = _samples(values, level)
    mean = float(x.mean())
    half = t_quantile(0.5 + level / 2.0, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return {"mean": mean, "ci_low": low, "ci_high": high}


def proportion_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> dict[str, float]:
    """Mean and Wilson score interval of per-sample shares in [0, 1] (a win rate per deal):
    {"mean", "ci_low", "ci_high"}, the interval always inside [0, 1].

    A deal's share is a mean over its games (and a shared win is split), so the samples are not
    0/1 trials; the interval is Wilson's at the effective sample size that the samples' own
    variance gives, n_eff = p(1 - p) / SE² (SE: the standard error of the mean; n itself when
    every sample is equal, e.g. no win at all), with the t quantile for n - 1 degrees of
    freedom. For many deals and a share away from 0 and 1 it is the Student-t interval; near 0
    and 1, and for few deals, it stays inside [0, 1] where a t-interval would not.
    """
    x = _samples(values, level)
    if x.min() < 0.0 or x.max() > 1.0:
        raise ValueError(f"proportion_ci needs values in [0, 1]; got {x.min()} .. {x.max()}")
    n, p = x.size, float(x.mean())
    z = t_quantile(0.5 + level / 2.0, n - 1)
    variance = float(x.var(ddof=1)) / n  # of the mean
    n_eff = p * (1.0 - p) / variance if variance > 0.0 and 0.0 < p < 1.0 else float(n)
    z2 = z * z / n_eff
    centre = (p + z2 / 2.0) / (1.0 + z2)
    half = z * math.sqrt(p * (1.0 - p) / n_eff + z2 / (4.0 * n_eff)) / (1.0 + z2)
    low = 0.0 if p == 0.0 else max(0.0, centre - half)  # (exact at the ends, not 1e-16 off)
    high = 1.0 if p == 1.0 else min(1.0, centre + half)
    return {"mean": p, "ci_low": low, "ci_high": high}


def metric_ci(metric: str, values, num_players: int) -> dict[str, float]:
    """The interval of one metric of `METRICS` over per-deal values: Wilson for the win rate,
    Student-t clipped to the metric's range for the others (points are >= 0, ranks 1..n)."""
    if metric == "win_rate":
        return proportion_ci(values)
    bounds = (1.0, float(num_players)) if metric == "rank" else (0.0, math.inf)
    return mean_ci(values, bounds=bounds)


def difference_ci(metric: str, values, num_players: int) -> dict[str, float]:
    """The interval of per-deal differences (agent minus opponent) of one metric: Student-t,
    clipped to the range a difference can take (-1..1 for win rates, -(n-1)..n-1 for ranks)."""
    most = {"win_rate": 1.0, "rank": float(num_players - 1)}.get(metric, math.inf)
    return mean_ci(values, bounds=(-most, most))


def _samples(values, level: float) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"a confidence interval needs at least 2 values; got {x.size}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level}")
    return x


def fractional_ranks(keys: Sequence) -> list[float]:
    """1-based ranks, lower key = better; tied keys share the mean of the ranks they span."""
    ranks = []
    for key in keys:
        better = tied = 0
        for other in keys:
            if other < key:
                better += 1
            elif other == key:
                tied += 1
        ranks.append(1.0 + better + (tied - 1) / 2.0)
    return ranks


def seat_keys(config: ChickenFootConfig, scores: list[list[int]]) -> list[tuple]:
    """Sort keys per seat in R13 order (lower is better): the engine's own standing."""
    return [r13_key(rows, config.tie_break) for rows in scores]


def game_values(config: ChickenFootConfig, game: dict) -> dict[str, list[float]]:
    """Each metric of `METRICS` per seat for one game (`{"scores": ..., "winners": ...}`)."""
    scores, winners = game["scores"], game["winners"]
    n = len(scores)
    totals = [float(sum(rows)) for rows in scores]
    # One round: R13's key (`r13_key`) is ordered, and equal, as the round's points are.
    one_round = all(len(rows) == 1 for rows in scores)
    keys = totals if one_round else seat_keys(config, scores)
    share = 1.0 / len(winners) if winners else 0.0
    return {
        "win_rate": [share if seat in winners else 0.0 for seat in range(n)],
        "round_score": [totals[seat] / len(scores[seat]) for seat in range(n)],
        "game_total": totals,
        "rank": fractional_ranks(keys),
    }


def openskill_ratings(
    labels: list[str], owners: list[int], games: list[tuple[int, dict]]
) -> list[dict]:
    """OpenSkill Plackett-Luce ratings over every game, in deal order (deterministic).

    Every seat is a separate entrant ranked by its R13 rank; a policy holding several seats
    enters with its rating on each and then takes the mean of its seats' updated mu and sigma.
    Each game is rated by `PlackettLuceUpdate`, which gives `PlackettLuce().rate`'s numbers bit
    for bit at a fraction of its cost (tests/training/test_evaluate_batched.py compares them).
    """
    update = PlackettLuceUpdate()
    ratings = [(update.mu, update.sigma) for _ in labels]
    for _, game in games:
        seats = [owners[slot] for slot in game["slots"]]
        updated = update.rate([ratings[i] for i in seats], seats, list(game["rank"]))
        for i in set(seats):
            mine = [rating for rating, owner in zip(updated, seats) if owner == i]
            ratings[i] = (sum(mu for mu, _ in mine) / len(mine),
                          sum(sigma for _, sigma in mine) / len(mine))
    return [
        {"name": label, "mu": mu, "sigma": sigma, "ordinal": mu - 3.0 * sigma}
        for label, (mu, sigma) in zip(labels, ratings)
    ]


class PlackettLuceUpdate:
    """One game's update of OpenSkill's `PlackettLuce` model with its defaults (Weng and Lin's
    Algorithm 4: one player per team, ranks given, no weights, no scores), operation for
    operation as `openskill.models.PlackettLuce.rate` computes it, without its per-call
    copies and checks.

    Its parameters are read from `PlackettLuce()` (with `tau`, `PlackettLuce(tau=tau)`: the
    standard deviation added to every entrant's sigma before each game, OpenSkill's model of a
    skill that drifts; 0 models a fixed skill). As in `rate`, entrants that are one rating object
    (`identity[j]` equal: a policy on several seats, whose one rating is deep-copied once per
    call) share one copy: the tau correction is applied to it once per seat, and each seat's
    update starts from what the previous seats wrote into it."""

    def __init__(self, tau: float | None = None):
        from openskill.models import PlackettLuce

        model = PlackettLuce() if tau is None else PlackettLuce(tau=tau)
        if (model.margin, model.limit_sigma, model.balance) != (0.0, False, False):
            raise ValueError("PlackettLuceUpdate follows the default PlackettLuce model only")
        self.mu, self.sigma = model.mu, model.sigma
        self.beta, self.kappa, self.tau = model.beta, model.kappa, model.tau

    def rate(self, ratings: list[tuple[float, float]], identity: list, ranks: list[float]
             ) -> list[tuple[float, float]]:
        """The updated (mu, sigma) of each entrant of one game, in the order given."""
        copies: dict = {}  # identity -> [mu, sigma]: `rate`'s deep copy of the teams
        players = [copies.setdefault(key, list(rating)) for key, rating in zip(identity, ratings)]
        tau_squared = self.tau * self.tau
        for player in players:  # once per seat, shared copies included (as `rate` does)
            player[1] = math.sqrt(player[1] * player[1] + tau_squared)
        order = sorted(range(len(ranks)), key=lambda j: ranks[j])  # stable, as `rate`'s unwind
        team = [players[j] for j in order]
        rank = [int(r) for r in sorted(ranks)]
        mu = [0.0 + p[0] * 1.0 for p in team]  # the team sums of one player, balance weight 1
        sigma_squared = [0.0 + (p[1] * 1.0) ** 2 for p in team]
        k = len(team)
        beta_squared = self.beta ** 2
        collective = 0.0
        for t in range(k):
            collective += sigma_squared[t] + beta_squared
        c = math.sqrt(collective)
        sum_q = [0.0] * k
        for i in range(k):
            summed = math.exp(mu[i] / c)
            for q in range(k):
                if rank[i] >= rank[q]:
                    sum_q[q] += summed
        a = [rank.count(r) for r in rank]
        for i in range(k):
            omega = delta = 0.0
            i_mu_over_c = math.exp(mu[i] / c)
            for q in range(k):
                share = i_mu_over_c / sum_q[q]
                if rank[q] <= rank[i]:
                    delta += share * (1 - share) / a[q]
                    if q == i:
                        omega += (1 - share) / a[q]
                    else:
                        omega -= share / a[q]
            omega *= sigma_squared[i] / c
            delta *= sigma_squared[i] / c ** 2
            delta *= math.sqrt(sigma_squared[i]) / c
            player = team[i]
            new_mu, new_sigma = player
            if omega >= 0:
                new_mu += (new_sigma ** 2 / sigma_squared[i]) * omega * 1.0
                new_sigma *= math.sqrt(max(1 - (new_sigma ** 2 / sigma_squared[i]) * delta * 1.0,
                                           self.kappa))
            else:
                new_mu += (new_sigma ** 2 / sigma_squared[i]) * omega / 1.0
                new_sigma *= math.sqrt(max(1 - (new_sigma ** 2 / sigma_squared[i]) * delta / 1.0,
                                           self.kappa))
            player[0], player[1] = new_mu, new_sigma
        # `rate` then moves tied teams to their mean change: a no-op there (it compares each
        # updated rating with itself), so nothing is done here.
        return [(p[0], p[1]) for p in players]
