"""The checked boundary in front of the compiled core.

numba compiles without bounds checks, so an array of the wrong shape, dtype or layout, or an
index out of range, handed to a compiled function reads or writes outside its memory. Every
public Python function that passes arrays or indices into compiled code validates them here
first, and raises `ValueError` naming the argument and what is valid; nothing has changed when
it does. The compiled functions themselves (`@jit` in cf_env.core.kernel,
cf_env.agents.kernel_bots and cf_env.agents.kernel_search) are unchecked kernels: call them
only through their checked wrappers (docs/architecture.md lists both).

The size bounds live here too: a batch of games is refused, before anything is allocated,
above `kernel.max_games(config)`, which is derived from the bytes one game holds.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

# The most memory one batch of games may hold (state, tables, output rows, queued shuffles and
# the per-game Generators): a batch past it is refused with an error instead of meeting the
# out-of-memory killer.
MAX_BATCH_BYTES = 4 * 2**30
# What one `numpy.random.Generator` (PCG64) holds beside the arrays, measured with tracemalloc
# (numpy 2.x: about 0.9 KB); rounded up.
GENERATOR_BYTES = 2048
# What a seed may be: `numpy.random.default_rng` takes any non-negative int; bounded so that a
# seed is a plain 128-bit value (numpy's SeedSequence entropy), like every seed we write.
MAX_SEED = 2**128 - 1


def is_int(value: object) -> bool:
    """A Python or numpy integer (never a bool, a float or an array)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def index(value: object, name: str, stop: int) -> int:
    """`value` as a plain int in [0, stop), else `ValueError` naming `name`."""
    if type(value) is int and 0 <= value < stop:  # the usual case, cheapest test first
        return value
    if not is_int(value) and not (isinstance(value, np.ndarray) and value.ndim == 0
                                  and value.dtype.kind in "iu"):
        raise ValueError(f"{name} must be an int in [0, {stop}); got {value!r} "
                         f"({type(value).__name__})")
    value = operator.index(value[()] if isinstance(value, np.ndarray) else value)
    if not 0 <= value < stop:
        raise ValueError(f"{name} must be an int in [0, {stop}); got {value}")
    return value


def indices(values: object, name: str, stop: int, *, distinct: bool = True) -> np.ndarray:
    """`values` as a 1-d int64 array of indices in [0, stop) (distinct unless told otherwise),
    else `ValueError` naming `name`. Floats, bools and other shapes are refused, never
    truncated or wrapped."""
    array = np.asarray(values)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-d sequence of ints in [0, {stop}); got "
                         f"{array.dtype} of shape {array.shape}")
    if array.size and (array.dtype.kind == "u" and array.max() >= stop
                       or array.dtype.kind == "i" and (array.min() < 0 or array.max() >= stop)):
        bad = [v for v in array.tolist() if not 0 <= v < stop]
        raise ValueError(f"{name} must be ints in [0, {stop}); got {bad[:8]}")
    array = array.astype(np.int64)
    if distinct and np.unique(array).size != array.size:
        raise ValueError(f"{name} must be distinct; got {array.tolist()[:16]}")
    return array


def seeds(values: object, count: int, name: str = "seeds") -> list[int | None]:
    """`values` as `count` seeds, each None or an int in [0, 2**128), else `ValueError`."""
    if is_int(values) or values is None or isinstance(values, (str, bytes)) \
            or not isinstance(values, (Sequence, np.ndarray)) \
            or (isinstance(values, np.ndarray) and values.ndim != 1):
        raise ValueError(f"{name} must be a sequence of {count} ints in [0, 2**128) (or None); "
                         f"got {values!r}")
    out = list(values)
    if len(out) != count:
        raise ValueError(f"{name} must hold {count} seeds (one per game); got {len(out)}")
    for seed in out:
        if seed is not None and not (is_int(seed) and 0 <= int(seed) <= MAX_SEED):
            raise ValueError(f"{name} must be ints in [0, 2**128) or None; got {seed!r}")
    return [None if s is None else int(s) for s in out]


def array(value: object, name: str, shape: tuple[int, ...], dtype, *,
          writable: bool = False) -> np.ndarray:
    """`value` itself if it is a C-contiguous numpy array of exactly `shape` and `dtype`
    (and writable when asked), else `ValueError` naming `name` and what is valid."""
    dtype = np.dtype(dtype)
    if (type(value) is np.ndarray and value.dtype == dtype and value.shape == shape
            and value.flags.c_contiguous and (value.flags.writeable or not writable)):
        return value
    want = f"a C-contiguous {dtype} numpy array of shape {shape}" + (", writable" if writable else "")
    if not isinstance(value, np.ndarray):
        raise ValueError(f"{name} must be {want}; got {type(value).__name__}")
    flags = [] if value.flags.c_contiguous else ["not C-contiguous"]
    if writable and not value.flags.writeable:
        flags.append("read-only")
    raise ValueError(f"{name} must be {want}; got {value.dtype} of shape {value.shape}"
                     + (f" ({', '.join(flags)})" if flags else ""))


def size(value: object, name: str, cap: int, why: str) -> int:
    """`value` as a count in [1, cap], else `ValueError` naming `name`, the cap and `why` it is
    the cap; checked before anything of that size is allocated."""
    if not is_int(value) or not 1 <= int(value) <= cap:
        raise ValueError(f"{name} must be an int in [1, {cap}]; got {value!r} ({why})")
    return int(value)
