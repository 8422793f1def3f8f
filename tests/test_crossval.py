"""Fold-aware evaluation against scikit-learn computed fold by fold, for every task."""

from __future__ import annotations

import math
import statistics

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import assert_states_equal, binary_frames, chunks, close, reference_table
from reference_multiclass import TOP_K, multiclass_frames, multiclass_reference
from reference_regression import ALPHA, POWER, regression_frames, regression_reference
from streameval.cli import main
from streameval.crossval import drop_keys

pytestmark = [
    pytest.mark.filterwarnings("ignore:null for the groups concerned:UserWarning"),
    pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning"),
    pytest.mark.filterwarnings("ignore:the scores of:UserWarning"),
]
THRESHOLDS = [0.3, 0.5]
# scikit-learn fold by fold costs about 50 ms a cell: fewer examples than the default profile
FEW = settings(max_examples=max(4, settings.default.max_examples // 8))
SOME = settings(max_examples=max(4, settings.default.max_examples // 4))


def with_cells(df: pl.DataFrame, data: st.DataObject, repeats: bool = False) -> pl.DataFrame:
    """Add a fold column (and a repeat column) drawn at random."""
    k = data.draw(st.integers(2, 4))
    n = df.height
    folds = data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    df = df.with_columns(fold=pl.Series(folds, dtype=pl.Int64))
    if repeats:
        r = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
        df = df.with_columns(repeat=pl.Series(r, dtype=pl.Int32))
    return df


def _summary(values: list, ddof: int) -> tuple:
    if any(v is None for v in values):
        return None, None
    mean = statistics.fmean(float(v) for v in values)
    if len(values) - ddof <= 0:
        return mean, None
    sd = math.sqrt(sum((float(v) - mean) ** 2 for v in values) / (len(values) - ddof))
    return mean, sd


def expected_rows(per_cell, pooled, overall, groups, cells, ddof=1):
    """The fold table computed from reference rows: fold, mean, sd and pooled rows.

    ``pooled`` holds the reference rows of the cells' groups without the fold (per repeat);
    ``overall`` those without the repeat either (None without repeats).
    """
    rows = []
    names = {c for row in per_cell for c in row if c not in (*groups, *cells)}
    for row in per_cell:
        rows.append({**row, "estimate": "fold", "n_folds": 1})
    by_group: dict = {}
    for row in per_cell:
        by_group.setdefault(tuple(row[g] for g in groups), []).append(row)
    for key, members in by_group.items():
        mean, sd = dict(zip(groups, key, strict=True)), dict(zip(groups, key, strict=True))
        for name in names:  # reference rows of all-zero weights leave metrics out: skip those
            if all(name in m for m in members):
                mean[name], sd[name] = _summary([m[name] for m in members], ddof)
        for row, kind in ((mean, "mean"), (sd, "sd")):
            rows.append({**row, **dict.fromkeys(cells), "estimate": kind, "n_folds": len(members)})
    for level, reference in ((cells[:-1], pooled), ([], overall)):
        if reference is None:
            continue
        for row in reference:
            same = [m for m in per_cell if all(m[g] == row[g] for g in [*groups, *level])]
            missing = dict.fromkeys([c for c in cells if c not in level])
            rows.append({**row, **missing, "estimate": "pooled", "n_folds": len(same)})
    return rows


def assert_fold_table(ours: pl.DataFrame, expected: list[dict], keys: list[str]) -> None:
    got = {tuple(r[k] for k in keys): r for r in ours.to_dicts()}
    assert len(got) == len(expected), (len(got), len(expected))
    for row in expected:
        mine = got[tuple(row[k] for k in keys)]
        for name, value in row.items():
            assert close(mine[name], value), (name, mine[name], value, row)


def accumulate_chunked(df, cuts, keys, **kw):
    return se.merge([se.accumulate(c, by=keys, **kw) for c in chunks(df, cuts)])


@FEW
@given(binary_frames(), st.data())
def test_binary_fold_summaries_match_sklearn_fold_by_fold(frames, data):
    df, cuts, weighted = frames
    df = with_cells(df, data)
    state = accumulate_chunked(df, cuts, ["g", "fold"], label="y", score="p",
                               weight="w" if weighted else None, precision="exact",
                               thresholds=THRESHOLDS)  # fmt: skip
    ours = se.fold_metrics(state, "fold", threshold=THRESHOLDS)
    per_cell = reference_table(df, THRESHOLDS, keys=["g", "fold"])
    pooled = reference_table(df, THRESHOLDS, keys=["g"])
    expected = expected_rows(per_cell, None, pooled, ["g", "threshold"], ["fold"])
    assert_fold_table(ours, expected, ["g", "threshold", "fold", "estimate"])
    assert ours.filter(pl.col("estimate") == "sd")["roc_auc_error"].is_null().all()


@FEW
@given(multiclass_frames(), st.data())
def test_multiclass_fold_summaries_match_sklearn_fold_by_fold(frames, data):
    df, classes, cuts, weighted = frames
    df = with_cells(df, data)
    k = len(classes)
    state = accumulate_chunked(
        df, cuts, ["g", "fold"], task="multiclass", label="y", classes=classes,
        scores=[f"p{j}" for j in range(k)] if "p0" in df.columns else None,
        prediction="pred" if "pred" in df.columns else None,
        weight="w" if weighted else None, top_k=TOP_K, precision="exact",
    )  # fmt: skip
    ours = se.fold_metrics(state, "fold")
    per_cell = multiclass_reference(df, classes, keys=["g", "fold"])
    pooled = multiclass_reference(df, classes, keys=["g"])
    expected = expected_rows(per_cell, None, pooled, ["g"], ["fold"])
    assert_fold_table(ours, expected, ["g", "fold", "estimate"])


@FEW
@given(regression_frames(), st.data())
def test_repeated_regression_summaries_match_sklearn_cell_by_cell(frames, data):
    df, cuts, weighted = frames
    df = with_cells(df, data, repeats=True)
    state = accumulate_chunked(df, cuts, ["g", "repeat", "fold"], task="regression", label="y",
                               prediction="f", weight="w" if weighted else None, power=POWER,
                               precision="exact")  # fmt: skip
    ours = se.fold_metrics(state, "fold", "repeat", alpha=ALPHA)
    per_cell = regression_reference(df, keys=["g", "repeat", "fold"])
    per_repeat = regression_reference(df, keys=["g", "repeat"])
    overall = regression_reference(df, keys=["g"])
    expected = expected_rows(per_cell, per_repeat, overall, ["g"], ["repeat", "fold"])
    assert_fold_table(ours, expected, ["g", "repeat", "fold", "estimate"])


@SOME
@given(binary_frames(weighted=False), st.data())
def test_evaluate_with_folds_is_fold_metrics_of_the_state(frames, data):
    df, _, _ = frames
    df = with_cells(df, data)
    table = se.evaluate(df, label="y", score="p", by="g", folds="fold", threshold=THRESHOLDS)
    state = se.accumulate(df, label="y", score="p", by=["g", "fold"], thresholds=THRESHOLDS)
    # equal up to the order of float sums (Polars' parallel group-by)
    assert_frame_equal(table, se.fold_metrics(state, threshold=THRESHOLDS), rel_tol=1e-12)
    assert table.columns[:4] == ["g", "fold", "estimate", "n_folds"]
    population = se.fold_metrics(state, threshold=THRESHOLDS, ddof=0, metrics=["accuracy"])
    folds = population.filter(pl.col("estimate") == "fold")
    for (g, t), part in folds.partition_by("g", "threshold", as_dict=True).items():
        sd = population.filter(
            (pl.col("g") == g) & (pl.col("threshold") == t) & (pl.col("estimate") == "sd")
        )["accuracy"].item()
        assert close(sd, _summary(part["accuracy"].to_list(), 0)[1])


@SOME
@given(binary_frames(), st.sampled_from([52, 4]))
def test_dropping_the_fold_key_is_accumulating_without_it(frames, bits):
    df, cuts, weighted = frames
    df = df.with_columns(fold=pl.int_range(pl.len()) % 3)
    w = "w" if weighted else None
    with_fold = accumulate_chunked(df, cuts, ["g", "fold"], label="y", score="p", weight=w,
                                   precision=bits)  # fmt: skip
    without = accumulate_chunked(df, cuts, ["g"], label="y", score="p", weight=w, precision=bits)
    assert_states_equal(drop_keys(with_fold, ["fold"]), without)


@SOME
@given(multiclass_frames(), regression_frames())
def test_dropping_keys_of_multiclass_and_regression_states(multi, reg):
    df, classes, cuts, _ = multi
    df = df.with_columns(fold=pl.int_range(pl.len()) % 2)
    kw = {"task": "multiclass", "label": "y", "classes": classes,
          "scores": [f"p{j}" for j in range(len(classes))] if "p0" in df.columns else None,
          "prediction": "pred" if "pred" in df.columns else None, "precision": 6}  # fmt: skip
    full = drop_keys(accumulate_chunked(df, cuts, ["fold", "g"], **kw), ["fold", "g"])
    assert_states_equal(full, accumulate_chunked(df, cuts, [], **kw))
    df, cuts, _ = reg
    df = df.with_columns(fold=pl.int_range(pl.len()) % 2)
    kw = {"task": "regression", "label": "y", "prediction": "f", "precision": 8}
    full = drop_keys(accumulate_chunked(df, cuts, ["g", "fold"], **kw), ["fold"])
    assert_states_equal(full, accumulate_chunked(df, cuts, ["g"], **kw))


def test_hive_fold_partitions_give_the_in_memory_table(tmp_path):
    df = pl.DataFrame({"id": range(400), "y": [i % 2 for i in range(400)]})
    df = se.split.kfold(df, 4, seed=3, by="id", stratify="y").with_columns(
        p=(pl.col("id") * 7919 % 1000) / 1000, segment=pl.col("id") % 3
    )
    df.write_parquet(tmp_path / "oof", partition_by="fold")
    from_files = se.evaluate(tmp_path / "oof", label="y", score="p", by="segment", folds="fold")
    in_memory = se.evaluate(df, label="y", score="p", by="segment", folds="fold")
    assert_frame_equal(from_files, in_memory, rel_tol=1e-12)
    assert from_files.filter(pl.col("estimate") == "fold").height == 12


def test_intervals_per_fold_and_pooled_and_labels_as_keys():
    df = pl.DataFrame({"id": range(90), "y": [i % 2 for i in range(90)]})
    df = se.split.kfold(df, 3, by="id", stratify="y").with_columns(
        a=(pl.col("id") * 37 % 100) / 100, b=(pl.col("id") * 53 % 100) / 100
    )
    table = se.evaluate(df, label="y", score="a", folds="fold", ci="wilson")
    rows = {r["estimate"]: r for r in table.filter(pl.col("fold").is_null()).to_dicts()}
    assert rows["mean"]["accuracy_lo"] is None and rows["sd"]["roc_auc_se"] is None
    assert rows["mean"]["accuracy"] is not None and rows["pooled"]["accuracy_lo"] is not None
    folds = table.filter(pl.col("estimate") == "fold")
    plain = se.evaluate(df, label="y", score="a", by="fold", ci="wilson")
    assert_frame_equal(folds.select(plain.columns), plain, check_dtypes=False)
    paired = se.evaluate(df, task="paired", label="y", scores=["a", "b"], folds="fold")
    assert paired.columns[:4] == ["fold", "model", "estimate", "n_folds"]
    assert paired.filter(pl.col("estimate") == "pooled")["model"].to_list() == ["a", "b"]


def test_cli_folds(tmp_path, capsys):
    df = pl.DataFrame({"id": range(60), "y": [i % 2 for i in range(60)]})
    df = se.split.repeated_kfold(df, 3, 2, by="id").with_columns(p=(pl.col("id") % 7) / 7)
    df.write_parquet(tmp_path / "oof.parquet")
    out = tmp_path / "table.csv"
    args = [str(tmp_path / "oof.parquet"), "--label", "y", "--score", "p"]
    assert main(["evaluate", *args, "--folds", "fold", "--repeats", "repeat",
                 "--output", str(out)]) == 0  # fmt: skip
    table = pl.read_csv(out)
    assert table.columns[:4] == ["repeat", "fold", "estimate", "n_folds"]
    assert table["estimate"].value_counts().sort("estimate").rows() == [
        ("fold", 6), ("mean", 1), ("pooled", 3), ("sd", 1),
    ]  # fmt: skip
    assert main(["evaluate", *args, "--folds", "fold", "--repeats", "repeat"]) == 0
    assert "pooled" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"folds": "folds"}, "expected a group key column 'folds'"),
        ({"repeats": "fold"}, "expected folds="),
        ({"folds": "fold", "by": "fold"}, "outside by="),
        ({"folds": "fold", "repeats": "fold"}, "different fold and repeat"),
    ],
)
def test_fold_errors_say_what_was_expected(kwargs, message):
    df = pl.DataFrame({"fold": [0, 1], "y": [0, 1], "p": [0.2, 0.8]})
    with pytest.raises(se.InputError, match=message):
        se.evaluate(df, label="y", score="p", **kwargs)


def test_fold_metrics_needs_the_fold_key_without_nulls():
    df = pl.DataFrame({"y": [0, 1], "p": [0.2, 0.8], "fold": [0, None]})
    state = se.accumulate(df, label="y", score="p")
    with pytest.raises(se.InputError, match="among the state's group keys"):
        se.fold_metrics(state)
    with pytest.raises(se.InputError, match="some are null"):
        se.evaluate(df, label="y", score="p", folds="fold")
