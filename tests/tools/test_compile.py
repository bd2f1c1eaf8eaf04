"""`python -m cf_env.tools.compile` (run by `make` after installing) leaves every compiled entry
point in numba's on-disk cache, so that later commands load it instead of compiling."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cf_env.agents import kernel_bots, kernel_search
from cf_env.core import kernel
from cf_env.envs import batch

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = [kernel.batch_step, kernel.batch_legal, kernel.batch_observe,
                kernel.batch_privileged, kernel.games_step, kernel.batch_reset,
                kernel.one_game,
                kernel.one_observe, kernel.one_placement, kernel.one_playable,
                kernel_bots.batch_advance, kernel_search.search,
                batch._deal_next_rounds]


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_compile_tool_fills_numba_cache_for_every_entry_point(tmp_path):
    """From an empty cache (what an earlier test left in __pycache__ would hide a part that
    compiles nothing)."""
    result = subprocess.run([sys.executable, "-m", "cf_env.tools.compile"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "compiled the numba functions" in result.stdout
    for function in ENTRY_POINTS:
        source = Path(inspect.getsourcefile(function.py_func))
        line = inspect.getsourcelines(function.py_func)[1]
        index = list(tmp_path.rglob(f"{source.stem}.{function.__name__}-{line}.py*.nbi"))
        assert index, f"no numba cache index for {function.__name__} in {tmp_path}"


def test_compile_tool_reports_a_failing_part_and_exits_1_before_the_next_stage(monkeypatch,
                                                                                 capsys):
    from cf_env.tools import compile as tool

    class Failed:
        def __init__(self, *args, **kwargs):
            pass

        def wait(self):
            return 3

    monkeypatch.setattr(tool.subprocess, "Popen", Failed)
    assert tool.main([]) == 1
    first = [tool.PARTS.index(part) for part in tool.STAGES[0]]
    assert f"error: compiling part(s) {first} failed" in capsys.readouterr().err


def test_clean_removes_numba_cache_files_only(tmp_path):
    from cf_env.tools.compile import clean_cache

    cache = tmp_path / "core" / "__pycache__"
    cache.mkdir(parents=True)
    for name in ("kernel.batch_step-794.py311.nbi", "kernel.batch_step-794.py311.1.nbc",
                 "kernel.cpython-311.pyc"):
        (cache / name).write_bytes(b"x")
    (tmp_path / "core" / "kernel.nbi").write_bytes(b"not in a cache folder")
    assert clean_cache(tmp_path) == 2
    assert sorted(p.name for p in cache.iterdir()) == ["kernel.cpython-311.pyc"]
    assert (tmp_path / "core" / "kernel.nbi").exists()
