"""The Stable-Baselines3 learner: sb3-contrib's MaskablePPO on the single-agent env (`algo: maskable_ppo`)."""
