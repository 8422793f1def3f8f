"""Stable 64-bit hashes of key columns, written with Polars UInt64 arithmetic (which wraps).

A split assigns a row from the hash of its key (a row id, or a group key) and the seed, so the
assignment never depends on the row's position, file or chunk. Polars' own ``Expr.hash`` is
only stable within one Polars version, so the hash here is spelled out:

- ``mix`` is the splitmix64 finalizer (Steele, Lea & Flood 2014), a bijection of UInt64;
- a key value becomes one UInt64 ``v`` by its type: integers as their two's-complement bits
  (an Int32 and an Int64 column holding 7 give the same ``v``), booleans as 0/1, dates,
  datetimes, durations and times as their physical integer (so a Datetime's time unit
  matters), floats as their IEEE-754 bits (−0.0 as 0.0), strings (and categoricals, enums,
  decimals, as their text) and binaries from their bytes: 7-byte chunks ``c_j``,
  ``v = mix(len ^ Σ_j mix(c_j + mix(j)))`` — about 3 µs a row against a few nanoseconds for
  an integer, so cast string ids to integers when you can; a null is one fixed value;
- the key hash chains the columns: ``h = mix(h ^ v)`` from ``h = mix(seed ^ stream)``, where
  ``stream`` differs per purpose (k-fold, hold-out, bootstrap, stratum order), so one seed
  gives independent splits.

A uniform number in [0, 1) is the top 53 bits of ``h`` divided by 2⁵³.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

from ..errors import InputError
from ..source import require_columns

U64 = pl.UInt64
_MASK = (1 << 64) - 1
NULL_VALUE = 0x6A09E667F3BCC908  # the hash value of a null key
_VALUE, _POS, _LEN = "_se_value", "_se_position", "_se_length"
INTERNAL = (_VALUE, _POS, _LEN)
STREAMS = {"kfold": 1, "holdout": 2, "bootstrap": 3, "stratum": 4, "order": 5, "query": 6}


def _lit(value: int) -> pl.Expr:
    return pl.lit(value & _MASK, U64)


_STEPS: list[Callable[[pl.Expr], pl.Expr]] = [
    lambda x: x + _lit(0x9E3779B97F4A7C15),
    lambda x: x.xor(x // _lit(1 << 30)) * _lit(0xBF58476D1CE4E5B9),
    lambda x: x.xor(x // _lit(1 << 27)) * _lit(0x94D049BB133111EB),
    lambda x: x.xor(x // _lit(1 << 31)),
]


def mix_column(lf: pl.LazyFrame, name: str, *, inside_lists: bool = False) -> pl.LazyFrame:
    """Apply splitmix64's finalizer to the UInt64 column ``name`` (or to its list elements).

    Each step is its own projection: written as one expression, every step would repeat the
    expression before it twice, and a chain of hashes would grow exponentially.
    """
    for step in _STEPS:
        x = pl.col(name).list.eval(step(pl.element())) if inside_lists else step(pl.col(name))
        lf = lf.with_columns(x.alias(name))
    return lf


def mix_int(x: int) -> int:
    """splitmix64's finalizer of one Python int (the function :func:`mix_column` applies).

    >>> mix_int(0)
    16294208416658607535
    """
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def mix_array(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """splitmix64's finalizer of each int64 of an array (its bits as unsigned), as :func:`mix_int`.

    >>> int(mix_array(np.array([0], np.int64)).view(np.uint64)[0]) == mix_int(0)
    True
    """
    u = x.view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    u = (u ^ (u >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    u = (u ^ (u >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: npt.NDArray[np.int64] = (u ^ (u >> np.uint64(31))).view(np.int64)
    return out


def _add_bytes_value(
    lf: pl.LazyFrame, hex_text: pl.Expr, length: pl.Expr, out: str
) -> pl.LazyFrame:
    """Hash of a byte string given as hex text: position-dependent sum over 7-byte chunks."""
    chunks = hex_text.str.extract_all(r".{1,14}").list.eval(
        pl.element().str.to_integer(base=16, dtype=U64)
    )
    lf = lf.with_columns(
        chunks.alias(out),
        pl.int_ranges(0, chunks.list.len(), dtype=U64).alias(_POS),
        length.cast(U64).alias(_LEN),
    )
    lf = mix_column(lf, _POS, inside_lists=True)
    lf = mix_column(lf.with_columns(pl.col(out) + pl.col(_POS)), out, inside_lists=True)
    lf = lf.with_columns(pl.col(out).list.sum().xor(pl.col(_LEN)).alias(out)).drop(_POS, _LEN)
    return mix_column(lf, out)


def add_value_hash(lf: pl.LazyFrame, name: str, dtype: pl.DataType, out: str) -> pl.LazyFrame:
    """Add column ``out``: one UInt64 per value of column ``name`` (see the module docstring)."""
    col = pl.col(name)
    if dtype == pl.Binary:
        lf = _add_bytes_value(lf, col.bin.encode("hex"), col.bin.size(), out)
        return lf.with_columns(pl.col(out).fill_null(_lit(NULL_VALUE)))
    if isinstance(dtype, pl.String | pl.Categorical | pl.Enum | pl.Decimal):
        text = col.cast(pl.String)
        lf = _add_bytes_value(lf, text.str.encode("hex"), text.str.len_bytes(), out)
        return lf.with_columns(pl.col(out).fill_null(_lit(NULL_VALUE)))
    if dtype == pl.Boolean or dtype.is_unsigned_integer():
        v = col.cast(U64)
    elif dtype.is_integer():
        v = col.cast(pl.Int64).reinterpret(signed=False)
    elif dtype.is_temporal():
        v = col.to_physical().cast(pl.Int64).reinterpret(signed=False)
    elif dtype.is_float():
        x = col.cast(pl.Float64)
        v = pl.when(x == 0.0).then(0.0).otherwise(x).reinterpret(dtype=U64)
    elif dtype == pl.Null:
        v = pl.lit(None, U64)
    else:
        raise InputError(
            f"expected a key column of integers, strings, booleans, dates or floats, got "
            f"{name!r} of type {dtype}; hint: derive an integer or string key from it first"
        )
    return lf.with_columns(v.fill_null(_lit(NULL_VALUE)).alias(out))


def add_key_hash(
    lf: pl.LazyFrame,
    schema: pl.Schema,
    columns: Sequence[str],
    *,
    seed: int,
    stream: str,
    role: str,
    out: str,
) -> pl.LazyFrame:
    """Add column ``out``: the UInt64 hash of the key ``columns`` for a seed and a purpose."""
    require_columns(schema, columns, role=role)
    lf = lf.with_columns(_lit(mix_int(seed_value(seed) ^ mix_int(STREAMS[stream]))).alias(out))
    for name in columns:
        lf = add_value_hash(lf, name, schema[name], _VALUE)
        lf = mix_column(lf.with_columns(pl.col(out).xor(pl.col(_VALUE))).drop(_VALUE), out)
    return lf


def rehash(lf: pl.LazyFrame, name: str, salt: str) -> pl.LazyFrame:
    """Make the hash column ``name`` independent per value of the integer column ``salt``."""
    lf = mix_column(lf.with_columns(pl.col(salt).cast(U64).alias(_VALUE)), _VALUE)
    return mix_column(lf.with_columns(pl.col(name).xor(pl.col(_VALUE))).drop(_VALUE), name)


def uniform(h: pl.Expr) -> pl.Expr:
    """Float64 in [0, 1) from the top 53 bits of a UInt64 hash."""
    return (h // _lit(1 << 11)).cast(pl.Float64) * 2.0**-53


def seed_value(seed: int) -> int:
    """The seed as an unsigned 64-bit value; an InputError for anything but an int."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"expected seed to be an integer, got {seed!r}; hint: seed=0")
    return seed & _MASK


def as_columns(value: str | Sequence[str] | None, name: str) -> list[str]:
    """A column name or a list of them, as a list (empty for None)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    if not items or not all(isinstance(c, str) for c in items):
        raise InputError(
            f"expected {name}= to be a column name or a non-empty list of them, got {value!r}"
        )
    return items
