"""Agents: the policy protocol and spec table, baseline bots, search, the checkpoint reader and the
arena that plays policies through a game. Imports only `cf_env.core`."""
