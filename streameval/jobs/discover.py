"""The partitions of a job's source, by its kind: Parquet files, a Delta or Iceberg table, Spark."""

from __future__ import annotations

from typing import Any

from .partitions import Partition, discover_files
from .sparksource import discover_spark
from .tables import discover_table


def discover(source: Any, base: str) -> list[Partition]:
    """The partitions of a job's source (Parquet files, a Delta or Iceberg table, or Spark)."""
    if source.engine == "spark":
        return discover_spark(source)
    if source.format == "parquet":
        content = source.fingerprint == "content"
        return discover_files(source.paths, source.partition_key, base=base, content=content)
    return discover_table(source, base)
