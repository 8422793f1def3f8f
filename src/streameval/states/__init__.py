"""Accumulate: one module per state kind, each declaring how its columns merge."""
