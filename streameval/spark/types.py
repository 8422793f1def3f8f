"""The Polars types executors see for Spark's column types, for validating on the driver.

The driver checks the inputs on a Polars frame of no rows with the types the executors'
Arrow batches will have (:func:`empty_frame`); its state of no rows then gives the spec and
the state's column types.
"""

from __future__ import annotations

from typing import Any

import polars as pl

_FROM_SPARK: dict[str, pl.DataType] = {
    "BooleanType": pl.Boolean(),
    "ByteType": pl.Int8(),
    "ShortType": pl.Int16(),
    "IntegerType": pl.Int32(),
    "LongType": pl.Int64(),
    "FloatType": pl.Float32(),
    "DoubleType": pl.Float64(),
    "StringType": pl.String(),
    "CharType": pl.String(),
    "VarcharType": pl.String(),
    "BinaryType": pl.Binary(),
    "DateType": pl.Date(),
    "TimestampNTZType": pl.Datetime("us"),
}


def polars_type(spark_type: Any, time_zone: str = "UTC") -> pl.DataType:
    """The Polars type executors see for a Spark column type (Null where none applies).

    >>> from pyspark.sql import types  # doctest: +SKIP
    >>> polars_type(types.TimestampType(), "Europe/Paris")  # doctest: +SKIP
    Datetime(time_unit='us', time_zone='Europe/Paris')

    Timestamps (instants) arrive in the session's time zone; an array of a type is a list of
    it (a multilabel task's list of labels).
    """
    name = type(spark_type).__name__
    if name == "ArrayType":
        inner = polars_type(spark_type.elementType, time_zone)
        return pl.Null() if inner == pl.Null() else pl.List(inner)
    if name == "DecimalType":
        return pl.Decimal(spark_type.precision, spark_type.scale)
    if name == "TimestampType":
        return pl.Datetime("us", time_zone)
    return _FROM_SPARK.get(name, pl.Null())


def empty_frame(spark_schema: Any, time_zone: str = "UTC") -> pl.DataFrame:
    """A Polars DataFrame of no rows with the types executors see for a Spark schema."""
    types = {f.name: polars_type(f.dataType, time_zone) for f in spark_schema.fields}
    return pl.DataFrame(schema=types)
