"""`python -m training.leaderboard`: one OpenSkill rating for the bots, the shipped agents and
the search agents from mixed-lineup duplicate matches; `--add SPEC` rates one more against the
frozen pool.

The command; its code is `training.evaluation.leaderboard`.
"""

from training.evaluation.leaderboard import main  # noqa: F401  (the command's entry point)

if __name__ == "__main__":
    main()
