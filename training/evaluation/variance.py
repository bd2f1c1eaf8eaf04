"""Variance-reduced estimates of an evaluation: control variates on the draws, AIVAT-style.

Luck in a round of Chicken Foot comes from two chance events: the deal (each seat's hand, and
the tiles R5's search for the start double draws) and every draw from the boneyard (R8).
`training.evaluation.evaluate` already removes most of the deal's luck by duplicate rotation;
this module removes the draws' luck, following AIVAT (Burch, Schmid, Moravcik, Morrill and
Bowling, "AIVAT: a new variance reduction technique for agent evaluation in imperfect
information games", AAAI 2018, the estimator DeepStack was evaluated with).

**The estimator.** Let V(h, s) be any fixed function of a full-information position h and a
seat s. At each draw of a game, let h·c be the position right after tile c is drawn, for every
tile c that could come. Seat s's correction for the game is

    D_s = sum over the game's draws of [ V(h·c_drawn, s) - mean over c in the boneyard of V(h·c, s) ].

Given everything that happened before a draw, the tile drawn is uniform over the tiles still in
the boneyard: the boneyard's order is a uniform shuffle fixed at the deal, and no policy sees it
(`cf_env.agents.arena` hands policies observations only). So each bracket has mean exactly zero
given the history, whatever V is and whatever the policies do, and so has D_s: for any per-deal
quantity y (a policy's win rate, its mean round score, a difference of two policies'), y - b D
has the mean of y for any coefficient b fixed independently of the deal. `cross_fitted` fits b
by least squares on the other half of the deals (even deals use the odd deals' b and vice versa),
so the estimate stays exactly unbiased while b is near the variance-minimising one.

**V** is a checkpoint's value head (`cf_env.agents.checkpoint.ValueHead`, the shipped agent's
`value.npz`): the privileged critic, which reads a seat's observation and the hidden tiles (the
opponents' hands and the boneyard as a set, not its order), and predicts that seat's round reward
under self-play of the checkpoint's actor. Its accuracy decides how much luck is removed, never
whether the estimate is unbiased. Every seat's value is read at every draw, the drawer's and the
others', so each policy of a lineup gets its own correction.

**The deal is left to duplicate rotation.** An exact expectation over deals is out of reach, but
it is not needed: the rotations of one deal start from the same position h0 (the same hands at
the same seats, the start double placed), so a deal term for a policy would be the mean of
V(h0, s) over the seats s it held across the rotation, the same number for every policy of the
lineup (each holds each seat equally often), and, V being a zero-sum reward's value, close to a
constant. Subtracting it would change nearly nothing; leaving it out keeps the estimate unbiased
with no baseline to estimate.

**Decisions need no correction for unbiasedness.** AIVAT also corrects the players' own
stochastic choices, which needs their action probabilities; each correction term has mean zero
on its own, so leaving those out keeps the estimate unbiased and only leaves that part of the
luck in. The shipped agents play argmax and have none; the bots' random tie-breaks (`greedy`,
`heuristic`) and `random` keep theirs.

**The positions h·c are built, not played.** After the real draw (c_drawn), the position for
another tile c differs only where the tile is: the drawer's hand and the boneyard swap c_drawn
and c, and so does the drawer's "drawn tile" piece; every count, the voids the draw revealed and
the seat to move stay the same (a draw ends the round only when it empties the boneyard, and a
boneyard of one tile has no other outcome, so such a draw needs no term). `DrawCorrector`
therefore encodes each seat's observation and privileged vector once after the real draw and
flips those bits per outcome (`outcome_rows`). No engine copy per outcome, and no full first
layer either: a row's first-layer sum is the real draw's plus the weight columns of the few bits
it flips (`first_layer`), and the rest of the network runs once per deal over every outcome of
every draw of its games. tests/training/test_variance_reduction.py checks the built rows bit
for bit against an engine stepped through each outcome (`set_next_draws`), and the first-layer
shortcut against the full pass.

The variant `draw_until_playable` (one DRAW action draws until a tile fits) is refused: its
draws are several chance events inside one action, which the replay does not see apart.

What it measured, with the commands: docs/variance-reduction.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from threadpoolctl import ThreadpoolController

from cf_env.agents.checkpoint import ValueHead
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from training.evaluation.stats import difference_ci, mean_ci

CORRECTED_METRICS = ("win_rate", "round_score")  # what `evaluate(variance_reduction=...)` corrects
FOLDS = 2  # cross-fitting: deal d's coefficient is fitted on the deals of the other parity
_BLAS = ThreadpoolController()


class DrawCorrector:
    """Each seat's draw correction D_s (module docstring) for games of `config`, with `value`.

    `deal_terms(engine_seed, games)` replays each game's actions from its seed (the evaluation
    engine's games: `Engine.reset(engine_seed)`, then every action of `Engine.history`) and
    returns an array (games, num_players) of D_s per game and seat."""

    def __init__(self, config: ChickenFootConfig, value: ValueHead, context_size: int = 0):
        if config.draw_until_playable:
            raise ValueError(
                "variance reduction corrects one chance event per DRAW action; with "
                "draw_until_playable=True one DRAW draws until a tile fits (several chance "
                "events), which it does not support: evaluate without variance_reduction, or "
                "with draw_until_playable=False"
            )
        self.config = config
        self.value = value
        self.encoder = Encoder(config)
        obs, priv = self.encoder.layout, self.encoder.privileged_layout
        if value.input_size != obs.size + priv.size + context_size:
            raise ValueError(
                f"the value head takes {value.input_size} inputs; games of {_table(config)} have "
                f"an observation and a privileged vector of {obs.size} + {priv.size}: use the "
                "value head of a checkpoint trained for this table"
            )
        self.obs_size, self.width = obs.size, obs.size + priv.size + context_size
        self.priv_stop = obs.size + priv.size  # then `context_size` columns of `context`
        # Each seat's context columns (num_players, context_size), the same at every position of
        # a game: `training.evaluation.aivat` writes there who sits where.
        self.context = np.zeros((config.num_players, context_size), np.float32)
        self._hand = obs.slices["hand"].start
        self._drawn = obs.slices["drawn_tile"].start
        self._opponents = obs.size + priv.slices["opponent_hands"].start
        self._boneyard = obs.size + priv.slices["boneyard"].start
        self._engine = Engine(config, seed=0)
        self.draws = 0  # draws with more than one possible tile, corrected so far

    def _after_draw(self, engine: Engine, caller: str) -> tuple[int, np.ndarray, np.ndarray]:
        """The drawer, the possible tiles (the one drawn first, then the boneyard's in its
        order) and every seat's real row (num_players, value inputs) after the draw."""
        drawer, drawn = engine.current, engine.drawn_tile
        if drawn < 0:
            raise ValueError(f"{caller} needs an engine right after a DRAW (no tile was drawn)")
        outcomes = np.array([drawn, *engine.boneyard], dtype=np.int64)
        base = np.empty((self.config.num_players, self.width), dtype=np.float32)
        for seat in range(self.config.num_players):
            self.encoder.observe(engine, seat, out=base[seat, : self.obs_size])
            self.encoder.privileged(engine, seat, out=base[seat, self.obs_size : self.priv_stop])
        base[:, self.priv_stop :] = self.context
        return drawer, outcomes, base

    def _holder_blocks(self, drawer: int) -> list[tuple[int, tuple[int, ...]]]:
        """(seat, starts of its T-bit blocks) where seat sees the drawn tile in the drawer's
        hand: the drawer's own hand and drawn tile; every other seat's privileged opponents'
        hands, left neighbour first, the drawer (drawer - seat) mod n - 1 places along. The
        boneyard's block, which every seat has, is apart."""
        n, count = self.config.num_players, self.config.num_tiles
        return [(drawer, (self._hand, self._drawn))] + [
            (seat, (self._opponents + ((drawer - seat) % n - 1) * count,))
            for seat in range(n) if seat != drawer]

    def outcome_rows(self, engine: Engine) -> np.ndarray:
        """Rows (K, num_players, value inputs) for an engine right after a DRAW: row [k, s] is
        seat s's observation and privileged vector had the k-th possible tile been drawn (k = 0:
        the tile drawn, then the boneyard's tiles in its order), as the engine would encode it."""
        drawer, outcomes, base = self._after_draw(engine, "outcome_rows")
        drawn = outcomes[0]
        rows = np.repeat(base[None], outcomes.size, axis=0)
        k = np.arange(outcomes.size)
        for seat, starts in self._holder_blocks(drawer):  # the outcome's tile held, not drawn's
            for start in starts:
                rows[:, seat, start + drawn] = 0.0
                rows[k, seat, start + outcomes] = 1.0
        # Everyone's privileged boneyard: the drawn tile is back in it, the outcome's is out.
        rows[:, :, self._boneyard + drawn] = 1.0
        rows[k, :, self._boneyard + outcomes] = 0.0
        return rows

    def first_layer(self, engine: Engine) -> np.ndarray:
        """The value head's first-layer pre-activations (K, num_players, hidden) of the rows
        `outcome_rows(engine)` would build: each seat's row after the real draw goes through the
        layer once, and each other outcome adds the weight columns of its flipped bits (the
        same sums in another order: equal to the full product to float32 rounding)."""
        drawer, outcomes, base = self._after_draw(engine, "first_layer")
        drawn = outcomes[0]
        weights, bias = self.value.layers[0]  # (inputs, hidden): rows of the transposed W0
        pre = np.repeat((base @ weights + bias)[None], outcomes.size, axis=0)

        def swap(start: int) -> np.ndarray:  # the tile at `start` + drawn becomes the outcome's
            return weights[start + outcomes] - weights[start + drawn]

        back = -swap(self._boneyard)  # everyone's boneyard: the drawn tile in, the outcome's out
        pre += back[:, None, :]
        for seat, starts in self._holder_blocks(drawer):
            pre[:, seat] += sum(swap(start) for start in starts)
        return pre

    def outcome_values(self, pre: np.ndarray) -> np.ndarray:
        """The value head's values from first-layer pre-activations (..., hidden) -> (...)."""
        head = self.value
        x = head.activation(pre)
        for W, b in head.layers[1:-1]:
            x = head.activation(x @ W + b)
        W, b = head.layers[-1]
        return (x @ W + b)[..., 0]

    def game_rows(self, engine_seed: int, actions: Sequence[int],
                  scores: Sequence[Sequence[int]] | None = None) -> list[np.ndarray]:
        """`first_layer` of every draw of one game (those with more than one possible tile),
        replayed from `engine_seed` and `actions`; `scores`, if given, must be what the replay
        scores (a check that it is the game that was played)."""
        engine, draw = self._engine, self.config.draw_action
        engine.reset(engine_seed)
        blocks = []
        for action in actions:
            several = action == draw and len(engine.boneyard) >= 2
            engine.step(int(action))
            if several:
                blocks.append(self.first_layer(engine))
        if scores is not None and [list(s) for s in scores] != engine.scores:
            raise RuntimeError(
                f"variance reduction replayed the game of engine seed {engine_seed} and got "
                f"scores {engine.scores}, not the {[list(s) for s in scores]} played"
            )
        return blocks

    def deal_terms(self, engine_seed: int, games: Sequence[Sequence[int]],
                   scores: Sequence | None = None) -> np.ndarray:
        """(len(games), num_players): D_s of each game (its actions) of one deal, with one value
        pass (after the first layer) over every outcome of every draw of them."""
        n = self.config.num_players
        terms = np.zeros((len(games), n))
        with _BLAS.limit(limits=1, user_api="blas"):  # the same sums in any process
            blocks = [(g, pre) for g, actions in enumerate(games)
                      for pre in self.game_rows(engine_seed, actions,
                                                None if scores is None else scores[g])]
            if not blocks:
                return terms
            flat = np.concatenate([pre.reshape(-1, pre.shape[-1]) for _, pre in blocks])
            values = self.outcome_values(flat).astype(np.float64)
        at = 0
        for g, pre in blocks:
            size = pre.shape[0] * n
            v = values[at : at + size].reshape(pre.shape[0], n)
            at += size
            terms[g] += v[0] - v.mean(axis=0)
        self.draws += len(blocks)
        return terms


def cross_fitted(y: np.ndarray, control: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """(y - b D per deal, [b of each fold]): deal d's b is the least-squares slope of y on the
    control D over the deals of the other folds (d mod `FOLDS` differs), so b never depends on
    deal d itself and the corrected mean keeps y's expectation (E[D] = 0). A fold whose
    complement has no spread in D gets b = 0."""
    corrected, coefficients = cross_fitted_multi(y, np.asarray(control, np.float64)[:, None])
    return corrected, [b for (b,) in coefficients]


def cross_fitted_multi(y: np.ndarray, controls: np.ndarray) -> tuple[np.ndarray, list[list[float]]]:
    """`cross_fitted` with several controls (deals, k): deal d's coefficients are the
    least-squares ones of y on the controls over the deals of the other folds (the minimum-norm
    solution: 0 for a control without spread there)."""
    y, controls = np.asarray(y, np.float64), np.asarray(controls, np.float64)
    fold = np.arange(y.size) % FOLDS
    corrected, coefficients = y.copy(), []
    for f in range(FOLDS):
        other = fold != f
        c, t = controls[other], y[other]
        cc = c - c.mean(axis=0)
        b, *_ = np.linalg.lstsq(cc, t - t.mean(), rcond=None)
        corrected[fold == f] -= controls[fold == f] @ b
        coefficients.append([float(x) for x in b])
    return corrected, coefficients


def variance_ratio(plain: np.ndarray, corrected: np.ndarray) -> float:
    """Var(plain) / Var(corrected) over deals: how many times the deals the plain estimate needs
    for the interval half-width the corrected one has (inf when the corrected one has none,
    1.0 when neither has any)."""
    a, b = float(np.var(plain, ddof=1)), float(np.var(corrected, ddof=1))
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return a / b


def corrected_estimates(value_path: str, labels: Sequence[str], per_deal: dict[str, np.ndarray],
                        controls: np.ndarray, num_players: int) -> dict:
    """The `"variance_reduction"` entry of an evaluation's result: for each policy (and each of
    the agent's differences) the corrected mean of each of `CORRECTED_METRICS` with its 95%
    interval over deals, the fitted coefficients and the variance ratio; and each policy's
    control D (its mean over deals is an estimate of zero: its interval should contain 0).

    `per_deal[m]` is (deals, policies) as `evaluate` aggregates it; `controls` the same shape,
    each policy's D averaged over the games and seats it held in the deal's rotation."""
    policies = []
    for i, label in enumerate(labels):
        entry: dict = {"name": label}
        for m in CORRECTED_METRICS:
            entry[m] = _corrected(m, per_deal[m][:, i], controls[:, i], num_players, False)
        entry["control"] = mean_ci(controls[:, i])
        policies.append(entry)
    differences = []
    for j in range(1, len(labels)):
        diff: dict = {"agent": labels[0], "opponent": labels[j]}
        control = controls[:, 0] - controls[:, j]
        for m in CORRECTED_METRICS:
            diff[m] = _corrected(m, per_deal[m][:, 0] - per_deal[m][:, j], control, num_players,
                                 True)
        differences.append(diff)
    return {
        "value_head": value_path,
        "metrics": list(CORRECTED_METRICS),
        "policies": policies,
        "differences": differences,
        "method": {
            "control": "per game and seat, the sum over the draws (R8) of V(after the tile "
            "drawn) - mean of V(after each tile the boneyard held); V is the value head's value "
            "for that seat; a policy's control is its mean over the games and seats it held in "
            "the deal's rotation, and has mean exactly zero",
            "deal": "not corrected: duplicate rotation replays it with every policy on every seat",
            "decisions": "not corrected (the policies' own randomness, e.g. bots' tie-breaks, "
            "stays in the estimate)",
            "estimate": "per deal: value - b * control, b the least-squares slope fitted on the "
            f"deals of the other parity ({FOLDS}-fold cross-fitting), so the mean stays unbiased",
            "interval": "95% Student-t over the corrected per-deal values, clipped to the "
            "metric's range",
            "variance_ratio": "variance of the plain per-deal values / of the corrected ones: "
            "the plain estimate needs this many times the deals for the same half-width",
        },
    }


def _corrected(metric: str, y: np.ndarray, control: np.ndarray, num_players: int,
               difference: bool) -> dict:
    corrected, coefficients = cross_fitted(y, control)
    if difference:
        interval = difference_ci(metric, corrected, num_players)
    else:
        interval = mean_ci(corrected, bounds=(0.0, 1.0 if metric == "win_rate" else math.inf))
    return {**interval, "coefficients": coefficients,
            "variance_ratio": variance_ratio(y, corrected)}


def _table(config: ChickenFootConfig) -> str:
    return f"{config.num_players} players, double-{config.max_pips}"
