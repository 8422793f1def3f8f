"""Binary intervals of ``evaluate`` come from the kernel's aggregates, as the state's do.

``se.evaluate(..., ci="wilson" | "clopper-pearson")`` reads each group's counts and its
DeLong variance of the AUC off the kernel's placed rows, never building the state; the
tables must equal the state's finalize (``State.metrics(ci=...)``), the row-by-row
references and pROC's values.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_stats_reference import _binary_rows

import streameval as se
from reference import binary_frames, close, kernel_path, per_group, refusing
from streameval.stats import tables

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

FIXTURES = Path(__file__).parent / "fixtures" / "r"


def without_the_state() -> AbstractContextManager[None]:
    """Fail if the metric table's intervals are computed from a state table."""
    what = "the intervals were computed from the state, not the kernel"
    return refusing(tables, "binary_table", what)


def state_table(source: Any, thresholds: list[float], **kw: Any) -> pl.DataFrame:
    """The state's finalize of the same rows (the reference path)."""
    options = {k: kw.pop(k) for k in ("ci", "level", "auc_method")}
    state = se.accumulate(source, thresholds=thresholds, **kw)
    return state.metrics(thresholds, **options)


def same(ours: pl.DataFrame, theirs: pl.DataFrame, keys: list[str]) -> None:
    """Equal tables; kappa's standard error by its square (the root of a variance that
    cancels to 0 shows the sums' last bits, as in the reference harness)."""
    assert ours.columns == theirs.columns
    order = [*keys, "threshold"]
    ours, theirs = (t.sort(order, nulls_last=False) for t in (ours, theirs))
    squared = [(t["cohen_kappa_se"] ** 2).to_list() for t in (ours, theirs)]
    for a, b in zip(*squared, strict=True):
        assert (a is None) == (b is None) and (a is None or abs(a - b) <= 1e-12), (a, b)
    assert_frame_equal(
        ours.drop("cohen_kappa_se"),
        theirs.drop("cohen_kappa_se"),
        check_exact=False,
        rel_tol=1e-9,
        abs_tol=1e-12,
    )


@given(
    binary_frames(),
    st.sampled_from(["wilson", "clopper-pearson"]),
    st.sampled_from([0.9, 0.95]),
    st.sampled_from([[0.5], [0.3, 0.5]]),
    st.sampled_from(["exact", 4, 11]),
    st.sampled_from(["delong", "hanley-mcneil"]),
)
def test_evaluate_intervals_equal_the_states(data, method, level, thresholds, precision, auc):
    df, _, weighted = data
    kw: dict[str, Any] = dict(
        label="y", score="p", by="g", weight="w" if weighted else None, precision=precision
    )
    kw.update(ci=method, level=level, auc_method=auc)
    with without_the_state():
        ours = se.evaluate(df, threshold=thresholds, **kw)
    same(ours, state_table(df, thresholds, **kw), ["g"])
    if precision != "exact" or auc != "delong" or len(thresholds) > 1:
        return
    # exact mode: also the row-by-row references (DeLong from the rows themselves)
    t = thresholds[0]
    expected = per_group(df, ["g"], lambda part: _binary_rows(part, method, level, t))
    for mine, theirs in zip(ours.to_dicts(), expected, strict=True):
        for name in ("roc_auc_se", "roc_auc_lo", "roc_auc_hi", "recall_lo", "accuracy_hi"):
            if name in theirs:
                assert close(mine[name], theirs[name], 1e-8), (name, mine[name], theirs[name])


@given(
    binary_frames(),
    st.sampled_from(["wilson", "clopper-pearson"]),
    st.sampled_from([[0.5], [0.3, 0.5]]),
    st.sampled_from(["exact", 4, 11]),
    st.booleans(),
)
def test_a_states_delong_intervals_from_its_runs_equal_the_polars_ones(
    data, method, thresholds, precision, keyed
):
    """A state's metric table reads DeLong's variance off its runs, in the table's pass."""
    df, _, weighted = data
    by = "g" if keyed else None
    kw: dict[str, Any] = dict(label="y", score="p", by=by, weight="w" if weighted else None)
    state = se.accumulate(df, thresholds=thresholds, precision=precision, **kw)
    ours = state.metrics(thresholds, ci=method)
    with kernel_path("off"):  # (the Polars finalize, and DeLong from the state's table)
        theirs = state.metrics(thresholds, ci=method)
    same(ours, theirs, ["g"] if keyed else [])


@settings(max_examples=10, deadline=None)
@given(st.booleans(), st.sampled_from(["exact", 11]))
def test_every_source_kind_gives_the_states_intervals(tmp_path_factory, weighted, precision):
    """Hive units (each finalized apart), a file (shards) and a frame without keys."""
    rng = np.random.default_rng(5)
    n = 3_000
    df = pl.DataFrame(
        {
            "day": rng.integers(0, 3, n),
            "segment": rng.choice(["a", "b", "c", "d"], n),
            "y": (rng.random(n) < 0.3).astype(np.int8),
            "p": rng.random(n).round(2),
            "w": rng.random(n) * 2,
        }
    )
    root = tmp_path_factory.mktemp("hive")
    for (day,), part in df.partition_by("day", as_dict=True).items():
        (root / f"day={day}").mkdir()
        part.drop("day").write_parquet(root / f"day={day}" / "part.parquet")
    df.write_parquet(root.parent / f"{root.name}.parquet")
    kw: dict[str, Any] = dict(label="y", score="p", weight="w" if weighted else None)
    kw.update(precision=precision, ci="wilson", level=0.95, auc_method="delong")
    for source, by in (
        (root, ["segment", "day"]),
        (root.parent / f"{root.name}.parquet", ["segment", "day"]),
        (df, None),
    ):
        with without_the_state():
            ours = se.evaluate(source, by=by, threshold=[0.5], **kw)
        same(ours, state_table(source, [0.5], by=by, **kw), list(by or []))


DELONG = json.loads((FIXTURES / "delong.json").read_text())


@pytest.mark.parametrize("case", DELONG["case_order"])
def test_evaluate_gives_procs_delong_interval(case: str) -> None:
    data = pl.read_csv(FIXTURES / "delong_data.csv").filter(pl.col("case") == case)
    for model in ("a", "b"):
        theirs = DELONG["cases"][case][model]
        with without_the_state():
            table = se.evaluate(data, label="y", score=model, precision="exact", ci="wilson")
        row = table.row(0, named=True)
        assert close(row["roc_auc"], theirs["auc"], 1e-9)
        assert close(row["roc_auc_se"] ** 2, theirs["var_delong"], 1e-9)
        assert close(row["roc_auc_lo"], theirs["ci_delong_95"][0], 1e-9)
        assert close(row["roc_auc_hi"], theirs["ci_delong_95"][2], 1e-9)
