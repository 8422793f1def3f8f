"""State table types on Spark: each Polars type of a state column and what carries it there.

Spark has no unsigned integers and reads Arrow strings as ``string``, so a state table leaves
the executors cast to the Arrow types below and comes back cast to its Polars schema (the
driver knows it: it is the schema of the state of no rows). Only the types a state column can
have are mapped: its group keys (which came from Spark, so they are Spark types) and the
integer and float columns of the state kinds.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa

from ..errors import InputError

_SIMPLE: dict[pl.DataType, tuple[str, pa.DataType]] = {
    pl.Boolean(): ("BooleanType", pa.bool_()),
    pl.Int8(): ("ByteType", pa.int8()),
    pl.Int16(): ("ShortType", pa.int16()),
    pl.Int32(): ("IntegerType", pa.int32()),
    pl.Int64(): ("LongType", pa.int64()),
    pl.UInt8(): ("ShortType", pa.int16()),
    pl.UInt16(): ("IntegerType", pa.int32()),
    pl.UInt32(): ("LongType", pa.int64()),
    pl.Float32(): ("FloatType", pa.float32()),
    pl.Float64(): ("DoubleType", pa.float64()),
    pl.String(): ("StringType", pa.string()),
    pl.Binary(): ("BinaryType", pa.binary()),
    pl.Date(): ("DateType", pa.date32()),
}


def carrier(name: str, dtype: pl.DataType) -> tuple[str, tuple[Any, ...], pa.DataType]:
    """(Spark type name, its arguments, Arrow type) carrying a state column of type ``dtype``.

    >>> carrier("replicate", pl.UInt16())
    ('IntegerType', (), DataType(int32))
    >>> carrier("day", pl.Datetime("us", "UTC"))[:2]
    ('TimestampType', ())
    """
    if dtype in _SIMPLE:
        spark, arrow = _SIMPLE[dtype]
        return spark, (), arrow
    if isinstance(dtype, pl.Decimal):
        precision = dtype.precision or 38
        return "DecimalType", (precision, dtype.scale), pa.decimal128(precision, dtype.scale)
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is None:
            return "TimestampNTZType", (), pa.timestamp("us")
        return "TimestampType", (), pa.timestamp("us", tz="UTC")
    raise InputError(
        f"expected group keys of a type Spark can hold (numbers, strings, booleans, dates, "
        f"timestamps, decimals), got {name!r} of type {dtype}; hint: cast the key in Spark"
    )


def spark_schema(schema: pl.Schema) -> tuple[Any, pa.Schema]:
    """The Spark ``StructType`` and the Arrow schema that carry a state table of ``schema``."""
    from pyspark.sql import types

    fields, arrow = [], []
    for name, dtype in schema.items():
        spark, args, arrow_type = carrier(name, dtype)
        fields.append(types.StructField(name, getattr(types, spark)(*args), nullable=True))
        arrow.append(pa.field(name, arrow_type))
    return types.StructType(fields), pa.schema(arrow)


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
    "TimestampType": pl.Datetime("us", "UTC"),
    "TimestampNTZType": pl.Datetime("us"),
}


def polars_type(spark_type: Any) -> pl.DataType:
    """The Polars type executors see for a Spark column type (Null where none applies).

    Timestamps are instants: executors see them in the session's time zone, the state
    carries them in UTC (:func:`carrier`).
    """
    name = type(spark_type).__name__
    if name == "DecimalType":
        return pl.Decimal(spark_type.precision, spark_type.scale)
    return _FROM_SPARK.get(name, pl.Null())


def empty_frame(spark_schema: Any) -> pl.DataFrame:
    """A Polars DataFrame of no rows with the types executors see for a Spark schema."""
    return pl.DataFrame(schema={f.name: polars_type(f.dataType) for f in spark_schema.fields})
