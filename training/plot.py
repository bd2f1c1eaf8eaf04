"""`python -m training.plot <run-dir>`: the learning curve of a run as a PNG.

The command; its code is `training.evaluation.plot`.
"""

from training.evaluation.plot import main  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    main()
