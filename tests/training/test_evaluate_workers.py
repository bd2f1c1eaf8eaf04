"""`training.evaluation.evaluate` when a policy or a worker process fails: every failure is an error that
names the policy and the deal (never a hang, never a clean exit), and nothing is left behind —
no process, no file in /dev/shm — even when every process of the evaluation is SIGKILLed.

The failing policies are the factories below, used as `test_evaluate_workers:<name>` specs, so
that "spawn" workers import them as the CLI's would (this folder is on `sys.path` in the tests
and on `PYTHONPATH` for the CLI subprocesses)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cf_env import ChickenFootConfig
from training.evaluation.evaluate import PolicyError, WorkerDiedError, evaluate, policy_seed

SMALL = ChickenFootConfig(num_players=3, max_pips=6, num_rounds=2)
SMALL_CLI = ["--players", "3", "--max-pips", "6", "--rounds", "2", "--no-progress"]
SEED = 5
# The agent (slot 0) fails in block 1 (deals 8..15), at its first real choice of the block's
# fifth game: deal 8 + 4 // 3 = 9, rotation 4 % 3 = 1, where slot 0 sits at seat 1.
FAIL_BLOCK, FAIL_GAME = 1, 4
FAILED_AT = {"deal": 9, "rotation": 1, "seat": 1}
DEALS = 24  # three blocks: one still to play, one being played, when block 1 fails
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LIMIT = 60  # seconds: any test here that takes longer has hung


# --------------------------------------------------------------------------- failing policies
class FailsAtAChosenDeal:
    """Plays the first legal action (mask only, or from the observation with `act` only); the
    instance for the agent's slot of block FAIL_BLOCK fails in its FAIL_GAME-th game (0-based)."""

    def __init__(self, config, seed, how):
        self.armed = seed == policy_seed(SEED, FAIL_BLOCK, 0)
        self.games, self.how = 0, how

    def reset(self):
        self.games += 1

    def act_bits(self, legal):
        self.maybe_fail()
        return (legal & -legal).bit_length() - 1

    def act(self, observation):  # the convention; the arena uses act_bits
        self.maybe_fail()
        return int(observation["action_mask"].argmax())

    def maybe_fail(self):
        if self.armed and self.games == FAIL_GAME + 1:
            FAILURES[self.how]()


def _raise(error):
    def fail():
        raise error

    return fail


FAILURES = {
    "exits": lambda: os._exit(3),
    "sigkills": lambda: os.kill(os.getpid(), signal.SIGKILL),
    "raises_system_exit": _raise(SystemExit(0)),
    "raises_keyboard_interrupt": _raise(KeyboardInterrupt()),
    "raises_generator_exit": _raise(GeneratorExit()),
    "raises_runtime_error": _raise(RuntimeError("the policy has a bug")),
    "sends_sigint": lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5)),
    # Thinks for two minutes, reading no pipe, once it has said so in the marker file.
    "sleeps": lambda: (Path(os.environ["CF_EVAL_TEST_MARKER"]).touch(), time.sleep(120)),
}


def exits(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "exits")


def sigkills(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "sigkills")


def raises_system_exit(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "raises_system_exit")


def raises_keyboard_interrupt(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "raises_keyboard_interrupt")


def raises_generator_exit(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "raises_generator_exit")


def raises_runtime_error(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "raises_runtime_error")


def sends_sigint(config, seed=None):
    """A real SIGINT to its own process while it chooses, as a user's Ctrl-C would arrive."""
    return FailsAtAChosenDeal(config, seed, "sends_sigint")


def sleeps(config, seed=None):
    return FailsAtAChosenDeal(config, seed, "sleeps")


RAISING = ["raises_system_exit", "raises_keyboard_interrupt", "raises_generator_exit",
           "raises_runtime_error"]


# --------------------------------------------------------------------------- what is left behind
def shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def new_shm_entries(before: set[str]) -> set[str]:
    """Entries of /dev/shm that appeared since `before` and stay (another program's short-lived
    ones come and go; a leaked one stays)."""
    new = shm_entries() - before
    for _ in range(4):
        if not new:
            break
        time.sleep(0.5)
        new &= shm_entries()
    return new


def worker_children() -> list[int]:
    """Live evaluation workers of this process ("spawn" children; not the resource tracker)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == os.getpid() and state != "Z" and b"spawn_main" in cmdline:
            found.append(int(entry))
    return found


def processes_with(token: str) -> list[int]:
    """Live processes whose environment holds `token`: a CLI run and all it started, wherever
    they were re-parented."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if token.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                found.append(int(entry))
        except OSError:
            continue
    return found


def wait_until_gone(token: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def shm_in_use(pids: list[int]) -> list[str]:
    """Paths under /dev/shm that these processes map or hold open (a named semaphore is one)."""
    used = []
    for pid in pids:
        try:
            used += [line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                     if "/dev/shm/" in line]
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with_path = os.readlink(f"/proc/{pid}/fd/{fd}")
                if with_path.startswith("/dev/shm/"):
                    used.append(with_path)
        except OSError:
            continue
    return used


@pytest.fixture
def hard_limit():
    """Fail, not hang, past LIMIT seconds (SIGALRM interrupts the parent's wait)."""

    def expired(signum, frame):
        raise TimeoutError(f"still running after {LIMIT} s: the evaluation hangs")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(LIMIT)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def cli(args: list[str], token: str, extra_env: dict | None = None, **popen) -> subprocess.Popen:
    env = {**os.environ, **(extra_env or {}), "CF_EVAL_TEST_TOKEN": token,
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "training.evaluate", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def finish(proc: subprocess.Popen, seconds: float = LIMIT) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):  # its session, when it has one
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        proc.communicate()
        pytest.fail(f"the evaluation CLI still ran after {seconds} s")
    return proc.returncode, err


def one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# --------------------------------------------------------------------------- the Python API
@pytest.mark.slow
@pytest.mark.parametrize(("name", "how"), [("exits", "exited with code 3"),
                                           ("sigkills", "was killed by SIGKILL")])
def test_a_worker_that_dies_is_an_error_naming_the_policy_and_the_deal(name, how, hard_limit):
    before = shm_entries()
    spec = f"test_evaluate_workers:{name}"
    started = time.monotonic()
    with pytest.raises(WorkerDiedError) as err:
        evaluate([spec, "random"], SMALL, deals=DEALS, seed=SEED, workers=2)
    message = str(err.value)
    assert how in message and "deals 8..15" in message
    assert (f"while policy {spec!r} at seat 1 was choosing (deal 9, rotation 1)") in message
    assert (err.value.label, err.value.seat, err.value.deal, err.value.rotation) == (
        spec, FAILED_AT["seat"], FAILED_AT["deal"], FAILED_AT["rotation"])
    assert err.value.exitcode == (3 if name == "exits" else -signal.SIGKILL)
    assert time.monotonic() - started < 30
    assert worker_children() == []  # the other worker was stopped and reaped
    assert new_shm_entries(before) == set()


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", RAISING)
def test_what_a_policy_raises_is_its_policy_error_with_the_deal(name, workers, hard_limit):
    spec = f"test_evaluate_workers:{name}"
    with pytest.raises(PolicyError) as err:
        evaluate([spec, "random"], SMALL, deals=DEALS, seed=SEED, workers=workers)
    error = {"raises_system_exit": "SystemExit: 0", "raises_keyboard_interrupt": "KeyboardInterrupt",
             "raises_generator_exit": "GeneratorExit",
             "raises_runtime_error": "RuntimeError: the policy has a bug"}[name]
    assert str(err.value) == f"policy {spec!r} at seat 1 raised {error} (deal 9, rotation 1)"
    assert (err.value.label, err.value.seat, err.value.deal, err.value.rotation) == (
        spec, FAILED_AT["seat"], FAILED_AT["deal"], FAILED_AT["rotation"])
    assert err.value.error == error
    assert isinstance(err.value, ValueError)  # as the README's Errors table promises
    # The original exception: itself in this process, the worker's traceback as text from one.
    cause, kind = err.value.__cause__, error.split(":")[0]
    if workers == 1:
        assert type(cause).__name__ == kind
    else:
        assert f"{kind}" in str(cause) and "Traceback" in str(cause)
    assert worker_children() == []


def test_a_real_sigint_during_a_policy_is_the_users_interrupt_not_the_policys(hard_limit):
    # In-process, the user's Ctrl-C arrives while a policy runs; it must stop the evaluation
    # as a KeyboardInterrupt, not be reported as that policy's error.
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt) as err:
        evaluate(["test_evaluate_workers:sends_sigint", "random"], SMALL, deals=DEALS, seed=SEED)
    assert not isinstance(err.value, PolicyError)
    assert signal.getsignal(signal.SIGINT) is handler  # put back


@pytest.mark.slow
def test_results_are_identical_for_one_two_or_three_workers(tmp_path):
    # 21 deals: blocks of 8, 8 and 5; the heuristic reads observations, greedy takes the fast path.
    runs = {}
    for workers in (1, 2, 3):
        folder = tmp_path / f"games{workers}"
        result = evaluate(["heuristic", "greedy", "random"], SMALL, deals=21, seed=11,
                          workers=workers, record=folder)
        records = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
        runs[workers] = (json.dumps(result, sort_keys=True), records)
    assert len(runs[1][1]) == 21 * 3
    assert runs[1] == runs[2] == runs[3]
    assert worker_children() == []


# --------------------------------------------------------------------------- the CLI
@pytest.mark.slow
@pytest.mark.parametrize(("name", "workers"), [
    ("exits", 2), ("sigkills", 2), ("raises_system_exit", 2), ("raises_keyboard_interrupt", 2),
    ("raises_runtime_error", 2), ("raises_system_exit", 1), ("raises_keyboard_interrupt", 1),
])
def test_cli_exits_1_with_one_error_line_naming_the_policy_and_the_deal(name, workers, tmp_path):
    before, token = shm_entries(), uuid.uuid4().hex
    spec = f"test_evaluate_workers:{name}"
    out = tmp_path / "eval.json"
    proc = cli([*SMALL_CLI, "--agent", spec, "--opponents", "random", "--deals", str(DEALS),
                "--seed", str(SEED), "--workers", str(workers), "--out", str(out)], token)
    code, err = finish(proc)
    line = one_error_line(err)
    assert code == 1, err
    assert f"policy {spec!r} at seat 1" in line and "deal 9, rotation 1" in line, line
    assert not out.exists()
    assert wait_until_gone(token) == []
    assert new_shm_entries(before) == set()


def start_long_run(tmp_path, token: str) -> tuple[subprocess.Popen, list[int]]:
    """A long 2-worker evaluation in its own session, once it has played games: the process
    and the pids of its workers."""
    folder = tmp_path / "games"
    proc = cli(["--agent", "greedy", "--opponents", "random", "--deals", "100000",
                "--workers", "2", "--no-progress", "--out", str(tmp_path / "eval.json"),
                "--record", str(folder)], token, start_new_session=True)
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline and proc.poll() is None:
        workers = [pid for pid in processes_with(token) if pid != proc.pid
                   and b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        if len(workers) == 2 and folder.is_dir() and len(list(folder.iterdir())) >= 8:
            return proc, workers
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    _, err = proc.communicate()
    pytest.fail(f"the evaluation made no progress: {err}")


@pytest.mark.slow
def test_sigkill_of_every_process_at_once_leaves_no_process_and_nothing_in_dev_shm(tmp_path):
    before, token = shm_entries(), uuid.uuid4().hex
    proc, workers = start_long_run(tmp_path, token)
    everyone = processes_with(token)
    assert set(workers) < set(everyone)
    assert shm_in_use(everyone) == []  # no named semaphore or shared-memory file at all
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert wait_until_gone(token) == []
    assert new_shm_entries(before) == set()


@pytest.mark.slow
def test_workers_die_with_the_evaluate_process_even_inside_a_long_policy_call(tmp_path):
    # A worker deep in a policy's thinking reads no pipe: only the kernel (PR_SET_PDEATHSIG)
    # can end it when the parent is SIGKILLed alone, as the out-of-memory killer would.
    before, token = shm_entries(), uuid.uuid4().hex
    marker = tmp_path / "sleeping"
    proc = cli([*SMALL_CLI, "--agent", "test_evaluate_workers:sleeps", "--opponents", "random",
                "--deals", str(DEALS), "--seed", str(SEED), "--workers", "2",
                "--out", str(tmp_path / "eval.json")], token, start_new_session=True,
               extra_env={"CF_EVAL_TEST_MARKER": str(marker)})
    try:
        deadline = time.monotonic() + LIMIT
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the sleeping policy was never reached"
        os.kill(proc.pid, signal.SIGKILL)  # the parent only
        proc.communicate(timeout=10)
        assert wait_until_gone(token) == []
    finally:
        for pid in processes_with(token):
            os.kill(pid, signal.SIGKILL)
    assert new_shm_entries(before) == set()


@pytest.mark.slow
def test_ctrl_c_stops_a_parallel_evaluation_promptly_and_quietly(tmp_path):
    before, token = shm_entries(), uuid.uuid4().hex
    proc, _ = start_long_run(tmp_path, token)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends to its foreground group
    code, err = finish(proc, seconds=10)
    assert code == 130, err
    assert err.strip() == "interrupted", err  # no traceback from the parent or the workers
    assert wait_until_gone(token) == []
    assert new_shm_entries(before) == set()
