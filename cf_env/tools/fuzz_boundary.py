"""Fuzzer of the compiled core's checked boundary: random arrays, dtypes, shapes, layouts and
indices thrown at every public entry point that hands them to compiled code.

    python -m cf_env.tools.fuzz_boundary --calls 100000     # the robustness page's figure
    python -m cf_env.tools.fuzz_boundary --calls 2000 --seed 3

Each call picks an entry point and builds its arguments, each one valid or, about half the time,
drawn at random: numpy arrays of a random dtype (floats with NaN and inf, every integer width,
bool, object), rank and size (the right size, one off, empty, huge), sliced (not contiguous) or
read-only; Python and numpy scalars (huge, negative, NaN, bools); None; strings; lists. Restores
take a valid snapshot with one field replaced by such a value.

A call passes when it returns, or raises a `ValueError` (every documented error is one) and the
state it was given is unchanged, compared whole (every array of the state, the RNGs, the
engine's lists). Anything else is a fault: another exception, a changed state after a refusal,
or a restored engine whose own snapshot is refused. A signal (the process dies) is caught by
the test that runs this in a child process (tests/core/test_compiled_boundary.py). Exit status
1 on any fault, with the entry point, the arguments' description and the seed.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections import Counter
from collections.abc import Callable

import numpy as np

from cf_env.agents.kernel_search import play_round, rule_tables
from cf_env.core.config import ChickenFootConfig
from cf_env.core.engine import Engine
from cf_env.core.kernel import KernelBatch, batch_random_actions, num_words
from cf_env.core.observation import Encoder
from cf_env.core.snapshot import read
from cf_env.envs.batch import ChickenFootBatch
from cf_env.envs.vector_env import ChickenFootVectorEnv
from cf_env.tools.cli import HelpFormatter

CONFIGS = (ChickenFootConfig(), ChickenFootConfig(max_pips=6, num_players=2),
           ChickenFootConfig(max_pips=12, num_players=5, target_score=150))
# Per-call scratch of the batched adapters, written before a step is checked (cf_env/envs/batch.py)
# and the kernel's legal-word buffer, filled to name a refused action's legal ones.
DRIVER_SCRATCH = {"_actor", "_perms", "legal_words"}
DTYPES = (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8,
          np.uint32, np.uint64, np.bool_, object)


class Fuzzer:
    """The entry points over a few games, and a stream of random arguments."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.calls: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.faults: list[str] = []
        self.games = []
        for k, cfg in enumerate(CONFIGS):
            engine = Engine(cfg, seed=k)
            batch = KernelBatch(cfg, 4)
            batch.reset([10 * k + j for j in range(4)])
            self.games.append((cfg, engine, batch, Encoder(cfg), engine.snapshot()))
        self.drivers = [
            ChickenFootBatch(CONFIGS[0], 4, bots={1: "greedy", 2: "random", 3: "heuristic"}),
            ChickenFootBatch(CONFIGS[1], 4, bots={1: "heuristic"}, episode="round",
                             final_observation=True),
            ChickenFootVectorEnv(4, opponents=["greedy", "heuristic"], max_pips=6, num_players=3),
        ]
        self.outputs = [driver.reset(seed=k) for k, driver in enumerate(self.drivers)]
        self.entries: dict[str, Callable] = {
            "Engine.write_observation": self.write_observation,
            "Encoder.observe": self.encoder_observe,
            "Engine.step": self.engine_step,
            "Engine.restore": self.engine_restore,
            "KernelBatch.reset": self.batch_reset,
            "KernelBatch.step": self.batch_step,
            "KernelBatch.step_games": self.batch_step_games,
            "KernelBatch.observe": self.batch_observe,
            "KernelBatch.privileged": self.batch_privileged,
            "KernelBatch.load": self.batch_load,
            "KernelBatch.load_position": self.batch_load_position,
            "batch_random_actions": self.random_actions,
            "play_round": self.play_round,
            "ChickenFootBatch.step": self.driver_step,
            "ChickenFootBatch.reset": self.driver_reset,
            "ChickenFootVectorEnv.step": self.vector_step,
            "ChickenFootVectorEnv.reset": self.vector_reset,
        }

    # ------------------------------------------------------------------ random values
    def junk(self, shape_hint: tuple[int, ...] = (4,)) -> object:
        """A random value: mostly arrays near `shape_hint`, else scalars and other objects."""
        r = self.rng
        kind = r.integers(10)
        if kind < 6:
            dtype = DTYPES[r.integers(len(DTYPES))]
            shape = list(shape_hint)
            how = r.integers(6)
            if how == 0 and shape:
                shape[r.integers(len(shape))] += int(r.choice([-1, 1, 7]))
            elif how == 1:
                shape = [int(d) for d in r.integers(0, 6, size=r.integers(0, 4))]
            elif how == 2 and shape:
                shape = shape[:-1]
            elif how == 3:
                shape = [*shape, 2]
            shape = [max(0, d) for d in shape]
            size = int(np.prod(shape)) if shape else 1
            if size > 10**6:
                shape, size = [3], 3
            values = r.choice([0, 1, -1, 2**31, 2**63 - 1, 7, 3], size=size).astype(np.float64)
            if np.dtype(dtype).kind == "f":
                values[r.random(size) < 0.2] = r.choice([np.nan, np.inf, -np.inf, 0.5])
            with np.errstate(all="ignore"):
                array = values.astype(dtype).reshape(shape)
            if r.random() < 0.2 and array.ndim >= 1 and array.shape[-1] > 1:
                array = np.repeat(array, 2, axis=-1)[..., ::2]  # not contiguous
            if r.random() < 0.15:
                array.flags.writeable = False
            return array
        return r.choice(np.array([None, -1, 0, 1, 2**64 - 1, 10**8, -10**8, 1.5, float("nan"),
                                  True, "4", [0, 1], np.int64(3), np.uint64(2**64 - 1),
                                  np.float32(1.0)], dtype=object))

    def maybe(self, valid: object, shape_hint: tuple[int, ...] = (4,)) -> object:
        return valid if self.rng.random() < 0.5 else self.junk(shape_hint)

    def pick(self):
        return self.games[self.rng.integers(len(self.games))]

    # ------------------------------------------------------------------ state whole
    @staticmethod
    def engine_state(engine: Engine) -> tuple:
        return (engine.game.buffer.copy(), copy.deepcopy(engine.history),
                copy.deepcopy(engine.scores), copy.deepcopy(engine.arms),
                engine.rng.bit_generator.state, engine.between_rounds)

    @staticmethod
    def batch_state(batch: KernelBatch) -> list:
        return [a.copy() for a in batch.state] + [
            batch._ahead.copy(), batch._ahead_pos.copy(),
            [None if g is None else g.bit_generator.state for g in batch.rngs]]

    @staticmethod
    def object_state(value):
        """A deep, comparable copy of an adapter: arrays copied, Generators as their states,
        our objects as their fields (the per-call scratch left out)."""
        if isinstance(value, np.ndarray):
            return value.copy()
        if isinstance(value, np.random.Generator):
            return value.bit_generator.state
        if isinstance(value, (list, tuple)):
            return [Fuzzer.object_state(v) for v in value]
        if isinstance(value, dict):
            return {k: Fuzzer.object_state(v) for k, v in value.items()}
        if hasattr(value, "__dict__") and type(value).__module__.startswith("cf_env"):
            return {k: Fuzzer.object_state(v) for k, v in vars(value).items()
                    if k not in DRIVER_SCRATCH}
        return value

    @staticmethod
    def equal(a, b) -> bool:
        if isinstance(a, dict):
            return isinstance(b, dict) and a.keys() == b.keys() and all(
                Fuzzer.equal(a[k], b[k]) for k in a)
        if isinstance(a, np.ndarray):
            return isinstance(b, np.ndarray) and np.array_equal(a, b)
        if isinstance(a, (list, tuple)):
            return len(a) == len(b) and all(Fuzzer.equal(x, y) for x, y in zip(a, b, strict=True))
        return a == b

    # ------------------------------------------------------------------ entry points
    def write_observation(self):
        cfg, engine, _, encoder, _ = self.pick()
        seat = self.maybe(int(self.rng.integers(cfg.num_players)))
        out = self.maybe(np.empty(encoder.layout.size, np.float32), (encoder.layout.size,))
        return [engine], lambda: engine.write_observation(seat, out)

    def encoder_observe(self):
        cfg, engine, _, encoder, _ = self.pick()
        seat = self.maybe(int(self.rng.integers(cfg.num_players)))
        out = self.maybe(None, (encoder.layout.size,))
        return [engine], lambda: encoder.observe(engine, seat, out)

    def engine_step(self):
        _, engine, _, _, _ = self.pick()
        legal = engine.legal_actions()
        action = self.maybe(legal[self.rng.integers(len(legal))] if legal else 0)

        def call():
            engine.step(action)
            if engine.game_over:
                engine.reset(int(self.rng.integers(1000)))
        return [engine], call

    def engine_restore(self):
        cfg, engine, _, _, snap = self.pick()
        bad = copy.deepcopy(snap)
        keys = list(bad)
        key = keys[self.rng.integers(len(keys))]
        value = self.junk()
        bad[key] = value.tolist() if isinstance(value, np.ndarray) else value
        if self.rng.random() < 0.5 and isinstance(snap[key], list) and snap[key]:
            inner = copy.deepcopy(snap[key])  # one element deep instead of the whole field
            j = int(self.rng.integers(len(inner)))
            element = self.junk((2,))
            inner[j] = element.tolist() if isinstance(element, np.ndarray) else element
            bad[key] = inner

        def call():
            engine.restore(bad)
            again = Engine(cfg)
            again.restore(engine.snapshot())  # an accepted position is one the engine keeps
            engine.restore(snap)
        return [engine], call

    def batch_reset(self):
        _, _, batch, _, _ = self.pick()
        count = int(self.rng.integers(0, 5))
        games = self.maybe(self.rng.choice(4, size=count, replace=False), (count,))
        seeds = self.maybe([int(s) for s in self.rng.integers(0, 2**63, size=count)], (count,))
        return [batch], lambda: batch.reset(seeds, games)

    def batch_step(self):
        _, _, batch, _, _ = self.pick()
        legal = batch_random_actions(batch.legal(), self.rng.random(4))
        actions = self.maybe(legal, (4,))

        def call():
            batch.step(actions)
            if batch.state.game_over.any():
                batch.reset([int(s) for s in self.rng.integers(0, 1000, size=4)])
        return [batch], call

    def batch_step_games(self):
        _, _, batch, _, _ = self.pick()
        games = np.flatnonzero(~batch.state.game_over)[: int(self.rng.integers(0, 5))]
        legal = batch_random_actions(batch.legal(), self.rng.random(4))[games]
        games, actions = self.maybe(games, games.shape), self.maybe(legal, legal.shape)
        return [batch], lambda: batch.step_games(games, actions)

    def batch_observe(self):
        cfg, _, batch, _, _ = self.pick()
        out = self.maybe(None, batch.observations.shape)
        seats = self.maybe(None if self.rng.random() < 0.5
                           else self.rng.integers(cfg.num_players, size=4))
        return [batch], lambda: batch.observe(out, seats)

    def batch_privileged(self):
        cfg, _, batch, _, _ = self.pick()
        out = self.maybe(None, batch.privileged_rows.shape)
        seats = self.maybe(None if self.rng.random() < 0.5
                           else self.rng.integers(cfg.num_players, size=4))
        return [batch], lambda: batch.privileged(out, seats)

    def batch_load(self):
        _, engine, batch, _, _ = self.pick()
        game = self.maybe(int(self.rng.integers(4)))
        source = engine if self.rng.random() < 0.8 else self.pick()[1]
        return [batch], lambda: batch.load(game, source)

    def batch_load_position(self):
        cfg, engine, batch, _, snap = self.pick()
        game = self.maybe(int(self.rng.integers(4)))
        position = self.maybe(read(cfg, engine.tables, snap))
        return [batch], lambda: batch.load_position(game, position)

    def random_actions(self):
        _, _, batch, _, _ = self.pick()
        legal = self.maybe(batch.legal().copy(), batch.legal_words.shape)
        uniforms = self.maybe(self.rng.random(4), (4,))
        out = self.maybe(None if self.rng.random() < 0.5 else np.empty(4, np.int64), (4,))
        return [batch], lambda: batch_random_actions(legal, uniforms, out)

    def play_round(self):
        cfg, _, batch, _, _ = self.pick()
        actions = cfg.num_actions
        value, follow = rule_tables([0.0] * actions, [0] * actions, num_words(cfg))
        rule = (self.maybe(value, value.shape), self.maybe(follow, follow.shape),
                self.maybe(0.5))
        game, work = self.maybe(0), self.maybe(1)
        stream = self.maybe(np.zeros(1, np.uint64), (1,))
        first = self.maybe(-1)

        def call():
            play_round(batch, game, work, rule, stream, first)
            batch.reset([int(s) for s in self.rng.integers(0, 1000, size=4)])
        return [batch], call

    def driver_step(self):
        k = int(self.rng.integers(2))
        driver, out = self.drivers[k], self.outputs[k]
        mask = out.action_mask
        legal = (self.rng.random(mask.shape) * mask).argmax(axis=1)
        actions = self.maybe(legal, legal.shape)

        def call():
            self.outputs[k] = driver.step(actions)
        return [driver], call

    def driver_reset(self):
        k = int(self.rng.integers(2))
        driver = self.drivers[k]
        seed = self.maybe(int(self.rng.integers(2**32)))
        options = self.maybe(None if self.rng.random() < 0.5 else
                             {"reset_mask": self.rng.random(4) < 0.5}, (4,))

        def call():
            self.outputs[k] = driver.reset(seed=seed, options=options)
        return [driver], call

    def vector_step(self):
        env = self.drivers[2]
        mask = env.action_masks()
        legal = (self.rng.random(mask.shape) * mask).argmax(axis=1)
        actions = self.maybe(legal, legal.shape)
        return [env], lambda: env.step(actions)

    def vector_reset(self):
        env = self.drivers[2]
        seed = self.maybe(int(self.rng.integers(2**32)))
        options = self.maybe(None if self.rng.random() < 0.5 else
                             {"reset_mask": self.rng.random(4) < 0.5}, (4,))
        return [env], lambda: env.reset(seed=seed, options=options)

    def state_of(self, target):
        if isinstance(target, Engine):
            return self.engine_state(target)
        if isinstance(target, KernelBatch):
            return self.batch_state(target)
        return self.object_state(target)

    # ------------------------------------------------------------------ the loop
    def one(self) -> None:
        names = list(self.entries)
        name = names[self.rng.integers(len(names))]
        targets, call = self.entries[name]()
        self.calls[name] += 1
        before = [self.state_of(t) for t in targets]
        try:
            call()
        except ValueError:
            self.refused[name] += 1
            after = [self.state_of(t) for t in targets]
            if not self.equal(before, after):
                self.faults.append(f"{name}: a refused call changed the state")
        except Exception as err:  # noqa: BLE001 - every other exception is the finding
            self.faults.append(f"{name}: {type(err).__name__}: {err}"[:300])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000, help="calls to make")
    parser.add_argument("--seed", type=int, default=0, help="the fuzzer's seed")
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error("--calls must be a positive int")
    fuzzer = Fuzzer(args.seed)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.calls):
        fuzzer.one()
        if len(fuzzer.faults) >= 20:
            break
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    total, refused = sum(fuzzer.calls.values()), sum(fuzzer.refused.values())
    print(f"{total:,} calls ({refused:,} refused with ValueError, {total - refused:,} accepted) "
          f"over {len(fuzzer.entries)} entry points in {wall:.1f} s ({cpu:.1f} s CPU), "
          f"seed {args.seed}: {len(fuzzer.faults)} faults")
    for name in fuzzer.entries:
        print(f"  {name:26s} {fuzzer.calls[name]:7,} calls, {fuzzer.refused[name]:7,} refused")
    for fault in fuzzer.faults:
        print(f"FAULT {fault}")
    return 1 if fuzzer.faults else 0


if __name__ == "__main__":
    sys.exit(main())
