"""The Ray RLlib trainer (the `rllib` extra): its config, the Ray-free compatibility layer, and everything that touches Ray's API."""
