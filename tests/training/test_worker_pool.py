"""`training.processes.WorkerPool`, the one pool of worker processes (evaluation's workers and
self-play's collectors run on it): typed jobs answered in order, a worker that dies or fails
named with its job, memory no path names, and an orderly stop that leaves no process.

The workers' `serve` functions are below, so that "spawn" workers import them by this module's
name (this folder is on `sys.path` in the tests)."""

from __future__ import annotations

import os
import signal
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from training import processes
from training.processes import RemoteTraceback, WorkerExit, WorkerFailure, WorkerPool, WorkerStart


@dataclass(frozen=True)
class Square:
    """A job: square `value`, or do `then` instead (die, raise, sleep, answer what cannot be
    pickled)."""

    value: int
    then: str = ""  # "exit3", "sigkill", "raise", "system_exit", "sleep", "unpicklable"


class Refused(Exception):
    pass


def serve_squares(start: WorkerStart):
    """Squares each job's value, adding the setup; writes the last value into its memory."""

    def handle(job: Square):
        if start.memory is not None:
            struct.pack_into("q", start.memory, 0, job.value)
        if job.then == "exit3":
            os._exit(3)
        if job.then == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if job.then == "raise":
            raise Refused(f"no square of {job.value}")
        if job.then == "system_exit":
            raise SystemExit(0)
        if job.then == "sleep":
            time.sleep(60)
        if job.then == "unpicklable":
            return lambda: None
        return (start.index, job.value * job.value + (start.setup or 0))

    return handle


def serve_nothing(start: WorkerStart):
    raise Refused(f"worker {start.index} cannot start")


class Died(RuntimeError):
    pass


def died(worker: WorkerExit) -> Died:
    err = Died(f"worker {worker.index} (pid {worker.pid}) {worker.how} on {worker.job}")
    err.worker = worker
    return err


def alive(pool: WorkerPool) -> list[int]:
    return [p.pid for p in pool.processes if p.is_alive()]


def test_results_come_back_in_job_order_from_every_worker():
    jobs = [Square(value) for value in range(9)]
    with WorkerPool("test", 2, serve_squares, 100, died=died) as pool:
        results = list(pool.imap(jobs, depth=2))
        assert [value for _, value in results] == [v * v + 100 for v in range(9)]
        assert {index for index, _ in results} == {0, 1}  # both workers played
        pool.submit(1, Square(7))
        assert pool.receive(1) == (1, 149)
    assert alive(pool) == []


@pytest.mark.parametrize(("then", "how", "code"), [("exit3", "exited with code 3", 3),
                                                   ("sigkill", "was killed by SIGKILL",
                                                    -signal.SIGKILL)])
def test_a_worker_that_dies_is_named_with_its_job_and_its_exit(then, how, code):
    with WorkerPool("test", 2, serve_squares, died=died, memory_bytes=8) as pool:
        pool.submit(0, Square(2))
        assert pool.receive(0) == (0, 4)
        pool.submit(1, Square(5, then))
        pid = pool.processes[1].pid
        with pytest.raises(Died) as err:
            pool.receive(1)
        message = str(err.value)
        assert message.startswith(f"worker 1 (pid {pid}) {how}")
        assert message.endswith(f" on {Square(5, then)!r}")
        assert err.value.worker.exitcode == code
        # What the worker wrote into its memory before it died is read by the parent.
        assert struct.unpack_from("q", err.value.worker.memory)[0] == 5
    assert alive(pool) == []


def test_what_a_job_raises_is_raised_with_the_workers_traceback():
    with WorkerPool("test", 1, serve_squares, died=died) as pool:
        pool.submit(0, Square(3, "raise"))
        with pytest.raises(Refused, match="no square of 3") as err:
            pool.receive(0)
        assert isinstance(err.value.__cause__, RemoteTraceback)
        assert "Traceback" in str(err.value.__cause__) and "in handle" in str(err.value.__cause__)
        pool.submit(0, Square(4, "system_exit"))  # the worker serves on after a failure
        with pytest.raises(RuntimeError, match="SystemExit: 0 in a worker process"):
            pool.receive(0)
        pool.submit(0, Square(4, "unpicklable"))
        with pytest.raises(RuntimeError, match="cannot be sent back"):
            pool.receive(0)


def test_a_worker_that_cannot_start_is_the_callers_failure_with_no_job():
    seen = []

    def failed(failure: WorkerFailure) -> RuntimeError:
        seen.append(failure)
        return RuntimeError(f"worker {failure.index} failed: {failure.error}")

    with WorkerPool("test", 1, serve_nothing, died=died, failed=failed) as pool:
        pool.submit(0, Square(1))
        with pytest.raises(RuntimeError, match="worker 0 failed: worker 0 cannot start"):
            pool.receive(0)
    assert seen[0].job is None and "Traceback" in seen[0].traceback


def test_the_shared_memory_has_no_name_in_dev_shm():
    with WorkerPool("test", 1, serve_squares, died=died, memory_bytes=64,
                    memory_label="chickenfoot-pool-test") as pool:
        pool.submit(0, Square(11))
        pool.receive(0)
        assert struct.unpack_from("q", pool.memory(0))[0] == 11  # the worker wrote it
        pid = pool.processes[0].pid
        maps = Path(f"/proc/{pid}/maps").read_text() if Path(f"/proc/{pid}/maps").exists() else ""
        assert "/dev/shm/" not in maps
        if maps and hasattr(os, "memfd_create"):
            assert "memfd:chickenfoot-pool-test" in maps


def test_close_kills_a_worker_still_busy_after_the_grace(monkeypatch):
    monkeypatch.setattr(processes, "STOP_GRACE_S", 0.5)
    pool = WorkerPool("test", 2, serve_squares, died=died)
    pool.submit(1, Square(3))
    pool.receive(1)  # worker 1 is up (a spawn start can outlast the grace on a loaded machine)
    pool.submit(0, Square(1, "sleep"))
    time.sleep(0.2)
    started = time.monotonic()
    pool.close()  # worker 0 sleeps past the grace: killed; worker 1 stops when asked
    assert time.monotonic() - started < 30
    assert alive(pool) == []
    assert pool.processes[1].exitcode == 0
    pool.close()  # again: nothing to do


def test_bad_arguments_are_refused_before_any_process_starts():
    with pytest.raises(ValueError, match="count must be a positive int"):
        WorkerPool("test", 0, serve_squares, died=died)
    with pytest.raises(ValueError, match="memory_bytes must be an int >= 0"):
        WorkerPool("test", 1, serve_squares, died=died, memory_bytes=-1)
