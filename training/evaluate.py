"""`python -m training.evaluate`: duplicate-deal evaluation of a policy against opponents.

The command; its code is `training.evaluation.evaluate`.
"""

from training.evaluation.evaluate import main  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    main()
