"""Integer codes for group keys, so that grouping and sorting run on one integer column.

Grouping by several columns (a string segment, a date, a score bucket) makes Polars encode
every row's keys; grouping by one packed integer is much faster. Each key column gets a code
in ``[0, 2**width)`` (0 is null) and the codes are packed, most significant first, into an
Int64. Sorting the packed integer sorts by the keys' codes, then the last field.

>>> import polars as pl
>>> df = pl.DataFrame({"g": ["b", "a", None, "b"], "d": [3, 1, 2, 3]})
>>> df = df.with_columns(pl.col("d").cast(pl.Int16))
>>> codes = [key_code("g", pl.String), key_code("d", pl.Int16)]
>>> packed = df.select(pack([c.encode for c in codes], [c.width for c in codes]).alias("k"))
>>> packed["k"].n_unique()
3
>>> fields = unpack(packed["k"], [c.width for c in codes])
>>> [c.decode(f).to_list() for c, f in zip(codes, fields)]
[['b', 'a', None, 'b'], [3, 1, 2, 3]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import polars as pl

_INT_RANGES: dict[type[pl.DataType], tuple[int, int]] = {
    pl.Boolean: (0, 1),
    pl.Int8: (-(2**7), 8),
    pl.Int16: (-(2**15), 16),
    pl.Int32: (-(2**31), 32),
    pl.UInt8: (0, 8),
    pl.UInt16: (0, 16),
    pl.UInt32: (0, 32),
    pl.Date: (-(2**31), 32),
}


@dataclass
class KeyCode:
    """How one key column becomes a non-negative integer and back.

    ``decode`` is None for a key coded only by hashing (:func:`hashed_key`): its codes are
    decoded from the unit's own values (:mod:`streameval.kernels.hashcodes`).
    """

    width: int
    encode: pl.Expr
    decode: Callable[[pl.Series], pl.Series] | None
    anchor: pl.Series | None = field(default=None, repr=False)  # keeps a string mapping alive
    #: String keys only: the column, which a unit may code by hashing instead (see
    #: :mod:`streameval.kernels.hashcodes`), and its type.
    text: pl.Expr | None = None
    dtype: pl.DataType | None = None


def key_code(name: str, dtype: pl.DataType) -> KeyCode | None:
    """Code for a key column of ``dtype``, or None when it cannot be packed (wide integers)."""
    col = pl.col(name)
    if dtype in (pl.String, pl.Categorical, pl.Enum) or isinstance(dtype, pl.Categorical | pl.Enum):
        cats = pl.Categories.random()
        anchor = pl.Series(name, [], dtype=pl.Categorical(cats))
        text = col if dtype == pl.String else col.cast(pl.String)
        code = (text.cast(pl.Categorical(cats)).to_physical().cast(pl.Int64) + 1).fill_null(0)

        def decode_text(codes: pl.Series, anchor: pl.Series = anchor) -> pl.Series:
            # (``anchor`` keeps ``cats`` alive while a decoder lives: Polars forgets the
            # values of categories no column holds)
            lookup = pl.concat([pl.Series(name, [None], pl.String), cats.to_series()])
            return lookup.gather(codes).rename(name).cast(dtype)

        return KeyCode(33, code, decode_text, anchor, col if dtype == pl.String else None, dtype)
    for kind, (low, bits) in _INT_RANGES.items():
        if dtype == kind:
            physical = col.to_physical().cast(pl.Int64)
            code = (physical - low + 1).fill_null(0)

            def decode_int(codes: pl.Series, low: int = low) -> pl.Series:
                values = pl.select(
                    pl.when(pl.lit(codes) > 0).then(pl.lit(codes) - 1 + low)
                ).to_series()
                if dtype == pl.Date:
                    return values.cast(pl.Int32).cast(pl.Date).rename(name)
                return values.cast(dtype).rename(name)

            return KeyCode(bits + 1, code, decode_int)
    return None


def hashed_key(name: str, dtype: pl.DataType) -> KeyCode | None:
    """A code for any other groupable key (Int64, UInt64, floats, decimals, …): hashed only.

    Such a key has no small integer code of its own; the kernels number its values from two
    hashes per row (:mod:`streameval.kernels.hashcodes`), which Polars computes with its
    group-by's notion of equality (``-0.0`` is ``0.0``, NaNs are one value). ``encode`` ranks
    the values in the rare case that the first hash collides, and the unit decodes the ranks
    from its own values (so ``decode`` is None). None for Python objects.

    >>> hashed_key("x", pl.Int64).text is not None, hashed_key("o", pl.Object)
    (True, None)
    """
    if dtype == pl.Object:
        return None
    col = pl.col(name)
    rank = col.rank("dense").cast(pl.Int64).fill_null(0)
    return KeyCode(64, rank, None, None, col, dtype)


def pack(fields: Sequence[pl.Expr], widths: Sequence[int]) -> pl.Expr:
    """Pack non-negative integer fields (first most significant) into one Int64."""
    if sum(widths) > 63:
        raise ValueError(f"{sum(widths)} bits do not fit in Int64")
    packed: pl.Expr = pl.lit(0, pl.Int64)
    for f, w in zip(fields, widths, strict=True):
        packed = packed * (2**w) + f.cast(pl.Int64)
    return packed


def unpack(packed: pl.Series, widths: Sequence[int]) -> list[pl.Series]:
    """Inverse of :func:`pack`: the Int64 fields of each packed value."""
    out = []
    shift = sum(widths)
    frame = packed.to_frame("k")
    for w in widths:
        shift -= w
        out.append(frame.select((pl.col("k") // (2**shift)) % (2**w)).to_series())
    return out
