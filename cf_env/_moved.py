"""Old flat module paths (`cf_env.engine`, `python -m cf_env.play`, ...), kept working after the
modules moved into subpackages, deprecated: a declarative table and one import hook.

`import cf_env.bots` returns the very module object `cf_env.agents.bots` (one module, not a copy,
so monkeypatching either name patches both), and `python -m cf_env.play` runs
`cf_env.tools.play` as `__main__`. Each use of an old path warns `DeprecationWarning`, naming the
new path and the release that removes the old one (`REMOVED_IN`): an import once per alias (the
first import of the alias; Python caches it after that), `python -m` on stderr before the program
runs. The hook answers only the names in `MOVED`.

`cf_env.env` is not in the table: at the package level that name is the `env()` factory
(PettingZoo's convention); the AEC module is `cf_env.envs.env`. Neither are the package attributes
`chicken_foot_v1` and `chicken_foot_v0` (`from cf_env import chicken_foot_v1`, the versioned entry
points, resolved by `cf_env.__getattr__` without the hook); only the dotted module paths
`import cf_env.chicken_foot_v1` are aliases.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings

from cf_env.core.deprecation import warn_deprecated

REMOVED_IN = "0.3.0"  # the chickenfoot release that drops every old path in MOVED

# old path -> new path; every documented `python -m cf_env.<tool>` is here.
MOVED = {
    f"cf_env.{name}": f"cf_env.{package}.{name}"
    for package, names in {
        "core": ("config", "tiles", "actions", "engine", "observation", "rewards", "deals"),
        "envs": ("chicken_foot_v0", "chicken_foot_v1", "single_agent", "openspiel_game"),
        "agents": ("policies", "bots", "ismcts"),
        "viz": ("render", "render_image", "record", "replay"),
        "tools": ("play", "demo", "soak", "bench", "search_bench", "openspiel_bots"),
    }.items()
    for name in names
}


def message(old: str, run: bool = False) -> str:
    """The warning for a use of the old path `old`: `import` (default) or `python -m` (`run`)."""
    new = MOVED[old]
    if run:
        return (f"python -m {old} is deprecated: run python -m {new} instead; the old path will "
                f"be removed in chickenfoot {REMOVED_IN}")
    return (f"{old} is deprecated: import {new} instead; the old path will be removed in "
            f"chickenfoot {REMOVED_IN}")


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        return importlib.machinery.ModuleSpec(fullname, self, origin=real.origin)

    def create_module(self, spec):
        # Called once per alias: the import system then caches the module under the old name.
        warn_deprecated(message(spec.name))
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # the import system is about to stamp the alias's
        return module

    def exec_module(self, module):
        # Give the real module its own spec back (pickle, reload and multiprocessing read it).
        module.__spec__ = module.__spec__.loader_state

    def get_code(self, fullname):
        # `python -m cf_env.<old>`: runpy runs this code as __main__ (the moved modules import
        # absolutely, so the alias's package does not matter). The warning is attributed to
        # `__main__`, the program being run, so that the default filters show it.
        warnings.warn_explicit(message(fullname, run=True), DeprecationWarning,
                               filename=fullname, lineno=1, module="__main__")
        new = MOVED[fullname]
        return importlib.util.find_spec(new).loader.get_code(new)


def install() -> None:
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
