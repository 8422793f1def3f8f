"""One declaration per metric column: its formula and what every consumer needs to know of it.

A task's metric module declares its table's columns, in order, as :class:`Metric` values;
:mod:`.registry` collects them. Everything that treats metrics differently reads the
declaration: the formulas' stages (:attr:`Metric.stage`), which columns are counts, bounds
or identifiers (intervals, cross-validation, .632), which way is better (.632+, the report's
worst groups), the no-information value (:mod:`streameval.noinfo`), the analytic interval
(:mod:`streameval.stats.tables`), what the metric needs of the data (class scores,
probabilities) and its domain, and what a summary shows first (the command line, the report).

>>> m = Metric("accuracy", role="metric", direction="higher", interval="proportion")
>>> m.better(0.9, 0.8), m.is_estimate
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

import polars as pl

#: ``metric``: a model's score on the data; ``count``: a property of the data (sizes,
#: counts, prevalence), no estimate of a model's performance; ``bound``: the error bound of
#: another column (:attr:`Metric.bounds`); ``identifier``: what a row is (a threshold).
Role = Literal["metric", "count", "bound", "identifier"]
#: Which values are better: ``higher``, ``lower``, ``zero`` (closest to 0: a mean error).
Direction = Literal["higher", "lower", "zero", "none"]
#: The analytic interval ``ci="wilson" | "clopper-pearson"`` gives (bootstrap and jackknife
#: give every metric one): a ``proportion``'s score interval, an ``auc``'s DeLong interval.
Interval = Literal["proportion", "auc", "none"]
#: What a metric needs of the data: per-class ``scores``, ``probabilities`` in [0, 1].
Need = Literal["scores", "probabilities"]
#: What a metric of class scores needs.
SCORES: frozenset[Need] = frozenset({"scores"})
#: A metric's no-information value: ½, or computed per task (:mod:`streameval.noinfo`).
NoInfo = Literal["half", "computed"]


@dataclass(frozen=True)
class Metric:
    """A metric table column and its facts.

    Parameters
    ----------
    name : str
        The column's name.
    formula : callable, optional
        The column as a Polars expression over the finalize's aggregates (None: the
        finalize fills it itself, as counts).
    stage : str
        Which of the task's finalize steps computes it (binary: ``ranking`` from the score
        histogram, ``confusion`` at each threshold).
    role : {"metric", "count", "bound", "identifier"}
        See :data:`Role`.
    direction : {"higher", "lower", "zero", "none"}
        Which values are better (``none`` for counts, bounds and identifiers).
    bounds : tuple of str
        For a bound: the columns whose bucketing error it bounds.
    relative : bool
        For a bound: whether it bounds the error relative to the value (``|exact − value| ≤
        bound · |exact|``) rather than absolutely.
    interval : {"proportion", "auc", "none"}
        The analytic interval of ``ci="wilson"`` (and ``"clopper-pearson"``).
    counts : callable, optional
        A proportion's successes and trials, as expressions over its table's counts.
    noinfo : {"half", "computed"}, optional
        Its no-information value γ (:mod:`streameval.noinfo`), for the .632+ estimate: ½
        (an AUC), or ``computed`` from the labels' and predictions' margins; None: no γ.
    needs : frozenset of {"scores", "probabilities"}
        What it needs of the data; without it the column is absent (scores) or null.
    domain : tuple of str, optional
        ``(count column, text)``: rows outside the metric's domain are counted in the
        state's count column and make the metric null (with a warning naming ``text``).
    summary : int
        Its place among the columns a summary (the command line's table, the report) shows
        first, 1 for the first; 0: not among them.
    trend : int
        Its place among the metrics the report draws over days; 0: not drawn.

    Examples
    --------
    >>> Metric("mse", direction="lower").better(1.0, 2.0)
    True

    """

    name: str
    formula: Callable[[], pl.Expr] | None = None
    stage: str = ""
    role: Role = "metric"
    direction: Direction = "none"
    bounds: tuple[str, ...] = ()
    relative: bool = False
    interval: Interval = "none"
    counts: Callable[[], tuple[pl.Expr, pl.Expr]] | None = None
    noinfo: NoInfo | None = None
    needs: frozenset[Need] = frozenset()
    domain: tuple[str, str] | None = None
    summary: int = 0
    trend: int = 0

    @property
    def is_estimate(self) -> bool:
        """Whether the column estimates a model's performance (a metric, not a count)."""
        return self.role == "metric"

    def better(self, a: float, b: float) -> bool:
        """Whether ``a`` is strictly better than ``b`` (False when there is no direction).

        >>> Metric("mean_error", direction="zero").better(-0.1, 0.2)
        True
        """
        if self.direction == "higher":
            return a > b
        if self.direction == "lower":
            return a < b
        if self.direction == "zero":
            return abs(a) < abs(b)
        return False


def count(name: str, *, summary: int = 0) -> Metric:
    """A count column (filled by the finalize).

    >>> count("n").role
    'count'
    """
    return Metric(name, role="count", summary=summary)


def bound(
    name: str, of: str | tuple[str, ...], formula: Callable[[], pl.Expr] | None = None, **facts: Any
) -> Metric:
    """The error bound ``name`` of the column(s) ``of``.

    >>> bound("roc_auc_error", "roc_auc").bounds
    ('roc_auc',)
    """
    bounds = (of,) if isinstance(of, str) else of
    return Metric(name, formula, role="bound", bounds=bounds, **facts)


def alias(metric: Metric, name: str) -> Metric:
    """The column ``metric`` again under scikit-learn's other name for it (not in a summary).

    >>> alias(Metric("error_rate", direction="lower", summary=3), "zero_one_loss").summary
    0
    """
    return replace(metric, name=name, summary=0, trend=0)


def proportions(metrics: Iterable[Metric]) -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """Each proportion's successes and trials (for its score interval), in declaration order.

    >>> rate = Metric("rate", interval="proportion", counts=lambda: (pl.col("x"), pl.col("n")))
    >>> list(proportions([rate, count("n")]))
    ['rate']
    """
    return {m.name: m.counts() for m in metrics if m.counts is not None}


def formulas(metrics: Iterable[Metric], stage: str) -> dict[str, Callable[[], pl.Expr]]:
    """The formulas of one finalize stage, in declaration order.

    >>> f = formulas([Metric("a", lambda: pl.lit(1), stage="x"), count("n")], "x")
    >>> list(f)
    ['a']
    """
    return {m.name: m.formula for m in metrics if m.stage == stage and m.formula is not None}


def summary(metrics: Iterable[Metric]) -> list[str]:
    """The columns a summary shows first, in their places.

    >>> summary([count("n", summary=2), Metric("a"), count("m", summary=1)])
    ['m', 'n']
    """
    return [m.name for m in sorted((m for m in metrics if m.summary), key=lambda m: m.summary)]


def trends(metrics: Iterable[Metric]) -> list[str]:
    """The metrics the report draws over days, in their places.

    >>> trends([Metric("b", trend=2), Metric("a", trend=1), count("n")])
    ['a', 'b']
    """
    return [m.name for m in sorted((m for m in metrics if m.trend), key=lambda m: m.trend)]
