"""The types of the options of :func:`streameval.evaluate` and :func:`streameval.accumulate`.

:func:`check_options` checks every option's type at the entry, in one place, so that a wrong
type is an :class:`~streameval.errors.InputError` naming the argument and what it takes,
instead of an ``AttributeError`` from deep inside. Values (a task's name, a precision in
0–52, a threshold not NaN, …) are checked where they are used.

>>> check_options({"label": "y", "score": "p", "by": ["segment", "day"]})
>>> check_options({"label": "y", "score": 3})
Traceback (most recent call last):
...
streameval.errors.InputError: expected score= to be a column name (str) or None, got int 3; ...
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import date
from typing import Any, Literal

from .errors import InputError

Check = Callable[[Any], bool]
#: Polars' engine: streaming keeps memory bounded.
Engine = Literal["streaming", "in-memory"]


@dataclass(frozen=True)
class Reading:
    """The options :func:`streameval.accumulate` and :func:`streameval.evaluate` share.

    The columns read and their roles, the task, the bucket precision, and how the rows are
    read; see :func:`streameval.accumulate` for what each one means.
    """

    label: str | Sequence[str]
    score: str | None = None
    by: str | Sequence[str] | None = None
    weight: str | None = None
    task: str = "binary"
    prediction: str | None = None
    scores: Sequence[str] | Mapping[Any, str] | None = None
    classes: Sequence[Any] | None = None
    positive: Any = None
    precision: int | str | None = None
    top_k: int = 2
    power: float = 1.5
    query: str | Sequence[str] | None = None
    k: int | Sequence[int | None] | None = 10
    row_id: str | Sequence[str] | None = None
    seed: int = 0
    drop_nulls: bool = False
    engine: Engine = "streaming"


@dataclass(frozen=True)
class Accumulation(Reading):
    """The options of one accumulation: :func:`streameval.accumulate`'s keywords, as one value.

    The public function checks them (:func:`check_options`) and hands this value to the
    engine it chooses.

    >>> Accumulation(label="y", score="p").thresholds
    (0.5,)
    """

    thresholds: float | Sequence[float] = (0.5,)
    bootstrap: int | None = None
    labels: str = "required"


@dataclass(frozen=True)
class Evaluation(Reading):
    """The options of one evaluation: :func:`streameval.evaluate`'s keywords, as one value.

    >>> Evaluation(label="y", score="p", ci="wilson").accumulation(thresholds=[0.3]).thresholds
    [0.3]
    """

    folds: str | None = None
    repeats: str | None = None
    threshold: float | Sequence[float] = 0.5
    alpha: float = 0.5
    beta: float = 1.0
    metrics: Sequence[str] | None = None
    ci: str | None = None
    level: float = 0.95
    auc_method: str = "delong"
    bootstrap: int = 200
    jackknife: str | None = None

    def accumulation(self, **changes: Any) -> Accumulation:
        """The accumulation of this evaluation's rows: its shared options, then ``changes``.

        The thresholds are the evaluation's (binary), the bootstrap none unless changed.
        """
        shared = {f.name: getattr(self, f.name) for f in fields(Reading)}
        return Accumulation(**{**shared, "thresholds": self.threshold, **changes})


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    """An integer of any integral type (NumPy's too), not a boolean."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _listed(value: Any) -> bool:
    """A list-like of items: a sequence or an array, but not a string or a mapping."""
    if isinstance(value, str | bytes | Mapping):
        return False
    return isinstance(value, Sequence) or (
        hasattr(value, "__array__") and hasattr(value, "__len__") and isinstance(value, Iterable)
    )


def _names(value: Any) -> bool:
    """One column name or a list of them."""
    return _text(value) or (_listed(value) and all(_text(v) for v in value))


def _score_columns(value: Any) -> bool:
    """A list of column names, or a mapping of classes to column names."""
    if isinstance(value, Mapping):
        return all(_text(v) for v in value.values())
    return _listed(value) and all(_text(v) for v in value)


def _cutoff(value: Any) -> bool:
    """A ranking cutoff: an integer, or None (the whole list)."""
    return value is None or _integer(value)


def _thresholds(value: Any) -> bool:
    """A number or a list of numbers."""
    return _real(value) or (_listed(value) and all(_real(v) for v in value))


def _scalar(value: Any) -> bool:
    """A single label value: text, a number, a boolean or a date."""
    return isinstance(value, str | bytes | numbers.Number | date) or (
        hasattr(value, "item") and getattr(value, "ndim", None) == 0
    )


#: Each option: the check of its type, what it takes (for the message), and an example.
EXPECTED: dict[str, tuple[Check, str, str]] = {
    "label": (
        _names,
        "a column name (str; a list of them for a multilabel task)",
        "label='y'",
    ),
    "score": (_optional(_text), "a column name (str) or None", "score='p'"),
    "weight": (_optional(_text), "a column name (str) or None", "weight='w'"),
    "prediction": (_optional(_text), "a column name (str) or None", "prediction='y_hat'"),
    "folds": (_optional(_text), "a column name (str) or None", "folds='fold'"),
    "repeats": (_optional(_text), "a column name (str) or None", "repeats='repeat'"),
    "jackknife": (_optional(_text), "a group key name (str) or None", "jackknife='day'"),
    "by": (
        _optional(_names),
        "a column name or a list of column names",
        "by=['segment', 'day']",
    ),
    "row_id": (
        _optional(_names),
        "a column name or a list of column names",
        "row_id='request_id'",
    ),
    "scores": (
        _optional(_score_columns),
        "a list of column names or a mapping of class to column name",
        "scores=['p_cat', 'p_dog'] or scores={'cat': 'p_cat', 'dog': 'p_dog'}",
    ),
    "classes": (_optional(_listed), "a list of class values", "classes=['cat', 'dog']"),
    "positive": (
        _optional(_scalar),
        "one label value (text, number, boolean or date)",
        "positive='churned'",
    ),
    "task": (_text, "a task name (str)", "task='binary'"),
    "labels": (_text, "'required' or 'optional' (str)", "labels='optional'"),
    "precision": (
        lambda v: v is None or _text(v) or _integer(v),
        "'exact' or a number of mantissa bits (int)",
        "precision='exact' or precision=11",
    ),
    "threshold": (_thresholds, "a number or a list of numbers", "threshold=0.5"),
    "thresholds": (_thresholds, "a number or a list of numbers", "thresholds=[0.3, 0.5]"),
    "top_k": (_integer, "an integer (int)", "top_k=2"),
    "power": (_real, "a number", "power=1.5"),
    "query": (
        _optional(_names),
        "a column name or a list of column names",
        "query='query_id'",
    ),
    "k": (
        lambda v: _cutoff(v) or (_listed(v) and all(_cutoff(x) for x in v)),
        "a cutoff (int), None (the whole list) or a list of those",
        "k=10 or k=[5, 10]",
    ),
    "alpha": (_real, "a number", "alpha=0.5"),
    "beta": (_real, "a number", "beta=2"),
    "level": (_real, "a number", "level=0.95"),
    "metrics": (
        _optional(_names),
        "a metric name or a list of metric names",
        "metrics=['roc_auc', 'log_loss']",
    ),
    "ci": (_optional(_text), "an interval method (str) or None", "ci='wilson'"),
    "auc_method": (_text, "an AUC interval method (str)", "auc_method='delong'"),
    "bootstrap": (_optional(_integer), "a number of replicates (int)", "bootstrap=200"),
    "seed": (_integer, "an integer (int)", "seed=0"),
    "drop_nulls": (lambda v: isinstance(v, bool), "True or False", "drop_nulls=True"),
    "progress": (lambda v: isinstance(v, bool), "True or False", "progress=True"),
    "features": (_names, "a column name or a list of column names", "features=['country']"),
    "depth": (_whole, "1 or 2 (int)", "depth=2"),
    "metric": (_text, "a metric name (str)", "metric='roc_auc'"),
    "min_n": (_whole, "a number of rows (int)", "min_n=500"),
    "significance": (_real, "a number", "significance=0.05"),
    "correction": (_text, "a correction's name (str)", "correction='bh'"),
    "every": (lambda v: isinstance(v, bool), "True or False", "every=True"),
    "inherited": (lambda v: isinstance(v, bool), "True or False", "inherited=True"),
    "max_values": (_whole, "a number of values (int)", "max_values=1000"),
    "memory": (_whole, "a number of bytes (int)", "memory=4 << 30"),
    "engine": (
        lambda v: v in ("streaming", "in-memory"),
        "'streaming' or 'in-memory'",
        "engine='streaming'",
    ),
}


def _shown(value: Any) -> str:
    """A value with its type, shortened: ``int 3``, ``list ['w']``."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_options(options: Mapping[str, Any]) -> None:
    """Raise InputError for the first option whose type is not the one :data:`EXPECTED`.

    ``options`` are a call's arguments by name (``locals()`` at the entry of ``evaluate``);
    ``source`` is skipped (:func:`streameval.source.to_lazyframe` checks it).
    """
    for name, value in options.items():
        if name == "source":
            continue
        check, what, example = EXPECTED[name]
        if not check(value):
            raise InputError(f"expected {name}= to be {what}, got {_shown(value)}; hint: {example}")


def check_alpha(alpha: object) -> float:
    """``alpha`` (the pinball loss's quantile) as a float in [0, 1], or an InputError."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 <= alpha <= 1:
        raise InputError(f"expected alpha (the pinball quantile) in [0, 1], got {alpha!r}")
    return float(alpha)


def check_beta(beta: object) -> float:
    """``beta`` (F-beta's weight of recall) as a float in [0, inf], or an InputError.

    >>> check_beta(2), check_beta(float("inf"))
    (2.0, inf)
    """
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not beta >= 0:
        raise InputError(
            f"expected beta (F-beta's weight of recall) ≥ 0, got {beta!r}; hint: beta=2 weighs "
            "recall twice as much as precision, beta=0.5 half as much"
        )
    return float(beta)
