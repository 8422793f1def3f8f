"""streameval: streaming, mergeable evaluation of model predictions stored as data.

>>> import polars as pl, streameval as se
>>> df = pl.DataFrame({"g": ["a", "a", "b", "b"], "y": [0, 1, 0, 1], "p": [0.3, 0.7, 0.6, 0.4]})
>>> se.evaluate(df, label="y", score="p", by="g").select("g", "roc_auc", "accuracy")
shape: (2, 3)
┌─────┬─────────┬──────────┐
│ g   ┆ roc_auc ┆ accuracy │
│ --- ┆ ---     ┆ ---      │
│ str ┆ f64     ┆ f64      │
╞═════╪═════════╪══════════╡
│ a   ┆ 1.0     ┆ 1.0      │
│ b   ┆ 0.0     ┆ 0.0      │
└─────┴─────────┴──────────┘
"""

import importlib as _importlib
from types import ModuleType as _ModuleType

from . import split
from .accumulate import accumulate
from .crossval import fold_metrics
from .errors import DomainWarning, InputError, SpecMismatchError, StateFileError, StreamevalError
from .estimators import bootstrap_estimate
from .evaluate import evaluate
from .slices import find_slices
from .spec import DEFAULT_PRECISION, Spec
from .state import State, merge, read_state
from .version import __version__ as __version__

__all__ = [
    "DEFAULT_PRECISION",
    "DomainWarning",
    "InputError",
    "Spec",
    "SpecMismatchError",
    "State",
    "StateFileError",
    "StreamevalError",
    "accumulate",
    "bootstrap_estimate",
    "evaluate",
    "find_slices",
    "fold_metrics",
    "merge",
    "read_state",
    "split",
]

# Submodules the README documents, beside ``split``: imported on first use, so that
# ``import streameval`` loads neither the job runner nor Spark's or matplotlib's wrappers.
_SUBMODULES = ("jobs", "kernels", "plot", "spark")


def __getattr__(name: str) -> _ModuleType:
    if name in _SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    dunders = (name for name in globals() if name.startswith("__"))
    return sorted({*__all__, *_SUBMODULES, *dunders})
