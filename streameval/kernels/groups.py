"""One small integer per group: the key columns' codes, shifted to start at 0 and concatenated.

Each key column's :class:`streameval.codes.KeyCode` (0 for null) is shifted so that its
smallest non-null code in the unit becomes 1 (0 stays null) and given the bits its
largest needs, so 100 segments take 7 bits whatever the key's type. The first key is the
most significant. Where the keys' bits would pass 63 (several wide integer keys), the codes
so far are first renumbered 0, 1, … in order (and a key too wide on its own, likewise), so
the combined code always fits in an int64 and decodes to the same keys.

>>> import numpy as np, polars as pl
>>> from streameval.codes import key_code
>>> code = key_code("d", pl.Int16)
>>> frame = pl.DataFrame({"d": [5, 7, None]}, schema={"d": pl.Int16})
>>> raw = frame.select(code.encode).to_series().to_numpy()
>>> groups = GroupCodes.build([code.decode], [raw], 3)
>>> groups.bits, groups.codes.tolist()
(2, [1, 3, 0])
>>> GroupCodes.build([code.decode], [np.array([9, 8])], 2).codes.tolist()
[2, 1]
>>> groups.decode(groups.codes)[0].to_list()
[5, 7, None]
>>> wide = np.array([1, 2**62, 2**61, 1])  # three such keys: 189 bits, renumbered
>>> groups = GroupCodes.build([lambda s: s] * 3, [wide, wide[::-1], wide], 4)
>>> decoded = groups.decode(groups.codes)
>>> groups.bits <= 63, [(s == k).all() for s, k in zip(decoded, [wide, wide[::-1], wide])]
(True, [True, True, True])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import polars as pl

from . import Parts, buffer
from .loops import add_codes, code_range

Decode = Callable[[pl.Series], pl.Series]
I64 = npt.NDArray[np.int64]
#: The most bits a combined code takes (it is an int64, never negative).
MOST_BITS = 63


@dataclass
class Field:
    """One key's field of the combined code: its decoder, shift, bits and value table.

    ``values`` (when the key's codes were renumbered) maps a field back to the key's code.
    """

    decode: Decode
    low: int
    width: int
    values: I64 | None = None

    def key(self, field: I64) -> pl.Series:
        """The key's values of ``field`` (0: null)."""
        if self.values is not None:
            return self.decode(pl.Series(self.values[field]))
        return self.decode(pl.Series(np.where(field > 0, field + self.low, field)))


@dataclass
class Stage:
    """Keys appended to a code renumbered from the earlier stages' (``back``: the earlier code)."""

    back: I64 | None
    fields: list[Field] = field(default_factory=list)


@dataclass
class GroupCodes:
    """Combined group codes of a unit's rows and how to decode them.

    Attributes
    ----------
    codes : ndarray of uint64
        Combined code of each row.
    bits : int
        Bits the combined codes take (at most :data:`MOST_BITS`).
    stages : list of Stage
        The keys' fields, first key first, in stages split where the codes were renumbered.

    """

    codes: npt.NDArray[np.uint64]
    bits: int
    stages: list[Stage]

    @classmethod
    def build(
        cls,
        keys: Sequence[Decode],
        raw: Sequence[npt.NDArray[np.int64] | Parts],
        size: int,
        ranges: Sequence[tuple[int, int] | None] = (),
    ) -> GroupCodes:
        """Combine per-key codes (non-negative integers, one per key and row).

        Parameters
        ----------
        keys : list of callable
            Each key column's decoder, first key first (such as :attr:`KeyCode.decode`).
        raw : list of ndarray of int64, or of chunks
            Each key's codes (such as :attr:`KeyCode.encode` values; 0 is null), as one
            array or as chunks (:func:`streameval.kernels.chunks`, one column).
        size : int
            Rows (all codes are 0 without keys).
        ranges : list of (int, int) or None, optional
            Each key's least and largest code, where known (else they are computed).

        Returns
        -------
        GroupCodes

        """
        parts = [[(0, [r])] if isinstance(r, np.ndarray) else r for r in raw]
        codes: I64 = np.zeros(size if not parts else 0, np.int64)
        stages = [Stage(None)]
        bits = 0
        for i, (decode, chunked) in enumerate(zip(keys, parts, strict=True)):
            known = ranges[i] if i < len(ranges) else None
            if known is None:
                extremes = np.array([np.iinfo(np.int64).max, 0], np.int64)
                for _, (values,) in chunked:
                    code_range(values, extremes)
                least, high = int(extremes[0]), int(extremes[1])
                least = least if high > 0 else 1  # (only nulls)
            else:
                least, high = known
                least = least if least > 0 else min(1, high)
            low = max(least - 1, 0)
            width = (high - low).bit_length()
            key = Field(decode, low, width)
            if width > MOST_BITS - 1 and size:  # (alone too wide: its values renumbered)
                key, chunked = _ranked(decode, chunked, size)
            if bits + key.width > MOST_BITS:  # the codes so far renumbered
                back, inverse = np.unique(codes, return_inverse=True)
                codes[:] = inverse.reshape(-1)
                bits = max(back.size - 1, 0).bit_length()
                stages.append(Stage(back))
            if i == 0:  # the first key's codes as they are, or into a pooled buffer
                first = raw[0]
                plain = key.low == 0 and key.values is None
                if isinstance(first, np.ndarray) and plain and _writable_int64(first):
                    codes = first
                    chunked = []
                else:  # (a fresh array's pages would be faulted in one by one)
                    codes = buffer(size, np.int64)
            for start, (values,) in chunked:
                add_codes(codes, start, values, key.low, key.width, i == 0)
            bits += key.width
            stages[-1].fields.append(key)
        return cls(codes.view(np.uint64), bits, stages)

    def decode(self, codes: npt.NDArray[np.uint64]) -> list[pl.Series]:
        """The key columns of combined ``codes`` (one Series per key, named as the key).

        Parameters
        ----------
        codes : ndarray of uint64
            Combined codes.

        Returns
        -------
        list of Series

        """
        out: list[pl.Series] = []
        rest = codes.astype(np.int64)
        for stage in reversed(self.stages):
            for key in reversed(stage.fields):
                out.append(key.key(rest & np.int64((1 << key.width) - 1)))
                rest = rest >> np.int64(key.width)
            if stage.back is not None:
                rest = stage.back[rest]
        return out[::-1]


def _writable_int64(values: npt.NDArray[np.generic]) -> bool:
    """Whether ``values`` may become the combined codes as they are."""
    return values.dtype == np.int64 and bool(values.flags.writeable)


def _ranked(decode: Decode, chunked: Parts, size: int) -> tuple[Field, Parts]:
    """A key's codes renumbered 1, 2, … by value (0 stays null), and its field."""
    values = np.concatenate([v for _, (v,) in chunked]) if chunked else np.zeros(0, np.int64)
    table, ranks = np.unique(values, return_inverse=True)
    if not table.size or table[0] != 0:  # no nulls: rank 0 still means null
        table = np.concatenate(([0], table))
        ranks = ranks + 1
    return (
        Field(decode, 0, (table.size - 1).bit_length(), table.astype(np.int64)),
        [(0, [ranks.reshape(-1).astype(np.int64)])],
    )
