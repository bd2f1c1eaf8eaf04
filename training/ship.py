"""`python -m training.ship <run-dir> <dest>`: package a run's checkpoint as a shipped agent.

The command; its code is `training.artifacts.ship`.
"""

from training.artifacts.ship import main  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    main()
