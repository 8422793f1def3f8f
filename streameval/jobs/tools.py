"""``streameval state inspect|merge|metrics``: looking into a state store or state files.

>>> import tempfile, os, polars as pl, streameval as se
>>> folder = tempfile.mkdtemp()
>>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
>>> se.accumulate(df[:2], label="y", score="p").write(f"{folder}/a.parquet")
>>> se.accumulate(df[2:], label="y", score="p").write(f"{folder}/b.parquet")
>>> load_states([f"{folder}/a.parquet", f"{folder}/b.parquet"]).metrics()["roc_auc"].item()
0.75
>>> print(inspect_text(f"{folder}/a.parquet").splitlines()[0])
state file .../a.parquet: binary state, schema version ..., 2 rows, ... bytes
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any

import polars as pl

from .. import progress
from ..errors import InputError, StateFileError
from ..state import State, merge, metrics_by_version, read_state
from .partitions import parse_day
from .store import MANIFEST, Store
from .windows import parse_window


def is_store(path: str) -> bool:
    """Whether ``path`` is a store folder (it holds a manifest)."""
    return os.path.isdir(path) and os.path.exists(os.path.join(path, MANIFEST))


def _manifest(path: str) -> tuple[Store, dict[str, Any]]:
    store = Store(path)
    manifest = store.read_manifest()
    if manifest is None:
        raise StateFileError(f"expected a store manifest in {path!r}, found none")
    return store, manifest


def _size(n: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n} GB"  # pragma: no cover


def inspect_text(path: str, *, files: bool = False) -> str:
    """A readable description of a store (or a state file)."""
    if not is_store(path):
        if os.path.isdir(path):
            raise StateFileError(
                f"expected a state store (a folder with {MANIFEST}) or a state file, got the "
                f"folder {path!r}; hint: point at the job's store.path"
            )
        state = read_state(path)
        spec = state.spec
        return (
            f"state file {path}: {spec.kind} state, schema version {spec.schema_version}, "
            f"{state.table.height:,} rows, {os.path.getsize(path):,} bytes\n"
            f"spec: {spec.to_json()}\ncolumns: {', '.join(state.table.columns)}"
        )
    m = _manifest(path)[1]
    parts = m.get("partitions", {})
    lines = [
        f"store {path}: store format {m.get('store_format')}, state schema version "
        f"{m.get('state_schema_version')}, written by {m.get('written_by')}",
        f"spec: {m.get('spec')}",
        f"job settings: {json.dumps(m.get('identity'), sort_keys=True)}",
        f"{len(parts)} partition(s), {sum(e['rows'] for e in parts.values()):,} source rows, "
        f"{_size(sum(e['state_bytes'] for e in parts.values()))} of state:",
    ]
    key = (m.get("identity") or {}).get("partition_key")
    for value, e in sorted(parts.items()):
        name = f"{key}={value}" if key else value
        lines.append(
            f"  {name}  {e['files']} file(s)  {e['rows']:,} rows  state {e['state_rows']:,} rows "
            f"{_size(e['state_bytes'])}  fingerprint {e['digest']}  {e['state']}"
        )
        for rel, size, mtime_ns, rows in e["fingerprint"] if files else []:
            lines.append(f"      {rel}  {size:,} bytes  mtime_ns {mtime_ns}  {rows:,} rows")
    lines.append(f"rollups: {len(m.get('rollups', {}))} day(s)")
    running = m.get("running") or {}
    if running:
        lines.append(f"running windows at {running.get('value')}: {', '.join(running['files'])}")
    for out, record in sorted(m.get("outputs", {}).items()):
        lines.append(f"output {out} ({record.get('format')}): {len(record.get('days', {}))} day(s)")
    return "\n".join(lines)


def store_states(path: str) -> list[State]:
    """Every partition state of a store, in partition order."""
    store, m = _manifest(path)
    parts = m.get("partitions", {})
    if not parts:
        raise StateFileError(f"expected states in the store {path!r}, found none")
    return [store.read_state(e["state"], f"partition {v!r}") for v, e in sorted(parts.items())]


def load_states(paths: Sequence[str]) -> State:
    """Merge state files and stores into one state."""
    states: list[State] = []
    progress.expect(len(paths), "inputs")
    for p in paths:
        states.extend(store_states(p) if is_store(p) else [read_state(p)])
        progress.step(name=os.path.basename(os.path.normpath(p)))
    return merge(states)


def _end_day(end: str) -> date:
    try:
        return date.fromisoformat(end)
    except ValueError:
        raise InputError(
            f"expected --end to be a day like 2026-10-01, got {end!r}; hint: the windows end "
            "on that day (default: the store's last day)"
        ) from None


def window_metrics(
    path: str, windows: Sequence[str], end: str | None, options: dict[str, Any]
) -> pl.DataFrame:
    """Metric rows of windows ending at ``end`` (default: the store's last day)."""
    store, m = _manifest(path)
    key = (m.get("identity") or {}).get("partition_key")
    if key is None:
        raise InputError(
            f"expected a store with dated partitions for --by-window, but {path!r} has no "
            "partition key; hint: drop --by-window to merge all its states"
        )
    parts = m.get("partitions", {})
    days = {v: parse_day(v, key, path) for v in parts}
    if not days:
        raise StateFileError(f"expected states in the store {path!r}, found none")
    last = _end_day(end) if end else max(days.values())
    tables: dict[int, list[pl.DataFrame]] = {}  # by schema version (a store's older states)
    spec = None
    for text in windows:
        try:
            window = parse_window(text)
        except ValueError as exc:
            raise InputError(f"--by-window: {exc}") from None
        members = sorted((d, v) for v, d in days.items() if window.contains(d, last))
        if not members:
            continue
        states = [store.read_state(parts[v]["state"], f"partition {v!r}") for _, v in members]
        merged = merge(states)
        spec = merged.spec
        tables.setdefault(spec.schema_version, []).append(
            merged.table.with_columns(
                pl.lit(window.name).alias("window"),
                pl.lit(last, pl.Date).alias(key),
                pl.lit(len(members), pl.Int32).alias("days"),
            )
        )
    if spec is None:
        raise InputError(
            f"expected partitions on or before {last}, found none in {path!r}; hint: its first "
            f"day is {min(days.values())}: pass a later --end"
        )
    keyed = replace(spec, keys=(*spec.keys, "window", key, "days"))
    out = metrics_by_version(keyed, tables, **options)
    head = [*spec.keys, "window", key, "days"]
    return out.select(*head, *[c for c in out.columns if c not in head])
