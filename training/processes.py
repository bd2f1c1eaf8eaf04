"""Child processes that leave nothing behind (the self-play collectors, the evaluation workers):
their shared memory and their lifetime.

* **Memory with no name** (`anonymous_memory`): a `memfd` (Linux) or an unlinked temporary file,
  handed to the child over its pipe (`send_fd` / `receive_fd`, SCM_RIGHTS). Nothing is ever in
  `/dev/shm` under a name, so a SIGKILL of every process of a run at once (the OOM killer, a
  cluster scheduler) leaks nothing: the kernel frees the memory with its last mapping.
* **Children die with their parent** (`die_with_parent`): on Linux `PR_SET_PDEATHSIG`, so that
  a collector is killed with the trainer whatever kills it; elsewhere a child notices at its next
  read of the pipe (EOF).
* **A dead child is named** (`describe_exit`): exit code or signal, for the error a parent raises.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import tempfile
from multiprocessing import reduction

_PR_SET_PDEATHSIG = 1


class CollectorError(RuntimeError):
    """A self-play collector process died or failed; the message says which and how."""


def anonymous_memory(size: int) -> int:
    """A file descriptor of `size` bytes of shared memory that no path names."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("chickenfoot-rollout", os.MFD_CLOEXEC)
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
