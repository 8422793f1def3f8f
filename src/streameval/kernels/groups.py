"""One small integer per group: the key columns' codes, shifted to start at 0 and concatenated.

Each key column's :class:`streameval.codes.KeyCode` (0 for null) is shifted so that its
smallest non-null code in the unit becomes 1 (0 stays null) and given the bits its
largest needs, so 100 segments take 7 bits whatever the key's type. The first key is the
most significant.

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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

Decode = Callable[[pl.Series], pl.Series]


@dataclass
class GroupCodes:
    """Combined group codes of a unit's rows and how to decode them.

    Attributes
    ----------
    codes : ndarray of uint64
        Combined code of each row.
    bits : int
        Bits the combined codes take.
    keys : list of callable
        Each key column's decoder (codes as an Int64 Series → key values), first key first.
    lows, widths : list of int
        What each key's non-null codes were shifted by, and the bits of its shifted codes.

    """

    codes: npt.NDArray[np.uint64]
    bits: int
    keys: list[Decode]
    lows: list[int]
    widths: list[int]

    @classmethod
    def build(
        cls,
        keys: Sequence[Decode],
        raw: Sequence[npt.NDArray[np.int64]],
        size: int,
        ranges: Sequence[tuple[int, int] | None] = (),
    ) -> GroupCodes:
        """Combine per-key codes (non-negative Int64 arrays, one per key, ``size`` long).

        Parameters
        ----------
        keys : list of callable
            Each key column's decoder, first key first (such as :attr:`KeyCode.decode`).
        raw : list of ndarray of int64
            Each key's codes (such as :attr:`KeyCode.encode` values; 0 is null).
        size : int
            Rows (all codes are 0 without keys).
        ranges : list of (int, int) or None, optional
            Each key's least and largest code, where known (else they are computed).

        Returns
        -------
        GroupCodes

        """
        # (allocated only without keys: once glibc's mmap threshold has risen, a large calloc
        # comes from the heap and is cleared page by page, a page fault each)
        codes = np.zeros(size if not raw else 0, np.uint64)
        lows: list[int] = []
        widths: list[int] = []
        for i, values in enumerate(raw):
            known = ranges[i] if i < len(ranges) else None
            least, high = known or (int(values.min()), int(values.max()))
            if least == 0:  # nulls: the non-null codes start at 1
                present = values[values > 0]
                low = int(present.min()) - 1 if present.size else 0
                shifted = np.where(values > 0, values - low, 0)
            else:
                low = least - 1
                shifted = values - low if low else values
            width = (high - low).bit_length()
            if widths:
                codes <<= np.uint64(width)
                codes |= shifted.view(np.uint64)
            else:  # the first key's codes become the combined codes: own them
                codes = shifted.view(np.uint64)
                codes = codes if codes.flags.writeable else codes.copy()
            lows.append(low)
            widths.append(width)
        return cls(codes, sum(widths), list(keys), lows, widths)

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
        out = []
        shift = self.bits
        for key, low, width in zip(self.keys, self.lows, self.widths, strict=True):
            shift -= width
            field = ((codes >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)
            out.append(key(pl.Series(np.where(field > 0, field + low, field))))
        return out
