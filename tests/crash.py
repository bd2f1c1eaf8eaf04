"""Crash injection: a writer killed at each of its file-system steps, not by timing luck.

`kill_points(body, prepare, check)` runs `body` in a Python process that SIGKILLs itself just
before its k-th file-system step — a rename, replace, folder swap, unlink, rmdir or
fsync (every write of the project ends in one: `cf_env.core.atomic`) — for k = 1, 2, … until
the script runs to its end. Before each run `prepare()` lays out a fresh copy of the files
(and returns the names `script` is formatted with); after each kill `check(k, names)` asserts
what the next command finds. Only the writer's own steps are counted: the imports are done
before the count starts (`arm()`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import os, signal, sys

def arm(kill_at=None):
    import cf_env.core.atomic as atomic
    kill_at, count = int(sys.argv[1]) if kill_at is None else kill_at, [0]

    def boundary(function):
        def step(*args, **kwargs):
            count[0] += 1
            if count[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)
        return step

    for name in ("rename", "replace", "unlink", "rmdir", "fsync"):
        setattr(os, name, boundary(getattr(os, name)))
    atomic._exchange = boundary(atomic._exchange)
"""

# The zygote: imports once, then forks a child per request ("<k> <json names>" on stdin) that
# arms itself, runs the body and exits 0; answers "<exit status> <log file>" on stdout. Forking
# before any torch thread pool exists is safe, and saves each kill point its imports.
ZYGOTE = """
import json, tempfile, traceback
{imports}
for request in sys.stdin:
    k, names = request.split(" ", 1)
    log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    pid = os.fork()
    if pid == 0:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            arm(int(k))
            exec(BODY.format(**json.loads(names)), {{"__name__": "__crash__"}})
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.flush()
        os._exit(0)
    log.close()
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), log.name, flush=True)
"""


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}


def run_killed_at(script: str, k: int, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `script` (after `PRELUDE`) in a new process killed before its k-th file-system step."""
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(script), str(k)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


def kill_points(body: str, prepare: Callable[[], dict], check: Callable[[int, dict], None],
                imports: str = "", limit: int = 200) -> int:
    """Kill `body` at each of its file-system steps in turn (module docstring); returns how
    many there were. The run that is not killed must exit 0 and is checked too (k = 0).

    `body` is formatted with `prepare()`'s names for each run (`{{` for a brace) and runs in a
    child forked from one process that ran `imports` first (so `arm()` is implicit)."""
    zygote = PRELUDE + ZYGOTE.format(imports=textwrap.dedent(imports))
    zygote = f"BODY = {textwrap.dedent(body)!r}\n" + zygote
    server = subprocess.Popen([sys.executable, "-c", zygote, "0"], cwd=ROOT, env=_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for k in range(1, limit + 1):
            names = prepare()
            server.stdin.write(f"{k} {json.dumps({n: str(v) for n, v in names.items()})}\n")
            server.stdin.flush()
            answer = server.stdout.readline().split(" ", 1)
            assert len(answer) == 2, "the crash-injection process died"
            code, log = int(answer[0]), Path(answer[1].strip())
            output = log.read_text()
            log.unlink()
            if code == 0:
                check(0, names)
                return k - 1
            assert code == -signal.SIGKILL, (
                f"the writer failed at kill point {k} instead of being killed:\n{output}")
            check(k, names)
        raise AssertionError(f"the writer still had file-system steps after {limit}")
    finally:
        server.stdin.close()
        server.wait(timeout=60)


def weights_checkpoint(folder, marker: int, steps: int = 0):
    """A valid weights-only checkpoint with random weights for the default game, its card
    carrying `marker` (to tell which writer's checkpoint a folder holds)."""
    import numpy as np

    from cf_env import OBSERVATION_VERSION, ChickenFootConfig
    from cf_env.core.observation import observation_layout
    from training.artifacts import checkpoints as ckpt

    config = ChickenFootConfig()
    sizes = [observation_layout(config).size, 8, config.num_actions]
    rng = np.random.default_rng(marker)
    weights = [(rng.normal(size=(out, inp)), rng.normal(size=out))
               for inp, out in zip(sizes, sizes[1:])]
    card = {"format": ckpt.CHECKPOINT_FORMAT, "steps": steps, "env_config": config.to_dict(),
            "observation_version": OBSERVATION_VERSION, "observation_size": sizes[0],
            "num_actions": sizes[-1], "activation": "tanh", "net_arch": [8], "marker": marker}
    return ckpt.write_weights_checkpoint(folder, weights, card)


def hidden_leftovers(folder) -> list[str]:
    """The hidden entries (staging folders, temporary files) in `folder`."""
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith("."))
