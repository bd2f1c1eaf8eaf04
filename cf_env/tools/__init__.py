"""Command-line programs (`python -m cf_env.<name>` runs `cf_env.tools.<name>`): play, demo,
soak, bench, search_bench and openspiel_bots."""
