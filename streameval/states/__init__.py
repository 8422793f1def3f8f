"""ACCUMULATE: one module per state kind, each declaring how its columns merge.

A state kind module has ``merge_ops(spec)`` (stored value columns → ``"sum"`` or ``"max"``)
and ``group_columns(spec)`` (the columns that, after the group keys, identify a state row).
Merging concatenates tables and aggregates each value column by its op over those columns.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from ..errors import InputError
from . import binary, multiclass, paired, regression

if TYPE_CHECKING:
    from ..spec import Spec


def kind_module(spec: Spec) -> ModuleType:
    """The module of a state kind (``binary``, ``multiclass``, ``regression``)."""
    kinds = {"binary": binary, "multiclass": multiclass, "regression": regression, "paired": paired}
    if spec.kind not in kinds:
        raise InputError(
            f"expected a state kind among {sorted(kinds)}, got {spec.kind!r}; "
            "hint: the state was written by another version of streameval"
        )
    return kinds[spec.kind]
