"""AIVAT-complete variance reduction: action terms, and a value made for the lineup evaluated.

`training.evaluation.variance` corrects the draws with the shipped critic. This module adds the
two things its page found missing (docs/variance-reduction.md), for
`evaluate(variance_reduction="fit")` (CLI `--variance-reduction fit`): each game's draw terms
and action terms (`TERM_COLUMNS`) are computed in the block that played it (`block_terms`),
by `RolloutCorrector` or `AivatCorrector` (`make_corrector`), and `aivat_estimates` turns them
into the result's entry.

**Action terms.** A policy that draws its action at random from a distribution it can name
(`action_distribution`: the bots' `choices(observation)`, the actions `act` picks from
uniformly, every legal action for `random`; a sampling `NumpyPolicy`, the softmax of its masked
logits) is a chance event like a draw. At such a decision of seat p, with the actions A it
could draw and their probabilities p(a), seat s's term is

    V(h·a_taken, s) - sum over a in A of p(a) V(h·a, s),

which has mean exactly zero given the position: the policy's generator, not the game, picks a.
The term is computed at every such decision, whatever was taken (a `random` seat's DRAW then
also gets its draw term). A decision with one possible action contributes nothing; a policy
with no known distribution (a `ppo:` network plays argmax) is never corrected. Terms left out
cost variance, never bias.

**The rollout value** (`value_model="rollout"`, the default; `RolloutCorrector`). V(h·o, s) is
seat s's win share (and, for the round score, its R12 points) at the round's end when the
position after outcome o is played out by the lineup itself: each seat by its policy (a
compiled bot's twin by the compiled bot, a greedy network by itself, batched over every
outcome's rollouts; anything else by the heuristic), `rollouts` times, on the kernel
(`training.evaluation.rollout`, which says why its draw outcomes read the real boneyard order
with the outcome's tile swapped to the front and still give terms of mean exactly zero). Its
tie-breaks draw from a stream of its own per game (`rollout_seed`, then per event and outcome).
The k-th draw term of a game (k = 0, 1, ...) is weighted 1 / (k + 1) (`DRAW_WEIGHTING`): the
history fixes the weight, so the term keeps its zero mean. Nothing is fitted: no calibration
deals.

**A value fitted for evaluation** (`value_model` "ridge" or "mlp"). V is fitted on calibration deals: the same lineup, played
as the evaluation plays it (duplicate rotation, the per-game path), on deals of a seed stream
disjoint from the measured ones (`calibration_seed`). At a few positions of each calibration
game (`POSITIONS_PER_GAME`, after a random action), each seat's row, its observation and
privileged vector (`Encoder.observe`, `Encoder.privileged`, as the critic reads them) and the
lineup's context (one-hot of the policy at each seat, counted from the seat itself), is paired
with that seat's win share of the game (R13; the corrected metric). `fit_value` fits a ridge
regression or a small MLP (`MODELS`) on it and returns a `FittedValue`, which reads rows as
`cf_env.agents.checkpoint.ValueHead` does, so `DrawCorrector`'s first-layer shortcut serves it.
V is fixed before the first measured deal, so every term keeps its zero mean. `calibrate` keeps
the last `HELD_OUT` of the calibration deals out of the fit and reports R² on them.

**Estimate.** Each policy gets two controls per deal and metric, its draw terms and its action
terms (each averaged over the games and seats it held; `METRIC_COLUMNS`: V of the win share for
the win rate, of the points for the round score, where the value has them); y - b·(D_draw,
D_action) with b the
least-squares coefficients fitted on the other half of the deals (`cross_fitted_multi`, as
`variance.cross_fitted` does with one control), which keeps the estimate exactly unbiased. The
result also reports the variance ratio with each control alone (`terms`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from cf_env.agents.checkpoint import mlp_forward
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from training.evaluation.stats import difference_ci, game_values, mean_ci
from training.evaluation.variance import (
    CORRECTED_METRICS,
    FOLDS,
    DrawCorrector,
    cross_fitted_multi,
    variance_ratio,
)

FIT = "fit"  # `variance_reduction="fit"`: a value made for the lineup evaluated
MODELS = ("ridge", "mlp")  # the values fitted on calibration deals (`fit_value`)
VALUE_MODELS = ("rollout", *MODELS)  # `evaluate(value_model=...)`
DEFAULT_MODEL = "mlp"
DEFAULT_VALUE_MODEL = "rollout"
_BLAS = ThreadpoolController()
DEFAULT_CALIBRATION_DEALS = 500
MAX_CALIBRATION_DEALS = 100_000
HELD_OUT = 0.2  # the share of the calibration deals (the last ones) kept out of the fit
DEFAULT_ROLLOUTS, MAX_ROLLOUTS = 4, 64  # rollouts per outcome of the rollout value
POSITIONS_PER_GAME = 8  # rows kept per calibration game and seat (after random actions)
RIDGE = 1.0  # the ridge penalty (rows are 0/1 bits and small counts)
MLP_HIDDEN, MLP_EPOCHS, MLP_BATCH, MLP_LR = 128, 30, 512, 1e-3


def calibration_seed(seed: int) -> int:
    """The master seed of the calibration deals of an evaluation of master seed `seed`: a
    SeedSequence stream of its own (spawn key 2; the deals' is 0, the policies' 1)."""
    state = np.random.SeedSequence(seed, spawn_key=(2,)).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


def rollout_seed(seed: int, deal: int, rotation: int) -> int:
    """The seed of the rollouts of game (deal, rotation) of an evaluation of master seed `seed`:
    a SeedSequence stream of its own (spawn key 3), apart from the deals' (0), the policies'
    (1) and the calibration deals' (2)."""
    state = np.random.SeedSequence(seed, spawn_key=(3, deal, rotation)).generate_state(2, np.uint32)
    return (int(state[0]) << 32) | int(state[1])


_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def event_seed(game_seed: int, index: int) -> int:
    """The rollout seed of the event at action `index` of a game whose rollout seed is
    `game_seed` (`rollout_seed`): a function of the history only."""
    return (game_seed + (index + 1) * _GAMMA) & _MASK64


def action_distribution(policy, engine: Engine, encoder: Encoder):
    """(actions (K,), probabilities (K,)) that `policy` draws its action from at `engine`'s
    decision, when it names them and K >= 2; else None. The bots (`choices`): uniform over
    their tied actions. A sampling `NumpyPolicy` (deterministic=False): the softmax of its
    masked logits, as `act` samples it. Anything else (an argmax network, a user policy)
    has no known distribution and is not corrected."""
    mask = engine.legal_action_mask()
    if int(mask.sum()) < 2:
        return None
    seat = engine.current
    if callable(getattr(policy, "choices", None)):
        tied = np.asarray(policy.choices({"observation": encoder.observe(engine, seat),
                                          "action_mask": mask}), np.int64)
        if tied.size < 2:
            return None
        return tied, np.full(tied.size, 1.0 / tied.size)
    from cf_env.agents.checkpoint import NumpyPolicy

    if isinstance(policy, NumpyPolicy) and not policy.deterministic:
        logits = np.where(mask, policy.logits(encoder.observe(engine, seat)), -np.inf)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        support = np.flatnonzero(probs > 0)
        if support.size < 2:
            return None
        return support.astype(np.int64), probs[support]
    return None


def context_size(config: ChickenFootConfig, num_items: int) -> int:
    return config.num_players * num_items


def seat_context(owners_at_seats: Sequence[int], num_items: int) -> np.ndarray:
    """(num_players, n * num_items): row s one-hot of the policy at seat s + k, k = 0 .. n-1."""
    n = len(owners_at_seats)
    out = np.zeros((n, n * num_items), np.float32)
    for s in range(n):
        for k in range(n):
            out[s, k * num_items + owners_at_seats[(s + k) % n]] = 1.0
    return out


class FittedValue:
    """A value fitted for evaluation, read as `ValueHead` reads rows: `layers` [(W (in, out),
    b)], `activation` between them, `values(rows)` -> (B,). A ridge fit is one linear layer
    followed by the identity (two layers, identity activation)."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], activation: str,
                 model: str, info: dict):
        self.layers = [(np.ascontiguousarray(W, np.float32), np.asarray(b, np.float32))
                       for W, b in layers]
        self.activation_name = activation
        self.model, self.info = model, info
        self.input_size = self.layers[0][0].shape[0]

    def activation(self, x: np.ndarray) -> np.ndarray:
        return x if self.activation_name == "identity" else np.maximum(x, 0.0)

    def values(self, rows: np.ndarray) -> np.ndarray:
        return mlp_forward(self.layers, self.activation, rows)[:, 0]


def fit_value(rows: np.ndarray, targets: np.ndarray, model: str = DEFAULT_MODEL,
              seed: int = 0) -> FittedValue:
    """Fit V on calibration rows (B, inputs) -> targets (B,): `model` "ridge" (closed form) or
    "mlp" (one hidden ReLU layer, Adam on mean-squared error, seeded)."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    started = time.process_time()
    X, y = np.asarray(rows, np.float64), np.asarray(targets, np.float64)
    if model == "ridge":
        mean_x, mean_y = X.mean(axis=0), y.mean()
        Xc = X - mean_x
        A = Xc.T @ Xc + RIDGE * np.eye(X.shape[1])
        w = np.linalg.solve(A, Xc.T @ (y - mean_y))
        layers = [(w[:, None], np.array([mean_y - mean_x @ w])),
                  (np.ones((1, 1)), np.zeros(1))]
        fitted = FittedValue(layers, "identity", model, {})
    else:
        import torch

        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], MLP_HIDDEN), torch.nn.ReLU(),
                                  torch.nn.Linear(MLP_HIDDEN, 1))
        opt = torch.optim.Adam(net.parameters(), lr=MLP_LR, weight_decay=1e-5)
        xt = torch.tensor(X, dtype=torch.float32)
        yt = torch.tensor(y, dtype=torch.float32)[:, None]
        generator = torch.Generator().manual_seed(seed)
        for _ in range(MLP_EPOCHS):
            order = torch.randperm(len(xt), generator=generator)
            for start in range(0, len(xt), MLP_BATCH):
                idx = order[start : start + MLP_BATCH]
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(net(xt[idx]), yt[idx])
                loss.backward()
                opt.step()
        layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy())
                  for m in net if isinstance(m, torch.nn.Linear)]
        fitted = FittedValue(layers, "relu", model, {})
    predicted = fitted.values(X.astype(np.float32)).astype(np.float64)
    fitted.info = {"model": model, "rows": int(X.shape[0]),
                   "r2_in_sample": float(1 - np.var(y - predicted) / np.var(y)) if np.var(y) else 0.0,
                   "fit_cpu_s": round(time.process_time() - started, 2)}
    return fitted


class AivatCorrector(DrawCorrector):
    """Each seat's draw terms and action terms (module docstring) for games of `config` with a
    `FittedValue` over rows with the lineup's context (`seat_context`)."""

    def __init__(self, config: ChickenFootConfig, value: FittedValue, num_items: int):
        super().__init__(config, value, context_size(config, num_items))
        self.num_items = num_items
        self._scratch = Engine(config, seed=0)
        self.decisions = 0  # decisions with several possible actions, corrected so far

    def rows(self, engine: Engine) -> np.ndarray:
        """Every seat's row (num_players, inputs) of the position `engine` is in."""
        out = np.empty((self.config.num_players, self.width), dtype=np.float32)
        for seat in range(self.config.num_players):
            self.encoder.observe(engine, seat, out=out[seat, : self.obs_size])
            self.encoder.privileged(engine, seat, out=out[seat, self.obs_size : self.priv_stop])
        out[:, self.priv_stop :] = self.context
        return out

    def action_rows(self, engine: Engine, policy, taken: int):
        """(rows (K, num_players, inputs) after each action `policy` could have drawn at the
        engine's decision, the taken one first; their probabilities (K,)), or None when it had
        one choice or names no distribution (`action_distribution`)."""
        drawn = action_distribution(policy, engine, self.encoder)
        if drawn is None:
            return None
        actions, probs = drawn
        index = _index_of(actions, taken)
        order = [index, *(k for k in range(actions.size) if k != index)]
        blocks = []
        for k in order:
            self._scratch.copy_from(engine)
            self._scratch.step(int(actions[k]))
            blocks.append(self.rows(self._scratch))
        return np.stack(blocks), probs[order]

    def game_terms(self, engine_seed: int, actions: Sequence[int], owners_at_seats: Sequence[int],
                   seat_policies: Sequence, scores: Sequence | None = None) -> np.ndarray:
        """(num_players, 4) of one game, replayed from `engine_seed` and `actions`: each seat's
        draw terms and action terms (`TERM_COLUMNS`; the value is a win share, so the points
        columns repeat the win columns). `owners_at_seats` is the policy index at each seat,
        `seat_policies` each seat's policy (its known random choices are corrected); `scores`,
        if given, must be what the replay scores."""
        self.context = seat_context(owners_at_seats, self.num_items)
        engine, draw = self._engine, self.config.draw_action
        engine.reset(engine_seed)
        draws, decisions = [], []
        for action in actions:
            policy = seat_policies[engine.current]
            if policy is not None:  # whatever was taken: the term's presence is not chosen
                block = self.action_rows(engine, policy, int(action))
                if block is not None:
                    decisions.append(block)
            several = action == draw and len(engine.boneyard) >= 2
            engine.step(int(action))
            if several:
                draws.append(self.first_layer(engine))
        _check_scores(engine, engine_seed, scores)
        n = self.config.num_players
        draw_terms, action_terms = np.zeros(n), np.zeros(n)
        with _BLAS.limit(limits=1, user_api="blas"):
            for pre in draws:
                v = self.outcome_values(pre).astype(np.float64)
                draw_terms += v[0] - v.mean(axis=0)
            for block, probs in decisions:
                v = self.value.values(block.reshape(-1, self.width)).astype(np.float64)
                v = v.reshape(block.shape[0], n)
                action_terms += v[0] - probs @ v
        self.draws += len(draws)
        self.decisions += len(decisions)
        return np.stack([draw_terms, action_terms, draw_terms, action_terms], axis=1)


TERM_COLUMNS = ("draws, win share", "actions, win share", "draws, points", "actions, points")


def _index_of(actions: np.ndarray, taken: int) -> int:
    hits = np.flatnonzero(actions == taken)
    if hits.size == 0:
        raise RuntimeError(f"the replay's action {taken} is not among the policy's choices "
                           f"{actions.tolist()}: the policy's choices do not match its act")
    return int(hits[0])


def _check_scores(engine: Engine, engine_seed: int, scores: Sequence | None) -> None:
    if scores is not None and [list(s) for s in scores] != engine.scores:
        raise RuntimeError(
            f"variance reduction replayed the game of engine seed {engine_seed} and got scores "
            f"{engine.scores}, not the {[list(s) for s in scores]} played")


# The rollout value's draw terms are weighted: the k-th draw of a game with a term (k = 0, 1,
# ...) by 1 / (k + 1). Every rollout of a game's draws reads the same real future, so later
# draws' terms largely repeat what the earlier ones measured; the weight depends only on the
# history, so each weighted term keeps mean zero (docs/variance-reduction.md measures it).
DRAW_WEIGHTING = "1 / (k + 1) for the k-th draw of the game with a term (k = 0, 1, ...)"


class RolloutCorrector:
    """Each seat's draw and action terms (module docstring) with V from rollouts of the lineup
    (`training.evaluation.rollout.RolloutValue`: the position after each outcome played out by
    the policies at their seats, a compiled bot's twin by the compiled bot, a greedy network
    by itself in batches, any other policy by the heuristic), `reps` rollouts per outcome."""

    def __init__(self, config: ChickenFootConfig, reps: int):
        if config.draw_until_playable:
            raise ValueError(
                "variance reduction corrects one chance event per DRAW action; with "
                "draw_until_playable=True one DRAW draws until a tile fits (several chance "
                "events), which it does not support: evaluate without variance_reduction, or "
                "with draw_until_playable=False")
        from training.evaluation.rollout import RolloutValue

        self.config = config
        self.value = RolloutValue(config, reps)
        self.encoder = Encoder(config)
        self._engine = Engine(config, seed=0)
        self.draws = self.decisions = 0

    def game_terms(self, engine_seed: int, actions: Sequence[int], seat_policies: Sequence,
                   seed: int, scores: Sequence | None = None) -> np.ndarray:
        """(num_players, 4) of one game (`TERM_COLUMNS`), replayed from `engine_seed` and
        `actions`; `seat_policies` each seat's policy (who plays it in the rollouts, and whose
        known random choices are corrected), `seed` the game's rollout seed (`rollout_seed`)."""
        from training.evaluation.rollout import rollout_players

        self.value.seat(rollout_players(seat_policies))
        engine, draw = self._engine, self.config.draw_action
        engine.reset(engine_seed)
        n = self.config.num_players
        terms = np.zeros((n, 2, 2))  # seat, (draw, action), (win share, points)
        draws = 0
        with _BLAS.limit(limits=1, user_api="blas"):
            for index, action in enumerate(actions):
                action = int(action)
                # A decision's term whatever was taken (a random seat may DRAW: its draw's term
                # follows), so that which terms a game has is never chosen by the outcome.
                drawn = action_distribution(seat_policies[engine.current], engine, self.encoder)
                if drawn is not None:
                    options, probs = drawn
                    v = self.value.outcome_values(engine, options, False,
                                                  2 * event_seed(seed, index) & _MASK64)
                    taken = v[_index_of(options, action)]
                    terms[:, 1] += taken - np.tensordot(probs, v, axes=1)
                    self.decisions += 1
                if action == draw and len(engine.boneyard) >= 2:
                    tiles = np.sort(np.asarray(engine.boneyard, np.int64))
                    v = self.value.outcome_values(engine, tiles, True, event_seed(seed, index))
                    drawn_tile = engine.boneyard[-1]  # the next drawn is the last
                    # Weighted 1 / (draws with a term before it in this game + 1): a weight
                    # the history fixes, so the term keeps mean zero (`DRAW_WEIGHTING`).
                    terms[:, 0] += (v[int(np.flatnonzero(tiles == drawn_tile)[0])]
                                    - v.mean(axis=0)) / (1 + draws)
                    draws += 1
                engine.step(action)
        _check_scores(engine, engine_seed, scores)
        self.draws += draws
        return np.concatenate([terms[:, :, 0], terms[:, :, 1]], axis=1)


@dataclass(frozen=True)
class AivatSetup:
    """What a block of `evaluate(variance_reduction="fit")` needs to compute its terms: the
    value model, the rollouts per outcome (rollout) or the fitted value (ridge, mlp), and the
    number of policies of the lineup."""

    model: str
    num_items: int
    rollouts: int = DEFAULT_ROLLOUTS
    value: FittedValue | None = None


def make_corrector(setup: AivatSetup, config: ChickenFootConfig):
    if setup.model == "rollout":
        return RolloutCorrector(config, setup.rollouts)
    return AivatCorrector(config, setup.value, setup.num_items)


def block_terms(corrector, setup: AivatSetup, engine_seed: int, actions, owners_at_seats,
                seat_policies, seed: int, scores) -> list[list[float]]:
    """One game's (num_players, 4) terms as lists (`TERM_COLUMNS`)."""
    if setup.model == "rollout":
        terms = corrector.game_terms(engine_seed, actions, seat_policies, seed, scores)
    else:
        terms = corrector.game_terms(engine_seed, actions, owners_at_seats, seat_policies, scores)
    return terms.tolist()


def calibration_rows(config: ChickenFootConfig, deal_results: list[dict], owners: Sequence[int],
                     num_items: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, targets) of calibration games (`_play_block`'s results with each game's
    "actions"): `POSITIONS_PER_GAME` positions per game after random actions, every seat's row
    (with the lineup's context) and its win share of the game."""
    encoder = Encoder(config)
    obs, priv = encoder.layout.size, encoder.privileged_layout.size
    n = config.num_players
    width = obs + priv + context_size(config, num_items)
    rng = np.random.default_rng(seed)
    engine = Engine(config, seed=0)
    rows, targets = [], []
    for deal in deal_results:
        for game in deal["games"]:
            actions = game["actions"]
            wins = game_values(config, game)["win_rate"]
            owners_at_seats = [owners[slot] for slot in game["slots"]]
            context = seat_context(owners_at_seats, num_items)
            keep = set(rng.choice(len(actions), size=min(POSITIONS_PER_GAME, len(actions)),
                                  replace=False).tolist())
            engine.reset(deal["engine_seed"])
            for i, action in enumerate(actions):
                engine.step(int(action))
                if i in keep:
                    block = np.empty((n, width), np.float32)
                    for seat in range(n):
                        encoder.observe(engine, seat, out=block[seat, :obs])
                        encoder.privileged(engine, seat, out=block[seat, obs : obs + priv])
                    block[:, obs + priv :] = context
                    rows.append(block)
                    targets.extend(wins)
    return np.concatenate(rows), np.asarray(targets)


def calibrate(config: ChickenFootConfig, deal_results: list[dict], owners: Sequence[int],
              num_items: int, model: str, seed: int) -> tuple[FittedValue, dict]:
    """V fitted (`fit_value`, `model`) on the rows of the first deals of `deal_results`
    (calibration games with their actions), the last `HELD_OUT` of them (at least one) kept out
    to measure it: (V, info with the fit's R² in sample and on the held-out deals)."""
    held = max(1, int(round(HELD_OUT * len(deal_results))))
    fit_part, held_part = deal_results[:-held], deal_results[-held:]
    rows, targets = calibration_rows(config, fit_part, owners, num_items, seed)
    value = fit_value(rows, targets, model, seed)
    rows_out, targets_out = calibration_rows(config, held_part, owners, num_items, seed + 1)
    predicted = value.values(rows_out).astype(np.float64)
    spread = float(np.var(targets_out))
    info = {**value.info, "deals": len(deal_results), "fit_deals": len(fit_part),
            "held_out_deals": len(held_part), "held_out_rows": int(rows_out.shape[0]),
            "r2_held_out": float(1 - np.var(targets_out - predicted) / spread) if spread else 0.0}
    return value, info


TERMS = {"draws": (0,), "actions": (1,), "both": (0, 1)}


METRIC_COLUMNS = {"win_rate": (0, 1), "round_score": (2, 3)}  # the columns of TERM_COLUMNS


def aivat_estimates(info: dict, labels: Sequence[str], per_deal: dict[str, np.ndarray],
                    controls: np.ndarray, num_players: int) -> dict:
    """The `"variance_reduction"` entry of `evaluate(variance_reduction="fit")`: as
    `variance.corrected_estimates`, with `controls` (deals, policies, 4: `TERM_COLUMNS`); each
    metric is corrected by its two controls (`METRIC_COLUMNS`: draw terms and action terms of
    the value of a win share, or of the R12 points), both used, and gets `terms`: the variance
    ratio with the draw control alone, the action control alone, and both."""

    def corrected(metric, y, control, difference):
        control = control[:, list(METRIC_COLUMNS[metric])]
        both, coefficients = cross_fitted_multi(y, control)
        if difference:
            interval = difference_ci(metric, both, num_players)
        else:
            interval = mean_ci(both, bounds=(0.0, 1.0 if metric == "win_rate" else math.inf))
        terms = {name: variance_ratio(y, cross_fitted_multi(y, control[:, list(cols)])[0])
                 for name, cols in TERMS.items()}
        return {**interval, "coefficients": coefficients,
                "variance_ratio": variance_ratio(y, both), "terms": terms}

    policies = []
    for i, label in enumerate(labels):
        entry: dict = {"name": label}
        for m in CORRECTED_METRICS:
            entry[m] = corrected(m, per_deal[m][:, i], controls[:, i], False)
        entry["control"] = mean_ci(controls[:, i, 0])
        entry["action_control"] = mean_ci(controls[:, i, 1])
        policies.append(entry)
    differences = []
    for j in range(1, len(labels)):
        diff: dict = {"agent": labels[0], "opponent": labels[j]}
        control = controls[:, 0] - controls[:, j]
        for m in CORRECTED_METRICS:
            diff[m] = corrected(m, per_deal[m][:, 0] - per_deal[m][:, j], control, True)
        differences.append(diff)
    rollout = info.get("model") == "rollout"
    value = ("rollouts of the lineup (training.evaluation.rollout): the position after each "
             "outcome played to the round's end by the policies at their seats (a compiled "
             "bot's twin by the compiled bot, a greedy network by itself, any other policy by "
             "the heuristic), a draw's outcomes on the real boneyard order with the outcome's "
             "tile swapped to the front; V is the mean win share (win_rate) or R12 points "
             "(round_score) over the rollouts; the k-th draw term of a game (k = 0, 1, ...) is "
             "weighted 1 / (k + 1), a weight the history fixes" if rollout else
             "fitted for this lineup on calibration deals of a seed stream disjoint from "
             "the measured deals (training.evaluation.aivat): each seat's observation, "
             "privileged vector and who sits where -> its win share")
    return {
        "value_head": FIT,
        "calibration": info,
        "metrics": list(CORRECTED_METRICS),
        "policies": policies,
        "differences": differences,
        "method": {
            "value": value,
            "control": "per game and seat, two sums: over the draws (R8) of V(after the tile "
            "drawn) - mean of V(after each tile the boneyard held), and over the decisions of "
            "policies with known random choices of V(after the action taken) - mean of V(after "
            "each action it could have drawn, weighted by its probability); each has mean exactly "
            "zero",
            "deal": "not corrected: duplicate rotation replays it with every policy on every seat",
            "estimate": "per deal: value - b . (draw control, action control), b the "
            f"least-squares coefficients fitted on the deals of the other parity ({FOLDS}-fold "
            "cross-fitting), so the mean stays unbiased",
            "terms": "the variance ratio with the draw control alone, the action control alone, "
            "and both",
            "interval": "95% Student-t over the corrected per-deal values, clipped to the "
            "metric's range",
            "variance_ratio": "variance of the plain per-deal values / of the corrected ones: "
            "the plain estimate needs this many times the deals for the same half-width",
        },
    }
