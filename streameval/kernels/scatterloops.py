"""Compiled loops that split a batch of rows into shards (:mod:`.scatter`).

Each row comes with its shard (a hash of its group keys, :func:`streameval.source.shard_expr`);
each column's values are appended to their shard's row of a buffer (one a column, a row a
shard), reused after each spill, so no memory is faulted in anew from batch to batch. A
batch's places are computed once (:func:`destinations`) and each column is put there.
"""

from __future__ import annotations

import numba

jit = numba.njit(cache=True, nogil=True)


@jit
def shard_counts(shard, counts):  # type: ignore[no-untyped-def]
    """The rows of each shard (``counts`` zeroed first); ``shard`` holds each row's shard."""
    counts[:] = 0
    for i in range(shard.size):
        counts[shard[i]] += 1


@jit
def destinations(shard, fill, capacity, dest):  # type: ignore[no-untyped-def]
    """Each row's place in a buffer of ``capacity`` rows a shard, after the ``fill`` there.

    Row ``i`` goes to ``shard[i] * capacity`` plus its shard's next free row (rows keep their
    order within a shard); ``dest`` gets the places, for :func:`put` to use once a column.
    """
    at = fill.copy()
    for k in range(at.size):
        at[k] += k * capacity
    for i in range(shard.size):
        k = shard[i]
        dest[i] = at[k]
        at[k] += 1


@jit
def put(values, dest, out):  # type: ignore[no-untyped-def]
    """``out[dest[i]] = values[i]`` for each row (``out``: a column's buffers, end to end)."""
    for i in range(values.size):
        out[dest[i]] = values[i]
