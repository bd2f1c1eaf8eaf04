"""Deprecation warnings that point at the user's line: the first frame outside `cf_env` and the
import machinery, since Python shows a `DeprecationWarning` by default only when the line it
names is in `__main__` (the user's script)."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cf_env/


def warn_deprecated(message: str) -> None:
    """Warn `DeprecationWarning` with `message`, naming the first line outside cf_env."""
    level, frame = 2, sys._getframe(1)  # level 2: this function's caller, as warn() counts
    while frame is not None:
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):  # warn() skips these itself
            if not (name.startswith(_PACKAGE) or "importlib" in name):
                break
            level += 1
        frame = frame.f_back
    warnings.warn(message, DeprecationWarning, stacklevel=level)
