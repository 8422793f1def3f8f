"""Collection settings for the doctests under src/ (tests/ has its own conftest)."""

import importlib.util

# Modules built on numba (the ``fast`` extra) have doctests only where it is installed.
collect_ignore = []
if importlib.util.find_spec("numba") is None:
    collect_ignore += ["src/streameval/kernels/loops.py", "src/streameval/kernels/hashcodes.py"]
