"""Evaluation: duplicate-deal matches, their statistics and ratings, reports and learning curves."""
