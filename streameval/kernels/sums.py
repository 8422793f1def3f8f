"""Definitions the compiled loops share: the pair sum, the AP bound's terms, splitmix64.

Inlined where the loops call them, so that the compiled paths compute each bucket's share
with the very definition the Polars and NumPy paths use (:mod:`streameval.pairsums`), and
draw and hash with :func:`streameval.split.keys.mix_int`'s finalizer.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from .. import pairsums

_inline = numba.njit(cache=True, nogil=True, inline="always")

#: :func:`streameval.pairsums.twice_pairs`, compiled.
twice_pairs: Any = _inline(pairsums.twice_pairs)
#: :func:`streameval.pairsums.ap_bound_terms`, compiled (float arguments).
ap_bound_terms: Any = _inline(pairsums.ap_bound_terms)


@_inline
def mix64(x):  # type: ignore[no-untyped-def]
    """splitmix64's finalizer of a uint64, as :func:`streameval.split.keys.mix_int`.

    >>> from streameval.split.keys import mix_int
    >>> int(mix64(np.uint64(5))) == mix_int(5)
    True
    """
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))
