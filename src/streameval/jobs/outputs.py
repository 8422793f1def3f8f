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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from .config import JobConfig, OutputConfig
from .partitions import safe_name
from .rollup import digest_of
from .store import Store, atomic_write_bytes

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


def _put(path: str, data: bytes, done: Published) -> None:
    if _same(path, data):
        done.unchanged += 1
    else:
        atomic_write_bytes(path, data)
        done.written += 1


def day_file(output: OutputConfig, key: str | None, name: str) -> str:
    """The Parquet file of one output day."""
    if key is None:
        return os.path.join(output.path, PART)
    return os.path.join(output.path, safe_name(f"{key}={name}"), PART)


def publish(
    job: JobConfig, store: Store, manifest: dict[str, Any], names: Sequence[str]
) -> Published:
    """Write every output from the rollups of ``names`` (the output days, in order)."""
    done = Published()
    key = job.source.partition_key
    rollups = manifest["rollups"]
    records = manifest.setdefault("outputs", {})
    for name in [n for n in records if n not in [o.path for o in job.outputs]]:
        del records[name]
    tables: dict[str, pl.DataFrame] = {}

    def rows(name: str, output: OutputConfig) -> pl.DataFrame:
        if name not in tables:
            tables[name] = pl.read_parquet(store.path(rollups[name]["file"]))
        wanted = [w.name for w in output.windows]
        return tables[name].filter(pl.col("window").is_in(wanted))

    for output in job.outputs:
        settings = digest_of(output.format, [w.name for w in output.windows], key)
        days = {n: rollups[n]["digest"] for n in names}
        record = records.get(output.path) or {}
        same_settings = record.get("settings") == settings
        if output.format == "parquet":
            expected = {n: day_file(output, key, n) for n in names}
            for n, path in expected.items():
                if (
                    same_settings
                    and record.get("days", {}).get(n) == days[n]
                    and os.path.exists(path)
                ):
                    done.unchanged += 1
                    continue
                _put(path, serialize(rows(n, output), "parquet"), done)
            done.removed += _remove_others(output.path, key, set(expected.values()))
        else:
            if same_settings and record.get("days") == days and os.path.exists(output.path):
                done.unchanged += 1
            else:
                parts = [rows(n, output) for n in names]
                table = pl.concat(parts, how="vertical") if parts else pl.DataFrame()
                _put(output.path, serialize(table, output.format), done)
            _remove_temporaries(Path(output.path).parent)
        records[output.path] = {"format": output.format, "settings": settings, "days": days}
    return done


def _remove_temporaries(folder: Path) -> None:
    for p in folder.glob(".*.tmp") if folder.is_dir() else []:
        p.unlink(missing_ok=True)


def _remove_others(root: str, key: str | None, keep: set[str]) -> int:
    """Delete the job's files in a Parquet output folder that are no longer wanted."""
    base = Path(root)
    if not base.is_dir():
        return 0
    _remove_temporaries(base)
    removed = 0
    pattern = f"{key}=*/{PART}" if key else PART
    for p in base.glob(pattern):
        if str(p) not in keep:
            p.unlink(missing_ok=True)
            removed += 1
    for folder in base.glob(f"{key}=*") if key else []:
        _remove_temporaries(folder)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return removed
