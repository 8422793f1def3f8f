"""Small integer codes of a text key from two 64-bit hashes of each row's value.

Casting a string column to a categorical costs about four times reading it; Polars hashes
it far faster. Rows whose two hashes (seeds 0 and 1) agree are taken to hold the same value
(distinct values colliding in 128 bits is not a practical concern). The distinct first
hashes get codes 1…G: through a table indexed by 16 bits of the hash when those bits tell
the values apart (one pass, no sort), else through ``np.unique``. The code's value is read
back from one row holding it.

>>> import numpy as np, polars as pl
>>> s = pl.Series("g", ["b", "a", None, "b"])
>>> h0, h1 = s.hash(0).to_numpy(), s.hash(1).to_numpy()
>>> codes, rows = text_codes(h0, h1)
>>> s.gather(rows).gather(codes - 1).to_list()
['b', 'a', None, 'b']
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
_SLOTS = 1 << 16


def text_codes(first: U64, second: U64) -> tuple[I64, I64] | None:
    """Codes 1…G of the rows' values and, per code, a row holding it.

    Parameters
    ----------
    first : ndarray of uint64
        Hash of each row's value (seed 0).
    second : ndarray of uint64
        Another hash of each row's value (seed 1).

    Returns
    -------
    tuple of ndarray of int64, or None
        None when two rows share the first hash but not the second.

    """
    for shift in (0, 16, 32, 48):
        slot = (first >> np.uint64(shift)).astype(np.uint16)
        if _consistent(slot, _SLOTS, first, second):
            used = np.flatnonzero(np.bincount(slot, minlength=_SLOTS))
            rank = np.zeros(_SLOTS, np.int64)
            rank[used] = np.arange(1, used.size + 1)
            return rank[slot], _rows(slot, _SLOTS)[used]
    values, inverse = np.unique(first, return_inverse=True)
    if not _consistent(inverse, values.size, first, second):
        return None
    return inverse.astype(np.int64) + 1, _rows(inverse, values.size)


def _consistent(slot: npt.NDArray[np.integer], size: int, first: U64, second: U64) -> bool:
    """Whether all rows in each slot have the same two hashes."""
    for hashes in (first, second):
        table = np.zeros(size, np.uint64)
        table[slot] = hashes
        if not np.array_equal(table[slot], hashes):
            return False
    return True


def _rows(slot: npt.NDArray[np.integer], size: int) -> I64:
    """For each slot, one row in it (0 for empty slots)."""
    rows = np.zeros(size, np.int64)
    rows[slot] = np.arange(slot.size)
    return rows
