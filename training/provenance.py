"""What a run directory records about where it came from: the git revision and package versions."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path


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
