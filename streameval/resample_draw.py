"""Bootstrap replicates drawn from the rows themselves, so partitions agree wherever computed.

Every row takes part in replicates 0..R: replicate 0 is the sample itself (count 1), and in
replicate r ≥ 1 the row's weight is multiplied by a Poisson(1) count drawn from a hash of
(row key, seed, r). Rows drawn 0 times are left out of that replicate. Because the count
depends on nothing but the row's own values, a replicate of any file, row group or day is
the same wherever and in whatever order it is computed, and replicate states merge by sums
like any other state (the Poisson bootstrap).

The draws are those of :func:`streameval.split.bootstrap`, whose hash
(:mod:`streameval.split.keys`: splitmix64 written in Polars UInt64 arithmetic) is stable
across machines, Polars versions and releases: with ``row_id=`` and a seed, replicate r ≥ 1
here has the in-bag counts of replicate r of ``se.split.bootstrap(df, …, seed=seed,
by=row_id)`` (whose out-of-bag rows are then the rows this replicate leaves out). Per row,
``h = mix(mix(seed ^ mix(3)) ^ v₁ …)`` over the key columns' values vᵢ, for replicate r
``h_r = mix(h ^ mix(r))``, U = the top 53 bits of h_r / 2⁵³, and the count is the number of
points of the Poisson(1) CDF F(k) ≤ U, compared here as integers: the top 53 bits against
⌈F(k)·2⁵³⌉, which is the same test.

Without ``row_id=`` the key is every column the task reads (label, score(s), prediction,
weight, then the group keys), hashed the same way except that strings, categoricals,
decimals and binaries contribute Polars' ``Expr.hash`` (stable within one Polars version:
states to merge must then come from the same Polars version) — the stable text hash costs
about 3 µs a row, and the key is hashed again in every pass.

In a replicated state ``n`` counts the rows drawn, weights are (user weight ×) counts, and
the state is weighted. Replicates are computed in passes over the source, replicate 0 first,
then blocks of replicates of about :data:`BLOCK_STATE_ROWS` state rows (one replicate per
pass for all but small states): R + 1 times the work of a plain pass, and a state of up to
R + 1 times the rows, which a coarse ``precision`` keeps small. A binary, regression or
multiclass ``evaluate`` needs no state: each unit is read once with its rows' keys
(:data:`ROW_KEY`), and the compiled kernel draws the same counts from them
(:func:`streameval.kernels.weightedloops.drawn`,
:meth:`streameval.kernels.staged.Staged.replicated` and
:meth:`~streameval.kernels.staged.Staged.replicated_sums`).

>>> import polars as pl
>>> rows = pl.LazyFrame({"id": list(range(20_000)), "replicate": 3})
>>> rows = with_row_key(rows, ["id"], rows.collect_schema(), 7, "key", stable=True)
>>> counts = with_counts(rows, "key", "replicate", "count").collect()["count"]
>>> round(counts.mean(), 1), round(counts.var(), 1)
(1.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import polars as pl

from .split.keys import (
    NULL_VALUE,
    STREAMS,
    add_key_hash,
    add_value_hash,
    mix_column,
    mix_int,
    rehash,
    seed_value,
)
from .split.resample import poisson_cuts

MASK = (1 << 64) - 1
UNIFORM_BITS = 53
REPLICATE = "replicate"
REPLICATE_TYPE = pl.UInt16
MAX_REPLICATES = 65_535
BLOCK_STATE_ROWS = 1 << 15  # state rows per pass over the source (measured: smaller is faster)
CHUNK_ROWS = 1 << 18  # replicate rows per streaming chunk
ROW_KEY = "_se_row_key"  # each row's key (UInt64), for the compiled kernel's draws
_VALUE = "_se_bits"
_U64 = pl.UInt64


def _lit(value: int) -> pl.Expr:
    return pl.lit(value, _U64)


def _text(dtype: pl.DataType) -> bool:
    return isinstance(dtype, pl.String | pl.Categorical | pl.Enum | pl.Decimal | pl.Binary)


def with_row_key(
    lf: pl.LazyFrame,
    columns: Sequence[str],
    schema: pl.Schema,
    seed: int,
    name: str,
    *,
    stable: bool,
) -> pl.LazyFrame:
    """``lf`` with column ``name``: each row's 64-bit key (UInt64) from ``columns`` and ``seed``.

    ``stable``: :func:`streameval.split.keys.add_key_hash` exactly; else text columns are
    hashed by Polars (fast, stable within one Polars version).
    """
    if stable or not any(_text(schema[c]) for c in columns):
        return add_key_hash(
            lf, schema, columns, seed=seed, stream="bootstrap", role="row id", out=name
        )
    start = mix_int(seed_value(seed) ^ mix_int(STREAMS["bootstrap"]))
    lf = lf.with_columns(_lit(start).alias(name))
    for column in columns:
        if _text(schema[column]):
            text = pl.col(column).cast(pl.String) if schema[column] != pl.Binary else pl.col(column)
            lf = lf.with_columns(text.hash(seed=0).fill_null(_lit(NULL_VALUE)).alias(_VALUE))
        else:
            lf = add_value_hash(lf, column, schema[column], _VALUE)
        lf = mix_column(lf.with_columns(pl.col(name).xor(pl.col(_VALUE))).drop(_VALUE), name)
    return lf


@cache
def count_cuts() -> tuple[int, ...]:
    """Integer cut points c_k = ⌈F(k)·2^53⌉ of the Poisson(1) CDF F.

    F is :func:`streameval.split.resample.poisson_cuts` (in double precision, while below
    1 − 2⁻⁵³). With v the top 53 bits of a draw and U = v / 2^53, F(k) ≤ U exactly when
    v ≥ c_k, so the count #{k : v ≥ c_k} is ``split.bootstrap``'s.

    >>> cuts = count_cuts()
    >>> len(cuts), cuts[0] / 2**53  # up to 17 draws of one row; P(0) = 1/e
    (17, 0.36787944117144233)
    """
    scale = 1 << UNIFORM_BITS
    return tuple(math.ceil(Fraction(f) * scale) for f in poisson_cuts())


@cache
def draw_limits() -> Any:
    """:func:`count_cuts` as 64-bit draws (uint64 array): a count is the limits a draw reaches.

    >>> int(draw_limits()[0]) == count_cuts()[0] << 11
    True
    """
    import numpy as np

    return np.array([cut << (64 - UNIFORM_BITS) for cut in count_cuts()], np.uint64)


def with_counts(lf: pl.LazyFrame, key: str, replicate: str, name: str) -> pl.LazyFrame:
    """``lf`` with column ``name``: the Poisson(1) count (UInt8) of each row in ``replicate``.

    ``key`` is the rows' key column and ``replicate`` ≥ 1 (replicate 0, the sample itself,
    is not drawn). The draw's 64 bits are compared with the cut points shifted up by 11
    bits, which equals comparing their top 53 bits with the cut points.
    """
    lf = rehash(lf.with_columns(pl.col(key).alias(name)), name, replicate)
    u = pl.col(name)
    shift = 1 << (64 - UNIFORM_BITS)
    count = pl.lit(0, pl.UInt8)
    for cut in count_cuts():
        count = count + (u >= _lit(cut * shift)).cast(pl.UInt8)
    return lf.with_columns(count.alias(name))


@dataclass(frozen=True)
class Bootstrap:
    """Validated bootstrap options: R replicates, the seed, and the row id columns (or none)."""

    replicates: int
    seed: int
    row_id: tuple[str, ...]


@dataclass(frozen=True)
class Replication:
    """How a task's rows become replicate rows.

    ``hashed`` are the columns of the row key, ``weight`` the weight column the task reads
    and ``user_weight`` the source's weight column, if any. ``runs``, when the task's
    compiled kernel draws the replicates itself, collects a unit's rows with their keys
    (column :data:`ROW_KEY`) for it (:meth:`streameval.kernels.staged.Staged.replicated`).
    """

    boot: Bootstrap
    hashed: tuple[str, ...]
    weight: str
    user_weight: str | None
    runs: Callable[[pl.LazyFrame, Mapping[str, Any]], Any] | None = None

    def rows(self, lf: pl.LazyFrame, lo: int, hi: int) -> pl.LazyFrame:
        """Each row of ``lf`` once per replicate ``lo..hi-1`` it is drawn in.

        ``weight`` is set to (user weight ×) its count and the replicate index is in column
        ``replicate`` (UInt16). Replicate 0 is the rows themselves (count 1). Lazy and
        streaming: rows are repeated with ``int_ranges`` and ``explode``, and rows drawn 0
        times are dropped.
        """
        base = pl.lit(1.0) if self.user_weight is None else pl.col(self.user_weight)
        base = base.cast(pl.Float64)
        parts = []
        if lo == 0:
            rep = pl.lit(0, REPLICATE_TYPE).alias(REPLICATE)
            parts.append(lf.with_columns(rep, base.alias(self.weight)))
            lo = 1
        if hi > lo:
            schema = lf.collect_schema()
            stable = bool(self.boot.row_id)
            keyed = with_row_key(lf, self.hashed, schema, self.boot.seed, "_se_key", stable=stable)
            if hi - lo == 1:
                repeated = keyed.with_columns(pl.lit(lo, REPLICATE_TYPE).alias(REPLICATE))
            else:
                reps = pl.int_ranges(lo, hi, dtype=REPLICATE_TYPE).alias(REPLICATE)
                repeated = keyed.with_columns(reps).explode(REPLICATE)
            counted = with_counts(repeated, "_se_key", REPLICATE, "_se_count")
            drawn = counted.filter(pl.col("_se_count") > 0)
            weights = (base * pl.col("_se_count")).alias(self.weight)
            parts.append(drawn.with_columns(weights).drop("_se_key", "_se_count"))
        return parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal")

    def blocks(self, state_rows: int) -> list[tuple[int, int]]:
        """Replicates 1..R in blocks of about :data:`BLOCK_STATE_ROWS` state rows each.

        ``state_rows`` are those of replicate 0. A pass's group-by then stays small enough
        to be fast: measured, one replicate per pass (at 1e5 state rows each) is as fast as
        all in one pass, with a quarter of the memory.

        >>> rep = Replication(Bootstrap(10, 0, ()), ("id",), "w", None)
        >>> rep.blocks(BLOCK_STATE_ROWS // 4)
        [(1, 5), (5, 9), (9, 11)]
        """
        size = max(1, BLOCK_STATE_ROWS // max(state_rows, 1))
        stop = self.boot.replicates + 1
        return [(lo, min(lo + size, stop)) for lo in range(1, stop, size)]

    def passes(
        self, lf: pl.LazyFrame, constants: Mapping[str, Any], state_rows: int | None
    ) -> Iterator[tuple[pl.LazyFrame, dict[str, Any], int]]:
        """The passes computing the replicates of ``lf``, each (rows, constant keys, chunk).

        Replicate 0 when ``state_rows`` is None, else the blocks of the others. A pass of one
        replicate has it as a constant key, which lets the state query group by fewer
        columns; ``chunk`` is the rows per streaming chunk before rows are repeated.
        """
        blocks = [(0, 1)] if state_rows is None else self.blocks(state_rows)
        for lo, hi in blocks:
            rows = self.rows(lf, lo, hi)
            chunk = max(256, CHUNK_ROWS // (hi - lo))
            if hi - lo == 1:
                yield rows.drop(REPLICATE), {**constants, REPLICATE: lo}, chunk
            else:
                yield rows, dict(constants), chunk

    def state_table(
        self,
        lf: pl.LazyFrame,
        constants: Mapping[str, Any],
        compute: Callable[[pl.LazyFrame, dict[str, Any]], pl.DataFrame],
    ) -> pl.DataFrame:
        """The replicated state table of ``lf``: ``compute`` (a task's query) over each pass.

        Replicate 0 first, whose size sets the blocks of the others; one group-by over all
        replicates at once is no faster and holds several times the memory.
        """
        ((rows, fixed, _),) = self.passes(lf, constants, None)
        tables = [compute(rows, fixed)]
        for rows, fixed, chunk in self.passes(lf, constants, tables[0].height):
            with pl.Config(streaming_chunk_size=chunk):
                tables.append(compute(rows, fixed))
        return pl.concat(tables, how="vertical_relaxed", rechunk=True)
