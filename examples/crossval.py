"""Cross-validation and the .632+ bootstrap: scikit-learn fits, streameval splits and evaluates.

Run as ``python examples/crossval.py [DIRECTORY]`` (needs ``pip install 'streameval[examples]'``).
"""

import sys
from pathlib import Path

import polars as pl
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import streameval as se

out = Path(sys.argv[1] if len(sys.argv) > 1 else "crossval-example")
data = load_breast_cancer()  # 569 tumours, 30 features; label 1 = benign
features = [f"x{i}" for i in range(data.data.shape[1])]
df = (
    pl.DataFrame(data.data, schema=features)
    .with_columns(label=pl.Series(data.target), size=pl.col("x0") > 15)  # x0: mean radius
    .with_columns(segment=pl.when("size").then(pl.lit("large")).otherwise(pl.lit("small")))
    .with_row_index("id")
)

# 1. Stratified 5-fold split from a hash of the row id: the same folds on any machine.
df = se.split.kfold(df, 5, seed=0, by="id", stratify="label")


def fit(rows, weight=None):
    """A scaled logistic regression fitted on ``rows`` (sample weights: in-bag counts)."""
    model = make_pipeline(StandardScaler(), LogisticRegression(solver="newton-cholesky"))
    x, y = rows.select(features).to_numpy(), rows["label"].to_numpy()
    return model.fit(x, y, logisticregression__sample_weight=weight)


def predict(model, rows):
    """The probability of class 1 (benign) for ``rows``, with their id and segment."""
    score = model.predict_proba(rows.select(features).to_numpy())[:, 1]
    return rows.select("id", "segment", "label").with_columns(score=score)


# 2. One model per fold; its out-of-fold predictions written as Parquet, a file per fold.
(out / "oof").mkdir(parents=True, exist_ok=True)
for k in range(5):
    model = fit(df.filter(pl.col("fold") != k))
    test = predict(model, df.filter(pl.col("fold") == k)).with_columns(fold=pl.lit(k))
    test.write_parquet(out / "oof" / f"fold-{k}.parquet")

# 3. Per fold and segment, with mean and sd over the folds and the pooled metric.
cv = se.evaluate(
    out / "oof", label="label", score="score", by="segment", folds="fold", precision="exact"
)
print(cv.select("segment", "fold", "estimate", "n", "roc_auc", "accuracy", "log_loss"))

# 4. Bootstrap: 50 replicates of Poisson in-bag counts; each replicate's model predicts the
#    rows it left out.
boot = se.split.bootstrap(df, 50, seed=0, by="id")
oob = []
for b in range(50):
    replicate = boot.filter(pl.col("replicate") == b)
    bag = replicate.filter(pl.col("in_bag") > 0)
    model = fit(bag, weight=bag["in_bag"].to_numpy())
    oob.append(predict(model, replicate.filter("oob")).with_columns(replicate=pl.lit(b)))
pl.concat(oob).write_parquet(out / "oob.parquet")
resubstitution = predict(fit(df), df)  # the model of all the data, on all the data

# 5. Resubstitution, out-of-bag, .632 and .632+ estimates per segment.
estimates = se.bootstrap_estimate(
    resubstitution, out / "oob.parquet", label="label", score="score", by="segment",
    row_id="id", precision="exact",
)  # fmt: skip
print(estimates.select("segment", "estimate", "error_rate", "roc_auc", "brier"))
