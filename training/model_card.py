"""`python -m training.model_card checkpoints/<name> [...]`: rewrite shipped agents' model cards
(`card.md`) from their `card.json` and the published results about them.

The command; its code is `training.artifacts.model_card`.
"""

from training.artifacts.model_card import main

if __name__ == "__main__":
    raise SystemExit(main())
