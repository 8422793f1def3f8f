"""Coverage simulation: 95% intervals cover the true AUC and recall about 95% of the time.

Scores are binormal (negatives N(0, 1), positives N(μ, 1)), so the true AUC is Φ(μ/√2) and
the true recall at threshold t is 1 − Φ(t − μ). Thousands of replicate samples are one
state keyed by the replicate: one pass, one finalize.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

import streameval as se

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")
REPLICATES = 2000
# Coverage estimated from 2000 replicates has a standard error of about 0.005.
LOW, HIGH = 0.93, 0.97


def _samples(seed: int, positives: int, negatives: int, mu: float) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = positives + negatives
    y = np.tile(np.r_[np.ones(positives), np.zeros(negatives)], REPLICATES)
    score = rng.normal(size=n * REPLICATES) + mu * y
    rep = np.repeat(np.arange(REPLICATES), n)
    return pl.DataFrame({"rep": rep, "y": y.astype(np.int64), "score": score})


@pytest.mark.slow
@pytest.mark.parametrize("auc_method", ["delong", "hanley-mcneil"])
@pytest.mark.parametrize("ci", ["wilson", "clopper-pearson"])
def test_intervals_cover_the_truth(ci: str, auc_method: str) -> None:
    mu, threshold = 1.2, 0.8
    df = _samples(7, positives=60, negatives=140, mu=mu)
    state = se.accumulate(df, label="y", score="score", by="rep", precision="exact")
    table = state.metrics(threshold, ci=ci, auc_method=auc_method)
    true_auc = stats.norm.cdf(mu / math.sqrt(2))
    true_recall = stats.norm.sf(threshold - mu)
    covered = table.select(
        auc=pl.col("roc_auc_lo").le(true_auc) & pl.col("roc_auc_hi").ge(true_auc),
        recall=pl.col("recall_lo").le(true_recall) & pl.col("recall_hi").ge(true_recall),
    ).mean()
    auc_cover, recall_cover = covered["auc"].item(), covered["recall"].item()
    assert LOW <= auc_cover <= HIGH, auc_cover
    # Clopper–Pearson is conservative by construction: at least the level, often more.
    assert (LOW if ci == "wilson" else 0.945) <= recall_cover <= (HIGH if ci == "wilson" else 0.99)
