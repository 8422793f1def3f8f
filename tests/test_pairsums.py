"""The pair sum and the AP bound's terms: one definition, the same numbers on every engine."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from streameval import pairsums
from streameval.kernels import sums

# (weights within twelve orders of magnitude: a negative weight lost in the rounding of
# cpos + cneg makes the under term x/0, inf in every engine but Python's floats, which raise)
weights = st.one_of(st.just(0.0), st.floats(1e-6, 1e6))
positives = st.floats(1e-3, 1e6)  # the bound's terms are read where a bucket has positives


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(positives, weights, weights, weights), min_size=1, max_size=20))
def test_every_engine_computes_the_same_floats(rows):
    rows = [(p, n, p + a, n + b) for p, n, a, b in rows]  # cpos ≥ p, cneg ≥ n
    p, n, cpos, cneg = (np.array(c) for c in zip(*rows, strict=True))
    frame = pl.DataFrame({"p": p, "n": n, "cpos": cpos, "cneg": cneg})
    col = [pl.col(c) for c in ("p", "n", "cpos", "cneg")]
    engines = {
        "numpy": (pairsums.twice_pairs(n, p, cpos), pairsums.ap_bound_terms(p, n, cpos, cneg)),
        "polars": (
            frame.select(pairsums.twice_pairs(col[1], col[0], col[2])).to_series().to_numpy(),
            [s.to_numpy() for s in frame.select(*pairsums.ap_bound_terms(*col)).get_columns()],
        ),
        "compiled": (
            np.array([sums.twice_pairs(*r) for r in zip(n, p, cpos, strict=True)]),
            np.array([sums.ap_bound_terms(*r) for r in zip(p, n, cpos, cneg, strict=True)]).T,
        ),
        "python": (
            np.array([pairsums.twice_pairs(*map(float, r)) for r in zip(n, p, cpos, strict=True)]),
            np.array([pairsums.ap_bound_terms(*map(float, r)) for r in rows]).T,
        ),
    }
    pairs, (over, under) = engines.pop("numpy")
    for name, (other_pairs, (other_over, other_under)) in engines.items():
        assert np.array_equal(pairs, other_pairs), name
        assert np.array_equal(over, np.asarray(other_over)), name
        assert np.array_equal(under, np.asarray(other_under)), name


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=12))
def test_the_pair_sum_over_buckets_is_the_auc(buckets):
    pos = np.array([b[0] for b in buckets])  # buckets from the highest score down
    neg = np.array([b[1] for b in buckets])
    if pos.sum() == 0 or neg.sum() == 0:
        return
    above = np.concatenate([[0], np.cumsum(pos)[:-1]])
    twice = pairsums.twice_pairs(pos, neg, above).sum()
    scores = np.repeat(-np.arange(len(buckets)), pos + neg)
    labels = np.concatenate([[1] * p + [0] * n for p, n in buckets])
    assert abs(twice / (2 * pos.sum() * neg.sum()) - roc_auc_score(labels, scores)) < 1e-12
