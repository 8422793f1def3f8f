"""State files are verified whole: a checksum over table and spec, and a spec that fits the table.

A state file read back is either the state written or a StateFileError naming the file —
never a silently different table or spec.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

import streameval as se
from streameval import io

ROWS = 300


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    p0 = rng.random(ROWS) / 2
    return pl.DataFrame(
        {
            "g": rng.choice(["a", "b", "c"], ROWS),
            "y": rng.integers(0, 2, ROWS),
            "p": rng.random(ROWS),
            "w": rng.random(ROWS) * 3,
            "c": rng.integers(0, 3, ROWS),
            "p0": p0,
            "p1": p0 / 2,
            "p2": 1 - p0 * 1.5,
            "f": rng.normal(size=ROWS),
        }
    )


KINDS: dict[str, dict[str, Any]] = {
    "binary": dict(label="y", score="p"),
    "binary-exact-weighted": dict(label="y", score="p", weight="w", precision="exact"),
    "multiclass": dict(task="multiclass", label="c", scores=["p0", "p1", "p2"]),
    "regression": dict(task="regression", label="p", prediction="f", weight="w"),
}


def state_of(frame: pl.DataFrame, kind: str) -> se.State:
    return se.accumulate(frame, by="g", **KINDS[kind])


def flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_flipped_bit_is_refused_or_changes_nothing(tmp_path, frame, kind):
    state = state_of(frame, kind)
    path = tmp_path / "s.parquet"
    state.write(path)
    good = path.read_bytes()
    outcomes = {"refused": 0, "identical": 0}
    for bit in random.Random(kind).sample(range(len(good) * 8), 250):
        path.write_bytes(flip(good, bit))
        try:
            back = se.read_state(path)
        except se.StateFileError as exc:
            assert str(path) in str(exc)
            outcomes["refused"] += 1
            continue
        assert back.spec == state.spec, f"bit {bit} changed the spec"
        assert back.table.equals(state.table, null_equal=True), f"bit {bit} changed the table"
        outcomes["identical"] += 1
    assert outcomes["refused"] > 150, outcomes


@pytest.mark.parametrize("kind", list(KINDS))
def test_round_trip_keeps_the_state_and_its_merges(tmp_path, frame, kind):
    state = state_of(frame, kind)
    state.write(tmp_path / "s.parquet")
    back = se.read_state(tmp_path / "s.parquet")
    assert back.spec == state.spec and back.table.equals(state.table, null_equal=True)
    assert (
        se.merge([back, state])
        .table.sort(pl.all())
        .equals(se.merge([state, state]).table.sort(pl.all()), null_equal=True)
    )


def test_round_trip_with_keys_of_every_common_type(tmp_path):
    n = 12
    df = pl.DataFrame(
        {
            "s": ["x", None, "yy"] * 4,
            "cat": pl.Series(["u", "v", None] * 4, dtype=pl.Categorical),
            "enum": pl.Series(["u", "v", "u"] * 4, dtype=pl.Enum(["u", "v"])),
            "d": [dt.date(2026, 1, 1), None, dt.date(2026, 1, 2)] * 4,
            "t": pl.Series([dt.datetime(2026, 1, 1, 3)] * n).dt.replace_time_zone("Europe/Paris"),
            "b": [True, False, None] * 4,
            "i": pl.Series([1, None, -3] * 4, dtype=pl.Int8),
            "x": [0.5, -0.0, None] * 4,
            "y": [0, 1] * 6,
            "p": [i / n for i in range(n)],
        }
    )
    state = se.accumulate(
        df, label="y", score="p", by=["s", "cat", "enum", "d", "t", "b", "i", "x"]
    )
    state.write(tmp_path / "s.parquet")
    back = se.read_state(tmp_path / "s.parquet")
    assert back.spec == state.spec and back.table.equals(state.table, null_equal=True)


def test_the_digest_depends_on_content_not_on_chunks(frame):
    table = state_of(frame, "multiclass").table
    chunked = pl.concat([table[:5], table[5:]], rechunk=False)
    assert chunked.n_chunks() > 1
    digest = io.content_digest(b"2", b"{}", table)
    assert io.content_digest(b"2", b"{}", chunked) == digest
    edited = table.with_columns(pl.col("n").cum_sum())
    assert io.content_digest(b"2", b"{}", edited) != digest


# --- the metadata edited by hand: spec changed, checksum not --------------------------------------


def rewrite(path: Path, edit: Callable[[dict[str, Any]], None], *, checksum: bool) -> None:
    """Rewrite the state file with its spec edited; with ``checksum``, a matching checksum."""
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    spec = json.loads(meta[b"streameval.spec"])
    edit(spec)
    meta[b"streameval.spec"] = json.dumps(spec, sort_keys=True).encode()
    if checksum:
        frame = pl.from_arrow(table.replace_schema_metadata(None))
        assert isinstance(frame, pl.DataFrame)
        digest = io.content_digest(
            meta[b"streameval.schema_version"], meta[b"streameval.spec"], frame
        )
        meta[b"streameval.checksum"] = f"{io.ALGORITHM}:{digest}".encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def setter(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda spec: spec.update(fields)


SPEC_EDITS = {
    "precision-5": setter(precision=5),
    "precision-52": setter(precision=52),
    "positive-0": setter(positive=0),
    "kind": setter(kind="regression"),
    "keys-empty": setter(keys=[]),
    "weighted": setter(weighted=True),
}


@pytest.mark.parametrize("edit", list(SPEC_EDITS))
def test_a_spec_edited_without_its_checksum_is_refused(tmp_path, frame, edit):
    path = tmp_path / "s.parquet"
    state_of(frame, "binary").write(path)
    rewrite(path, SPEC_EDITS[edit], checksum=False)
    with pytest.raises(se.StateFileError, match="checksum") as info:
        se.read_state(path)
    assert str(path) in str(info.value) and "hint" in str(info.value)


def test_a_table_edited_without_its_checksum_is_refused(tmp_path, frame):
    path = tmp_path / "s.parquet"
    state_of(frame, "binary").write(path)
    table = pq.read_table(path)
    state = pl.from_arrow(table.replace_schema_metadata(None))
    assert isinstance(state, pl.DataFrame)
    doubled = state.with_columns(pl.col("pos") * 2).to_arrow()
    pq.write_table(doubled.replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(se.StateFileError, match="checksum"):
        se.read_state(path)


def test_a_file_without_a_checksum_is_refused_with_a_hint_to_recompute(tmp_path, frame):
    path = tmp_path / "s.parquet"
    state_of(frame, "binary").write(path)
    table = pq.read_table(path)
    meta = {k: v for k, v in table.schema.metadata.items() if k != b"streameval.checksum"}
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(se.StateFileError, match=r"older streameval.*recompute"):
        se.read_state(path)


# --- checksum rewritten too: the spec must still fit the table ------------------------------------

CONTRADICTIONS = {
    "keys-empty": ("binary", setter(keys=[]), "extra 'g'"),
    "kind-regression": ("binary", setter(kind="regression"), "lacks 'part'"),
    "kind-binary": ("multiclass", setter(kind="binary"), "has extra"),
    "precision-x": ("binary", setter(precision="x"), "precision is 'x'"),
    "precision-52": ("binary", setter(precision=52), "has extra 'log_loss'"),
    "precision-5": ("binary", setter(precision=5), "bucket edges"),
    "weighted": ("binary", setter(weighted=True), "lacks 'n'"),
    "unweighted": ("binary-exact-weighted", setter(weighted=False), "has extra 'n'"),
    "keys-string": ("binary", setter(keys="g"), "keys is 'g'"),
    "unknown-field": ("binary", setter(colour="red"), "'colour' is not a spec field"),
    "precision-missing": ("binary", lambda spec: spec.pop("precision"), "'precision' is missing"),
    "kind-other": ("regression", setter(kind="forecast"), "kind is 'forecast'"),
}


@pytest.mark.parametrize("case", list(CONTRADICTIONS))
def test_a_spec_that_contradicts_its_table_is_refused(tmp_path, frame, case):
    kind, edit, found = CONTRADICTIONS[case]
    path = tmp_path / "s.parquet"
    state_of(frame, kind).write(path)
    rewrite(path, edit, checksum=True)
    with pytest.raises(se.StateFileError) as info:
        se.read_state(path)
    msg = str(info.value)
    assert found in msg and str(path) in msg and "hint" in msg and "\n" not in msg, msg


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '{"kind": "binary", "keys": [], "precision": "x"}',
        '{"kind": "binary", "keys": "g", "precision": 11}',
        '{"kind": "binary", "keys": [1], "precision": 11}',
        '{"kind": "binary", "keys": [], "precision": 53}',
        '{"kind": "binary", "keys": [], "precision": true}',
        '{"kind": "binary", "keys": []}',
        '{"kind": "binary", "keys": [], "precision": 11, "top_k": 0}',
        '{"kind": "binary", "keys": [], "precision": 11, "weighted": "yes"}',
        '{"kind": "binary", "keys": [], "precision": 11, "splits": ["a"]}',
        '{"kind": "binary", "keys": [], "precision": 11, "extra": 1}',
        '{"kind": "binary", "keys": ["g", "g"], "precision": 11}',
    ],
)
def test_a_malformed_spec_is_a_state_file_error_not_a_type_error(text):
    with pytest.raises(se.StateFileError, match="expected the state spec to be well formed"):
        se.Spec.from_json(text)


def test_a_spec_round_trips_through_json(frame):
    for kind in KINDS:
        spec = state_of(frame, kind).spec
        assert se.Spec.from_json(spec.to_json()) == spec


# --- the command line -----------------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streameval", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("checksum", [True, False], ids=["checksum-rewritten", "checksum-stale"])
def test_state_metrics_on_a_bad_spec_exits_2_with_one_line(tmp_path, frame, checksum):
    path = tmp_path / "s.parquet"
    state_of(frame, "binary").write(path)
    rewrite(path, setter(precision="x"), checksum=checksum)
    result = cli("state", "metrics", str(path))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("streameval: error:"), result.stderr
    assert str(path) in lines[0]
