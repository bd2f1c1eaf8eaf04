"""Adapters: the PettingZoo AEC env, the Gymnasium single-agent view and the OpenSpiel game."""
