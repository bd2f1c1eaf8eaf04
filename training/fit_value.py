"""Fit a value head for a shipped actor by policy evaluation: `python -m training.fit_value <ckpt>`.

The command; its code is `training.selfplay.fit_value`.
"""

import sys

from training.selfplay.fit_value import main  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    sys.exit(main())
