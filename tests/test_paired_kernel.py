"""The paired task on the kernel: each model's table from its own pass over shared rows.

``se.evaluate(..., task="paired")`` reads each unit once and sums every model's scores with
the binary kernel (counts, AUC, AP and DeLong's variance), never building the joint state;
its table must equal the state's finalize (``State.metrics()``), the row-by-row references
and pROC's values.
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
from test_stats_reference import paired_frames

import reference_stats as ref
import streameval as se
from reference import close, kernel_path, per_group, refusing
from streameval.jobs.task import read_task
from streameval.stats import compare

FIXTURES = Path(__file__).parent / "fixtures" / "r"


def without_the_state() -> AbstractContextManager[None]:
    """Fail if the model table is computed from a paired state."""
    what = "the model table was computed from the state, not the kernel"
    return refusing(compare, "model_table", what)


def state_table(source: Any, level: float = 0.95, **kw: Any) -> pl.DataFrame:
    """The paired state's finalize of the same rows (the reference path)."""
    return se.accumulate(source, task="paired", **kw).metrics(level=level)


def same(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    assert_frame_equal(ours, theirs, check_exact=False, rel_tol=1e-9, abs_tol=1e-12)


@given(
    paired_frames(),
    st.sampled_from(["exact", 4, 11]),
    st.sampled_from([0.8, 0.95]),
    st.booleans(),
)
def test_evaluate_paired_equals_the_states_table(data, precision, level, keyed):
    df, _, weighted = data
    kw: dict[str, Any] = dict(
        label="y", scores=["p", "b"], by="g" if keyed else None, precision=precision
    )
    kw["weight"] = "w" if weighted else None
    with without_the_state():
        ours = se.evaluate(df, task="paired", level=level, **kw)
    same(ours, state_table(df, level, **kw))
    if precision != "exact" or not keyed:
        return
    # exact mode: each model's AUC and DeLong variance from the rows themselves
    for model in ("p", "b"):
        mine = ours.filter(pl.col("model") == model).sort("g")

        def auc_var(part: pl.DataFrame, model: str = model) -> list[dict[str, Any]]:
            w = part["w"].to_numpy() if weighted else None
            auc, var = ref.delong(part["y"].to_numpy(), part[model].to_numpy(), w)
            return [{"auc": auc, "var": var}]

        expected = per_group(df, ["g"], auc_var)
        for row, theirs in zip(mine.to_dicts(), expected, strict=True):
            assert close(row["roc_auc"], theirs["auc"], 1e-9), (row, theirs)
            se2 = None if row["roc_auc_se"] is None else row["roc_auc_se"] ** 2
            assert close(se2, theirs["var"], 1e-9), (row, theirs)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, Path, Path]:
    """The same rows as a frame, a hive directory by ``day`` and one file."""
    rng = np.random.default_rng(7)
    n = 4_000
    p = rng.random(n).round(3)
    df = pl.DataFrame(
        {
            "day": rng.integers(0, 3, n),
            "segment": rng.choice(["a", "b", "c", "d"], n),
            "y": (rng.random(n) < 0.3).astype(np.int8),
            "p": p,
            "q": np.clip(p + rng.normal(0, 0.2, n), 0, 1),
            "r": -rng.standard_normal(n) * 50,
            "w": rng.random(n) * 2,
        }
    )
    root = tmp_path_factory.mktemp("hive")
    for (day,), part in df.partition_by("day", as_dict=True).items():
        (root / f"day={day}").mkdir()
        part.drop("day").write_parquet(root / f"day={day}" / "part.parquet")
    single = root.parent / f"{root.name}.parquet"
    df.write_parquet(single)
    return df, root, single


@settings(max_examples=8, deadline=None)
@given(st.booleans(), st.sampled_from(["exact", 11]))
def test_every_source_kind_gives_the_states_table(sources, weighted, precision):
    """Hive units (each summed apart), a file (shards) and a frame without keys."""
    df, root, single = sources
    kw: dict[str, Any] = dict(label="y", scores=["p", "q", "r"], precision=precision)
    kw["weight"] = "w" if weighted else None
    for source, by in ((root, ["segment", "day"]), (single, ["segment", "day"]), (df, None)):
        with without_the_state():
            ours = se.evaluate(source, task="paired", by=by, level=0.9, **kw)
        same(ours, state_table(source, 0.9, by=by, **kw))
        assert ours["model"].unique(maintain_order=True).to_list() == ["p", "q", "r"]


def test_bad_scores_are_reported_from_the_kernels_read(sources):
    df, _, _ = sources
    bad = df.with_columns(pl.when(pl.col("day") == 1).then(float("nan")).otherwise("q").alias("q"))
    with pytest.raises(se.InputError, match="'q'"):
        se.evaluate(bad, task="paired", label="y", scores=["p", "q"], by="day")


def test_level_sets_the_paired_intervals_without_ci(sources):
    """``level=`` alone sets each model's AUC interval (it has no ``ci=`` to go with)."""
    df, _, _ = sources
    kw: dict[str, Any] = dict(task="paired", label="y", scores=["p", "q"], by="day")
    wide = se.evaluate(df, level=0.99, **kw)
    narrow = se.evaluate(df, level=0.5, **kw)
    assert (
        (wide["roc_auc_hi"] - wide["roc_auc_lo"]) > (narrow["roc_auc_hi"] - narrow["roc_auc_lo"])
    ).all()
    same(narrow, state_table(df, 0.5, label="y", scores=["p", "q"], by="day"))


def test_a_jobs_level_reaches_the_paired_table():
    config = read_task(
        "job.toml", {"kind": "paired", "label": "y", "scores": ["p", "q"], "level": 0.8}
    )
    assert config.metric_kwargs() == {"level": 0.8}


DELONG = json.loads((FIXTURES / "delong.json").read_text())


@pytest.mark.parametrize("case", DELONG["case_order"])
def test_evaluate_paired_gives_procs_delong_intervals(case: str) -> None:
    data = pl.read_csv(FIXTURES / "delong_data.csv").filter(pl.col("case") == case)
    with without_the_state():
        table = se.evaluate(data, task="paired", label="y", scores=["a", "b"], precision="exact")
    for row in table.to_dicts():
        theirs = DELONG["cases"][case][row["model"]]
        assert close(row["roc_auc"], theirs["auc"], 1e-9)
        assert close(row["roc_auc_se"] ** 2, theirs["var_delong"], 1e-9)
        assert close(row["roc_auc_lo"], theirs["ci_delong_95"][0], 1e-9)
        assert close(row["roc_auc_hi"], theirs["ci_delong_95"][2], 1e-9)


@settings(max_examples=80, deadline=None)
@given(
    paired_frames(),
    st.sampled_from(["exact", 2, 11]),
    st.booleans(),
    st.sampled_from(["two-sided", "less"]),
)
def test_the_paired_states_finalize_matches_the_polars_query(data, precision, keyed, alternative):

    df, _, weighted = data
    df = df.with_columns(c=(pl.col("p") + pl.col("b")) / 2)  # a third model: three pairs
    kw: dict[str, Any] = dict(label="y", scores=["p", "b", "c"], precision=precision)
    kw |= dict(by="g" if keyed else None, weight="w" if weighted else None)
    state = se.accumulate(df, task="paired", **kw)
    taken = []
    original = compare.paired_sums

    def spied(*args: Any) -> Any:
        out = original(*args)
        taken.append(out is not None)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compare, "paired_sums", spied)
        ours, table = state.roc_test(alternative=alternative), state.metrics()
    assert taken == [True, True]
    with kernel_path("off"):
        theirs = state.roc_test(alternative=alternative)
        same(table, state.metrics())
    # the difference and its variance are summed from each row's difference of placements:
    # z is as steady as they are, near-identical rankings included
    assert_frame_equal(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("seed", [3, 4, 27])
@pytest.mark.parametrize("kernel", [True, False])
def test_rankings_that_place_every_row_alike_differ_by_zero_with_z_zero(seed, kernel):
    # c = (p + 1) / 2 merges 0 and 1e-137, scores of negatives only, which moves no row's
    # placement; the weights summed in another order once gave z = ±inf, p = 0

    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 30))
    y = rng.integers(0, 2, n)
    p = np.where(y == 1, rng.choice([0.25, 0.5, 1.0], n), rng.choice([0.0, 1e-137, 0.5, 1.0], n))
    df = pl.DataFrame({"y": y, "p": p, "w": np.round(rng.random(n) * 8, 6)})
    df = df.with_columns(c=(pl.col("p") + 1.0) / 2, b=1.0 - pl.col("p"))
    kw: dict[str, Any] = dict(label="y", scores=["p", "c", "b"], weight="w", precision="exact")
    state = se.accumulate(df, task="paired", **kw)
    with kernel_path("all" if kernel else "off"):
        test = state.roc_test()
    alike = test.row(0, named=True)
    assert abs(alike["difference"]) <= 1e-12 and alike["z"] == 0.0 and alike["p_value"] == 1.0
    against = test.row(1, named=True)  # p against its reverse: a real difference
    assert against["z"] > 1 and 0 < against["p_value"] < 0.5
