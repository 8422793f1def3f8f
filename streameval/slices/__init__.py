"""Worst-slice discovery: the slices of the data where a model does significantly worse.

A slice is one value of a feature (``country = DE``) or, at depth 2, a pair of values of
two features (``country = DE, device = ios``). :func:`find_slices` counts every slice's
score histogram in one read of the data (:mod:`.counts`), judges each slice against the
rest of the data and adjusts the p-values of all the slices together (:mod:`.rank`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl

from ..bucketing import EXACT_BITS
from ..errors import InputError
from ..measure import declaration, testable
from ..metrics.registry import TABLES
from ..options import check_options
from ..pipeline import open_source
from ..progress import expect, step
from ..source import Source, collect_batches, is_spark_frame
from ..spec import parse_precision
from ..stats.multiple import METHODS
from ..stats.proportions import check_level
from ..tasks.binary.plan import row_exprs
from ..tasks.common import Inputs
from .counts import SEEDS, Collision, SliceCounts
from .rank import Judging, judge

__all__ = ["find_slices"]

#: The score buckets' mantissa bits for an AUC (the AUC's bound is each row's ``_error``).
AUC_PRECISION = 6
#: The most rows of a batch staged at once (a larger one is cut).
BATCH_ROWS = 1 << 18
#: Feature types whose values make slices (numbers with many values are binned first).
FEATURE_TYPES = (pl.String, pl.Categorical, pl.Enum, pl.Boolean, pl.Date)


def find_slices(
    source: Source,
    *,
    label: str,
    score: str,
    features: Sequence[str],
    depth: int = 2,
    metric: str = "roc_auc",
    min_n: int = 500,
    weight: str | None = None,
    positive: Any = None,
    threshold: float = 0.5,
    precision: int | str | None = None,
    level: float = 0.95,
    significance: float = 0.05,
    correction: str = "bh",
    every: bool = False,
    inherited: bool = False,
    max_values: int = 1000,
    memory: int = 4 << 30,
    drop_nulls: bool = False,
) -> pl.DataFrame:
    """The slices whose metric is significantly worse than the rest of the data's, worst first.

    Every slice (a value of one feature; at ``depth=2`` also a pair of values of two
    features) with at least ``min_n`` rows, and as many outside it, is compared with the
    rest of the data: the *difference* is how much worse the slice is (the rest's value
    minus the slice's where higher is better), its one-sided p-value is that of "the slice
    is no worse", by the normal approximation with DeLong's variance for the ROC AUC and the
    binomial one for a proportion; the p-values of all the slices are adjusted together.
    All the slices are counted in one read of the data, in memory that grows with the
    number of slices and score buckets, not with the rows.

    Parameters
    ----------
    source : path, glob, list of paths, DataFrame, LazyFrame or Arrow table
        The predictions.
    label, score : str
        The 0/1 (or boolean, or ``positive``) label column and the score column.
    features : sequence of str
        The columns whose values make slices: strings, categoricals, booleans, integers or
        dates (bin a continuous column first).
    depth : {1, 2}
        Single features only, or pairs of features too.
    metric : str
        A binary metric with an analytic variance: ``roc_auc`` or a proportion at
        ``threshold`` (``accuracy``, ``recall``, ``precision``, ``specificity``, ``npv``,
        ``error_rate``, ``fpr``, ``fnr``, …).
    min_n : int
        The fewest rows a slice (and the rest of the data) must have to be judged.
    weight, positive
        As for :func:`streameval.evaluate`.
    threshold : float
        The threshold of a proportion (predicted positive: score ≥ threshold).
    precision : int or "exact", optional
        The score buckets' mantissa bits: 6 for ``roc_auc`` by default (each slice's AUC is
        then within ``roc_auc_error`` of the exact one), 0 for a proportion (only the
        threshold matters).
    level : float
        The intervals' confidence level.
    significance : float
        The adjusted p-value at or below which a worse slice is listed.
    correction : {"bh", "by", "holm", "none"}
        How the p-values are adjusted: Benjamini–Hochberg (false-discovery rate),
        Benjamini–Yekutieli (the same under any dependence between the slices' tests), Holm
        (family-wise error rate) or not.
    every : bool
        List every slice judged, not only the significantly worse ones.
    inherited : bool
        Also list the pairs no worse than their worse one-feature slice (``parent``): a
        pair is otherwise listed only where it is worse than both its features' slices on
        their own, not where it inherits its parent's difference.
    max_values : int
        The most distinct values a feature may have (more is an error, found while reading).
    memory : int
        The most bytes the slices' histograms may take (more is an error).
    drop_nulls : bool
        Leave out rows with a null label, score or weight instead of raising.

    Returns
    -------
    polars.DataFrame
        A row per slice, worst first: ``rank``, ``slice`` (``a=x, b=y``; a null value:
        ``a is null``), ``features``,
        ``values`` (as strings), ``n``, ``positives``, the metric with its interval and
        bucketing bound (``<metric>_lo``, ``_hi``, ``_error``), ``rest`` and ``rest_n`` (the
        rest of the data), ``difference`` with ``difference_lo`` and ``difference_hi``,
        ``p_value``, ``adjusted_p`` and ``significant``; a pair's ``parent`` (the worse of
        its two one-feature slices) and ``parent_difference``.

    Raises
    ------
    InputError
        Unknown columns or options, a feature of another type, too many values, too many
        slices for ``memory``, or rows that cannot be evaluated.

    Examples
    --------
    >>> import numpy as np, polars as pl, streameval as se
    >>> rng = np.random.default_rng(0)
    >>> country = rng.choice(["DE", "FR", "IT"], 6000)
    >>> y = rng.integers(0, 2, 6000)
    >>> noise = np.where(country == "IT", 3.0, 0.5)  # the model is poor in Italy
    >>> df = pl.DataFrame({"country": country, "y": y, "p": y + noise * rng.normal(size=6000)})
    >>> worst = se.find_slices(df, label="y", score="p", features=["country"], depth=1)
    >>> worst.select("rank", "slice", "n", "significant").to_dicts()
    [{'rank': 1, 'slice': 'country=IT', 'n': 1999, 'significant': True}]

    """
    check_options({name: value for name, value in locals().items() if name != "source"})
    for name, value in (("label", label), ("score", score)):
        if not isinstance(value, str):
            raise InputError(
                f"expected {name}= to be one column name (str), got {value!r}; hint: "
                f"{name}='{name[0]}'"
            )
    if not isinstance(threshold, numbers.Real) or not math.isfinite(threshold):
        raise InputError(
            f"expected threshold= to be one finite number, got {threshold!r}; hint: threshold=0.5"
        )
    if is_spark_frame(source):
        raise InputError(
            "expected a path, glob, directory, Polars or Arrow source for find_slices, got a "
            "Spark DataFrame; hint: write it as Parquet (df.write.parquet(path)) and pass the "
            "path, or pass df.toArrow() when it fits in memory"
        )
    judging, bits = _options(
        metric, min_n, depth, threshold, precision, level, significance, correction
    )
    names = [features] if isinstance(features, str) else list(features)
    if not names or len(set(names)) < len(names):
        raise InputError(
            f"expected one or more distinct features, got {names!r}; hint: "
            "features=['country', 'device']"
        )
    inputs = Inputs(
        label=label,
        score=score,
        weight=weight,
        positive=positive,
        precision=bits,
        thresholds=(float(threshold),),
    )
    _, opened, _, _ = open_source(
        source, inputs, names, drop_nulls, "streaming", key_role="feature", reserved=False
    )
    _check_features(opened.schema, names)
    rows = row_exprs(opened, inputs)
    for seeds in SEEDS:
        counts = SliceCounts(
            names, depth, weight is not None, bits, rows.spec.splits, max_values, memory, seeds,
            [opened.schema[name] for name in names],
        )  # fmt: skip
        query = opened.lf.select(
            rows.y.alias("_y"),
            rows.p.alias("_p"),
            *([] if rows.w is None else [rows.w.alias("_w")]),
            rows.bad.alias("_bad"),
            *counts.exprs(opened.schema),
            *names,
        )
        expect(None, "batches")
        try:
            for batch in _batches(query, opened.files, names):
                if batch["_bad"].any():
                    raise rows.diagnose()
                counts.add(batch)
                step(rows=batch.height)
            cells = counts.cells()
        except Collision:
            continue
        finally:
            counts.close()
        break
    else:  # pragma: no cover - three pairs of 64-bit hashes colliding
        raise InputError("could not number the features' values; hint: report this")
    table = judge(cells, names, [counts.decoded(i) for i in range(len(names))], judging)
    if not every:
        table = table.filter("significant")
        if not inherited:
            table = table.filter(
                pl.col("parent_difference").is_null()
                | (pl.col("difference") > pl.col("parent_difference"))
            )
    return table.with_row_index("rank", offset=1).with_columns(pl.col("rank").cast(pl.Int64))


def _options(
    metric: str,
    min_n: int,
    depth: int,
    threshold: float,
    precision: int | str | None,
    level: float,
    significance: float,
    correction: str,
) -> tuple[Judging, int]:
    """Check the options; the judging and the buckets' mantissa bits."""
    usable = [
        d.name for d in TABLES["binary"] if testable("binary", d.name) and d.direction != "none"
    ]
    if metric not in usable:
        raise InputError(
            f"expected metric= to be a binary metric with an analytic variance, got "
            f"{metric!r}; hint: one of {', '.join(usable)}"
        )
    if depth not in (1, 2) or isinstance(depth, bool):
        raise InputError(
            f"expected depth=1 (single features) or 2 (and pairs), got {depth!r}; hint: a "
            "slice of three features is rarely large enough to judge, and their number grows "
            "as the cube of the features"
        )
    if isinstance(min_n, bool) or not isinstance(min_n, int) or min_n < 1:
        raise InputError(f"expected min_n= to be a positive integer, got {min_n!r}")
    if not 0 < significance < 1:
        raise InputError(f"expected significance= between 0 and 1, got {significance!r}")
    if correction not in METHODS:
        raise InputError(
            f"expected correction= to be one of {', '.join(METHODS)}, got {correction!r}"
        )
    check_level(level)
    auc = declaration("binary", metric).interval == "auc"
    default = AUC_PRECISION if auc else 0
    bits = default if precision is None else parse_precision(precision)
    judging = Judging(
        metric, float(threshold), min_n, level, significance, correction, min(bits, EXACT_BITS)
    )
    return judging, bits


def _check_features(schema: pl.Schema, names: list[str]) -> None:
    """Refuse features whose values do not make slices (floats, nested types)."""
    for name in names:
        dtype = schema[name]
        if dtype.is_integer() or isinstance(dtype, FEATURE_TYPES) or dtype in FEATURE_TYPES:
            continue
        raise InputError(
            f"expected the feature {name!r} to be a string, categorical, boolean, integer or "
            f"date column, got {dtype}; hint: bin a continuous column first (pl.col(...).cut "
            "or qcut in a LazyFrame) or cast it to strings"
        )


def _batches(
    query: pl.LazyFrame, files: list[str] | None, names: list[str]
) -> Iterator[pl.DataFrame]:
    """The query's rows in the reader's batches, cut to at most :data:`BATCH_ROWS` rows."""
    for batch in collect_batches(query, files, names):
        for start in range(0, batch.height, BATCH_ROWS):
            yield batch.slice(start, BATCH_ROWS)
