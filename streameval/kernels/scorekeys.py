"""The score field of a packed sort key: the ordered score key, made as narrow as it can be.

Directly, the field is ``key - key_min``. Probabilities that include 0.0 (or tiny values)
span 62 bits that way, too many to pack with a group code and the label. Only the binades
that occur matter for the order, though: the key's top 12 bits (sign and exponent) are
replaced by their rank among those that occur, which keeps the order and the low 52 bits.
A unit whose scores span 14 binades then needs 52 + 4 bits. Bucket keys (a state's buckets
at ``m`` mantissa bits) share their low ``52 - m`` bits: those are shifted off, so a state's
buckets fit in a few bits more than ``m`` without a sort. Scores spread over hundreds of
binades need more than that: :meth:`ScoreField.fit` then replaces each key by its rank among
the unit's distinct keys (one sort), which takes the bits of the count of distinct
scores, 25 for 2e7 of them.

>>> import numpy as np
>>> from streameval.bucketing import float_to_key_scalar as key
>>> keys = np.array([key(v) for v in [0.0, 1e-300, 0.25, 0.5, 0.75]], np.int64)
>>> field = ScoreField.build(keys, int(keys.min()), int(keys.max()), 60)
>>> field.bits, field.tops is not None
(54, True)
>>> bool((field.decode(field.encode(keys)) == keys).all())
True
>>> [field.offset(key(t)) >= field.offset(key(0.5)) for t in (0.3, 0.5, 0.6)]
[False, True, True]
>>> buckets = keys & ~((1 << 40) - 1)  # (keys of 12-bit buckets: the low 40 bits 0)
>>> field = ScoreField.build(buckets, int(buckets.min()), int(buckets.max()), 30)
>>> field.bits, field.shift, bool((field.decode(field.encode(buckets)) == buckets).all())
(21, 41, True)
>>> spread = np.array([key(v) for v in [-1e300, -1e-300, 1e-300, 1.0, 1e300]], np.int64)
>>> ScoreField.build(spread, int(spread.min()), int(spread.max()), 20) is None
True
>>> field, fields = ScoreField.fit(spread, int(spread.min()), int(spread.max()), 20)  # ranked
>>> field.bits, fields.tolist(), field.encode(spread).tolist()
(3, [0, 1, 2, 3, 4], [0, 1, 2, 3, 4])
>>> bool((field.decode(fields) == spread).all()), field.offset(key(0.5))
(True, 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
_LOW = 52
_MASK = (1 << _LOW) - 1


@dataclass
class ScoreField:
    """How ordered score keys are stored: ``compress(key) - low`` in ``bits`` bits.

    Attributes
    ----------
    low : int
        The smallest compressed key.
    bits : int
        Width of the field.
    tops : ndarray of int64 or None
        The top 12 bits (offset by 2048) that occur, sorted, when they are ranked; None when
        keys are stored directly.
    values : ndarray of int64 or None
        The distinct keys, sorted, when each key is stored as its rank among them.
    shift : int
        Low bits every ``key - low`` has clear, shifted off (stored directly only).

    """

    low: int
    bits: int
    tops: I64 | None = None
    values: I64 | None = None
    shift: int = 0

    @classmethod
    def build(cls, key: I64, key_min: int, key_max: int, budget: int) -> ScoreField | None:
        """The narrowest field for keys ``key`` within ``budget`` bits, or None.

        Parameters
        ----------
        key : ndarray of int64
            Ordered score keys.
        key_min, key_max : int
            Their smallest and largest.
        budget : int
            Bits available.

        Returns
        -------
        ScoreField or None

        """
        bits = (key_max - key_min).bit_length()
        if bits <= min(budget, 63):
            return cls(key_min, bits)
        shift = _clear_bits(key, key_min)
        if bits - shift <= min(budget, 63):
            return cls(key_min, bits - shift, shift=shift)
        seen = np.bincount(_tops(key), minlength=1 << 12)
        tops = np.flatnonzero(seen).astype(np.int64)
        field = cls(0, 0, tops)
        low = field._compress(key_min)
        bits = (field._compress(key_max) - low).bit_length()
        return cls(low, bits, tops) if bits <= min(budget, 63) else None

    @classmethod
    def fit(
        cls, key: I64, key_min: int, key_max: int, budget: int
    ) -> tuple[ScoreField, U64] | None:
        """The narrowest field within ``budget`` bits and each key's field, or None.

        :meth:`build`'s field where it fits, else each key's rank among the distinct keys
        (:meth:`ranked`).
        """
        field = cls.build(key, key_min, key_max, budget)
        return cls.ranked(key, budget) if field is None else (field, field.encode(key))

    @classmethod
    def ranked(cls, key: I64, budget: int) -> tuple[ScoreField, U64] | None:
        """The field of each key's rank among the distinct keys, and the fields (or None).

        One sort gives both the distinct keys and each key's rank (Polars' multithreaded
        ``arg_sort``: a search a row in the distinct keys would take ten times as long).
        """
        if not key.size:
            return cls(0, 0, None, key[:0].copy()), key.view(np.uint64)[:0].copy()
        order = pl.Series(key).arg_sort().to_numpy()  # (multithreaded: NumPy's takes 3×)
        ordered = key[order]
        new = np.empty(key.size, np.bool_)
        new[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        values = ordered[new]
        bits = max(values.size - 1, 0).bit_length()
        if bits > min(budget, 63):
            return None
        ranks = np.cumsum(new, dtype=np.int64)
        ranks -= 1
        fields = np.empty(key.size, np.uint64)
        fields[order] = ranks.view(np.uint64)
        return cls(0, bits, None, values), fields

    def _compress(self, key: int) -> int:
        """Compressed value of one key whose top bits occur (or the rank it would take)."""
        if self.values is not None:
            return int(np.searchsorted(self.values, key))
        if self.tops is None:
            return key
        top = (key >> _LOW) + 2048
        rank = int(np.searchsorted(self.tops, top))
        found = rank < self.tops.size and int(self.tops[rank]) == top
        return rank << _LOW | (key & _MASK if found else 0)

    def encode(self, key: I64) -> U64:
        """The field of each key (as ``uint64``)."""
        if self.values is not None:
            return np.searchsorted(self.values, key).astype(np.uint64)
        if self.tops is None:
            out: U64 = key.view(np.uint64) - np.uint64(self.low % (1 << 64))
            return out >> np.uint64(self.shift) if self.shift else out
        rank = np.zeros(1 << 12, np.uint64)
        rank[self.tops] = np.arange(self.tops.size, dtype=np.uint64)
        out = rank[_tops(key)]
        out <<= np.uint64(_LOW)
        out |= key.view(np.uint64) & np.uint64(_MASK)
        out -= np.uint64(self.low)
        return out

    def decode(self, field: U64) -> I64:
        """The ordered keys of fields."""
        if self.values is not None:
            ranked: I64 = self.values[field.astype(np.intp)]
            return ranked
        if self.tops is None:
            value = field << np.uint64(self.shift) if self.shift else field.copy()
            value += np.uint64(self.low % (1 << 64))
            return value.view(np.int64)
        return _decode_tops(field, np.uint64(self.low % (1 << 64)), self.tops)

    def offset(self, key: int) -> int:
        """Field value that scores ``>= key`` reach: compare fields instead of keys."""
        if self.shift:  # the least field whose key is >= key (fields are 2**shift apart)
            return -((self.low - key) >> self.shift)
        return self._compress(key) - self.low


@numba.njit(cache=True, nogil=True)
def _decode_tops(field: U64, low: np.uint64, tops: I64) -> I64:  # pragma: no cover - compiled
    """The keys of fields whose top bits are ranks among ``tops`` (one pass, no temporaries)."""
    out = np.empty(field.size, np.int64)
    shift = np.uint64(_LOW)
    mask = np.uint64(_MASK)
    for i in range(field.size):
        value = field[i] + low
        top = tops[np.intp(value >> shift)] - 2048
        out[i] = (top << _LOW) | np.int64(value & mask)
    return out


def _clear_bits(key: I64, key_min: int) -> int:
    """How many low bits every ``key - key_min`` has clear (0 for a single key).

    >>> _clear_bits(np.array([8, 24, 40]), 8), _clear_bits(np.array([3, 3]), 3)
    (4, 0)
    """
    spread = int(np.bitwise_or.reduce(key - key_min)) if key.size else 0
    return (spread & -spread).bit_length() - 1 if spread else 0


def _tops(key: I64) -> npt.NDArray[np.intp]:
    """Top 12 bits of each key, offset to 0…4095 (the order of the keys' binades)."""
    return ((key >> _LOW) + 2048).astype(np.intp)


def pack(group: U64, key: I64, group_bits: int) -> tuple[ScoreField, U64, int, int] | None:
    """Each row's group code and score key in one word, the group most significant.

    The score key takes :meth:`ScoreField.fit`'s field below the group's ``group_bits``;
    returns the field, the words and the smallest and largest key (None: they do not fit).

    >>> field, words, low, high = pack(np.array([0, 1], np.uint64), np.array([5, 9]), 1)
    >>> (words >> np.uint64(field.bits)).tolist(), (low, high)
    ([0, 1], (5, 9))
    """
    low, high = int(key.min()), int(key.max())
    fitted = ScoreField.fit(key, low, high, 64 - group_bits)
    if fitted is None:
        return None
    field, value = fitted
    if group_bits:
        value |= group << np.uint64(field.bits)
    return field, value, low, high
