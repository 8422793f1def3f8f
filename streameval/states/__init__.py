"""ACCUMULATE: one module per state kind, each declaring how its columns merge.

A state kind module (a :class:`StateKind`) has ``merge_ops(spec)`` (stored value columns →
``"sum"`` or ``"max"``) and ``group_columns(spec)`` (the columns that, after the group keys,
identify a state row). Merging concatenates tables and aggregates each value column by its
op over those columns; states whose classes or label values were found in the data are
checked (``check_found``) and brought to the merged spec's (``reindex``) first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..errors import InputError
from ..tasks.binary import state as binary
from ..tasks.multiclass import state as multiclass
from ..tasks.multilabel import state as multilabel
from ..tasks.paired import state as paired
from ..tasks.ranking import state as ranking
from ..tasks.regression import state as regression

if TYPE_CHECKING:
    from collections.abc import Callable

    import polars as pl

    from ..spec import Spec


class StateKind(Protocol):
    """How the states of one kind merge: each kind module is one."""

    def merge_ops(self, spec: Spec) -> dict[str, str]:
        """Each stored value column and how it merges (``"sum"`` or ``"max"``)."""
        ...

    def group_columns(self, spec: Spec) -> list[str]:
        """The columns that, after the group keys, identify a state row."""
        ...

    def check_found(self, spec: Spec) -> None:
        """Refuse a merge of states whose values found in the data cannot be reconciled."""
        ...

    def reindex(self, table: pl.DataFrame, old: Spec, new: Spec) -> pl.DataFrame:
        """A table of the spec ``old`` in the merged spec ``new``'s indices."""
        ...

    def check_merged(self, spec: Spec, table: pl.DataFrame) -> None:
        """Refuse a merged table that counts some rows twice (a ranking query's list)."""
        ...


#: Every state kind, by its name (:attr:`streameval.Spec.kind`).
KINDS: dict[str, StateKind] = {
    "binary": binary,
    "multiclass": multiclass,
    "regression": regression,
    "paired": paired,
    "ranking": ranking,
    "multilabel": multilabel,
}


#: The score histogram of each state kind that has one (the ``histogram`` capability): its
#: table per group (and model) and bucket, with the rows' weight ``_mass`` and ``_rows``.
HISTOGRAMS: dict[str, Callable[[Spec, pl.DataFrame], pl.DataFrame]] = {
    "binary": binary.histogram,
    "paired": paired.histogram,
}


def kind_module(spec: Spec) -> StateKind:
    """The state kind of ``spec`` (``binary``, ``multiclass``, ``regression``, …)."""
    if spec.kind not in KINDS:
        raise InputError(
            f"expected a state kind among {sorted(KINDS)}, got {spec.kind!r}; "
            "hint: the state was written by another version of streameval"
        )
    return KINDS[spec.kind]
