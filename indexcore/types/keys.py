"""Index keys: the integer every index uses for a temporal or decimal value, and a float's raw bits."""

from __future__ import annotations

import decimal
import struct
from typing import Any

from indexcore.errors import UnsupportedError
from indexcore.types.data_type import INTEGER_ROOTS, TIMESTAMP_ROOTS, DataType
from indexcore.types.timestamp import Timestamp


def timestamp_key(dtype: DataType, ts: Timestamp) -> int:
    """Indexes key timestamps by epoch millis when p <= 3 and by epoch micros (truncated) above."""
    return ts.millis if (dtype.precision or 0) <= 3 else ts.to_micros()


def timestamp_from_key(dtype: DataType, key: int) -> Timestamp:
    return Timestamp(key, 0) if (dtype.precision or 0) <= 3 else Timestamp.from_micros(key)


def decimal_unscaled(dtype: DataType, value: decimal.Decimal) -> int:
    return int(value.scaleb(dtype.scale or 0).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def decimal_from_unscaled(dtype: DataType, unscaled: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-(dtype.scale or 0))



def float_bits(dtype: DataType, value: float) -> int:
    """Raw IEEE bits (Java ``floatToRawIntBits`` / ``doubleToRawLongBits``)."""
    if dtype.root == "FLOAT":
        return struct.unpack(">I", struct.pack(">f", value))[0]
    return struct.unpack(">Q", struct.pack(">d", value))[0]


def to_long(dtype: DataType, value: Any) -> int:
    """The 64-bit integer an index keys this value by (ints, DATE, TIME, TIMESTAMP, DECIMAL)."""
    r = dtype.root
    if r in INTEGER_ROOTS or r in ("DATE", "TIME"):
        return int(value)
    if r in TIMESTAMP_ROOTS:
        return timestamp_key(dtype, value)
    if r == "DECIMAL":
        return decimal_unscaled(dtype, value)
    if r == "BOOLEAN":
        return 1 if value else 0
    raise UnsupportedError(f"{dtype} has no integer index key")
