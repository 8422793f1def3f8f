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

from collections.abc import Sequence

import polars as pl

from ..errors import InputError
from ..source import require_columns

U64 = pl.UInt64
_MASK = (1 << 64) - 1
NULL_VALUE = 0x6A09E667F3BCC908  # the hash value of a null key
STREAMS = {"kfold": 1, "holdout": 2, "bootstrap": 3, "stratum": 4, "order": 5}


def _lit(value: int) -> pl.Expr:
    return pl.lit(value & _MASK, U64)


def mix(x: pl.Expr) -> pl.Expr:
    """splitmix64's finalizer of a UInt64 expression (wrapping arithmetic; ``//`` shifts)."""
    x = x + _lit(0x9E3779B97F4A7C15)
    x = x.xor(x // _lit(1 << 30)) * _lit(0xBF58476D1CE4E5B9)
    x = x.xor(x // _lit(1 << 27)) * _lit(0x94D049BB133111EB)
    return x.xor(x // _lit(1 << 31))


def mix_int(x: int) -> int:
    """:func:`mix` of one Python int (the same function, for constants and tests).

    >>> mix_int(0)
    16294208416658607535
    """
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _bytes_value(hex_text: pl.Expr, length: pl.Expr) -> pl.Expr:
    """Hash of a byte string given as hex text: position-dependent sum over 7-byte chunks."""
    chunks = hex_text.str.extract_all(r".{1,14}").list.eval(
        pl.element().str.to_integer(base=16, dtype=U64)
    )
    positions = pl.int_ranges(0, chunks.list.len(), dtype=U64).list.eval(mix(pl.element()))
    total = (chunks + positions).list.eval(mix(pl.element())).list.sum()
    return mix(total.xor(length.cast(U64)))


def value_hash(name: str, dtype: pl.DataType) -> pl.Expr:
    """One UInt64 per value of column ``name`` of type ``dtype`` (see the module docstring)."""
    col = pl.col(name)
    if dtype == pl.Boolean:
        v = col.cast(U64)
    elif dtype.is_unsigned_integer():
        v = col.cast(U64)
    elif dtype.is_integer():
        v = col.cast(pl.Int64).reinterpret(signed=False)
    elif dtype.is_temporal():
        v = col.to_physical().cast(pl.Int64).reinterpret(signed=False)
    elif dtype.is_float():
        x = col.cast(pl.Float64)
        v = pl.when(x == 0.0).then(0.0).otherwise(x).reinterpret(dtype=U64)
    elif dtype == pl.Binary:
        v = _bytes_value(col.bin.encode("hex"), col.bin.size())
    elif isinstance(dtype, pl.String | pl.Categorical | pl.Enum | pl.Decimal):
        text = col.cast(pl.String)
        v = _bytes_value(text.str.encode("hex"), text.str.len_bytes())
    elif dtype == pl.Null:
        v = pl.lit(None, U64)
    else:
        raise InputError(
            f"expected a key column of integers, strings, booleans, dates or floats, got "
            f"{name!r} of type {dtype}; hint: derive an integer or string key from it first"
        )
    return v.fill_null(_lit(NULL_VALUE))


def key_hash(
    schema: pl.Schema, columns: Sequence[str], *, seed: int, stream: str, role: str
) -> pl.Expr:
    """UInt64 hash of the key ``columns`` (in order) for ``seed`` and a purpose ``stream``."""
    require_columns(schema, columns, role=role)
    h = _lit(mix_int(seed_value(seed) ^ mix_int(STREAMS[stream])))
    for name in columns:
        h = mix(h.xor(value_hash(name, schema[name])))
    return h


def rehash(h: pl.Expr, salt: pl.Expr | int) -> pl.Expr:
    """A new independent hash from ``h`` and an integer ``salt`` (a repeat or a replicate)."""
    s = _lit(mix_int(int(salt))) if isinstance(salt, int) else mix(salt.cast(U64))
    return mix(h.xor(s))


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
