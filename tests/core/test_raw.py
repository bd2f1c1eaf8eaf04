"""RawArray (cf_env.core.raw): compiled code reads and writes through it exactly as through the
array it views, of every dtype and rank the core uses, contiguous or strided; `view` and
`reshape` see a packed buffer as numpy does; out-of-bounds indices raise under numba's bounds
checking; as plain Python, `raw` is the identity."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from cf_env.core.raw import raw, reshape, view

ROOT = Path(__file__).resolve().parents[2]
Pair = namedtuple("Pair", "left right")
DTYPES = (np.int32, np.int64, np.uint64, np.bool_, np.float32, np.float64)


@njit
def _copy_1d(a, out):
    """out[...] = a[...] through RawArrays, in reverse order by negative indices."""
    r, w = raw(a), raw(out)
    for i in range(r.shape[0]):
        w[-1 - i] = r[-1 - i]
    return r.size, r.ndim


@njit
def _copy_2d(a, out):
    r, w = raw(a), raw(out)
    for i in range(r.shape[0]):
        row = r[i]  # a view of rank 1
        for j in range(len(row)):
            w[i, j] = row[j]
    return r.size, r.ndim


@njit
def _copy_3d(a, out):
    r, w = raw(a), raw(out)
    for i in range(r.shape[0]):
        for j in range(r.shape[1]):
            plane = r[i, j]
            for k in range(plane.shape[0]):
                w[i, j, k] = plane[k]
    return r.size, r.ndim


def _copy_through(a, out):
    return (_copy_1d, _copy_2d, _copy_3d)[a.ndim - 1](a, out)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_raw_arrays_read_and_write_as_the_arrays_they_view(dtype, shape):
    rng = np.random.default_rng(0)
    a = (rng.integers(0, 50, size=shape) % (2 if dtype is np.bool_ else 50)).astype(dtype)
    out = np.zeros(shape, dtype)
    assert _copy_through(a, out) == (a.size, a.ndim)
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_views_are_indexed_by_their_strides(dtype):
    """Non-contiguous arrays (a column slice, a transposed array) become "A" RawArrays."""
    base = np.arange(60).reshape(6, 10)
    base = (base % 2 if dtype is np.bool_ else base).astype(dtype)
    for a in (base[1:5, ::3], base.T[::2], base[:, 3]):
        out = np.zeros(a.shape, dtype)
        _copy_through(a, out)
        np.testing.assert_array_equal(out, a)
    target = np.zeros((6, 10), dtype)
    _copy_through(base[1:5, ::3], target[1:5, ::3])
    expected = np.zeros((6, 10), dtype)
    expected[1:5, ::3] = base[1:5, ::3]
    np.testing.assert_array_equal(target, expected)  # writes land only where the view lies


@njit
def _bump(pair, i):
    pair.left[i, 1] += pair.right[i]
    pair.right[i] = -pair.right[i]


@njit
def _tuple_entry(state):
    st = raw(state)
    for i in range(st.right.shape[0]):
        _bump(st, i)
    return st.left.shape[1] + len(st.right)


def test_a_namedtuple_of_arrays_becomes_one_of_raw_arrays_that_helpers_write_through():
    left, right = np.zeros((4, 3), np.int32), np.arange(1, 5, dtype=np.int64)
    assert _tuple_entry(Pair(left, right)) == 3 + 4
    np.testing.assert_array_equal(left[:, 1], [1, 2, 3, 4])
    np.testing.assert_array_equal(right, [-1, -2, -3, -4])


@njit
def _unpack_buffer(buffer, out):
    b = raw(buffer)
    ints = view(b, b[0], np.int32, (2, 3))
    flags = view(b, b[1], np.bool_, (5,))
    words = view(b, b[2], np.uint64, (1, 2))
    flat = reshape(raw(out), (2, 3))
    for i in range(2):
        for j in range(3):
            flat[i, j] = ints[i, j] + (1 if flags[j] else 0)
    words[0, 1] = np.uint64(7)
    return words[0, 0]


def test_view_and_reshape_see_a_packed_buffer_as_numpy_views_do():
    buffer = np.zeros(12, np.int64)
    buffer[:3] = [3, 6, 8]  # where each array starts, in words
    ints = buffer[3:6].view(np.int32)[:6].reshape(2, 3)
    ints[:] = np.arange(6).reshape(2, 3) * 10
    flags = buffer[6:7].view(np.bool_)[:5]
    flags[:] = [True, False, True, False, False]
    buffer[8] = 99
    out = np.zeros(6, np.float64)
    assert _unpack_buffer(buffer, out) == 99
    np.testing.assert_array_equal(out.reshape(2, 3), ints + flags[:3].astype(int))
    assert buffer[9] == 7
    # the plain-Python versions make the same views
    np.testing.assert_array_equal(view(buffer, 3, np.int32, (2, 3)), ints)
    np.testing.assert_array_equal(view(buffer, 6, np.bool_, (5,)), flags)
    np.testing.assert_array_equal(reshape(out, (3, 2)), out.reshape(3, 2))


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=300)


OUT_OF_BOUNDS = """
import numpy as np
from numba import njit
from cf_env.core.raw import raw
@njit
def read(a, i, j):
    return raw(a)[i, j]
a = np.zeros((3, 4), np.int32)
assert read(a, 2, -4) == 0
for i, j in ((3, 0), (0, 4), (-4, 0)):
    try:
        read(a, i, j)
    except IndexError:
        continue
    raise SystemExit(f"no IndexError for {(i, j)}")
print("ok")
"""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_out_of_bounds_indices_raise_under_numba_bounds_checking(tmp_path):
    done = _run(OUT_OF_BOUNDS, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_as_plain_python_raw_is_the_identity():
    done = _run("from numba.core import config\nassert config.DISABLE_JIT\n"
                "import numpy as np\nfrom cf_env.core.raw import raw\n"
                "a = np.zeros(3)\nt = (a, 1)\nassert raw(a) is a and raw(t) is t\nprint('ok')",
                NUMBA_DISABLE_JIT="1")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
