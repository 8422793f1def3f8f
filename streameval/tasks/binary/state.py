"""Binary score state: per group and score bucket, weighted positive/negative sums.

Stored columns (each merges by ``sum``), by mode:

- always: ``pos`` = Σw·y and ``neg`` = Σw·(1−y) (Int64 counts when unweighted);
- weighted: ``n`` = rows (unweighted, ``n = pos + neg``);
- bucketed: ``log_loss`` = Σw·(−log-likelihood with p clipped to [eps, 1−eps]),
  ``brier`` = Σw·(p−y)², ``psum`` = Σw·p (the calibration curve's mean prediction) and
  ``hinge`` = Σw·max(0, 1 − t·p) with t = ±1 for the positive and negative class (the score
  read as a margin; states of schema version 2 have no ``hinge``: :func:`has_hinge`).

In exact mode each bucket *is* one score, so the last four are functions of the bucket and
are derived at finalize time (:func:`column_exprs`) instead of being summed row by row.
Every stored column costs time in the one pass (about a tenth each at 1e8 rows), so a column
is stored only once a metric reads it.
``n_outside`` (rows with p outside [0, 1]) is always derived from the bucket's lowest score:
0.0 is a bucket edge and bucketed states are cut just above 1.0.

With optional labels (``spec.unlabeled``), rows whose label is null are kept out of every
column above (``n`` counts the labelled rows) and summed in ``unlabeled`` = Σw (Int64 rows
when unweighted) and, weighted, ``n_unlabeled`` = rows: the score histogram holds every row.

Rows that are invalid (null or non-finite label, score or weight) get a null bucket, so
one bucket-null check after the pass says whether to look for what was wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from ...bucketing import (
    EPS,
    EXACT_BITS,
    bucket_expr,
    bucket_floor_scalar,
    float_to_key_scalar,
    key_to_float,
    ordered_key,
)
from ...codes import key_code, pack, unpack
from ...spec import Spec
from ...validate import check_label_values

SUM = "sum"
ALL_COLUMNS = (
    "pos", "neg", "n", "log_loss", "brier", "psum", "hinge", "n_outside", "unlabeled",
    "n_unlabeled",
)  # fmt: skip
#: The stored columns of rows without a label (``spec.unlabeled``), weighted and not.
UNLABELED = ("unlabeled", "n_unlabeled")
#: The first state schema version whose bucketed binary states store ``hinge``.
HINGE_VERSION = 3


def has_hinge(spec: Spec) -> bool:
    """Whether states of ``spec`` give the hinge loss (all but bucketed ones of version 2)."""
    return spec.exact or spec.schema_version >= HINGE_VERSION


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    cols = ["pos", "neg"]
    if spec.weighted:
        cols.append("n")
    if not spec.exact:
        cols += ["log_loss", "brier", "psum"]
        if has_hinge(spec):
            cols.append("hinge")
    if spec.unlabeled:
        cols += list(UNLABELED) if spec.weighted else ["unlabeled"]
    return dict.fromkeys(cols, SUM)


def labelled_columns(spec: Spec) -> list[str]:
    """The stored columns of the rows with a label: what the metrics read (not ``unlabeled``).

    >>> from streameval.spec import Spec
    >>> labelled_columns(Spec(kind="binary", keys=(), precision=11, unlabeled=True))
    ['pos', 'neg', 'log_loss', 'brier', 'psum', 'hinge']
    """
    return [c for c in merge_ops(spec) if c not in UNLABELED]


def check_found(spec: Spec) -> None:
    """Raise unless the label values found over all merged parts make two classes."""
    check_label_values(list(spec.classes), spec.positive, spec.label)


def check_merged(spec: Spec, table: pl.DataFrame) -> None:
    """Nothing to check: every merged table of this kind is a state of all its parts' rows."""


def reindex(table: pl.DataFrame, old: Spec, new: Spec) -> pl.DataFrame:
    """The table of a state with spec ``old`` under the merged spec ``new``: unchanged."""
    return table


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return ["bucket"]


def _row_loss(y: pl.Expr, p: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Per-row log loss (sklearn's clipping), squared error and hinge loss."""
    clipped = p.clip(EPS, 1.0 - EPS)
    ll = -pl.when(y).then(clipped.log()).otherwise((1.0 - clipped).log())
    hinge = (1.0 - pl.when(y).then(p).otherwise(-p)).clip(lower_bound=0.0)
    return ll, (p - y.cast(pl.Float64)) ** 2, hinge


def aggregations(spec: Spec, y: pl.Expr, p: pl.Expr, w: pl.Expr | None) -> list[pl.Expr]:
    """Aggregations that build the stored columns from rows (``y`` Boolean, ``p`` Float64).

    With optional labels, a row whose ``y`` is null adds to ``unlabeled`` alone.
    """
    yi = y.cast(pl.Int64)
    ll, sq, hinge = _row_loss(y, p)
    known = y.is_not_null()

    def wt(e: pl.Expr) -> pl.Expr:
        e = pl.when(known).then(e) if spec.unlabeled else e
        return e if w is None else w * e

    exprs = {
        "pos": wt(yi).sum(),
        "neg": wt(1 - yi).sum(),
        "n": known.sum().cast(pl.Int64) if spec.unlabeled else pl.len().cast(pl.Int64),
        "log_loss": wt(ll).sum(),
        "brier": wt(sq).sum(),
        "psum": wt(p).sum(),
        "hinge": wt(hinge).sum(),
        "unlabeled": (~known).cast(pl.Int64).sum() if w is None else (w * ~known).sum(),
        "n_unlabeled": (~known).sum().cast(pl.Int64),
    }
    return [exprs[c].alias(c) for c in merge_ops(spec)]


def state_query(
    lf: pl.LazyFrame,
    spec: Spec,
    schema: pl.Schema,
    y: pl.Expr,
    p: pl.Expr,
    w: pl.Expr | None,
    bad: pl.Expr,
    constants: Mapping[str, Any],
) -> tuple[pl.LazyFrame, Callable[[pl.DataFrame], pl.DataFrame]]:
    """Lazy state query over ``lf`` and the function that turns its result into the table.

    Rows flagged ``bad`` land in a null bucket. Keys in ``constants`` are fixed over ``lf``
    (a hive partition's value): they are left out of the grouping and added back. Within such
    a unit, when the other keys and the bucket pack into one Int64 (:mod:`streameval.codes`),
    the query groups by that integer: about 1.7× faster than grouping by several columns. On
    a whole 1e8-row source the packed grouping used three times the memory, so it is only
    used per unit.
    """
    aggs = aggregations(spec, y, p, w)
    names = list(merge_ops(spec))
    keys = [k for k in spec.keys if k not in constants]
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    order = [*spec.keys, "bucket", *names]
    codes = [key_code(k, schema[k]) for k in keys]
    key_codes = [c for c in codes if c is not None]
    if not constants or spec.exact or len(key_codes) < len(codes):
        widths = [64]
    else:
        field, width, decode_bucket = _bucket_field(p, spec)
        widths = [c.width for c in key_codes] + [width]
    if sum(widths) > 63:
        bucket = pl.when(~bad).then(bucket_expr(p, spec.precision, spec.splits)).alias("bucket")
        query = lf.group_by([*keys, bucket], maintain_order=True).agg(aggs)
        return query, lambda table: table.with_columns(fixed).select(order)
    packed = pack([c.encode for c in key_codes] + [pl.when(~bad).then(field)], widths)

    def finish(table: pl.DataFrame) -> pl.DataFrame:
        valid = table.filter(pl.col("_k").is_not_null())
        fields = unpack(valid["_k"], widths)
        decoders = [c.decode for c in key_codes if c.decode is not None]  # (all, key_code's)
        decoded = [decode(f) for decode, f in zip(decoders, fields, strict=False)]
        bucket = decode_bucket(fields[-1]).rename("bucket")
        out = valid.drop("_k").with_columns(*decoded, bucket, *fixed).select(order)
        if valid.height < table.height:  # keep the bad-rows marker: one row, null bucket
            marker = table.filter(pl.col("_k").is_null()).drop("_k")
            nulls = [pl.lit(None, schema[k]).alias(k) for k in spec.keys]
            marker = marker.with_columns(*nulls, pl.lit(None, pl.Int64).alias("bucket"))
            out = pl.concat([out, marker.select(order)])
        return out

    return lf.group_by(packed.alias("_k"), maintain_order=True).agg(aggs), finish


def _bucket_field(p: pl.Expr, spec: Spec) -> tuple[pl.Expr, int, Callable[[pl.Series], pl.Series]]:
    """Order-preserving integer field of a bucketed-mode bucket, its width and its decoder.

    The exact mode's 64-bit keys do not pack with group keys into an Int64.
    """
    key = ordered_key(p)
    shift = EXACT_BITS - spec.precision
    step = 1 << shift
    offset = 1 << (63 - shift)
    cuts = sorted({float_to_key_scalar(t) for t in spec.splits} - {None})
    cuts = [c for c in cuts if bucket_floor_scalar(c, spec.precision) != c]
    index = key // step
    parts = len(cuts) + 1
    inside = [
        pl.when((key >= c) & (pl.lit(c, pl.Int64) > index * step)).then(i + 1).otherwise(0)
        for i, c in enumerate(cuts)
    ]
    part = pl.max_horizontal(*inside) if inside else pl.lit(0)
    field = (index + offset) * parts + part
    width = (64 - shift) + (parts - 1).bit_length()

    def decode(f: pl.Series) -> pl.Series:
        frame = f.to_frame("f").with_columns(
            (pl.col("f") % parts).alias("j"), (pl.col("f") // parts - offset).alias("i")
        )
        lookup = pl.Series([0, *cuts], dtype=pl.Int64)
        return frame.select(
            pl.when(pl.col("j") == 0)
            .then(pl.col("i") * step)
            .otherwise(pl.lit(lookup).gather(pl.col("j")))
        ).to_series()

    return field, width, decode


def column_exprs(spec: Spec) -> dict[str, pl.Expr]:
    """Every logical column as an expression: stored ones read, the others derived exactly.

    Finalize aggregates these expressions directly, so derived columns are never
    materialised over the whole state.
    """
    pos, neg = pl.col("pos"), pl.col("neg")
    n = pl.col("n") if spec.weighted else pos + neg
    exprs = {"pos": pos, "neg": neg, "n": n}
    lowest = key_to_float(pl.col("bucket"))
    if spec.exact:
        fpos, fneg = pos.cast(pl.Float64), neg.cast(pl.Float64)
        clipped = lowest.clip(EPS, 1.0 - EPS)
        exprs["log_loss"] = -(fpos * clipped.log()) - fneg * (1.0 - clipped).log()
        exprs["brier"] = fpos * (1.0 - lowest) ** 2 + fneg * lowest**2
        exprs["psum"] = (fpos + fneg) * lowest
        zero = pl.lit(0.0)
        hinge = fpos * pl.max_horizontal(zero, 1.0 - lowest)
        exprs["hinge"] = hinge + fneg * pl.max_horizontal(zero, 1.0 + lowest)
    else:
        exprs["log_loss"], exprs["brier"] = pl.col("log_loss"), pl.col("brier")
        exprs["psum"] = pl.col("psum")
        if has_hinge(spec):
            exprs["hinge"] = pl.col("hinge")
    exprs["n_outside"] = ((lowest < 0) | (lowest > 1)).cast(pl.Int64) * n
    if spec.unlabeled:
        exprs["unlabeled"] = pl.col("unlabeled")
        exprs["n_unlabeled"] = pl.col("n_unlabeled" if spec.weighted else "unlabeled")
    return exprs


def histogram(spec: Spec, table: pl.DataFrame) -> pl.DataFrame:
    """The score histogram: per group and bucket, the rows' weight ``_mass`` and count ``_rows``.

    What score drift compares (:mod:`streameval.stats.drift`); labels do not matter.
    """
    n = pl.col("n") if spec.weighted else pl.col("pos") + pl.col("neg")
    mass = (pl.col("pos") + pl.col("neg")).cast(pl.Float64)
    if spec.unlabeled:  # (rows without a label yet are scored all the same)
        exprs = column_exprs(spec)
        n, mass = n + exprs["n_unlabeled"], mass + pl.col("unlabeled").cast(pl.Float64)
    return table.filter(pl.col("bucket").is_not_null()).select(
        *spec.keys, "bucket", mass.alias("_mass"), n.cast(pl.Int64).alias("_rows")
    )


def with_unlabeled(
    labelled: pl.DataFrame | None, unlabeled: pl.DataFrame | None, spec: Spec
) -> pl.DataFrame:
    """A unit's state table of optional labels, from its two parts' tables.

    ``labelled`` is the table of the rows with a label, ``unlabeled`` that of the rows
    without one counted as positives (its ``pos`` is their Σw, its ``n`` their rows), both
    computed under the spec without ``unlabeled`` (None: no such rows); they are joined on
    the keys and bucket, a part's missing cells 0.
    """
    keys = [*spec.keys, "bucket"]
    names = list(merge_ops(spec))
    count = pl.Float64 if spec.weighted else pl.Int64
    types = dict.fromkeys(names, pl.Float64) | {"pos": count, "neg": count, "unlabeled": count}
    types |= {"n": pl.Int64, "n_unlabeled": pl.Int64}
    parts = []
    if labelled is not None:
        parts.append(labelled.select(*keys, *(c for c in names if c not in UNLABELED)))
    if unlabeled is not None:
        moved = [pl.col("pos").alias("unlabeled")]
        if spec.weighted:
            moved.append(pl.col("n").alias("n_unlabeled"))
        parts.append(unlabeled.select(*keys, *moved))
    if len(parts) == 2:
        joined = parts[0].join(
            parts[1],
            on=keys,
            how="full",
            nulls_equal=True,
            coalesce=True,
            maintain_order="left_right",
        )
    else:
        joined = parts[0]
    return joined.select(
        *keys,
        *(
            (pl.col(c).fill_null(0) if c in joined.columns else pl.lit(0)).cast(types[c]).alias(c)
            for c in names
        ),
    )
