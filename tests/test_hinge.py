"""The hinge loss on margins, and states of schema version 2 (written before its sums).

The registry-driven suite (``test_metric_laws.py``) holds ``hinge_loss`` to scikit-learn on
probabilities; here the scores are margins of any sign and size, as a classifier's decision
function gives them: binary (``score`` with the labels as ±1) and multiclass (Crammer and
Singer's, from the class scores), chunked, weighted and tied, in every precision — the hinge
sums are per row, so bucketed states give them exactly too.

The files in ``fixtures/v2`` were written by a streameval of state schema version 2
(``fixtures/v2/make.py``), whose bucketed binary and multiclass states hold no hinge sums.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import replace
from io import StringIO as io_text
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs_support import cli, write_day, write_job, write_log

import reference as ref
import reference_multiclass as ref_multiclass
import streameval as se
from streameval import io
from streameval.errors import StateFileError
from streameval.jobs import run_job
from streameval.spec import SCHEMA_VERSION

pytestmark = [
    pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*do not sum to 1:UserWarning"),
]
FIXTURES = Path(__file__).parent / "fixtures" / "v2"
PRECISIONS = st.one_of(st.just("exact"), st.integers(0, 12))


def _close(got: float | None, want: float | None) -> bool:
    if got is None or want is None:
        return got is None and want is None
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)


def _hinge_by_group(df: pl.DataFrame, hinge: Any) -> dict[Any, float | None]:
    out = {}
    for (g,), part in df.partition_by("g", as_dict=True).items():
        w = part["w"].to_numpy() if "w" in part.columns else None
        total = len(part) if w is None else w.sum()
        out[g] = hinge(part, w) if total > 0 else None
    return out


def _same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """The tables agree in every column but the hinge loss (floats to 1e-12: sums of another
    order where one state is finalized by the compiled loops and the other is not)."""
    assert got.columns == want.columns
    for column in want.columns:
        if column == "hinge_loss":
            continue
        a, b = got[column].to_list(), want[column].to_list()
        assert a == pytest.approx(b, rel=1e-12, abs=1e-12, nan_ok=True), column


def _hinges(
    df: pl.DataFrame, cuts: list[int], precision: Any, kw: dict[str, Any]
) -> list[dict[Any, float | None]]:
    """Each group's hinge loss from the merged chunks' state and from ``se.evaluate``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = [
            _merged(df, cuts, precision=precision, **kw).metrics(),
            se.evaluate(df, by="g", precision=precision, **kw),
        ]
    return [dict(zip(t["g"], t["hinge_loss"], strict=True)) for t in tables]


def _merged(df: pl.DataFrame, cuts: list[int], **kw: Any) -> se.State:
    return se.merge([se.accumulate(c, by="g", **kw) for c in ref.chunks(df, cuts) if c.height])


@settings(max_examples=40, deadline=None)
@given(ref.binary_frames(probabilities=False), PRECISIONS)
def test_binary_hinge_of_margins_is_scikit_learns(drawn: Any, precision: Any) -> None:
    df, cuts, weighted = drawn
    kw = {"label": "y", "score": "p", "weight": "w" if weighted else None}
    want = _hinge_by_group(
        df, lambda part, w: ref.hinge(part["y"].to_numpy(), part["p"].to_numpy(), w)
    )
    for got in _hinges(df, cuts, precision, kw):
        assert got.keys() == want.keys()
        assert all(_close(got[g], want[g]) for g in want), (got, want)


@st.composite
def _margin_frames(draw: st.DrawFn) -> tuple[pl.DataFrame, list[int], int]:
    """Class indices and unnormalized class scores (ties likely), groups, weights, cuts."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(1, 40))
    value = st.sampled_from([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0]) | st.floats(-20, 20)
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, 2),
                st.integers(0, k - 1),
                st.lists(value, min_size=k, max_size=k),
                st.sampled_from([0.0, 0.5, 1.0, 7.0]) | st.floats(1e-6, 10),
            ),
            min_size=n,
            max_size=n,
        )
    )
    data: dict[str, Any] = {"g": [r[0] for r in rows], "y": [r[1] for r in rows]}
    for j in range(k):
        data[f"s{j}"] = [r[2][j] for r in rows]
    if draw(st.booleans()):
        data["w"] = [r[3] for r in rows]
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=4))) | {0, n})
    return pl.DataFrame(data, schema_overrides={"y": pl.Int64}), cuts, k


@settings(max_examples=40, deadline=None)
@given(_margin_frames(), PRECISIONS)
def test_multiclass_hinge_is_crammer_and_singers(drawn: Any, precision: Any) -> None:
    df, cuts, k = drawn
    scores = [f"s{j}" for j in range(k)]
    kw = {"task": "multiclass", "label": "y", "scores": scores, "classes": list(range(k))}
    kw["weight"] = "w" if "w" in df.columns else None

    def hinge(part: pl.DataFrame, w: Any) -> float:
        sw = np.ones(part.height) if w is None else w
        p = part.select(scores).to_numpy()
        return ref_multiclass.multiclass_hinge(part["y"].to_numpy(), p, sw)

    want = _hinge_by_group(df, hinge)
    for got in _hinges(df, cuts, precision, kw):
        assert all(_close(got[g], want[g]) for g in want), (got, want)


def test_a_group_of_one_class_keeps_its_labels() -> None:
    """scikit-learn would read one class as the negative one; the positive stays +1 here."""
    df = pl.DataFrame({"y": [1, 1], "p": [0.5, 2.0]})
    assert se.evaluate(df, label="y", score="p")["hinge_loss"].item() == 0.25


# --- states of schema version 2 ----------------------------------------------------------

BINARY = {"label": "y", "score": "p", "by": "g"}
MULTICLASS = {
    "task": "multiclass",
    "label": "c",
    "scores": {"x": "s0", "y": "s1", "z": "s2"},
    "by": "g",
}
OLD = {
    "binary.parquet": BINARY,
    "binary_weighted.parquet": {**BINARY, "weight": "w"},
    "binary_exact.parquet": {**BINARY, "precision": "exact"},
    "multiclass.parquet": MULTICLASS,
}


def _rows() -> pl.DataFrame:
    return pl.read_parquet(FIXTURES / "rows.parquet")


@pytest.mark.parametrize("name", sorted(OLD))
def test_a_version_2_state_reads_and_gives_every_metric_but_the_hinge_loss(name: str) -> None:
    old = se.read_state(FIXTURES / name)
    new = se.accumulate(_rows(), **OLD[name])
    assert old.spec.schema_version == 2 and new.spec.schema_version == SCHEMA_VERSION
    got, want = old.metrics(), new.metrics()
    exact = old.spec.exact  # (an exact state's hinge sums come from its scores)
    assert got["hinge_loss"].is_null().all() != exact
    _same(got, want)
    assert want["hinge_loss"].is_not_null().all()
    if exact:
        assert got.equals(want)


@pytest.mark.parametrize("name", sorted(OLD))
def test_a_version_2_state_merges_with_a_new_one_at_version_2(name: str, tmp_path: Path) -> None:
    old = se.read_state(FIXTURES / name)
    rows = _rows()
    second = rows[150:]
    merged = se.merge([old, se.accumulate(second, **OLD[name])])
    assert merged.spec.schema_version == 2
    expected = se.merge([se.accumulate(rows, **OLD[name]), se.accumulate(second, **OLD[name])])
    got, want = merged.metrics(), expected.metrics()
    _same(got, want)
    assert got["hinge_loss"].is_null().all() != old.spec.exact
    # written and read back, it stays a state of version 2, verified whole
    merged.write(tmp_path / "merged.parquet")
    again = se.read_state(tmp_path / "merged.parquet")
    assert again.spec.schema_version == 2 and again.table.equals(merged.table)


def test_a_file_whose_spec_and_version_disagree_is_refused(tmp_path: Path) -> None:
    """The file says version 3, its spec version 2: refused, not read either way."""
    state = se.read_state(FIXTURES / "binary.parquet")
    spec = state.spec.to_json().encode()
    digest = io.content_digest(b"3", spec, state.table)
    meta = {
        io.SPEC_KEY: spec,
        io.VERSION_KEY: b"3",
        io.CHECKSUM_KEY: f"{io.ALGORITHM}:{digest}".encode(),
    }
    path = tmp_path / "state.parquet"
    table = state.table.to_arrow().replace_schema_metadata(meta)
    pq.write_table(table, path, write_page_checksum=True)
    with pytest.raises(StateFileError, match="file's schema version 3, but it is of version 2"):
        se.read_state(path)


def _downgrade(store: Path) -> None:
    """Make a job's store one of schema version 2: its states without hinge sums."""
    path = store / "manifest.json"
    manifest = json.loads(path.read_text())
    for entry in manifest["partitions"].values():
        state = se.read_state(store / entry["state"])
        old = replace(state.spec, schema_version=2)
        table = state.table.drop("hinge")
        se.State(old, table).write(store / entry["state"])
    manifest["state_schema_version"] = 2
    spec = json.loads(manifest["spec"])
    manifest["spec"] = json.dumps({**spec, "schema_version": 2}, sort_keys=True)
    path.write_text(json.dumps(manifest))


def test_a_store_of_version_2_runs_on_without_a_full_refresh(tmp_path: Path) -> None:
    source = write_log(tmp_path / "preds", "multiclass", days=3, rows=120)
    job = write_job(tmp_path / "job", source, "multiclass", windows='["1d", "all"]')
    run_job(job, quiet=True)
    _downgrade(tmp_path / "job" / "store")
    write_day(source, "multiclass", 3, 120)
    assert run_job(job, quiet=True).processed == 1  # the new day alone is read
    got = pl.read_parquet(tmp_path / "job" / "out" / "metrics", hive_partitioning=True)
    fresh = tmp_path / "fresh"
    run_job(write_job(fresh, source, "multiclass", windows='["1d", "all"]'), quiet=True)
    want = pl.read_parquet(fresh / "out" / "metrics", hive_partitioning=True)
    keys = ["segment", "window", "day"]
    got, want = got.sort(keys), want.select(got.columns).sort(keys)
    _same(got, want)
    # the new day's own window has its hinge loss; a window holding an old day has none
    new_day = (pl.col("window") == "1d") & (pl.col("day") == pl.col("day").max())
    fresh_hinge = want.filter(new_day)["hinge_loss"].to_list()
    assert got.filter(new_day)["hinge_loss"].to_list() == pytest.approx(fresh_hinge, rel=1e-12)
    assert got.filter(~new_day)["hinge_loss"].is_null().all()
    assert want["hinge_loss"].is_not_null().all()
    # the store's windows from the command line: the new day's own window has its hinge loss
    store = str(tmp_path / "job" / "store")
    windows = ["--by-window", "1d", "--by-window", "all", "--output", "-", "--format", "csv"]
    done = cli("state", "metrics", store, *windows)
    assert done.returncode == 0, done.stderr
    table = pl.read_csv(io_text(done.stdout))
    one_day = table.filter(pl.col("window") == "1d")
    assert one_day["hinge_loss"].is_not_null().all()
    assert table.filter(pl.col("window") == "all")["hinge_loss"].is_null().all()
    assert table.height == want.filter(pl.col("day") == pl.col("day").max()).height
