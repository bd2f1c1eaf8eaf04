"""The rules: config, tile and action ids, the engine and its snapshots, observations, rewards
and deals. numpy and the standard library only; nothing here imports another cf_env layer."""
