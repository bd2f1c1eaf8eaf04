"""Child processes that leave nothing behind, and the one worker pool that runs them (the
self-play collectors, the evaluation workers).

* **One pool** (`WorkerPool`): `count` "spawn" processes, each on its own duplex pipe. A worker
  runs its `serve` function once (`WorkerStart`: its index, its block of memory, the pool's
  setup) and then answers every job it is sent, in order, with the result of the handler
  `serve` returned. Jobs are typed values (the callers' frozen dataclasses), results any
  picklable value. The parent waits on each worker's pipe *and* its process sentinel, so a
  worker that dies without answering is noticed at once: its `WorkerExit` (which worker, pid,
  `describe_exit`, the job it held) goes to the caller's `died`, whose exception is raised. A
  job that raises in the worker is answered with the exception and its traceback text
  (`WorkerFailure`, to the caller's `failed`). `close` stops them in order: asked to stop, or
  terminated, then killed if still alive after 5 s; none is left.
* **Memory with no name** (`anonymous_memory`): a `memfd` (Linux) or an unlinked temporary file,
  handed to the child over its pipe (`send_fd` / `receive_fd`, SCM_RIGHTS). Nothing is ever in
  `/dev/shm` under a name, so a SIGKILL of every process of a run at once (the OOM killer, a
  cluster scheduler) leaks nothing: the kernel frees the memory with its last mapping.
* **Children die with their parent** (`die_with_parent`): on Linux `PR_SET_PDEATHSIG`, so that
  a collector is killed with the trainer whatever kills it; elsewhere a child notices at its next
  read of the pipe (EOF). Workers ignore SIGINT: a Ctrl-C is the parent's to handle.
* **A dead child is named** (`describe_exit`): exit code or signal, for the error a parent raises.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import mmap
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing import connection, reduction
from typing import Any

_PR_SET_PDEATHSIG = 1


class CollectorError(RuntimeError):
    """A self-play collector process died or failed; the message says which and how."""


def anonymous_memory(size: int, label: str = "chickenfoot-rollout") -> int:
    """A file descriptor of `size` bytes of shared memory that no path names (`label` is what
    /proc/<pid>/maps shows for a memfd; it names nothing in the file system)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(label, os.MFD_CLOEXEC)
    else:
        folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
        with tempfile.TemporaryFile(dir=folder) as handle:  # unlinked at once
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, size)
    return fd


def send_fd(conn, fd: int, pid: int) -> None:
    """Hand file descriptor `fd` to process `pid` at the other end of the pipe `conn`."""
    reduction.send_handle(conn, fd, pid)


def receive_fd(conn) -> int:
    """The file descriptor `send_fd` sent through `conn`."""
    return reduction.recv_handle(conn)


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux); exit at once if the
    parent is already gone."""
    if sys.platform == "linux":
        try:
            libc = ctypes.CDLL(None, use_errno=True)  # the C library this process already has
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the call above
        os._exit(1)


def describe_exit(exitcode: int | None) -> str:
    """A child's `Process.exitcode` in words."""
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the out-of-memory killer sends SIGKILL)" if -exitcode == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"exited with code {exitcode}"


# ------------------------------------------------------------------------------ the pool
STOP_GRACE_S = 5.0  # how long `close` waits for its workers before it kills them


@dataclass(frozen=True)
class WorkerStart:
    """What a worker's `serve` function gets once, in the worker: its index in the pool, its
    block of shared memory (None without `memory_bytes`, or where descriptors cannot be handed
    over a pipe), and the pool's `setup` value."""

    index: int
    memory: mmap.mmap | None
    setup: Any


@dataclass(frozen=True)
class WorkerExit:
    """A worker that ended without answering: which one, its pid and `Process.exitcode`
    (negative: the signal), the oldest job it held (None: it held none) and its block of shared
    memory as the parent maps it (what it was doing, if the caller keeps that there)."""

    index: int
    pid: int
    exitcode: int | None
    job: Any
    memory: mmap.mmap | None

    @property
    def how(self) -> str:
        """Its exit in words (`describe_exit`): "was killed by SIGKILL ...", "exited with code 3"."""
        return describe_exit(self.exitcode)


@dataclass(frozen=True)
class WorkerFailure:
    """A job (or a worker's start, `job` None then) that raised in the worker: the exception,
    rebuilt here, and the worker's traceback as text."""

    index: int
    pid: int
    job: Any
    error: BaseException
    traceback: str


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (its `__cause__` here)."""

    def __str__(self) -> str:
        return self.args[0]


def reraise(failure: WorkerFailure) -> BaseException:
    """`WorkerPool`'s default `failed`: the worker's own exception, its traceback as its cause."""
    err = failure.error
    err.__cause__ = RemoteTraceback(f"\n\n(in worker process {failure.pid})\n{failure.traceback}")
    return err


def _describe(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class _Handle:
    """The parent's side of one worker: its process, pipe, memory and unanswered jobs."""

    def __init__(self, index: int, process, conn, memory: mmap.mmap | None):
        self.index, self.process, self.conn, self.memory = index, process, conn, memory
        self.pending: collections.deque[tuple[Any, Any]] = collections.deque()  # (key, job)


class WorkerPool:
    """`count` "spawn" worker processes serving typed jobs (module docstring).

    `serve(start: WorkerStart)` runs once in each worker and returns the handler that turns a
    job into its result; it must be a module-level function (spawn imports it by name), and
    `setup` picklable. `memory_bytes` > 0 gives each worker a block of that many bytes of
    memory no path names (`anonymous_memory`, labelled `memory_label`), mapped on both sides
    (`memory`). `died(WorkerExit)` and `failed(WorkerFailure)` make the exceptions raised when a
    worker dies or a job raises (default: the worker's exception itself, `reraise`).

    Processes are started (with SIGINT ignored meanwhile, so that a Ctrl-C then is the
    parent's alone) before the constructor returns; if one cannot be, those started are
    stopped and the error raised. Use as a context manager, or call `close`.
    """

    def __init__(self, name: str, count: int, serve: Callable[[WorkerStart], Callable[[Any], Any]],
                 setup: Any = None, *, died: Callable[[WorkerExit], BaseException],
                 failed: Callable[[WorkerFailure], BaseException] = reraise,
                 memory_bytes: int = 0, memory_label: str = "chickenfoot-worker"):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be a positive int (worker processes); got {count!r}")
        if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int) or memory_bytes < 0:
            raise ValueError(f"memory_bytes must be an int >= 0; got {memory_bytes!r}")
        self.name, self._died, self._failed = name, died, failed
        self._memory_bytes = memory_bytes if reduction.HAVE_SEND_HANDLE else 0
        self._workers: list[_Handle] = []
        # "spawn": safe with torch or threads in the parent, and the same on every platform.
        context = multiprocessing.get_context("spawn")
        try:
            for index in range(count):
                self._workers.append(self._start(context, index, serve, setup, memory_label))
        except BaseException:
            self.close(graceful=False)
            raise

    def _start(self, context, index: int, serve, setup, label: str) -> _Handle:
        conn, child = context.Pipe(duplex=True)
        fd = anonymous_memory(self._memory_bytes, label) if self._memory_bytes else None
        process = None
        try:
            process = context.Process(
                target=_worker_main, name=f"{self.name}-worker-{index}", daemon=True,
                args=(child, os.getpid(), index, serve, setup, self._memory_bytes))
            try:
                with _sigint_ignored():  # kept through exec: no KeyboardInterrupt while it starts
                    process.start()
            finally:
                child.close()
            memory = None
            if fd is not None:
                memory = mmap.mmap(fd, self._memory_bytes)  # maps its own duplicate of fd
                send_fd(conn, fd, process.pid)
            return _Handle(index, process, conn, memory)
        except BaseException:
            if process is not None and process.pid is not None:
                process.kill()
                process.join()
            conn.close()
            raise
        finally:
            if fd is not None:
                os.close(fd)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, kind, value, tb) -> None:
        self.close(graceful=kind is None)

    def __len__(self) -> int:
        return len(self._workers)

    @property
    def processes(self) -> list:
        """Each worker's `multiprocessing.Process`, in index order (kept after `close`)."""
        return [worker.process for worker in self._workers]

    def memory(self, index: int) -> mmap.mmap | None:
        """Worker `index`'s block of shared memory as the parent maps it (None: none)."""
        return self._workers[index].memory

    def submit(self, index: int, job: Any, key: Any = None) -> None:
        """Send `job` to worker `index` (after the jobs it holds); `key` comes back with its
        result from `next_result`. A worker that died is noticed at the next wait."""
        worker = self._workers[index]
        worker.pending.append((key, job))
        with contextlib.suppress(OSError):  # it died: its sentinel says so at the next wait
            worker.conn.send(job)

    def receive(self, index: int) -> Any:
        """The result of the oldest job worker `index` holds, waiting for it; raises `died`'s
        exception if the worker ends first, `failed`'s if the job raised."""
        worker = self._workers[index]
        if not worker.pending:
            raise RuntimeError(f"{self.name} worker {index} holds no job to wait for")
        connection.wait([worker.conn, worker.process.sentinel])
        return self._take(worker)[1]

    def next_result(self) -> tuple[int, Any, Any]:
        """(worker index, key, result) of the first job any worker answers (`receive`'s errors)."""
        busy = [worker for worker in self._workers if worker.pending]
        if not busy:
            raise RuntimeError(f"no {self.name} worker holds a job")
        ready = connection.wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
        for worker in busy:
            if worker.conn in ready or worker.process.sentinel in ready:
                key, result = self._take(worker)
                return worker.index, key, result
        raise AssertionError("connection.wait returned none of the objects it waited on")

    def imap(self, jobs: Sequence[Any], depth: int = 1) -> Iterator[Any]:
        """The results of `jobs`, in order, each job played by whichever worker is free; each
        worker holds up to `depth` jobs, so that none waits for its next one (keep 1 for big
        jobs: the parent then never blocks sending to a worker blocked sending its results)."""
        todo = iter(range(len(jobs)))
        done: dict[int, Any] = {}

        def give(index: int) -> None:
            job = next(todo, None)
            if job is not None:
                self.submit(index, jobs[job], key=job)

        for _ in range(depth):
            for index in range(len(self._workers)):
                give(index)
        for wanted in range(len(jobs)):
            while wanted not in done:
                index, key, result = self.next_result()
                done[key] = result
                give(index)
            yield done.pop(wanted)

    def _take(self, worker: _Handle) -> tuple[Any, Any]:
        """A ready worker's answer: (key, result), or raise what it failed or died of."""
        try:
            message = worker.conn.recv() if worker.conn.poll() else None
        except (EOFError, OSError):  # it died while answering
            message = None
        except Exception as err:  # an exception of the worker's that cannot be rebuilt here
            raise RuntimeError(f"cannot read what {self.name} worker {worker.index} (pid "
                               f"{worker.process.pid}) sent: {_describe(err)}") from err
        key, job = worker.pending[0] if worker.pending else (None, None)
        if message is None:  # the sentinel fired with no answer: the process is gone
            worker.process.join(STOP_GRACE_S)
            raise self._died(WorkerExit(worker.index, worker.process.pid,
                                        worker.process.exitcode, job, worker.memory))
        if message[0] == "done":
            worker.pending.popleft()
            return key, message[1]
        _, err, text, started = message
        raise self._failed(WorkerFailure(worker.index, worker.process.pid,
                                         job if started else None, err, text))

    def close(self, graceful: bool = True) -> None:
        """Stop every worker: asked to (graceful: it finishes its job first) or terminated;
        any still alive after `STOP_GRACE_S` is killed. Every process is reaped; idempotent."""
        for worker in self._workers:
            if graceful:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
            elif worker.process.is_alive():
                worker.process.terminate()
        for worker in self._workers:
            worker.conn.close()  # the end of its pipe, too
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in self._workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():  # busy past the grace, or a handler caught SIGTERM
                worker.process.kill()
                worker.process.join()
        for worker in self._workers:
            if worker.memory is not None:
                with contextlib.suppress(BufferError):  # a view still held: freed with it
                    worker.memory.close()
            worker.pending.clear()


def _worker_main(conn, parent_pid: int, index: int, serve, setup, memory_bytes: int) -> None:
    """A worker process: start (`serve`), then answer each job on `conn` with ("done", result)
    or ("failed", exception, traceback text, whether a job had started); stop on None or at
    the end of the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle
    die_with_parent(parent_pid)
    try:
        memory = None
        if memory_bytes:
            fd = receive_fd(conn)
            memory = mmap.mmap(fd, memory_bytes)
            os.close(fd)  # the mapping keeps the memory
        try:
            handle = serve(WorkerStart(index, memory, setup))
        except BaseException as err:  # reported at the parent's next wait on this worker
            _answer(conn, _failure(err, False))
            return
        while True:
            job = conn.recv()
            if job is None:
                return
            try:
                message = ("done", handle(job))
            except BaseException as err:  # every failure goes back to the parent, which raises it
                message = _failure(err, True)
            _answer(conn, message)
    except (EOFError, OSError):  # the parent went away
        return


def _failure(err: BaseException, started: bool) -> tuple:
    if not isinstance(err, Exception):  # SystemExit, KeyboardInterrupt, ...: a worker's failure
        err = RuntimeError(f"{_describe(err)} in a worker process")
    return ("failed", err, traceback.format_exc(), started)


def _answer(conn, message: tuple) -> None:
    try:
        conn.send(message)  # pickled whole before a byte is written
    except (pickle.PicklingError, TypeError, AttributeError) as err:  # an unpicklable answer
        if message[0] == "failed":
            text, trace = f"{_describe(message[1])} (not picklable: {err})", message[2]
        else:
            text, trace = f"a result that cannot be sent back (not picklable: {err})", ""
        conn.send(("failed", RuntimeError(text), trace, True))


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile (main thread, with a handler Python can put back)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is None):
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
