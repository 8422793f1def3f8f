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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..files import atomic_write_bytes, remove_temporaries
from .config import JobConfig, OutputConfig
from .partitions import safe_name
from .store import Store, bytes_digest, digest_of, file_digest

PART = "part-0.parquet"


@dataclass
class Published:
    """What publishing did: files written, left as they were, and removed.

    ``checks_seconds``: the time it took to publish the checks table.
    """

    written: int = 0
    unchanged: int = 0
    removed: int = 0
    checks_seconds: float = 0.0


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


def _put(path: str, data: bytes, done: Published, tag: str) -> str:
    """Write ``data`` to ``path`` unless it already holds exactly that; return its digest."""
    if _same(path, data):
        done.unchanged += 1
    else:
        atomic_write_bytes(path, data, tag=tag)
        done.written += 1
    return bytes_digest(data)


def _holds(path: str, digest: str | None) -> bool:
    """Whether the file at ``path`` still holds the bytes the manifest recorded."""
    try:
        return digest is not None and file_digest(path) == digest
    except OSError:
        return False


def day_file(output: OutputConfig, key: str | None, name: str) -> str:
    """The Parquet file of one output day."""
    if key is None:
        return os.path.join(output.path, PART)
    return os.path.join(output.path, safe_name(f"{key}={name}"), PART)


def checks_output(job: JobConfig) -> OutputConfig | None:
    """The checks table as an output (``[checking] output``), or None."""
    if job.checking.output is None or not job.checks:
        return None
    return OutputConfig(job.checking.output, job.checking.format, ())


def publish(
    job: JobConfig,
    store: Store,
    manifest: dict[str, Any],
    names: Sequence[str],
    save: Callable[[], None],
    judged: Sequence[str] = (),
    *,
    metrics: bool = True,
) -> Published:
    """Write every output from the rollups of ``names`` (the output days, in order).

    The checks table (``[checking] output``) is written from the stored check rows of the
    days ``judged``; ``metrics=False`` writes it alone. A Parquet output that takes every
    row of a day (the checks table; metric rows of every window the job computes) gets
    the stored file's bytes, checked against their digest, as they are. Before a Parquet
    output gains files, the manifest records them as ``pending`` (and is saved), so that a
    run killed while writing them still knows which files are its own.
    """
    done = Published()
    key = job.source.partition_key
    records = manifest.setdefault("outputs", {})
    checks = checks_output(job)
    targets = [(o, "rollups", names) for o in job.outputs] if metrics else []
    if checks is not None:
        targets.append((checks, "checks", judged))
    paths = [o.path for o in job.outputs] + ([checks.path] if checks is not None else [])
    for name in [n for n in records if n not in paths]:
        del records[name]
    tables: dict[tuple[str, str], pl.DataFrame] = {}

    every = {w.name for w in job.windows}

    def what(name: str, cache: str) -> str:
        return f"the stored {'metric' if cache == 'rollups' else 'check'} rows of {name!r}"

    def rows(name: str, output: OutputConfig, cache: str) -> pl.DataFrame:
        if (cache, name) not in tables:
            entry = manifest[cache][name]
            tables[cache, name] = store.read_table(
                entry["file"], entry.get("blake2b"), what(name, cache)
            )
        if not output.windows:
            return tables[cache, name]
        wanted = [w.name for w in output.windows]
        return tables[cache, name].filter(pl.col("window").is_in(wanted))

    def parquet(name: str, output: OutputConfig, cache: str) -> bytes:
        """A day's rows as Parquet: the stored file's bytes where the output takes them all."""
        entry = manifest[cache][name]
        whole = not output.windows or {w.name for w in output.windows} == every
        if whole and entry.get("blake2b") and (cache, name) not in tables:
            return store.read_bytes(entry["file"], entry["blake2b"], what(name, cache))
        return serialize(rows(name, output, cache), "parquet")

    for output, cache, names in targets:
        started = time.monotonic()
        settings = digest_of(output.format, [w.name for w in output.windows], key)
        days = {n: manifest[cache][n]["digest"] for n in names}
        record = records.get(output.path) or {}
        same = record.get("settings") == settings
        recorded: dict[str, str] = record.get("files") or {}
        files: dict[str, str] = {}
        if output.format == "parquet":
            expected = {n: day_file(output, key, n) for n in names}
            owned = set(recorded) | set(record.get("pending", []))
            owned |= {day_file(output, key, n) for n in record.get("days", {})}
            if not set(expected.values()) <= owned:
                records[output.path] = {**record, "pending": sorted(owned | {*expected.values()})}
                save()
            for n, path in expected.items():
                fresh = same and record.get("days", {}).get(n) == days[n]
                if fresh and _holds(path, recorded.get(path)):
                    done.unchanged += 1
                    files[path] = recorded[path]
                    continue
                files[path] = _put(path, parquet(n, output, cache), done, store.tag)
            stale = owned - set(expected.values())
            done.removed += _remove_others(output.path, stale, recorded, store.tag)
        else:
            path = output.path
            if same and record.get("days") == days and _holds(path, recorded.get(path)):
                done.unchanged += 1
                files[path] = recorded[path]
            else:
                parts = [rows(n, output, cache) for n in names]
                table = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()
                files[path] = _put(path, serialize(table, output.format), done, store.tag)
            remove_temporaries(Path(output.path).parent, store.tag)
        records[output.path] = {
            "format": output.format, "settings": settings, "days": days, "files": files
        }  # fmt: skip
        if cache == "checks":
            done.checks_seconds += time.monotonic() - started
    return done


def _remove_others(root: str, stale: set[str], recorded: dict[str, str], tag: str) -> int:
    """Delete a Parquet output's files that the job wrote and no longer wants.

    ``stale`` holds only files the manifest records as the job's; a file whose recorded
    digest it no longer matches (rewritten by somebody else since) is left alone, as is
    anything else in the folder (another program's files, foreign temporaries).
    """
    base = Path(root)
    if not base.is_dir():
        return 0
    for folder in [base, *(d for d in base.iterdir() if d.is_dir() and not d.is_symlink())]:
        remove_temporaries(folder, tag)
    removed = 0
    for name in sorted(stale):
        p = Path(name)
        ours = name not in recorded or _holds(name, recorded[name])
        if ours and p.is_file() and not p.is_symlink():
            p.unlink()
            removed += 1
        if p.parent != base and p.parent.is_dir() and not any(p.parent.iterdir()):
            p.parent.rmdir()
    return removed
