"""What a run directory records about where it came from (the git revision and package
versions), its creation, and the lock a session holds on it."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from datetime import datetime
from importlib import metadata
from pathlib import Path

from cf_env.core import atomic

LOCK_FILE = ".lock"
MAX_RUN_INFO_BYTES = 1 << 24  # run.json grows by ~300 bytes a session
_HELD: dict[Path, int] = {}  # run directory -> the descriptor holding its lock (this process)


def git_revision() -> dict:
    """The repository's HEAD commit and whether the working tree had uncommitted changes."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain"))}


def package_versions(packages: tuple[str, ...]) -> dict:
    """Installed versions of `packages` (None where missing), plus the Python version."""
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def read_run_info(run_dir: Path) -> dict | None:
    """The run's `run.json` (None if it has none yet); `ValueError` naming the file when it is
    not what `write_run_info` writes."""
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_RUN_INFO_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size:,} bytes; a run.json holds at most "
                         f"{MAX_RUN_INFO_BYTES:,}")
    try:
        info = json.loads(path.read_text())
    except ValueError as err:
        raise ValueError(f"{path} is damaged (not JSON: {err}); it only records the run's "
                         "sessions and versions: restore it, or delete it to resume with a "
                         "new history") from None
    if not isinstance(info, dict) or not isinstance(info.get("sessions"), list):
        raise ValueError(f"{path}: expected an object with a 'sessions' list, as training.ppo "
                         "writes it; restore it, or delete it to resume with a new history")
    return info


def lock_run(run_dir: Path) -> None:
    """Hold the run directory's lock for the rest of this process (the kernel drops it when the
    process dies, however it dies). Raises `OSError` naming the holder if another process has it.
    """
    run_dir = Path(run_dir)
    if run_dir.resolve() in _HELD:
        return
    try:
        import fcntl
    except ImportError:  # no flock (Windows): unlocked
        return
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise OSError(f"run directory {run_dir} is in use by a running session (pid {holder}); "
                      "wait for it to end or stop it") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    _HELD[run_dir.resolve()] = fd


def release_run(run_dir: Path) -> None:
    """Let go of a lock `lock_run` took (a session that ends before the process does)."""
    fd = _HELD.pop(Path(run_dir).resolve(), None)
    if fd is not None:
        os.close(fd)


def has_checkpoint(run_dir: Path) -> bool:
    """Whether the run directory has a checkpoint to resume from."""
    return (Path(run_dir) / "checkpoints" / "latest.json").is_file()


def create_run_dir(runs_dir: str, run_name: str | None, default_name: str, config: dict,
                   exists_hint: str = "pick another run_name") -> tuple[Path, bool]:
    """Make a run directory holding the resolved `config.yaml`, and lock it (`lock_run`);
    returns it and whether it was an earlier run started again.

    An existing run with a checkpoint is never reused (`FileExistsError`). One with no
    checkpoint (its session was killed before the first) is started afresh: `restart_run_dir`.
    """
    run_dir = Path(runs_dir) / (run_name or f"{default_name}-{datetime.now():%Y%m%d-%H%M%S}")
    if run_dir.exists():
        # Restartable: a run with no checkpoint, or a folder a kill left right after its mkdir
        # (nothing in it but hidden files: the lock, a temporary config.yaml).
        started = (run_dir / "config.yaml").is_file() or not [
            p for p in run_dir.iterdir() if not p.name.startswith(".")]
        if has_checkpoint(run_dir) or not started:
            raise FileExistsError(f"run directory {run_dir} exists; {exists_hint}")
        restart_run_dir(run_dir, config)
        return run_dir, True
    run_dir.mkdir(parents=True)
    lock_run(run_dir)
    write_config(run_dir, config)
    return run_dir, False


def restart_run_dir(run_dir: Path, config: dict) -> None:
    """Empty a run directory that has no checkpoint (what a session killed before its first one
    left) and write `config` as its `config.yaml`: the run starts again at step 0."""
    lock_run(run_dir)
    if has_checkpoint(run_dir):
        raise FileExistsError(f"run directory {run_dir} has a checkpoint; resume it instead")
    write_config(run_dir, config)  # first: a kill during the clearing leaves it restartable
    for child in run_dir.iterdir():
        if child.name in (LOCK_FILE, "config.yaml"):
            continue  # (a killed writer's temporary files go with the rest)
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def write_config(run_dir: Path, config: dict) -> None:
    """Replace the run's `config.yaml` (whole)."""
    import yaml  # the `train` extra; this module's other functions need only the stdlib

    atomic.write_text(Path(run_dir) / "config.yaml", yaml.safe_dump(config, sort_keys=False))
