"""The tasks, each a package: its planning, its state's columns, its metrics and curves.

The types they share are in :mod:`.common`; the registry by name in :mod:`.registry`.
"""
