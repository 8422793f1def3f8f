"""Delta Lake and Iceberg sources (optional extras ``streameval[delta]``, ``streameval[iceberg]``).

A table is read at one version (Delta) or snapshot (Iceberg), taken when the job lists its
partitions, so every partition is read as it was fingerprinted. With ``partition_key`` (a
partition column of the table, identity-partitioned for Iceberg) each of its values is a
source partition whose fingerprint lists the table's data files in it, as the table's log
describes them (path, size, modification time or delete files, record count): files are
immutable, so a partition changes exactly when its files do. Without a partition key the
whole table is one partition. Each partition is read with Polars' ``scan_delta`` /
``scan_iceberg`` and a filter on the partition column.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputError
from .partitions import Partition, parse_day

WHOLE = "table"


def _require(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(
            f"expected the package {module!r} for source.format = {extra!r}, but it is not "
            f"installed; hint: python -m pip install 'streameval[{extra}]'"
        ) from None


def _reader(scan: Callable[[], pl.LazyFrame], key: str, value: str) -> Callable[[], Any]:
    def open_partition() -> pl.LazyFrame:
        lf = scan()
        dtype = lf.collect_schema().get(key)
        if dtype == pl.Date:
            return lf.filter(pl.col(key) == date.fromisoformat(value)).drop(key)
        return lf.filter(pl.col(key).cast(pl.String) == value).drop(key)

    return open_partition


def _partitions(
    rows: list[tuple[str | None, list[Any]]],
    key: str | None,
    where: str,
    scan: Callable[[], pl.LazyFrame],
) -> list[Partition]:
    """Group ``(partition value, fingerprint row)`` pairs (rows end with a record count)."""
    groups: dict[str, list[list[Any]]] = {}
    for value, row in rows:
        groups.setdefault(WHOLE if key is None else str(value), []).append(row)
    out = []
    for value, members in groups.items():
        out.append(
            Partition(
                value=value,
                day=None if key is None else parse_day(value, key, where),
                fingerprint=sorted(members),
                rows=sum(int(r[-1] or 0) for r in members),
                files=len(members),
                open=scan if key is None else _reader(scan, key, value),
            )
        )
    return sorted(out, key=lambda p: (p.day or date.min, p.value))


def discover_table(source: Any, base: str) -> list[Partition]:
    """The partitions of a Delta or Iceberg table source."""
    if source.format == "delta":
        return _delta(source)
    return _iceberg(source)


def _delta(source: Any) -> list[Partition]:
    deltalake = _require("deltalake", "delta")
    import pyarrow as pa

    if len(source.paths) != 1:
        raise InputError(f"expected one Delta table in source.paths, got {len(source.paths)}")
    path = source.paths[0]
    try:
        table = deltalake.DeltaTable(path)
    except Exception as exc:
        raise InputError(f"cannot open the Delta table {path!r} ({exc})") from None
    version = table.version()
    key = source.partition_key
    if key is not None and key not in table.metadata().partition_columns:
        raise InputError(
            f"expected {key!r} to be a partition column of the Delta table {path!r}, but its "
            f"partition columns are {table.metadata().partition_columns}; hint: set "
            "source.partition_key to one of them, or leave it out to read the whole table"
        )
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    extra = sorted({c for a in actions for c in a if c.startswith("deletionVector")})
    rows = []
    for a in actions:
        row = [a["path"], a["size_bytes"], a["modification_time"], *(a.get(c) for c in extra)]
        value = a.get(f"partition.{key}") if key else None
        rows.append((None if value is None else _text(value), [*row, a.get("num_records")]))
    return _partitions(rows, key, path, lambda: pl.scan_delta(path, version=version))


def _text(value: Any) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


def _iceberg_table(source: Any) -> Any:
    if source.table:
        catalog_module = _require("pyiceberg.catalog", "iceberg")
        props = dict(source.catalog)
        name = props.pop("name", "default")
        try:
            return catalog_module.load_catalog(name, **props).load_table(source.table)
        except Exception as exc:
            raise InputError(f"cannot load the Iceberg table {source.table!r} ({exc})") from None
    table_module = _require("pyiceberg.table", "iceberg")
    if len(source.paths) != 1:
        raise InputError(f"expected one Iceberg table in source.paths, got {len(source.paths)}")
    path = source.paths[0]
    if os.path.isdir(path):
        found = sorted(Path(path, "metadata").glob("*.metadata.json"), key=_metadata_order)
        if not found:
            raise InputError(f"expected Iceberg metadata files under {path!r}/metadata, found none")
        path = str(found[-1])
    try:
        return table_module.StaticTable.from_metadata(path)
    except Exception as exc:
        raise InputError(f"cannot open the Iceberg table metadata {path!r} ({exc})") from None


def _metadata_order(p: Path) -> tuple[int, str]:
    digits = "".join(ch for ch in p.name.split("-")[0].split(".")[0] if ch.isdigit())
    return (int(digits) if digits else -1, p.name)


def _iceberg(source: Any) -> list[Partition]:
    table = _iceberg_table(source)
    snapshot = table.current_snapshot()
    where = source.table or source.paths[0]
    if snapshot is None:
        raise InputError(f"expected data in the Iceberg table {where!r}, found no snapshot")
    key = source.partition_key
    index = None
    if key is not None:
        schema = table.schema()
        names = [
            (i, schema.find_field(f.source_id).name, str(f.transform))
            for i, f in enumerate(table.spec().fields)
        ]
        matches = [i for i, name, transform in names if name == key and transform == "identity"]
        if not matches:
            raise InputError(
                f"expected the Iceberg table {where!r} to be identity-partitioned by {key!r}, "
                f"but its partition fields are {[(n, t) for _, n, t in names]}; hint: leave "
                "source.partition_key out to read the whole table as one partition"
            )
        index = matches[0]
    rows = []
    for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
        f = task.file
        deletes = sorted(d.file_path for d in task.delete_files)
        value = f.partition[index] if index is not None else None
        if (
            isinstance(value, int)
            and key
            and "date" in str(table.schema().find_field(key).field_type)
        ):
            value = date(1970, 1, 1) + timedelta(days=value)
        row = [f.file_path, f.file_size_in_bytes, deletes, f.record_count]
        rows.append((None if value is None else _text(value), row))
    snapshot_id = snapshot.snapshot_id
    return _partitions(rows, key, where, lambda: pl.scan_iceberg(table, snapshot_id=snapshot_id))
