"""Finalize: metrics are expressions over a state table, computed for all groups at once."""
