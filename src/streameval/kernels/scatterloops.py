"""Compiled loops that split a batch of rows into shards (:mod:`.scatter`).

Each row comes with its shard (a hash of its group keys, :func:`streameval.source.shard_expr`);
each column's values are appended to their shard's row of a buffer (one a column, a row a
shard), reused after each spill, so no memory is faulted in anew from batch to batch.
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
def scatter(values, shard, out, fill):  # type: ignore[no-untyped-def]
    """Append each row's value to its shard's row of ``out``, after the ``fill`` there."""
    at = fill.copy()
    for i in range(values.size):
        k = shard[i]
        out[k, at[k]] = values[i]
        at[k] += 1
