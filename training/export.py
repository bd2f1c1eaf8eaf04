"""`python -m training.export <source> <out>`: write a self-contained, weights-only checkpoint.

The command; its code is `training.artifacts.export`.
"""

from training.artifacts.export import main  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    main()
