"""The score field of a packed sort key: the ordered score key, made as narrow as it can be.

Directly, the field is ``key - key_min``. Probabilities that include 0.0 (or tiny values)
span 62 bits that way, too many to pack with a group code and the label. Only the binades
that occur matter for the order, though: the key's top 12 bits (sign and exponent) are
replaced by their rank among those that occur, which keeps the order and the low 52 bits.
A unit whose scores span 14 binades then needs 52 + 4 bits.

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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

    """

    low: int
    bits: int
    tops: I64 | None = None

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
        seen = np.bincount(_tops(key), minlength=1 << 12)
        tops = np.flatnonzero(seen).astype(np.int64)
        field = cls(0, 0, tops)
        low = field._compress(key_min)
        bits = (field._compress(key_max) - low).bit_length()
        return cls(low, bits, tops) if bits <= min(budget, 63) else None

    def _compress(self, key: int) -> int:
        """Compressed value of one key whose top bits occur (or the rank it would take)."""
        if self.tops is None:
            return key
        top = (key >> _LOW) + 2048
        rank = int(np.searchsorted(self.tops, top))
        found = rank < self.tops.size and int(self.tops[rank]) == top
        return rank << _LOW | (key & _MASK if found else 0)

    def encode(self, key: I64) -> U64:
        """The field of each key (as ``uint64``)."""
        if self.tops is None:
            return key.view(np.uint64) - np.uint64(self.low % (1 << 64))
        rank = np.zeros(1 << 12, np.uint64)
        rank[self.tops] = np.arange(self.tops.size, dtype=np.uint64)
        out = rank[_tops(key)]
        out <<= np.uint64(_LOW)
        out |= key.view(np.uint64) & np.uint64(_MASK)
        out -= np.uint64(self.low)
        return out

    def decode(self, field: U64) -> I64:
        """The ordered keys of fields."""
        value = field + np.uint64(self.low % (1 << 64))
        if self.tops is None:
            return value.view(np.int64)
        top = self.tops[(value >> np.uint64(_LOW)).astype(np.intp)] - 2048
        return (top << _LOW) | (value & np.uint64(_MASK)).view(np.int64)

    def offset(self, key: int) -> int:
        """Field value that scores ``>= key`` reach: compare fields instead of keys."""
        return self._compress(key) - self.low


def _tops(key: I64) -> npt.NDArray[np.intp]:
    """Top 12 bits of each key, offset to 0…4095 (the order of the keys' binades)."""
    return ((key >> _LOW) + 2048).astype(np.intp)
