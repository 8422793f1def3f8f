"""The spec of a state: everything that decides whether two states can be merged."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .bucketing import EXACT_BITS
from .errors import InputError, SpecMismatchError

SCHEMA_VERSION = 2
DEFAULT_PRECISION = 11


@dataclass(frozen=True)
class Spec:
    """How a state was computed.

    Attributes
    ----------
    kind : str
        The task and state kind: ``"binary"``, ``"multiclass"`` or ``"regression"``.
    keys : tuple of str
        Group key columns.
    precision : int
        Mantissa bits kept by score buckets; 52 is the exact mode.
    splits : tuple of float
        Scores at which buckets were cut so confusion counts there stay exact.
    weighted : bool
        Whether a weight column was used (sums are then Float64).
    label, score, weight, prediction : str or None
        Source column names.
    positive : Any
        The positive label value of a binary task (JSON-representable).
    classes : tuple
        A multiclass task's classes, in order (JSON-representable values); a binary task's
        label values found in the data when its labels are not 0/1 or booleans.
    found : bool
        Whether ``classes`` were found in the data (sorted) rather than given: merging then
        takes the union of the states' classes, so that what depends on which values occur
        is decided over all rows.
    scores : tuple of str
        A multiclass task's score columns, one per class in ``classes`` order.
    top_k : int
        ``k`` of a multiclass task's ``top_k_accuracy``.
    power : float
        Tweedie power of a regression task's ``mean_tweedie_deviance``.
    replicates : int
        Bootstrap replicates R (0: none). With R > 0 the last key is ``replicate``
        (0 the sample itself, 1..R Poisson bootstrap replicates; see
        :mod:`streameval.resample_draw`) and the state is weighted.
    seed : int
        Seed of the bootstrap draws.
    row_id : tuple of str
        Columns the bootstrap draws were hashed from; empty: every column the task reads.

    """

    kind: str
    keys: tuple[str, ...]
    precision: int
    splits: tuple[float, ...] = ()
    weighted: bool = False
    label: str = "label"
    score: str | None = "score"
    weight: str | None = None
    positive: Any = 1
    prediction: str | None = None
    classes: tuple[Any, ...] = ()
    found: bool = False
    scores: tuple[str, ...] = ()
    top_k: int = 2
    power: float = 1.5
    replicates: int = 0
    seed: int = 0
    row_id: tuple[str, ...] = ()
    schema_version: int = field(default=SCHEMA_VERSION)

    @property
    def exact(self) -> bool:
        """Whether every distinct score has its own bucket."""
        return self.precision >= EXACT_BITS

    def to_json(self) -> str:
        """Serialise for file metadata."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Spec:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        data["keys"] = tuple(data["keys"])
        for name in ("splits", "classes", "scores", "row_id"):
            data[name] = tuple(data.get(name, ()))
        return cls(**data)

    def check_mergeable(self, other: Spec) -> None:
        """Raise SpecMismatchError naming every field where the two specs differ.

        Classes found in the data (``found``) may differ: merging takes their union.
        """
        if self.found and other.found:
            from dataclasses import replace

            other = replace(other, classes=self.classes)
        if self == other:
            return
        diffs = [
            f"{name}: {getattr(self, name)!r} vs {getattr(other, name)!r}"
            for name in self.__dataclass_fields__
            if getattr(self, name) != getattr(other, name)
        ]
        raise SpecMismatchError(
            "expected states computed the same way, but their specs differ ("
            + "; ".join(diffs)
            + "); hint: accumulate every part with the same columns, keys, precision, "
            "thresholds and bootstrap settings (replicates, seed, row_id)"
        )


def merged_spec(specs: list[Spec]) -> Spec:
    """The spec of the merge of states with these specs (classes found: their sorted union).

    >>> from dataclasses import replace
    >>> a = Spec(kind="multiclass", keys=(), precision=11, classes=(0, 2), found=True)
    >>> merged_spec([a, replace(a, classes=(1,))]).classes
    (0, 1, 2)
    """
    first = specs[0]
    for other in specs[1:]:
        first.check_mergeable(other)
    if not first.found:
        return first
    from dataclasses import replace

    return replace(first, classes=tuple(sorted({c for s in specs for c in s.classes})))


def parse_precision(precision: int | str | None) -> int:
    """Mantissa bits for a ``precision`` argument (``"exact"``, an int 0–52, or None).

    >>> parse_precision("exact"), parse_precision(10), parse_precision(None)
    (52, 10, 11)
    """
    if precision is None:
        return DEFAULT_PRECISION
    if isinstance(precision, str):
        if precision.strip().lower() == "exact":
            return EXACT_BITS
        if precision.strip().isdigit():
            return parse_precision(int(precision))
    if isinstance(precision, int) and not isinstance(precision, bool) and 0 <= precision <= 52:
        return precision
    raise InputError(
        f"expected precision to be 'exact' or a number of mantissa bits 0–52, got {precision!r}; "
        f"hint: the default {DEFAULT_PRECISION} bits bounds the AUC error to about 1e-4"
    )
