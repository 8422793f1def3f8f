"""Publishing a job's metric tables from the rollups kept in its store.

A Parquet output is a folder partitioned by the window's end day
(``out/day=2026-10-01/part-0.parquet``, the day also kept as a column); a CSV or JSON output is
one file. A file is written (atomically) only when its bytes change, so files whose content
is unchanged keep their modification time; files of days no longer in the source are
removed. The output folder of a Parquet output belongs to the job.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..files import atomic_write_bytes, remove_temporaries
from .config import JobConfig, OutputConfig
from .partitions import safe_name
from .rollup import digest_of
from .store import Store

PART = "part-0.parquet"


@dataclass
class Published:
    """What publishing did: files written, left as they were, and removed."""

    written: int = 0
    unchanged: int = 0
    removed: int = 0


def serialize(table: pl.DataFrame, fmt: str) -> bytes:
    """The bytes of a metric table in an output format."""
    if fmt == "csv":
        return table.write_csv().encode()
    if fmt == "json":
        return table.write_json().encode()
    buffer = io.BytesIO()
    table.write_parquet(buffer)
    return buffer.getvalue()


def _same(path: str, data: bytes) -> bool:
    try:
        return os.path.getsize(path) == len(data) and Path(path).read_bytes() == data
    except OSError:
        return False


def _put(path: str, data: bytes, done: Published, tag: str) -> None:
    if _same(path, data):
        done.unchanged += 1
    else:
        atomic_write_bytes(path, data, tag=tag)
        done.written += 1


def day_file(output: OutputConfig, key: str | None, name: str) -> str:
    """The Parquet file of one output day."""
    if key is None:
        return os.path.join(output.path, PART)
    return os.path.join(output.path, safe_name(f"{key}={name}"), PART)


def publish(
    job: JobConfig,
    store: Store,
    manifest: dict[str, Any],
    names: Sequence[str],
    save: Callable[[], None],
) -> Published:
    """Write every output from the rollups of ``names`` (the output days, in order).

    Before a Parquet output gains files, the manifest records them as ``pending`` (and is
    saved), so that a run killed while writing them still knows which files are its own.
    """
    done = Published()
    key = job.source.partition_key
    rollups = manifest["rollups"]
    records = manifest.setdefault("outputs", {})
    for name in [n for n in records if n not in [o.path for o in job.outputs]]:
        del records[name]
    tables: dict[str, pl.DataFrame] = {}

    def rows(name: str, output: OutputConfig) -> pl.DataFrame:
        if name not in tables:
            entry = rollups[name]
            what = f"the stored metric rows of {name!r}"
            tables[name] = store.read_table(entry["file"], entry.get("blake2b"), what)
        wanted = [w.name for w in output.windows]
        return tables[name].filter(pl.col("window").is_in(wanted))

    for output in job.outputs:
        settings = digest_of(output.format, [w.name for w in output.windows], key)
        days = {n: rollups[n]["digest"] for n in names}
        record = records.get(output.path) or {}
        same_settings = record.get("settings") == settings
        if output.format == "parquet":
            expected = {n: day_file(output, key, n) for n in names}
            owned = {day_file(output, key, n) for n in record.get("days", {})}
            owned |= set(record.get("pending", []))
            if not set(expected.values()) <= owned:
                records[output.path] = {**record, "pending": sorted(owned | {*expected.values()})}
                save()
            for n, path in expected.items():
                if (
                    same_settings
                    and record.get("days", {}).get(n) == days[n]
                    and os.path.exists(path)
                ):
                    done.unchanged += 1
                    continue
                _put(path, serialize(rows(n, output), "parquet"), done, store.tag)
            done.removed += _remove_others(output.path, owned - set(expected.values()), store.tag)
        else:
            if same_settings and record.get("days") == days and os.path.exists(output.path):
                done.unchanged += 1
            else:
                parts = [rows(n, output) for n in names]
                table = pl.concat(parts, how="vertical") if parts else pl.DataFrame()
                _put(output.path, serialize(table, output.format), done, store.tag)
            remove_temporaries(Path(output.path).parent, store.tag)
        records[output.path] = {"format": output.format, "settings": settings, "days": days}
    return done


def _remove_others(root: str, stale: set[str], tag: str) -> int:
    """Delete a Parquet output's files that the job wrote and no longer wants.

    ``stale`` holds only files the manifest records as written by the job; anything else in
    the folder (another program's files, foreign temporaries) is left alone.
    """
    base = Path(root)
    if not base.is_dir():
        return 0
    for folder in [base, *(d for d in base.iterdir() if d.is_dir() and not d.is_symlink())]:
        remove_temporaries(folder, tag)
    removed = 0
    for name in sorted(stale):
        p = Path(name)
        if p.is_file() and not p.is_symlink():
            p.unlink()
            removed += 1
        if p.parent != base and p.parent.is_dir() and not any(p.parent.iterdir()):
            p.parent.rmdir()
    return removed
