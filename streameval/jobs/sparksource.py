"""Spark sources of a job (``source.engine = "spark"``): a catalog table or paths Spark reads.

The session is the one the job asks for: ``[source.spark]`` may give ``master`` or ``remote``
(a Spark Connect URL) and any ``spark.*`` settings; without them the active session (or the
one ``spark-submit`` configured) is used. Partitions are the values of ``partition_key``.

A partition's fingerprint lists its data files (``DataFrame.inputFiles()``, whose paths carry
``key=value`` in hive-laid-out tables: Parquet directories, Delta and Iceberg tables, Hive
tables) and its row count. Data files are written once, under new names, so a partition
changes exactly when its file list does. When the file paths do not carry the key, each
partition's fingerprint is its row count and the sum of a 64-bit hash of its rows, from one
Spark aggregation over the table. Each changed partition is then accumulated on Spark
(:func:`streameval.spark.accumulate`) with a filter on the key, which Spark prunes to its
files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from ..errors import InputError
from ..spark import functions, spark_action
from .partitions import Partition, parse_day
from .tables import WHOLE


def session(options: Mapping[str, str]) -> Any:
    """The Spark session a job asks for (``master``, ``remote`` and settings)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError(
            "expected pyspark for source.engine = 'spark', but it is not installed; "
            "hint: python -m pip install 'streameval[spark]'"
        ) from None
    builder = SparkSession.builder
    settings = dict(options)
    if "remote" in settings:
        builder = builder.remote(settings.pop("remote"))
    if "master" in settings:
        builder = builder.master(settings.pop("master"))
    for name, value in settings.items():
        builder = builder.config(name, value)
    return builder.getOrCreate()


def read(source: Any, spark: Any) -> Any:
    """The source as a Spark DataFrame."""
    try:
        if source.table:
            return spark.table(source.table)
        return spark.read.format(source.format).load(list(source.paths))
    except Exception as exc:
        where = source.table or ", ".join(source.paths)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read {where!r} with Spark ({first[:300]})") from None


def _key_value(path: str, key: str) -> str | None:
    """The value of ``key`` in a hive-laid-out file path (``.../day=2026-10-01/part-0``)."""
    for part in path.replace("\\", "/").split("/")[:-1]:
        name, sep, value = part.partition("=")
        if sep and unquote(name) == key:
            return unquote(value)
    return None


def _reader(df: Any, key: str, value: str) -> Callable[[], Any]:
    def open_partition() -> Any:
        return df.where(df[key].cast("string") == value).drop(key)

    return open_partition


def discover_spark(source: Any) -> list[Partition]:
    """The partitions of a Spark source, with their fingerprints and row counts."""
    spark = session(source.spark)
    df = read(source, spark)
    key = source.partition_key
    where = source.table or ", ".join(source.paths)
    if key is not None and key not in df.columns:
        raise InputError(
            f"expected a partition key column {key!r} in {where!r}, found columns "
            f"{df.columns}; hint: set source.partition_key to the column holding the date"
        )
    files = sorted(spark_action(df.inputFiles))
    if key is None:
        rows = int(spark_action(df.count))
        fingerprint = [[f] for f in files] + [["rows", rows]]
        return [Partition(WHOLE, None, fingerprint, rows, len(files), lambda: df)]
    counts = spark_action(
        lambda: df.groupBy(df[key].cast("string").alias("value")).count().collect()
    )
    by_value: dict[str, list[list[Any]]] = {}
    keyed = [(f, _key_value(f, key)) for f in files]
    if files and all(value is not None for _, value in keyed):
        for f, value in keyed:
            by_value.setdefault(str(value), []).append([f])
    else:
        by_value = _content_hashes(df, key)
    out = []
    for row in counts:
        value, rows = row["value"], int(row["count"])
        if value is None:
            raise InputError(
                f"expected a value of {key!r} in every row of {where!r}, found {rows} null(s); "
                "hint: filter them out or fill them"
            )
        members = by_value.get(value, [])
        out.append(
            Partition(
                value=value,
                day=parse_day(value, key, where),
                fingerprint=[*sorted(members), ["rows", rows]],
                rows=rows,
                files=max(1, sum(1 for m in members if len(m) == 1)),
                open=_reader(df, key, value),
            )
        )
    return sorted(out, key=lambda p: (p.day, p.value))


def _content_hashes(df: Any, key: str) -> dict[str, list[list[Any]]]:
    """Per key value, the sum of a 64-bit hash of every row (one aggregation)."""
    F = functions(df)
    rows = spark_action(
        lambda: (
            df.groupBy(df[key].cast("string").alias("value"))
            .agg(F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)")).alias("hash"))
            .collect()
        )
    )
    return {row["value"]: [["hash", str(row["hash"])]] for row in rows}
