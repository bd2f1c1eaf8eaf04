"""`python -m training.benchmark <agent spec>`: the Chicken Foot benchmark's score card of an agent.

The command; its code is `training.evaluation.benchmark`.
"""

from training.evaluation.benchmark import main  # noqa: F401  (the command's entry points)

if __name__ == "__main__":
    main()
