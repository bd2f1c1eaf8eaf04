"""What training leaves on disk: checkpoints, run directories and their provenance, exported and shipped agents."""
