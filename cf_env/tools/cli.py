"""What the command-line programs share: `--help` that shows each option's default, and the
thread count of the numerical libraries.

`HelpFormatter` is argparse's `ArgumentDefaultsHelpFormatter` (" (default: 2000)" after an
option's help), keeping the description's own line breaks, and saying nothing for defaults that
mean "not given" (None, False, an empty list), whose help says in words what happens then.

`limit_threads` keeps torch (and the BLAS libraries under numpy in processes started later) to
a few threads: our networks are small, and torch's default of one thread per core makes them
many times slower when the machine's other cores are busy.
"""

from __future__ import annotations

import argparse
import os
import sys

DEFAULT_THREADS = 1


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults in `--help` ("(default: X)"), except for defaults that mean "not given"."""

    def _get_help_string(self, action: argparse.Action) -> str:
        default = action.default
        if default is None or default is False or default == [] or default == "" or (
            action.help and "default" in action.help
        ):
            return action.help or ""
        return super()._get_help_string(action)


def limit_threads(threads: int = DEFAULT_THREADS) -> None:
    """Run torch with `threads` threads: now if it is imported, else from its import on (through
    OMP_NUM_THREADS), so that nothing imports torch only to be limited; processes started later
    (evaluation workers) inherit the variable. An OMP_NUM_THREADS the user set wins."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        threads = int(given)
    else:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
