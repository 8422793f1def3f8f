"""Bootstrap replicates drawn from the rows themselves, so partitions agree wherever computed.

Every row takes part in replicates 0..R: replicate 0 is the sample itself (count 1), and in
replicate r ≥ 1 the row's weight is multiplied by a Poisson(1) count drawn from a hash of
(row key, seed, r). Rows drawn 0 times are left out of that replicate. Because the count
depends on nothing but the row's own values, a replicate of any file, row group or day is
the same wherever and in whatever order it is computed, and replicate states merge by sums
like any other state (the Poisson bootstrap).

The row key is built from the ``row_id`` columns, or without them from every column the task
reads (label, score(s), prediction, weight, then the group keys):

- integer, boolean, temporal and float columns contribute their value's 64 bits (integers as
  Int64, floats as Float64 with −0.0 read as 0.0, temporal types as their physical integer),
  mixed with SplitMix64's finalizer written in Polars UInt64 arithmetic: the draws are
  stable across machines, Polars versions and releases of this library;
- strings, categoricals (by their text) and other types contribute Polars' ``hash``, which
  is stable within one Polars version only: states to be merged must then be computed with
  the same Polars version.

Per column, ``key = mix(key XOR bits)``, starting from ``mix(seed XOR SALT)``; replicate r
draws ``u = mix(key + r·γ)`` (the r-th output of a SplitMix64 generator seeded with the key)
and the count is the number of Poisson(1) CDF points F(k) ≤ U, U being the top 53 bits of
``u`` as a uniform in [0, 1). The CDF is computed once, exactly, in rational arithmetic.

>>> import polars as pl
>>> rows = pl.LazyFrame({"id": list(range(20_000)), "replicate": 3})
>>> rows = with_row_key(rows, ["id"], rows.collect_schema(), 7, "key")
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

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment: 2^64 / golden ratio, odd
M1, M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # SplitMix64's finalizer multipliers
SALT = 0x5EED5EED5EED5EED  # keeps seed 0 away from the all-zero state
NULL_BITS = 0x6E756C6C6E756C6C  # what a null numeric value contributes
UNIFORM_BITS = 53
REPLICATE = "replicate"
REPLICATE_TYPE = pl.UInt16
MAX_REPLICATES = 65_535
BLOCK_STATE_ROWS = 1 << 15  # state rows per pass over the source (measured: smaller is faster)
CHUNK_ROWS = 1 << 18  # replicate rows per streaming chunk

_U64 = pl.UInt64
_INTEGERS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.Boolean)


def _lit(value: int) -> pl.Expr:
    return pl.lit(value, _U64)


def mix(lf: pl.LazyFrame, name: str) -> pl.LazyFrame:
    """SplitMix64's finalizer applied to the UInt64 column ``name``.

    Polars' UInt64 arithmetic wraps like C's, and ``//`` by a power of two is ``>>``. One
    step per ``with_columns``: nested, each term would be computed twice per level.
    """
    for shift, factor in ((30, M1), (27, M2), (31, None)):
        z = pl.col(name)
        z = z ^ (z // _lit(1 << shift))
        lf = lf.with_columns((z if factor is None else z * _lit(factor)).alias(name))
    return lf


def mix_int(z: int) -> int:
    """:func:`mix` of a Python int, for constants.

    >>> hex(mix_int(0))
    '0x0'
    >>> hex(mix_int(GAMMA))  # SplitMix64's first output for seed 0
    '0xe220a8397b1dcdaf'
    """
    z &= MASK
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def column_bits(name: str, dtype: pl.DataType) -> pl.Expr:
    """A column's values as UInt64 bits (see the module docstring for each type)."""
    col = pl.col(name)
    if dtype == pl.UInt64:
        bits = col
    elif dtype in _INTEGERS or dtype == pl.Null:
        bits = col.cast(pl.Int64).reinterpret(dtype=_U64)
    elif dtype.is_float():
        x = col.cast(pl.Float64)
        bits = pl.when(x == 0.0).then(0.0).otherwise(x).reinterpret(dtype=_U64)
    elif dtype.is_temporal():
        bits = col.to_physical().cast(pl.Int64).reinterpret(dtype=_U64)
    else:
        text = isinstance(dtype, pl.Categorical | pl.Enum)
        return (col.cast(pl.String) if text else col).hash(seed=0)
    return bits.fill_null(_lit(NULL_BITS))


def with_row_key(
    lf: pl.LazyFrame, columns: Sequence[str], schema: pl.Schema, seed: int, name: str
) -> pl.LazyFrame:
    """``lf`` with column ``name``: each row's 64-bit key (UInt64) from ``columns`` and ``seed``."""
    lf = lf.with_columns(_lit(mix_int(seed ^ SALT)).alias(name))
    for column in columns:
        lf = mix(
            lf.with_columns((pl.col(name) ^ column_bits(column, schema[column])).alias(name)), name
        )
    return lf


@cache
def poisson_cuts() -> tuple[int, ...]:
    """Integer cut points c_k = ⌈F(k)·2^53⌉ of the Poisson(1) CDF, while below 2^53.

    A uniform U = v / 2^53 (v the top 53 bits of a draw) gives the count #{k : v ≥ c_k}, that
    is #{k : F(k) ≤ U}: P(count ≤ k) = c_k / 2^53, F(k) to within 2^-53. F is summed in exact
    rational arithmetic from e^-1 = Σ (−1)^j / j! (60 terms, error below 1e-80).

    >>> cuts = poisson_cuts()
    >>> len(cuts), cuts[0] / 2**53  # up to 17 draws of one row; P(0) = 1/e
    (17, 0.36787944117144233)
    """
    inv_e = sum((Fraction((-1) ** j, math.factorial(j)) for j in range(60)), Fraction(0))
    scale = 1 << UNIFORM_BITS
    cuts: list[int] = []
    cdf = Fraction(0)
    for k in range(60):
        cdf += inv_e / math.factorial(k)
        cut = math.ceil(cdf * scale)
        if cut >= scale:
            break
        cuts.append(cut)
    return tuple(cuts)


def with_counts(lf: pl.LazyFrame, key: str, replicate: str, name: str) -> pl.LazyFrame:
    """``lf`` with column ``name``: the Poisson(1) count (UInt8) of each row in ``replicate``.

    ``key`` is the rows' key column and ``replicate`` ≥ 1 (replicate 0, the sample itself,
    is not drawn). The draw's 64 bits are compared with the cut points shifted up by 11
    bits, which equals comparing their top 53 bits with the cut points.
    """
    draw = pl.col(key) + pl.col(replicate).cast(_U64) * _lit(GAMMA)
    lf = mix(lf.with_columns(draw.alias(name)), name)
    u = pl.col(name)
    shift = 1 << (64 - UNIFORM_BITS)
    count = pl.lit(0, pl.UInt8)
    for cut in poisson_cuts():
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
    and ``user_weight`` the source's weight column, if any.
    """

    boot: Bootstrap
    hashed: tuple[str, ...]
    weight: str
    user_weight: str | None

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
            keyed = with_row_key(lf, self.hashed, schema, self.boot.seed, "_se_key")
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
