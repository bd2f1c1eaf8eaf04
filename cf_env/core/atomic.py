"""Files and folders replaced whole: every writer of the project goes through here, so that a
process killed at any instant leaves either the old complete file (or folder) or the new one.

* **A file** is written to a hidden temporary sibling, flushed to disk (`fsync`), then renamed
  over its name (`os.replace`, atomic on POSIX and Windows): `write_text`, `write_json`, and
  `atomic_path` for writers that want a path (`np.savez`, `torch.save`, `Figure.savefig`).
* **A folder whose files must change together** (a checkpoint's `card.json` and the weights or
  value head its digests name, a shipped agent) is built complete in a staging sibling
  (`staging_dir`) and swapped into place by `replace_dir`: one `renameat2(RENAME_EXCHANGE)` on
  Linux, `renamex_np(RENAME_SWAP)` on macOS, so there is no instant without a complete folder at
  the name. Where the file system has no atomic swap, the old folder is first renamed to
  `.<name>.old-<pid>-…` and the new one renamed in; `recover_dir` (every writer calls it before
  touching the folder) renames a folder left aside back when a kill fell between the two renames.
* **Leftovers** of a killed writer (staging folders, temporary files) carry the writer's pid in
  their names; `recover_dir` and `staging_dir` remove those whose process is gone.
* **Lines appended** to a log (`append_lines`) are written with one `write` of whole lines; a
  reader skips a torn last line (`read_jsonl`), and `repair_jsonl` cuts it off before a resumed
  writer appends.

Standard library only: the rules layer and every layer above may use it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "append_lines",
    "atomic_path",
    "clear_leftovers",
    "read_jsonl",
    "recover_dir",
    "repair_jsonl",
    "replace_dir",
    "staging_dir",
    "write_json",
    "write_text",
]


# ------------------------------------------------------------------------------------ files
@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside `path`; when the block ends without an exception the file written
    there is flushed and renamed to `path` (else removed). The folder must exist."""
    target = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}-", suffix=".tmp",
                                dir=target.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        _fsync_file(temporary)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; these files are meant to be shared
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_dir(target.parent)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Replace the file `path` with `text` (UTF-8), whole."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, data, **dumps) -> None:
    """Replace the file `path` with `data` as JSON (indent 2 unless given), whole."""
    dumps.setdefault("indent", 2)
    write_text(path, json.dumps(data, **dumps) + "\n")


def append_lines(path: str | os.PathLike, lines: list[str]) -> None:
    """Append whole lines to a log in one write (a kill tears at most the last line)."""
    if not lines:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(line.rstrip("\n") + "\n" for line in lines))
        handle.flush()
        os.fsync(handle.fileno())


MAX_LOG_BYTES = 1 << 28  # a log read whole (evals.jsonl: ~300 bytes per evaluation)


def read_jsonl(path: str | os.PathLike) -> list:
    """The JSON values of a log's lines. A torn last line (a kill during `append_lines`) is
    skipped; a bad line before it, or a log over `MAX_LOG_BYTES`, raises `ValueError` naming
    the file (and line)."""
    size = os.stat(path).st_size
    if size > MAX_LOG_BYTES:
        raise ValueError(f"{path}: {size:,} bytes; a log is read whole, at most {MAX_LOG_BYTES:,}")
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    values = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError as err:
            if number == len(lines):  # the last line, with no newline after it: torn
                break
            raise ValueError(f"{path}, line {number}: not JSON ({err}); the log is damaged") from None
    return values


def repair_jsonl(path: str | os.PathLike, keep=None) -> int:
    """Rewrite a log without its torn last line (and, with `keep`, without the values for which
    `keep(value)` is false); returns how many lines were dropped. No file: nothing to do."""
    path = Path(path)
    if not path.is_file():
        return 0
    text = path.read_text(encoding="utf-8")
    values = read_jsonl(path)
    kept = [v for v in values if keep is None or keep(v)]
    before = sum(1 for line in text.split("\n") if line.strip())
    if len(kept) != before:
        write_text(path, "".join(json.dumps(v) + "\n" for v in kept))
    return before - len(kept)


# ------------------------------------------------------------------------------------ folders
def staging_dir(target: str | os.PathLike, role: str = "staging") -> Path:
    """A new empty folder beside `target` (`.<name>.<role>-<pid>-…`) to build its replacement in;
    leftovers of writers that were killed are removed first (`recover_dir`)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_dir(target)
    folder = Path(tempfile.mkdtemp(prefix=f".{target.name}.{role}-{os.getpid()}-",
                                   dir=target.parent))
    os.chmod(folder, 0o755)  # mkdtemp makes it private; the folder is meant to be shared
    return folder


def replace_dir(staging: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the complete folder `staging` at `target`, replacing any folder there, atomically
    (see the module docstring); the old folder is removed afterwards."""
    staging, target = Path(staging), Path(target)
    for child in staging.rglob("*"):
        if child.is_file():
            _fsync_file(child)
    fsync_dir(staging)
    if not target.exists():
        os.rename(staging, target)  # atomic: the name was free
        fsync_dir(target.parent)
        return
    if _exchange(staging, target):  # staging now holds the old folder
        fsync_dir(target.parent)
        shutil.rmtree(staging, ignore_errors=True)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{os.getpid()}-", dir=target.parent))
    os.rmdir(aside)  # the rename below needs the name free
    os.rename(target, aside)
    os.rename(staging, target)  # a kill before this line: recover_dir renames `aside` back
    fsync_dir(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def recover_dir(target: str | os.PathLike) -> None:
    """Undo what a killed writer of `target` left: a folder renamed aside by `replace_dir` with
    no folder at `target` is renamed back; staging folders and temporary files of writers whose
    process is gone are removed."""
    target = Path(target)
    clear_leftovers(target.parent, only=target.name)


def clear_leftovers(folder: str | os.PathLike, only: str | None = None) -> None:
    """`recover_dir` for every name in `folder` (or only for the name `only`)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        match = _LEFTOVER.match(path.name)
        if match is None or (only is not None and match["name"] != only):
            continue
        if _alive(int(match["pid"])):
            continue
        target = folder / match["name"]
        if match["role"] == "old" and not target.exists():
            os.rename(path, target)
            fsync_dir(folder)
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


# `.<name>.<role>-<pid>-<random>` (staging and set-aside folders), `.<name>.<pid>-<random>.tmp`
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?:(?P<role>[a-z]+)-)?(?P<pid>\d+)-[^.]*(?:\.tmp)?$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


# ------------------------------------------------------------------------------------ system
def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename in it) to disk, where the platform allows."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # linux/fs.h
_RENAME_SWAP = 2  # macOS stdio.h


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)  # the C library this process already has
    except OSError:
        return None


_LIBC = _libc() if sys.platform in ("linux", "darwin") else None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one system call; False where the platform or the file
    system cannot (then nothing changed)."""
    if _LIBC is None:
        return False
    if sys.platform == "linux":
        call = getattr(_LIBC, "renameat2", None)
        args = (_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    else:
        call = getattr(_LIBC, "renamex_np", None)
        args = (os.fsencode(a), os.fsencode(b), _RENAME_SWAP)
    if call is None:
        return False
    if call(*args) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, f"cannot swap {a} and {b}: {os.strerror(code)}")
