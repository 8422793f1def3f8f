"""F-beta at any ``beta=`` and the zero-one loss: every path that finalizes, the CLI and jobs.

The registry-driven laws (``test_metric_laws``) and the parity tests hold the formulas to
scikit-learn; here ``beta`` must reach the formula on each way a table is made: the state,
the kernels' direct tables, resampled intervals, folds, the command line and a job file.
"""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest
from jobs_support import write_job, write_log
from sklearn.metrics import fbeta_score, zero_one_loss

import streameval as se
from reference import kernel_path
from streameval.cli import main
from streameval.errors import InputError
from streameval.jobs import JobConfigError, load_job, run_job

BETA = 2.5


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> pl.DataFrame:
    rng = np.random.default_rng(11)
    n = 3_000
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "fold": rng.integers(0, 3, n),
            "id": np.arange(n),
            "y": y,
            "p": np.round(np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1), 2),
            "w": rng.choice([0.5, 1.0, 3.0], n),
            "animal": rng.choice(["cat", "dog", "bird"], n),
            "guess": rng.choice(["cat", "dog", "bird"], n),
        }
    )


def _want(part: pl.DataFrame, weighted: bool) -> float:
    w = part["w"].to_numpy() if weighted else None
    return float(fbeta_score(part["y"], part["p"] >= 0.5, beta=BETA, sample_weight=w))


@pytest.mark.parametrize("path", ["all", "off"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("precision", ["exact", 11])
def test_evaluate_and_the_state_take_beta_on_every_path(data, path, weighted, precision):
    kw = {"label": "y", "score": "p", "by": "g", "precision": precision}
    kw["weight"] = "w" if weighted else None
    with kernel_path(path):
        tables = [
            se.evaluate(data, beta=BETA, **kw),
            se.evaluate(data.lazy(), beta=BETA, ci="wilson", **kw),
            se.accumulate(data, **kw).metrics(beta=BETA),
        ]
    for table in tables:
        for g, part in data.partition_by("g", as_dict=True).items():
            got = table.filter(pl.col("g") == g[0])["fbeta"].item()
            assert got == pytest.approx(_want(part, weighted), rel=1e-12, abs=1e-12)
            w = part["w"] if weighted else None
            loss = zero_one_loss(part["y"], part["p"] >= 0.5, sample_weight=w)
            assert table.filter(pl.col("g") == g[0])["zero_one_loss"].item() == pytest.approx(loss)


def test_the_default_beta_is_one(data):
    table = se.evaluate(data, label="y", score="p", by="g")
    assert table["fbeta"].to_list() == pytest.approx(table["f1"].to_list(), rel=1e-15)


def test_resampled_and_fold_tables_take_beta(data):
    kw = {"label": "y", "score": "p", "precision": 11}
    beta_one = se.evaluate(data, ci="bootstrap", bootstrap=30, row_id="id", **kw)
    boot = se.evaluate(data, ci="bootstrap", bootstrap=30, row_id="id", beta=BETA, **kw)
    assert boot["fbeta"].item() == pytest.approx(_want(data, False))
    assert boot["fbeta_lo"].item() != beta_one["fbeta_lo"].item()
    folds = se.evaluate(data, folds="fold", beta=BETA, **kw)
    for (fold,), part in data.partition_by("fold", as_dict=True).items():
        got = folds.filter(pl.col("fold") == fold)["fbeta"].item()
        assert got == pytest.approx(_want(part, False))


def test_multiclass_takes_beta_from_evaluate(data):
    table = se.evaluate(data, task="multiclass", label="animal", prediction="guess", beta=BETA)
    for avg in ("macro", "micro", "weighted"):
        want = fbeta_score(data["animal"], data["guess"], beta=BETA, average=avg)
        assert table[f"fbeta_{avg}"].item() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("beta", [-1.0, float("nan"), True, "2"])
def test_a_bad_beta_is_refused_before_the_data_is_read(data, beta):
    with pytest.raises(InputError, match="beta"):
        se.evaluate("/no/such/file.parquet", label="y", score="p", beta=beta)
    with pytest.raises(InputError, match="beta"):
        se.accumulate(data, label="y", score="p").metrics(beta=beta)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_line_takes_beta(data, tmp_path, capsys):
    path = tmp_path / "preds.parquet"
    data.write_parquet(path)
    args = ["--label", "y", "--score", "p", "--metric", "fbeta", "--output", "-"]
    status, out, err = _run(capsys, "evaluate", str(path), *args, "--beta", str(BETA))
    assert status == 0, err
    assert pl.read_csv(io.StringIO(out))["fbeta"].item() == pytest.approx(_want(data, False))
    state = tmp_path / "s.parquet"
    se.accumulate(data, label="y", score="p").write(state)
    status, out, err = _run(capsys, "state", "metrics", str(state), "--beta", str(BETA))
    assert status == 0, err
    regression = ["--task", "regression", "--label", "y", "--prediction", "p", "--beta", "2"]
    status, _out, err = _run(capsys, "evaluate", str(path), *regression)
    assert status == 2 and "--beta" in err and "binary" in err, err
    status, _out, err = _run(capsys, "evaluate", str(path), *args, "--beta", "-1")
    assert status == 2 and "expected --beta of 0 or more, got -1.0" in err, err


def test_a_job_file_takes_beta(tmp_path):
    source = write_log(tmp_path / "log", days=2, rows=300)
    job = write_job(tmp_path / "job", source, extra=f"beta = {BETA}", windows='["all"]')
    assert load_job(job).task.metric_kwargs()["beta"] == BETA
    run_job(job, quiet=True)
    last = sorted((tmp_path / "job" / "out" / "metrics").iterdir())[-1]  # ("all": to that day)
    table = pl.read_parquet(last / "*.parquet")
    frames = pl.read_parquet(source / "**" / "*.parquet", hive_partitioning=False)
    for row in table.filter(pl.col("threshold") == 0.5).iter_rows(named=True):
        part = frames.filter(pl.col("segment") == row["segment"])
        want = fbeta_score(part["label"], part["score"] >= 0.5, beta=BETA)
        assert row["fbeta"] == pytest.approx(want, rel=1e-12)
    bad = write_job(tmp_path / "bad", source, extra="beta = -2")
    with pytest.raises(JobConfigError, match=r"task\.beta: expected a beta of 0 or more"):
        load_job(bad)
