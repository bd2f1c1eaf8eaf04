"""The self-play learner: the trainer, its batched collector, the opponent pool, and value heads fitted by policy evaluation."""
