"""The spec of a state: everything that decides whether two states can be merged."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .bucketing import EXACT_BITS
from .errors import InputError, SpecMismatchError, StateFileError

SCHEMA_VERSION = 3
#: The state schema versions this version reads. Version 2 states lack the hinge loss's
#: sums (bucketed binary states' ``hinge`` column, the multiclass score rows' and the
#: multilabel labels' own): they read, merge with newer states (the merge is of version 2
#: then) and give every metric but the hinge loss, which is null.
READABLE_VERSIONS = (2, 3)
DEFAULT_PRECISION = 11
KINDS = ("binary", "multiclass", "regression", "paired", "ranking", "multilabel")
#: The key column of the one group of a state without keys, where a key column is needed.
ALL = "_all"


@dataclass(frozen=True)
class Spec:
    """How a state was computed.

    A frozen dataclass: each parameter is kept as the attribute of the same name. Made by
    :func:`streameval.accumulate` (and read back from a state file's metadata); two states
    merge only when their specs are equal (:meth:`check_mergeable`).

    Parameters
    ----------
    kind : str
        The task and state kind: ``"binary"``, ``"multiclass"``, ``"regression"``,
        ``"paired"``, ``"ranking"`` or ``"multilabel"``.
    keys : tuple of str
        Group key columns.
    precision : int
        Mantissa bits kept by score buckets; 52 is the exact mode.
    splits : tuple of float
        Scores at which buckets were cut so confusion counts there stay exact.
    weighted : bool
        Whether a weight column was used (sums are then Float64).
    label : str
        Source column name of the label (multilabel: the list column of the labels, or the
        label columns of ``labels`` joined by ", ", for display).
    score : str or None
        Source column name of a binary task's score.
    weight : str or None
        Source column name of the weights.
    prediction : str or None
        Source column name of the prediction (multiclass: the predicted class;
        regression: the predicted value).
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
        A multiclass task's score columns, one per class in ``classes`` order; a paired
        task's models' score columns.
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
    query : tuple of str
        A ranking task's query key columns.
    cutoffs : tuple of int or None
        A ranking task's cutoffs k, in order (None, first: the whole list).
    labels : tuple of str
        A multilabel task's label columns, one per class in ``classes`` order (empty: the
        labels are the list column ``label``).
    threshold : float
        A multilabel task's threshold: a label is predicted where its score is at least this.
    unlabeled : bool
        A binary task's labels are optional (``labels="optional"``): rows without one are
        kept in the score histogram (its ``unlabeled`` sums) and in no labelled metric.
    schema_version : int
        Version of the state file layout the spec belongs to.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "b"], "y": [0, 1], "p": [0.2, 0.9]})
    >>> spec = se.accumulate(df, label="y", score="p", by="g").spec
    >>> spec.kind, spec.keys, spec.precision, spec.label, spec.score
    ('binary', ('g',), 11, 'y', 'p')
    >>> se.Spec(kind="regression", keys=("day",), precision=se.DEFAULT_PRECISION).exact
    False

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
    query: tuple[str, ...] = ()
    cutoffs: tuple[int | None, ...] = ()
    labels: tuple[str, ...] = ()
    threshold: float = 0.5
    unlabeled: bool = False
    schema_version: int = field(default=SCHEMA_VERSION)

    @property
    def exact(self) -> bool:
        """Whether every distinct score has its own bucket.

        Returns
        -------
        bool
            True in exact mode (``precision`` 52 or more).

        Examples
        --------
        >>> Spec(kind="binary", keys=(), precision=52).exact
        True
        >>> Spec(kind="binary", keys=(), precision=11).exact
        False

        """
        return self.precision >= EXACT_BITS

    @property
    def negative(self) -> Any:
        """A binary task's negative label value, or None where no value names it.

        ``not positive`` for boolean labels, 0 for 0/1 labels, else the one value other than
        ``positive`` among the label values found (None while no part had one).

        Returns
        -------
        Any
            The negative label value, or None (also for a multiclass or regression spec).

        Examples
        --------
        >>> Spec(kind="binary", keys=(), precision=8, positive="spam",
        ...      classes=("ham", "spam"), found=True).negative
        'ham'
        >>> Spec(kind="binary", keys=(), precision=8).negative
        0

        """
        if self.kind not in ("binary", "paired"):
            return None
        if isinstance(self.positive, bool):
            return not self.positive
        if not self.found:
            return 0 if self.positive == 1 and not self.classes else None
        others = [c for c in self.classes if c != self.positive]
        return others[0] if len(others) == 1 else None

    def to_json(self) -> str:
        """Serialise for file metadata.

        Returns
        -------
        str
            Every field as a JSON object, keys sorted (tuples as lists).

        Examples
        --------
        >>> Spec(kind="binary", keys=("day",), precision=8).to_json()[:60]
        '{"classes": [], "cutoffs": [], "found": false, "keys": ["day'

        """
        data = asdict(self)
        for name in _LATER:  # (left out at their defaults: the JSON of older specs is kept)
            if data[name] == Spec.__dataclass_fields__[name].default:
                del data[name]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, *, source: str = "the state spec") -> Spec:
        """Inverse of :meth:`to_json`; a malformed spec is a :class:`StateFileError`.

        Fields left out (by an older writer) take their defaults; ``kind``, ``keys`` and
        ``precision`` are required, and every field must have its type and range.

        Parameters
        ----------
        text : str
            The JSON text of :meth:`to_json`.
        source : str
            What the text is, for the error message (``"the spec of 'state.parquet'"``).

        Returns
        -------
        Spec
            The spec, lists turned back into tuples.

        Raises
        ------
        StateFileError
            The text is not a JSON object, lacks a required field, or has a field of the
            wrong type or range.

        Examples
        --------
        >>> Spec.from_json('{"kind": "binary", "keys": [], "precision": 8}').precision
        8
        >>> Spec.from_json('{"kind": "binary", "keys": [], "precision": "x"}')
        Traceback (most recent call last):
        ...
        streameval.errors.StateFileError: expected the state spec to be well formed, but ...

        """
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        problems = spec_problems(data) if isinstance(data, dict) else ["it is not a JSON object"]
        if problems:
            raise StateFileError(
                f"expected {source} to be well formed, but {'; '.join(problems)}; hint: it was "
                "altered or written by another program: recompute the state"
            )
        assert isinstance(data, dict)
        data = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**data)

    def check_mergeable(self, other: Spec) -> None:
        """Raise SpecMismatchError naming every field where the two specs differ.

        Classes found in the data (``found``) may differ: merging takes their union.

        Parameters
        ----------
        other : Spec
            The spec of the state to merge with.

        Returns
        -------
        None

        Raises
        ------
        SpecMismatchError
            The specs differ in a field (other than found classes).

        Examples
        --------
        >>> a = Spec(kind="binary", keys=("day",), precision=11)
        >>> a.check_mergeable(Spec(kind="binary", keys=("day",), precision=11))
        >>> a.check_mergeable(Spec(kind="binary", keys=("day",), precision=8))
        Traceback (most recent call last):
        ...
        streameval.errors.SpecMismatchError: expected states computed the same way, but ...

        """
        from dataclasses import replace

        if self.found and other.found:
            other = replace(other, classes=self.classes)
        other = replace(other, schema_version=self.schema_version)  # merged at the older
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
            "thresholds, labels= and bootstrap settings (replicates, seed, row_id)"
        )


def same_computation(first: str, second: str) -> bool:
    """Whether two specs' JSON texts (:meth:`Spec.to_json`) differ at most in schema version.

    >>> a = Spec(kind="binary", keys=(), precision=11)
    >>> same_computation(a.to_json(), Spec(kind="binary", keys=(), precision=11,
    ...                                    schema_version=2).to_json())
    True
    """
    texts = [json.loads(first), json.loads(second)]
    for text in texts:
        text.pop("schema_version", None)
    return bool(texts[0] == texts[1])


def merged_spec(specs: list[Spec]) -> Spec:
    """The spec of the merge of states with these specs (classes found: their sorted union).

    >>> from dataclasses import replace
    >>> a = Spec(kind="multiclass", keys=(), precision=11, classes=(0, 2), found=True)
    >>> merged_spec([a, replace(a, classes=(1,))]).classes
    (0, 1, 2)
    """
    from dataclasses import replace

    first = specs[0]
    for other in specs[1:]:
        first.check_mergeable(other)
    first = replace(first, schema_version=min(s.schema_version for s in specs))
    if not first.found:
        return first
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


def _integer(value: Any, low: int = -(2**63), high: int = 2**63 - 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | bool) or _number(value)


def _name(value: Any) -> bool:
    return isinstance(value, str)


def _optional_name(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _list_of(item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(item(v) for v in value)


_FIELD_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kind": (lambda v: v in KINDS, f"one of {', '.join(KINDS)}"),
    "keys": (_list_of(_name), "a list of column names"),
    "precision": (lambda v: _integer(v, 0, EXACT_BITS), "a number of mantissa bits 0–52"),
    "splits": (_list_of(_number), "a list of finite numbers"),
    "weighted": (lambda v: isinstance(v, bool), "true or false"),
    "label": (_name, "a column name"),
    "score": (_optional_name, "a column name or null"),
    "weight": (_optional_name, "a column name or null"),
    "positive": (_scalar, "a label value (string, number, boolean or null)"),
    "prediction": (_optional_name, "a column name or null"),
    "classes": (_list_of(_scalar), "a list of label values"),
    "scores": (_list_of(_name), "a list of column names"),
    "top_k": (lambda v: _integer(v, 1), "a positive integer"),
    "power": (_number, "a finite number"),
    "replicates": (lambda v: _integer(v, 0), "a number of replicates ≥ 0"),
    "seed": (_integer, "an integer"),
    "row_id": (_list_of(_name), "a list of column names"),
    "query": (_list_of(_name), "a list of column names"),
    "cutoffs": (
        _list_of(lambda v: v is None or _integer(v, 1)),
        "a list of positive integers or nulls",
    ),
    "labels": (_list_of(_name), "a list of column names"),
    "threshold": (_number, "a finite number"),
    "schema_version": (_integer, "an integer"),
}
_REQUIRED = ("kind", "keys", "precision")
#: Fields added after states were first written: left out of the JSON at their defaults, so
#: the specs of states computed as before serialise as before (and jobs' stores stay valid).
_LATER = ("unlabeled",)


def _field_check(name: str) -> tuple[Callable[[Any], bool], str]:
    """How a field's JSON value is checked: declared above, or by its default's type."""
    if name in _FIELD_CHECKS:
        return _FIELD_CHECKS[name]
    default = Spec.__dataclass_fields__[name].default
    if isinstance(default, bool):
        return lambda v: isinstance(v, bool), "true or false"
    if isinstance(default, int):
        return _integer, "an integer"
    if isinstance(default, float):
        return _number, "a finite number"
    if isinstance(default, str):
        return _name, "a string"
    if isinstance(default, tuple):
        return lambda v: isinstance(v, list), "a list"
    return lambda v: True, "anything"


def spec_problems(data: dict[str, Any]) -> list[str]:
    """What is wrong with a spec's JSON fields (types, ranges, required fields); [] if none.

    >>> spec_problems({"kind": "binary", "keys": ["a", "a"], "precision": 52, "top_k": 0})
    ['top_k is 0, expected a positive integer', "keys name 'a' twice"]
    """
    fields = Spec.__dataclass_fields__
    problems = [f"{name!r} is missing" for name in _REQUIRED if name not in data]
    problems += [f"{name!r} is not a spec field" for name in data if name not in fields]
    for name in fields:
        valid, expected = _field_check(name)
        if name in data and not valid(data[name]):
            shown = repr(data[name])
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            problems.append(f"{name} is {shown}, expected {expected}")
    keys = data.get("keys")
    if isinstance(keys, list) and _list_of(_name)(keys):
        problems += [f"keys name {k!r} twice" for k in sorted(set(keys)) if keys.count(k) > 1]
    return problems
