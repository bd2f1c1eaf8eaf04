"""What a run directory records about where it came from: the git revision and package versions."""

from __future__ import annotations

import platform
import subprocess
from datetime import datetime
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


def create_run_dir(runs_dir: str, run_name: str | None, default_name: str, config: dict,
                   exists_hint: str = "pick another run_name") -> Path:
    """Make a new run directory (never reusing one) holding the resolved `config.yaml`."""
    import yaml  # the `train` extra; this module's other functions need only the stdlib

    run_dir = Path(runs_dir) / (run_name or f"{default_name}-{datetime.now():%Y%m%d-%H%M%S}")
    if run_dir.exists():
        raise FileExistsError(f"run directory {run_dir} exists; {exists_hint}")
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return run_dir
