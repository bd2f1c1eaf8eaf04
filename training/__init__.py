"""Training, evaluation and checkpoints for Chicken Foot agents (needs the `train` extra: torch, SB3)."""
