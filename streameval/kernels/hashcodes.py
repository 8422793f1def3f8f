"""Codes for a unit's String keys from two hashes per row, when the compiled loops are here.

Casting a String key to Categorical (:func:`streameval.codes.key_code`) looks every row up in
a shared string table, about 13 ns a row; Polars hashes the strings in a quarter of that.
The unit then collects two 64-bit hashes of its key (null: both 0) and the key itself;
:func:`streameval.kernels.loops.hashed_codes` numbers the distinct first hashes, and the
second hash confirms each row's number: two distinct strings get one code only if both
hashes collide (about 2**-128 a pair). The codes are decoded from each code's first row. If
the first hash collides, the key is coded the Categorical way after all.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..codes import KeyCode
from ..source import TEXT_SEED, text_hash
from . import Parts, buffer, chunks, each, give_back, span, split_rows
from .compiled import PARALLEL_ROWS

_SEEDS = (TEXT_SEED, 0x0DD5_EED5)


def hashed_exprs(code: KeyCode, i: int) -> list[pl.Expr]:
    """The columns a unit collects for key ``i``: ``_g{i}`` and ``_h{i}`` hashes, ``_s{i}``."""
    assert code.text is not None
    text = code.text
    hashes = [text_hash(text, seed) for seed in _SEEDS]
    return [hashes[0].alias(f"_g{i}"), hashes[1].alias(f"_h{i}"), text.alias(f"_s{i}")]


def hashed_codes(
    frame: pl.DataFrame, code: KeyCode, i: int, loops: ModuleType
) -> tuple[npt.NDArray[np.int64], Callable[[pl.Series], pl.Series], tuple[int, int] | None]:
    """Codes (0 for null), their decoder and range for key ``i`` collected by :func:`hashed_exprs`.

    The range (least and largest code) is None when the codes came the Categorical way.

    >>> from streameval.codes import key_code
    >>> from streameval.kernels.compiled import loops
    >>> code = key_code("g", pl.String)
    >>> frame = pl.DataFrame({"g": ["b", "a", None, "b"]}).select(hashed_exprs(code, 0))
    >>> codes, decode, span = hashed_codes(frame, code, 0, loops())
    >>> codes.tolist(), decode(pl.Series(codes)).to_list(), span
    ([1, 2, 0, 1], ['b', 'a', None, 'b'], (0, 2))
    """
    text = frame[f"_s{i}"]
    codes, firsts, ok = number_hashes(frame, [f"_g{i}", f"_h{i}"], loops)
    assert code.text is not None
    name = code.text.meta.output_name()
    if not ok:  # the first hash collided: code the strings through a Categorical
        give_back(codes)
        codes = frame.select(text.alias(name)).select(code.encode).to_series().to_numpy()
        if code.decode is None:  # ranks (:func:`streameval.codes.hashed_key`)
            ranked = text.drop_nulls().unique().sort()
            values = pl.concat([text.head(0).extend_constant(None, 1), ranked])
            return codes, lambda ranks: values.gather(ranks).rename(name), None
        return codes, code.decode, None
    lookup = pl.concat([text.head(0).extend_constant(None, 1), text.gather(firsts)]).rename(name)

    def decode(values: pl.Series) -> pl.Series:
        return lookup.gather(values)

    return codes, decode, (0 if text.null_count() else 1, firsts.size)


def number_hashes(
    frame: pl.DataFrame, names: list[str], loops: ModuleType
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], bool]:
    """Codes from the two hash columns ``names`` (:func:`.loops.hashed_codes`), chunk by chunk.

    Returns the codes (a :func:`buffer`), each code's first row, and False if the first hash
    collided (the codes are then incomplete).

    >>> from streameval.kernels.compiled import loops
    >>> hashes = {"a": [7, 9, 7, 0], "b": [1, 2, 1, 0]}
    >>> frame = pl.DataFrame(hashes, schema={"a": pl.UInt64, "b": pl.UInt64})
    >>> codes, firsts, ok = number_hashes(frame, ["a", "b"], loops())
    >>> codes.tolist(), firsts.tolist(), ok
    ([1, 2, 1, 0], [0, 1], True)
    """
    codes = buffer(frame.height, np.int64)
    parts = chunks(frame, names)
    halves = split_rows(parts, frame.height) if frame.height >= PARALLEL_ROWS else [parts]

    def number(parts: Parts) -> Any:
        table = loops.hash_table()
        for start, (first, second) in parts:
            table = loops.hashed_codes(
                first.view(np.int64), second.view(np.int64), codes, start, table
            )
            if not table[-1][1]:
                break
        return table

    table, *later = each(number, halves)
    for half, other in zip(halves[1:], later, strict=True):
        table = _join(table, other, codes, half, loops)
    count, ok = (int(x) for x in table[-1])
    return codes, table[3][:count], bool(ok)


def _join(table: Any, other: Any, codes: npt.NDArray[np.int64], parts: Parts, loops: Any) -> Any:
    """``table`` carried on over the rows ``other`` numbered on their own (``parts``' rows).

    The other's values are looked up in order of their codes, so the joined codes are those
    of one pass over all the rows (in order of first appearance); the other's rows' codes
    are renumbered to them.
    """
    if not (table[-1][1] and other[-1][1]) or not parts:
        table[-1][1] = table[-1][1] and other[-1][1]
        return table
    slots, keys, seconds, firsts, state = other
    count = int(state[0])
    filled = slots != 0
    hashes = np.zeros(count, np.int64)
    hashes[slots[filled] - 1] = keys[filled]  # each of the other's codes' first hash
    renumbered = np.zeros(count + 1, np.int64)
    known = int(table[-1][0])
    table = loops.hashed_codes(hashes, seconds[:count].copy(), renumbered, 1, table)
    new = table[3][known : int(table[-1][0])]
    new[:] = firsts[new - 1]  # (recorded as 1 + the other's code: its first row instead)
    begin, end = span(parts)
    codes[begin:end] = renumbered[codes[begin:end]]
    return table
