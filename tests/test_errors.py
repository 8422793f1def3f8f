"""Bad input: one test per case, each checking the exception type and that its message names
what is wrong (column, file or value) and carries a hint (DESIGN.md, "What counts as bad input").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from sklearn.metrics import roc_auc_score

import streameval as se

HINTS = ("hint", "did you mean")
POLARS_EXCEPTIONS = sorted(
    name for name in dir(pl.exceptions) if name.endswith(("Error", "Exception", "Warning"))
)


def assert_clear(exc: BaseException, *named: Any) -> str:
    """The message names each of ``named``, has a hint and leaks no internals."""
    msg = str(exc)
    for thing in named:
        assert str(thing) in msg, f"{thing!r} is not named in: {msg}"
    assert any(h in msg.lower() for h in HINTS), f"no hint in: {msg}"
    assert "Traceback" not in msg, msg
    leaked = [name for name in POLARS_EXCEPTIONS if name in msg]
    assert not leaked, f"polars exception name {leaked} in: {msg}"
    shown = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    assert shown is None or not type(shown).__module__.startswith(("polars", "pyarrow", "pyo3")), (
        f"the error chains an internal {type(shown).__name__}: {shown}"
    )
    return msg


def check_raises(error: type[se.StreamevalError], call: Callable[[], Any], *named: Any) -> str:
    with pytest.raises(error) as info:
        call()
    return assert_clear(info.value, *named)


@pytest.fixture
def frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "segment": ["a", "a", "a", "b", "b", "b"],
            "label": [0, 1, 1, 0, 1, 0],
            "score": [0.1, 0.8, 0.35, 0.3, 0.6, 0.4],
        }
    )


def evaluate(df: pl.DataFrame | str | Path, **kw: Any) -> pl.DataFrame:
    return se.evaluate(df, **{"label": "label", "score": "score", **kw})


def test_error_classes_are_value_errors():
    for error in (se.InputError, se.SpecMismatchError, se.StateFileError):
        assert issubclass(error, se.StreamevalError)
    assert issubclass(se.StreamevalError, ValueError)


# --- columns ----------------------------------------------------------------------------------


def test_misspelled_score_column_suggests_the_close_name(frame):
    msg = check_raises(se.InputError, lambda: evaluate(frame, score="scroe"), "'scroe'")
    assert "did you mean 'score'" in msg


def test_misspelled_group_key_suggests_the_close_name(frame):
    msg = check_raises(se.InputError, lambda: evaluate(frame, by="segmnt"), "'segmnt'")
    assert "did you mean 'segment'" in msg


def test_string_score_column_is_refused(frame):
    df = frame.with_columns(pl.col("score").cast(pl.String))
    check_raises(se.InputError, lambda: evaluate(df), "'score'", "String")


@pytest.mark.parametrize(("bad", "word"), [(math.nan, "NaN"), (math.inf, "infinite")])
def test_non_finite_score_is_refused(frame, bad, word):
    df = frame.with_columns(pl.Series("score", [0.1, bad, 0.35, 0.3, 0.6, 0.4]))
    msg = check_raises(se.InputError, lambda: evaluate(df), "'score'", word)
    assert f"1 {word}" in msg, msg


@pytest.mark.parametrize("group_key", ["bucket", "pos"])
def test_group_key_named_like_a_state_column_is_refused(frame, group_key):
    df = frame.rename({"segment": group_key})
    check_raises(se.InputError, lambda: evaluate(df, by=group_key), repr(group_key))


# --- labels -----------------------------------------------------------------------------------


def test_label_with_a_third_value_is_refused(frame):
    df = frame.with_columns(pl.Series("label", [0, 1, 2, 0, 1, 0]))
    check_raises(se.InputError, lambda: evaluate(df), "'label'", "2")


def test_float_label_other_than_0_or_1_is_refused(frame):
    df = frame.with_columns(pl.Series("label", [0.0, 1.0, 0.5, 0.0, 1.0, 0.0]))
    check_raises(se.InputError, lambda: evaluate(df), "'label'", "0.5")


def test_positive_value_that_never_occurs_is_named(frame):
    df = frame.with_columns(
        pl.col("label").replace_strict({0: "ham", 1: "spam"}, return_dtype=pl.String)
    )
    msg = check_raises(
        se.InputError, lambda: evaluate(df, positive="Spam"), "'label'", "'Spam'", "'spam'"
    )
    assert "'ham'" in msg


def test_string_labels_need_positive(frame):
    df = frame.with_columns(
        pl.col("label").replace_strict({0: "ham", 1: "spam"}, return_dtype=pl.String)
    )
    check_raises(se.InputError, lambda: evaluate(df), "'label'", "positive=", "'spam'")


# --- nulls ------------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["label", "score"])
def test_null_is_refused_with_a_pointer_to_drop_nulls(frame, column):
    values = frame[column].to_list()
    values[2] = None
    df = frame.with_columns(pl.Series(column, values, dtype=frame[column].dtype))
    msg = check_raises(se.InputError, lambda: evaluate(df), f"'{column}'", "drop_nulls=True")
    assert f"1 null {column}" in msg, msg


def test_drop_nulls_warns_with_the_count_and_computes_on_the_rest(frame):
    df = frame.with_columns(
        pl.Series("label", [0, None, 1, 0, None, 0]),
        pl.Series("score", [0.1, 0.8, None, 0.3, 0.6, 0.4]),
    )
    with pytest.warns(UserWarning, match=r"dropped 3 rows"):
        got = evaluate(df, by="segment", precision="exact", drop_nulls=True)
    expected = evaluate(df.drop_nulls(), by="segment", precision="exact")
    assert_frame_equal(got, expected)
    assert got["n"].to_list() == [1, 2]


# --- weights and probabilities ----------------------------------------------------------------


def test_negative_weight_is_refused(frame):
    df = frame.with_columns(w=pl.Series([1.0, -2.5, 1.0, 1.0, 1.0, 1.0]))
    check_raises(se.InputError, lambda: evaluate(df, weight="w"), "'w'", "negative", "-2.5")


def test_logits_null_log_loss_and_brier_with_a_warning_but_rank_metrics_are_computed(frame):
    logits = [-2.2, 1.4, -0.6, -0.8, 0.4, -0.4]
    df = frame.with_columns(pl.Series("score", logits))
    with pytest.warns(UserWarning, match=r"log_loss and brier are null"):
        out = evaluate(df, precision="exact", threshold=0.0)
    row = out.row(0, named=True)
    assert row["log_loss"] is None
    assert row["brier"] is None
    assert row["roc_auc"] == pytest.approx(roc_auc_score(df["label"], logits), rel=1e-12)
    for name in ("accuracy", "precision", "recall", "f1", "mcc", "average_precision"):
        assert row[name] is not None, name


# --- files ------------------------------------------------------------------------------------


def _predictions(n: int = 5000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"label": rng.integers(0, 2, n), "score": rng.random(n)})


def _not_parquet(path: Path) -> None:
    path.write_bytes(b"PAR1 this is not a parquet file")


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _overwrite_pages(byte: int) -> Callable[[Path], None]:
    """Overwrite part of the first data page; the footer stays valid."""

    def corrupt(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[100:20_000] = bytes([byte]) * (20_000 - 100)
        path.write_bytes(bytes(data))

    return corrupt


@pytest.mark.parametrize(
    ("compression", "corrupt"),
    [
        ("zstd", _not_parquet),
        ("zstd", _truncated),
        ("zstd", _overwrite_pages(0x00)),
        ("uncompressed", _overwrite_pages(0xFF)),
    ],
    ids=["not-parquet", "truncated", "bad-pages-zstd", "bad-pages-uncompressed"],
)
def test_corrupt_file_among_good_ones_is_named(tmp_path, compression, corrupt):
    for i in range(3):
        _predictions(seed=i).write_parquet(tmp_path / f"part-{i}.parquet", compression=compression)
    bad = tmp_path / "part-1.parquet"
    corrupt(bad)
    check_raises(se.InputError, lambda: evaluate(tmp_path), str(bad))


def test_mismatched_partition_schemas_name_the_column_and_file(tmp_path):
    df = _predictions(100)
    df.write_parquet(tmp_path / "a.parquet")
    other = tmp_path / "b.parquet"
    df.with_columns(pl.col("score").cast(pl.String)).write_parquet(other)
    check_raises(se.InputError, lambda: evaluate(tmp_path), "'score'", str(other))


@pytest.mark.parametrize("lacking", ["a.parquet", "b.parquet"])
def test_partition_missing_a_group_key_column_is_named(tmp_path, lacking):
    df = _predictions(100).with_columns(segment=pl.lit("x"))
    for name in ("a.parquet", "b.parquet"):
        (df.drop("segment") if name == lacking else df).write_parquet(tmp_path / name)
    check_raises(se.InputError, lambda: evaluate(tmp_path, by="segment"), "'segment'", lacking)


@pytest.mark.parametrize("name", ["predictions.parquett", "missing_dir/predictions.parquet"])
def test_source_path_that_does_not_exist(tmp_path, name):
    _predictions(10).write_parquet(tmp_path / "predictions.parquet")
    missing = tmp_path / name
    check_raises(se.InputError, lambda: evaluate(missing), str(missing))


# --- states -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"precision": 10}, "precision"),
        ({"by": "segment"}, "keys"),
        ({"thresholds": [0.3]}, "splits"),
        ({"weight": "w"}, "weighted"),
    ],
)
def test_merging_states_computed_differently_names_the_field(frame, change, field):
    df = frame.with_columns(w=pl.lit(1.0))
    base = {"label": "label", "score": "score", "precision": 8, "thresholds": [0.5]}
    a = se.accumulate(df, **base)
    b = se.accumulate(df, **{**base, **change})
    check_raises(se.SpecMismatchError, lambda: se.merge([a, b]), field)
    check_raises(se.SpecMismatchError, lambda: b.merge(a), field)


def test_threshold_inside_a_bucket_is_refused(frame):
    state = se.accumulate(frame, label="label", score="score", precision=8, thresholds=[0.5])
    assert state.metrics(threshold=0.5).height == 1
    check_raises(se.InputError, lambda: state.metrics(threshold=0.3), "0.3", "precision")


@pytest.mark.parametrize("threshold", [math.nan, []])
def test_threshold_that_is_not_a_number_is_refused(frame, threshold):
    state = se.accumulate(frame, label="label", score="score", precision="exact")
    check_raises(se.InputError, lambda: state.metrics(threshold=threshold), "threshold")


@pytest.mark.parametrize("precision", ["fast", -1, 99])
def test_invalid_precision_is_refused(frame, precision):
    check_raises(se.InputError, lambda: evaluate(frame, precision=precision), repr(precision))


def _plain_parquet(path: Path, frame: pl.DataFrame) -> None:
    frame.write_parquet(path)


def _text_file(path: Path, frame: pl.DataFrame) -> None:
    path.write_text("segment,label,score\n")


def _truncated_state(path: Path, frame: pl.DataFrame) -> None:
    se.accumulate(frame, label="label", score="score").write(path)
    _truncated(path)


def _no_file(path: Path, frame: pl.DataFrame) -> None:
    pass


@pytest.mark.parametrize(
    "make", [_plain_parquet, _text_file, _truncated_state, _no_file], ids=lambda f: f.__name__[1:]
)
def test_reading_something_that_is_not_a_state_file(tmp_path, frame, make):
    path = tmp_path / "state.parquet"
    make(path, frame)
    check_raises(se.StateFileError, lambda: se.read_state(path), str(path))


def test_a_column_in_two_roles_is_named():
    df = pl.DataFrame({"y": ["a", "b"], "p": [0.1, 0.2]})
    with pytest.raises(se.errors.InputError, match="'y' as label and prediction"):
        se.accumulate(df, task="multiclass", label="y", prediction="y")


def test_warnings_name_the_callers_line():
    import warnings

    binary = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.2, 1.5, 0.7, 0.1]})
    classes = pl.DataFrame({"y": [0, 1, 2], "p0": [0.5, 0.2, 0.3], "p1": [0.5, 0.2, 0.3]})
    classes = classes.with_columns(p2=pl.lit(0.5))
    values = pl.DataFrame({"y": [1.0, -2.0, 3.0], "f": [0.5, 1.0, -1.0]})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        se.evaluate(binary, label="y", score="p")
        se.accumulate(binary, label="y", score="p").metrics()
        se.evaluate(binary, label="y", score="p", precision="exact", ci="wilson")
        options = dict(task="multiclass", label="y", scores=["p0", "p1", "p2"])
        se.evaluate(classes, **options)
        se.accumulate(classes, **options).metrics()
        se.evaluate(values, task="regression", label="y", prediction="f")
    assert len(seen) >= 6
    assert {w.filename for w in seen} == {__file__}, [(w.filename, w.lineno) for w in seen]
