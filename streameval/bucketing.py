"""Order-preserving score buckets.

A float64 score is mapped to an ``Int64`` *ordered key*: its bit pattern, with the low 63 bits
of negative numbers flipped so that integers sort exactly like the floats. Keeping ``m``
mantissa bits means rounding the key down to a multiple of ``2**(52 - m)``: a bucket of
relative width ``2**-m`` whatever the score range (probabilities, logits, margins).
``m = 52`` keeps every distinct float64 (the exact mode).

A state stores each bucket by the ordered key of its *lowest* score, so the bucket's
threshold ("predicted positive if score >= threshold") is a float64 the bucket maps back to
without loss.

>>> import polars as pl
>>> df = pl.DataFrame({"s": [-1.5, -0.0, 0.0, 0.3, 0.5, 2.0]})
>>> keys = df.select(ordered_key(pl.col("s"))).to_series()
>>> keys.is_sorted()
True
>>> df.select(key_to_float(ordered_key(pl.col("s")))).to_series().to_list()
[-1.5, 0.0, 0.0, 0.3, 0.5, 2.0]
>>> float(key_to_float_scalar(bucket_floor_scalar(float_to_key_scalar(0.3), 4)))
0.296875
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt
import polars as pl

EXACT_BITS = 52
#: The float after 1.0. Bucketed states are always cut there (and 0.0 is always a bucket
#: edge), so whether a bucket's scores are probabilities is known from its lowest score.
ABOVE_ONE = 1.0000000000000002
#: The bits a negative float's key has flipped: its low 63 (the sign bit stays), so keys of
#: negative floats sort in reverse of their bits, below every non-negative one.
KEY_FLIP = 0x7FFF_FFFF_FFFF_FFFF
#: The float64 machine epsilon (the spacing of floats at 1), of rounding bounds and guards.
EPS = float(np.finfo(np.float64).eps)
#: The smallest normal float64: squares of values below its root lose their precision.
TINY = float(np.finfo(np.float64).tiny)


def ordered_key(score: pl.Expr) -> pl.Expr:
    """Map a Float64 expression to Int64 keys that sort like the floats.

    ``-0.0`` is normalised to ``0.0``.
    """
    score = score.cast(pl.Float64)
    bits = pl.when(score == 0.0).then(0.0).otherwise(score).reinterpret(dtype=pl.Int64)
    return pl.when(bits < 0).then(bits.xor(pl.lit(KEY_FLIP, pl.Int64))).otherwise(bits)


def bucket_floor(key: pl.Expr, bits: int) -> pl.Expr:
    """Round ordered keys down to the lowest key of their bucket at ``bits`` mantissa bits."""
    if bits >= EXACT_BITS:
        return key
    width = 1 << (EXACT_BITS - bits)
    return (key // width) * width


def key_to_float(key: pl.Expr) -> pl.Expr:
    """Inverse of :func:`ordered_key`: ordered Int64 keys back to Float64 values."""
    bits = pl.when(key < 0).then(key.xor(pl.lit(KEY_FLIP, pl.Int64))).otherwise(key)
    return bits.reinterpret(dtype=pl.Float64)


def float_to_key_scalar(value: float) -> int:
    """Ordered key of one Python float (same map as :func:`ordered_key`)."""
    (bits,) = struct.unpack("<q", struct.pack("<d", float(value) + 0.0))
    return int(bits ^ KEY_FLIP) if bits < 0 else int(bits)


def key_to_float_scalar(key: int) -> float:
    """Float of one ordered key (inverse of :func:`float_to_key_scalar`)."""
    bits = key ^ KEY_FLIP if key < 0 else key
    (value,) = struct.unpack("<d", struct.pack("<q", bits))
    return float(value)


def ordered_keys(score: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Ordered key of each float of an array (:func:`ordered_key`'s map; no NaN).

    Non-negative floats are their own keys (no copy); negative ones have their low 63 bits
    flipped, and -0.0 becomes 0.0.

    >>> ordered_keys(np.array([-1.5, -0.0, 0.0, 0.25])).argsort(kind="stable").tolist()
    [0, 1, 2, 3]
    >>> int(ordered_keys(np.array([-0.0]))[0])
    0
    """
    bits = score.view(np.int64)
    if bits.size == 0 or int(bits.min()) >= 0:
        return bits
    key: npt.NDArray[np.int64] = np.where(bits < 0, bits ^ np.int64(KEY_FLIP), bits)
    key[key == -1] = 0  # -0.0 (the only float whose key is -1)
    return key


def key_floats(key: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """The floats of an array of ordered keys (inverse of :func:`ordered_keys`).

    >>> key_floats(ordered_keys(np.array([-1.5, 0.0, 0.25]))).tolist()
    [-1.5, 0.0, 0.25]
    """
    bits = np.where(key < 0, key ^ np.int64(KEY_FLIP), key)
    return bits.view(np.float64)


def bucket_floor_scalar(key: int, bits: int) -> int:
    """Lowest key of the bucket holding ``key`` at ``bits`` mantissa bits."""
    if bits >= EXACT_BITS:
        return key
    width = 1 << (EXACT_BITS - bits)
    return (key // width) * width


def is_bucket_edge(value: float, bits: int, splits: tuple[float, ...] = ()) -> bool:
    """Whether ``score >= value`` never splits a bucket, so counts at ``value`` are exact.

    >>> is_bucket_edge(0.5, 8), is_bucket_edge(0.3, 8), is_bucket_edge(0.3, 8, (0.3,))
    (True, False, True)
    """
    key = float_to_key_scalar(value)
    return bits >= EXACT_BITS or bucket_floor_scalar(key, bits) == key or value in splits


def bucket_expr(score: pl.Expr, bits: int, splits: tuple[float, ...] = ()) -> pl.Expr:
    """Bucket (lowest ordered key) of each score, refined so each split value starts a bucket.

    Splitting at user thresholds keeps the confusion counts at those thresholds exact in
    bucketed mode: the bucket holding a threshold is cut in two at it.
    """
    return key_bucket(ordered_key(score), bits, splits)


def key_bucket(key: pl.Expr, bits: int, splits: tuple[float, ...] = ()) -> pl.Expr:
    """:func:`bucket_expr` of ordered keys; of finer buckets' keys, their coarser bucket.

    A finer bucket with the same splits lies wholly within one coarser bucket (each split
    starts a bucket at every precision), so this merges the buckets of a state.
    """
    lo = bucket_floor(key, bits)
    if bits >= EXACT_BITS or not splits:
        return lo
    cuts = [
        pl.when(key >= k).then(pl.lit(k, pl.Int64)).otherwise(pl.lit(-(2**63), pl.Int64))
        for k in sorted({float_to_key_scalar(s) for s in splits})
    ]
    return pl.max_horizontal(lo, *cuts)
