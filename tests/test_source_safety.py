"""Sources that used to give wrong numbers or raw tracebacks (issue 16, items 3, 4, 7 and 8).

- one partition value spelled two ways (``day=2026-10-01/`` and ``day=20261001/``);
- a file column that a hive directory of the same name would silently override;
- a damaged file inside a hive partition;
- Python arguments of the wrong type.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import streameval as se
from streameval.jobs.partitions import discover_files
from streameval.source import source_files

POLARS_MODULES = ("polars", "pyarrow", "pyo3")


def _rows(n: int = 4, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"y": rng.integers(0, 2, n), "p": rng.random(n)})


def _write(root: Path, relative: str, frame: pl.DataFrame, **kw: Any) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path, **kw)
    return path


def _clear(info: pytest.ExceptionInfo[se.InputError], *named: str) -> str:
    """The message names each of ``named``, has a hint and chains no Polars/Arrow error."""
    msg = str(info.value)
    for thing in named:
        assert thing in msg, f"{thing!r} is not named in: {msg}"
    assert "hint" in msg, msg
    cause = info.value.__cause__ or (
        None if info.value.__suppress_context__ else info.value.__context__
    )
    assert cause is None or not type(cause).__module__.startswith(POLARS_MODULES), cause
    return msg


def _both(source: Any, **kw: Any) -> list[Callable[[], Any]]:
    """``se.evaluate`` and ``se.accumulate`` of ``source`` (label y, score p)."""
    options = {"label": "y", "score": "p", **kw}
    return [lambda: se.evaluate(source, **options), lambda: se.accumulate(source, **options)]


# --- item 3: one partition value, two directory names ------------------------------------------

SPELLINGS = [
    ("day", "2026-10-01", "20261001"),
    ("seg", "1", "01"),
    ("seg", "a%20b", "a b"),
    ("seg", "2.5", "2.50"),
    ("when", "2026-10-01 00:00:00", "2026-10-01T00:00:00"),
]


@pytest.mark.parametrize(("key", "first", "second"), SPELLINGS)
@pytest.mark.parametrize("by", ["key", None])
def test_one_partition_value_spelled_two_ways_is_refused(tmp_path, key, first, second, by):
    for name in (first, second, "2026-10-02"):
        _write(tmp_path, f"{key}={name}/part.parquet", _rows())
    for call in _both(tmp_path, by=key if by else None):
        with pytest.raises(se.InputError) as info:
            call()
        _clear(info, f"{key}={first}", f"{key}={second}")


def test_two_spellings_are_refused_in_a_list_of_paths_and_a_glob(tmp_path):
    a = _write(tmp_path, "a/day=2026-10-01/part.parquet", _rows())
    b = _write(tmp_path, "b/day=20261001/part.parquet", _rows())
    for source in ([str(a), str(b)], str(tmp_path / "*" / "day=*" / "*.parquet")):
        with pytest.raises(se.InputError) as info:
            se.evaluate(source, label="y", score="p")
        _clear(info, "day=2026-10-01", "day=20261001")


def test_two_spellings_are_refused_by_the_job_runners_discovery(tmp_path):
    for name in ("2026-10-01", "20261001"):
        _write(tmp_path, f"day={name}/part.parquet", _rows())
    with pytest.raises(se.InputError) as info:
        discover_files([str(tmp_path)], "day", base=str(tmp_path))
    _clear(info, "day=2026-10-01", "day=20261001")


@pytest.mark.parametrize(
    "names",
    [("1", "10", "100"), ("2026-10-01", "2026-10-02"), ("a", "A", "a b"), ("", "x")],
    ids=["ints", "days", "texts", "empty"],
)
def test_distinct_partition_values_are_read(tmp_path, names):
    for i, name in enumerate(names):
        _write(tmp_path, f"seg={name}/part.parquet", _rows(seed=i))
    assert len(source_files(tmp_path) or []) == len(names)
    table = se.evaluate(tmp_path, label="y", score="p", by="seg")
    assert table["n"].sum() == 4 * len(names)


# --- item 4: a file column that its hive directory would override -----------------------------


def test_file_column_disagreeing_with_its_directory_is_refused(tmp_path):
    own = _rows().with_columns(seg=pl.Series(["a", "b", "c", "a"]))
    bad = _write(tmp_path, "seg=zzz/part.parquet", own)
    for by in ("seg", None):
        for call in _both(tmp_path, by=by):
            with pytest.raises(se.InputError) as info:
                call()
            _clear(info, str(bad), "'seg'", "'zzz'")


@pytest.mark.parametrize(
    ("key", "good", "bad", "values"),
    [
        ("seg", "2", "1", pl.Series([5, 6, 5, 6])),
        ("seg", "2", "1", pl.Series([1, 1, 1, None])),
        ("day", "2026-10-02", "2026-10-01", pl.Series(["2026-10-02"] * 4).str.to_date()),
    ],
    ids=["int", "null", "date"],
)
def test_typed_file_column_disagreeing_with_its_directory_is_refused(
    tmp_path, key, good, bad, values
):
    agreeing = values.clear().extend_constant(values.drop_nulls()[0], 4)
    if key == "seg":
        agreeing = pl.Series([2] * 4)
    _write(tmp_path, f"{key}={good}/part.parquet", _rows().with_columns(agreeing.alias(key)))
    wrong = _write(tmp_path, f"{key}={bad}/part.parquet", _rows().with_columns(values.alias(key)))
    with pytest.raises(se.InputError) as info:
        se.evaluate(tmp_path, label="y", score="p", by=key)
    _clear(info, str(wrong), repr(key))


def test_file_column_without_statistics_is_refused(tmp_path):
    own = _rows().with_columns(seg=pl.lit("a"))
    bad = _write(tmp_path, "seg=a/part.parquet", own, statistics=False)
    with pytest.raises(se.InputError) as info:
        se.evaluate(tmp_path, label="y", score="p", by="seg")
    _clear(info, str(bad), "'seg'", "statistics")


@pytest.mark.parametrize(
    "column",
    [
        pl.Series("k", ["a"] * 40 + ["b"] * 40),
        pl.Series("k", [3] * 40 + [12] * 40),
        pl.Series("k", [True] * 40 + [None] * 40),
        pl.Series("k", ["2026-10-01"] * 40 + ["2026-10-02"] * 40).str.to_date(),
        pl.Series("k", ["2026-10-01 06:00"] * 40 + ["2026-10-02 00:00"] * 40).str.to_datetime(),
        pl.Series("k", [0.5] * 40 + [0.1] * 40),
    ],
    ids=["str", "int", "bool-null", "date", "datetime", "float"],
)
def test_polars_partitioned_writes_keep_agreeing_key_columns(tmp_path, column):
    frame = _rows(80).with_columns(column)
    frame.write_parquet(tmp_path, partition_by="k")
    table = se.evaluate(tmp_path, label="y", score="p", by="k", precision="exact")
    expected = se.evaluate(frame, label="y", score="p", by="k", precision="exact")
    assert table["n"].to_list() == expected["n"].to_list()
    assert table["roc_auc"].to_list() == pytest.approx(expected["roc_auc"].to_list(), nan_ok=True)


# --- item 7: a damaged file inside a hive partition ----------------------------------------------


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _bad_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:20_000] = bytes(19_900)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("corrupt", [_truncated, _bad_pages], ids=["truncated", "bad-pages"])
@pytest.mark.parametrize("which", [0, 1, 2])
@pytest.mark.parametrize("by", ["day", ["day", "seg"]])
def test_damaged_file_in_a_hive_partition_is_named(tmp_path, corrupt, which, by):
    paths = []
    for i in range(3):
        rows = _rows(5000, seed=i).with_columns(seg=pl.lit("s"))
        paths.append(_write(tmp_path, f"day=2026-10-0{i + 1}/part.parquet", rows))
    corrupt(paths[which])
    for call in _both(tmp_path, by=by):
        with pytest.raises(se.InputError) as info:
            call()
        _clear(info, str(paths[which]))


def test_object_group_key_of_a_data_frame_is_refused():
    frame = _rows().with_columns(g=pl.Series([object()] * 4, dtype=pl.Object))
    for call in _both(frame, by="g"):
        with pytest.raises(se.InputError) as info:
            call()
        _clear(info, "'g'", "Object")


def test_failing_lazy_frame_names_the_problem_in_one_line():
    lf = pl.LazyFrame({"y": [0, 1], "p": [0.1, 0.9]}).select("y", "p", "nope")
    with pytest.raises(se.InputError) as info:
        se.evaluate(lf, label="y", score="p")
    msg = _clear(info, "nope")
    assert "\n" not in msg


# --- item 8: Python arguments of the wrong type ----------------------------------------------

BINARY = {"label": "y", "score": "p"}
MULTICLASS = {"task": "multiclass", "label": "c", "scores": ["s0", "s1"], "classes": [0, 1]}
REGRESSION = {"task": "regression", "label": "t", "prediction": "t_hat"}
PAIRED = {"task": "paired", "label": "y", "scores": ["p", "q"]}

BAD_ARGUMENTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("label", BINARY, {"label": None}),
    ("label", BINARY, {"label": 3}),
    ("label", BINARY, {"label": ["y"]}),
    ("score", BINARY, {"score": 3}),
    ("score", BINARY, {"score": ["p"]}),
    ("weight", BINARY, {"weight": ["w"]}),
    ("weight", BINARY, {"weight": 1.0}),
    ("by", BINARY, {"by": 3}),
    ("by", BINARY, {"by": ["g", 3]}),
    ("by", BINARY, {"by": {"g"}}),
    ("threshold", BINARY, {"threshold": "0.5"}),
    ("threshold", BINARY, {"threshold": [0.5, "x"]}),
    ("threshold", BINARY, {"threshold": None}),
    ("precision", BINARY, {"precision": 2.5}),
    ("precision", BINARY, {"precision": True}),
    ("positive", BINARY, {"positive": [1]}),
    ("task", BINARY, {"task": 1}),
    ("task", BINARY, {"task": None}),
    ("drop_nulls", BINARY, {"drop_nulls": "yes"}),
    ("engine", BINARY, {"engine": "fast"}),
    ("engine", BINARY, {"engine": None}),
    ("metrics", BINARY, {"metrics": [1]}),
    ("metrics", BINARY, {"metrics": 3}),
    ("ci", BINARY, {"ci": 1}),
    ("level", BINARY, {"ci": "wilson", "level": "0.95"}),
    ("auc_method", BINARY, {"ci": "delong", "auc_method": None}),
    ("folds", BINARY, {"folds": 1}),
    ("repeats", BINARY, {"folds": "g", "repeats": ["r"]}),
    ("jackknife", BINARY, {"ci": "jackknife", "jackknife": 1}),
    ("bootstrap", BINARY, {"ci": "bootstrap", "bootstrap": "200"}),
    ("seed", BINARY, {"ci": "bootstrap", "seed": "0"}),
    ("row_id", BINARY, {"ci": "bootstrap", "row_id": 1}),
    ("top_k", MULTICLASS, {"top_k": "2"}),
    ("top_k", MULTICLASS, {"top_k": 1.5}),
    ("scores", MULTICLASS, {"scores": [1, 2]}),
    ("scores", MULTICLASS, {"scores": {0: 1, 1: 2}}),
    ("scores", MULTICLASS, {"scores": 7}),
    ("classes", MULTICLASS, {"classes": "01"}),
    ("classes", MULTICLASS, {"classes": 3}),
    ("prediction", REGRESSION, {"prediction": 1}),
    ("prediction", REGRESSION, {"prediction": ["t_hat"]}),
    ("power", REGRESSION, {"power": "1.5"}),
    ("alpha", REGRESSION, {"alpha": None}),
    ("scores", PAIRED, {"scores": ["p", 2]}),
    ("positive", PAIRED, {"positive": {"a": 1}}),
]


@pytest.fixture(scope="module")
def predictions() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 40
    s0 = rng.random(n)
    return pl.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
            "q": rng.random(n),
            "w": rng.random(n),
            "g": rng.choice(["a", "b"], n),
            "c": rng.integers(0, 2, n),
            "s0": s0,
            "s1": 1 - s0,
            "t": rng.normal(size=n),
            "t_hat": rng.normal(size=n),
        }
    )


@pytest.mark.parametrize(
    ("name", "base", "bad"), BAD_ARGUMENTS, ids=[f"{n}={b[n]!r}" for n, _, b in BAD_ARGUMENTS]
)
def test_argument_of_the_wrong_type_is_an_input_error(predictions, name, base, bad):
    options = {**base, **bad}
    calls = [lambda: se.evaluate(predictions, **options)]
    accumulated = {
        k: v for k, v in options.items() if k in inspect.signature(se.accumulate).parameters
    }
    if name in accumulated:
        calls.append(lambda: se.accumulate(predictions, **accumulated))
    for call in calls:
        try:
            call()
        except se.InputError as exc:
            assert f"{name}=" in str(exc), str(exc)
            assert "expected" in str(exc) and "hint" in str(exc), str(exc)
        except Exception as exc:  # any other exception is the bug this test is about
            pytest.fail(f"{type(exc).__name__} instead of InputError: {exc}")
        else:
            pytest.fail(f"{name}={bad[name]!r} was accepted")


def test_accumulate_threshold_argument_is_named_thresholds(predictions):
    with pytest.raises(se.InputError, match="thresholds="):
        se.accumulate(predictions, label="y", score="p", thresholds="0.5")


@pytest.mark.parametrize("function", [se.evaluate, se.accumulate])
def test_every_argument_has_a_declared_type(function):
    from streameval.options import EXPECTED

    names = set(inspect.signature(function).parameters) - {"source"}
    assert names <= set(EXPECTED), sorted(names - set(EXPECTED))


@pytest.mark.parametrize(
    "good",
    [
        {"by": ("g",), "threshold": np.float64(0.3)},
        {"threshold": np.array([0.3, 0.7]), "precision": "exact"},
        {"positive": np.int64(1), "weight": "w"},
        {"metrics": "roc_auc"},
    ],
)
def test_arguments_of_accepted_types_still_work(predictions, good):
    table = se.evaluate(predictions, label="y", score="p", **good)
    assert table.height >= 1
