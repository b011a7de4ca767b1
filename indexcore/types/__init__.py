"""Paimon data types, parsed from their SQL strings, and the value codecs the indexes need.

Internal values (what every format, predicate and evaluator works with) follow Paimon's
internal data structures:

=====================  ===========================================================
type                   internal Python value
=====================  ===========================================================
TINYINT..BIGINT        ``int``
FLOAT, DOUBLE          ``float`` (``-0.0`` and NaN kept; FLOAT values are float32-exact)
CHAR, VARCHAR, STRING  ``str`` (the index never pads CHAR)
BINARY, VARBINARY      ``bytes``
BOOLEAN                ``bool``
DATE                   ``int`` days since 1970-01-01
TIME(p)                ``int`` milliseconds of the day
TIMESTAMP(p)[_LTZ]     :class:`Timestamp` (epoch millis, nanos of the milli)
DECIMAL(p, s)          ``decimal.Decimal``
=====================  ===========================================================

* :mod:`.data_type` - :class:`DataType` and :class:`DataField`, parsed from SQL strings and schema JSON.
* :mod:`.timestamp` - :class:`Timestamp` and its text form.
* :mod:`.keys` - the integer an index keys a value by (temporal, decimal) and a float's raw bits.
* :mod:`.codecs` - internal values to and from JSON, Python values and literal text.
* :mod:`.values` - Arrow columns to and from internal values, and Paimon's casts.
"""

from indexcore.types.codecs import (
    float32,
    from_json,
    from_text_or_python,
    json_as_is,
    millis_json_values,
    to_json_value,
    to_json_values,
    to_python,
)
from indexcore.types.data_type import (
    BINARY_ROOTS,
    FLOAT_ROOTS,
    INT_BITS,
    INTEGER_ROOTS,
    MAX_LENGTH,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    DataField,
    DataType,
    field_type_from_json,
    parse_type,
    type_from_json,
)
from indexcore.types.keys import (
    decimal_from_unscaled,
    decimal_unscaled,
    float_bits,
    timestamp_from_key,
    timestamp_key,
    to_long,
)
from indexcore.types.timestamp import EPOCH, EPOCH_DATE, MILLIS_PER_DAY, Timestamp, parse_timestamp_text

__all__ = [
    "BINARY_ROOTS", "EPOCH", "EPOCH_DATE", "FLOAT_ROOTS", "INTEGER_ROOTS", "INT_BITS", "MAX_LENGTH",
    "MILLIS_PER_DAY", "STRING_ROOTS", "TIMESTAMP_ROOTS",
    "DataField", "DataType", "Timestamp",
    "decimal_from_unscaled", "decimal_unscaled", "field_type_from_json", "float32", "float_bits", "from_json",
    "from_text_or_python", "json_as_is", "millis_json_values", "parse_timestamp_text", "parse_type", "timestamp_from_key",
    "timestamp_key", "to_json_value", "to_json_values", "to_long", "to_python", "type_from_json",
]
