"""AIVAT-complete variance reduction: action terms, and a value fitted for the lineup evaluated.

`training.evaluation.variance` corrects the draws with the shipped critic. This module adds the
two things its page found missing (docs/variance-reduction.md), for
`evaluate(variance_reduction="fit")`:

**Action terms.** A policy that draws its action at random from a distribution it can name
(the bots: `choices(observation)`, the actions `act` picks from uniformly; `random`: every legal
action) is a chance event like a draw. At such a decision of seat p, with the tied actions T,
seat s's term is

    V(h·a_taken, s) - mean over a in T of V(h·a, s),

which has mean exactly zero given the position: the bot's generator, not the game, picks a.
h·a is built on an engine copy (`Engine.copy_from`, then `step(a)`). A decision with one
possible action contributes nothing and is skipped; a policy without `choices` (a `ppo:`
network plays argmax) is never corrected. Terms left out cost variance, never bias.

**A value fitted for evaluation.** V is fitted on calibration deals: the same lineup, played
as the evaluation plays it (duplicate rotation, the per-game path), on deals of a seed stream
disjoint from the measured ones (`calibration_seed`). At a few positions of each calibration
game (`POSITIONS_PER_GAME`, after a random action), each seat's row, its observation and
privileged vector (`Encoder.observe`, `Encoder.privileged`, as the critic reads them) and the
lineup's context (one-hot of the policy at each seat, counted from the seat itself), is paired
with that seat's win share of the game (R13; the corrected metric). `fit_value` fits a ridge
regression or a small MLP (`MODELS`) on it and returns a `FittedValue`, which reads rows as
`cf_env.agents.checkpoint.ValueHead` does, so `DrawCorrector`'s first-layer shortcut serves it.
V is fixed before the first measured deal, so every term keeps its zero mean.

**Estimate.** Each policy gets two controls per deal, its draw terms and its action terms
(each averaged over the games and seats it held); y - b·(D_draw, D_action) with b the
least-squares coefficients fitted on the other half of the deals (`cross_fitted_multi`, as
`variance.cross_fitted` does with one control), which keeps the estimate exactly unbiased. The
result also reports the variance ratio with each control alone (`terms`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
from threadpoolctl import ThreadpoolController

from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.observation import Encoder
from training.evaluation.stats import difference_ci, game_values, mean_ci
from training.evaluation.variance import (
    CORRECTED_METRICS,
    FOLDS,
    DrawCorrector,
    variance_ratio,
)

FIT = "fit"  # `variance_reduction="fit"`: the value is fitted on calibration deals
MODELS = ("ridge", "mlp")
DEFAULT_MODEL = "mlp"
_BLAS = ThreadpoolController()
DEFAULT_CALIBRATION_DEALS = 500
POSITIONS_PER_GAME = 8  # rows kept per calibration game and seat (after random actions)
RIDGE = 1.0  # the ridge penalty (rows are 0/1 bits and small counts)
MLP_HIDDEN, MLP_EPOCHS, MLP_BATCH, MLP_LR = 128, 30, 512, 1e-3


def calibration_seed(seed: int) -> int:
    """The master seed of the calibration deals of an evaluation of master seed `seed`: a
    SeedSequence stream of its own (spawn key 2; the deals' is 0, the policies' 1)."""
    state = np.random.SeedSequence(seed, spawn_key=(2,)).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


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
        x = rows
        for W, b in self.layers[:-1]:
            x = self.activation(x @ W + b)
        W, b = self.layers[-1]
        return (x @ W + b)[:, 0]


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

    def action_rows(self, engine: Engine, policy, taken: int) -> np.ndarray | None:
        """Rows (K, num_players, inputs) after each action `policy` could have drawn at the
        engine's decision (the taken one first), or None when it had one choice."""
        mask = engine.legal_action_mask()
        if int(mask.sum()) < 2:
            return None
        seat = engine.current
        tied = np.asarray(policy.choices({"observation": self.encoder.observe(engine, seat),
                                          "action_mask": mask}))
        if tied.size < 2:
            return None
        if taken not in tied.tolist():
            raise RuntimeError(f"the replay's action {taken} is not among the policy's choices "
                               f"{tied.tolist()}: the policy's choices do not match its act")
        order = [taken, *(int(a) for a in tied if a != taken)]
        blocks = []
        for action in order:
            self._scratch.copy_from(engine)
            self._scratch.step(action)
            blocks.append(self.rows(self._scratch))
        return np.stack(blocks)

    def game_terms(self, engine_seed: int, actions: Sequence[int], owners_at_seats: Sequence[int],
                   seat_policies: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """(draw terms (num_players,), action terms (num_players,)) of one game, replayed from
        `engine_seed` and `actions`; `owners_at_seats` the policy index at each seat, and
        `seat_policies` each seat's policy, whose `choices` (if it has them) are corrected."""
        self.context = seat_context(owners_at_seats, self.num_items)
        engine, draw = self._engine, self.config.draw_action
        engine.reset(engine_seed)
        draws, decisions = [], []
        for action in actions:
            policy = seat_policies[engine.current]
            if policy is not None and callable(getattr(policy, "choices", None)):
                block = self.action_rows(engine, policy, int(action))
                if block is not None:
                    decisions.append(block)
            several = action == draw and len(engine.boneyard) >= 2
            engine.step(int(action))
            if several:
                draws.append(self.first_layer(engine))
        n = self.config.num_players
        draw_terms, action_terms = np.zeros(n), np.zeros(n)
        with _BLAS.limit(limits=1, user_api="blas"):
            for pre in draws:
                v = self.outcome_values(pre).astype(np.float64)
                draw_terms += v[0] - v.mean(axis=0)
            for block in decisions:
                v = self.value.values(block.reshape(-1, self.width)).astype(np.float64)
                v = v.reshape(block.shape[0], n)
                action_terms += v[0] - v.mean(axis=0)
        self.draws += len(draws)
        self.decisions += len(decisions)
        return draw_terms, action_terms


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


def cross_fitted_multi(y: np.ndarray, controls: np.ndarray) -> tuple[np.ndarray, list[list[float]]]:
    """`variance.cross_fitted` with several controls (deals, k): deal d's coefficients are the
    least-squares ones of y on the controls over the deals of the other folds."""
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


TERMS = {"draws": (0,), "actions": (1,), "both": (0, 1)}


def aivat_estimates(info: dict, labels: Sequence[str], per_deal: dict[str, np.ndarray],
                    controls: np.ndarray, num_players: int) -> dict:
    """The `"variance_reduction"` entry of `evaluate(variance_reduction="fit")`: as
    `variance.corrected_estimates`, with `controls` (deals, policies, 2: draw terms, action
    terms), both used, and each metric's `terms`: the variance ratio with each control alone
    and with both."""

    def corrected(metric, y, control, difference):
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
    return {
        "value_head": FIT,
        "calibration": info,
        "metrics": list(CORRECTED_METRICS),
        "policies": policies,
        "differences": differences,
        "method": {
            "value": "fitted for this lineup on calibration deals of a seed stream disjoint from "
            "the measured deals (training.evaluation.aivat): each seat's observation, privileged "
            "vector and who sits where -> its win share",
            "control": "per game and seat, two sums: over the draws (R8) of V(after the tile "
            "drawn) - mean of V(after each tile the boneyard held), and over the decisions of "
            "policies with known random choices of V(after the action taken) - mean of V(after "
            "each action it could have drawn); each has mean exactly zero",
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
