"""``State.coarsen``: merging a state's buckets equals accumulating at the coarser precision."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streameval as se
from streameval.errors import InputError


def _sorted(table: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return table.sort([*keys, "bucket"])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 400),
    fine=st.integers(4, 16),
    drop=st.integers(0, 6),
    thresholds=st.lists(st.floats(0.01, 0.99), max_size=3),
    weighted=st.booleans(),
)
def test_coarsen_equals_accumulating_coarser(seed, rows, fine, drop, thresholds, weighted):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows)
    p = np.round(rng.beta(0.5, 2, rows), rng.integers(1, 6))  # ties at several scales
    df = pl.DataFrame({"g": rng.choice(["a", "b"], rows), "y": y, "p": p,
                       "w": rng.integers(1, 4, rows) * 0.5})  # fmt: skip
    coarse = max(0, fine - drop)
    kw = {"label": "y", "score": "p", "by": "g", "thresholds": thresholds or 0.5,
          "weight": "w" if weighted else None}  # fmt: skip
    merged = se.accumulate(df, precision=fine, **kw).coarsen(coarse)
    direct = se.accumulate(df, precision=coarse, **kw)
    assert merged.spec == direct.spec
    a, b = _sorted(merged.table, ["g"]), _sorted(direct.table, ["g"])
    assert a.select("g", "bucket", "pos", "neg").equals(b.select("g", "bucket", "pos", "neg"))
    for column in [c for c in a.columns if c not in ("g", "bucket", "pos", "neg")]:
        np.testing.assert_allclose(a[column].to_numpy(), b[column].to_numpy(), rtol=1e-9)
    auc_m = merged.metrics()["roc_auc"].to_numpy()
    auc_d = direct.metrics()["roc_auc"].to_numpy()
    np.testing.assert_allclose(auc_m, auc_d, rtol=1e-12, equal_nan=True)


def test_coarsen_refuses_what_it_cannot_do():
    df = pl.DataFrame({"y": [0, 1, 0, 1], "p": [0.30, 0.31, 0.6, 0.9]})
    with pytest.raises(InputError, match="fewer bits than it holds"):
        se.accumulate(df, label="y", score="p", precision=6).coarsen(8)
    with pytest.raises(InputError, match="state at exact"):
        se.accumulate(df, label="y", score="p", precision="exact").coarsen(8)
    reg = se.accumulate(df, task="regression", label="y", prediction="p")
    with pytest.raises(InputError, match="binary state for coarsen"):
        reg.coarsen(4)
