"""The pair sum and the AP bound's terms of :mod:`streameval.pairsums`, compiled for the loops.

Inlined where the loops call them, so that the compiled paths compute each bucket's share
with the very definition the Polars and NumPy paths use.
"""

from __future__ import annotations

from typing import Any

import numba

from .. import pairsums

_inline = numba.njit(cache=True, nogil=True, inline="always")

#: :func:`streameval.pairsums.twice_pairs`, compiled.
twice_pairs: Any = _inline(pairsums.twice_pairs)
#: :func:`streameval.pairsums.ap_bound_terms`, compiled (float arguments).
ap_bound_terms: Any = _inline(pairsums.ap_bound_terms)
