"""Literals and column names as SQL text: the one spelling the predicate printer, the pages and
the statements the advisor writes share (``parse_where`` reads every form back)."""

from __future__ import annotations

import decimal
import math
import re
from typing import Any

from indexcore import types
from indexcore.types import DataType


def quote_name(name: str) -> str:
    """A column name as SQL: bare when it is a plain identifier, else in backticks (doubled inside)."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) else "`" + name.replace("`", "``") + "`"


def quote_table(name: str) -> str:
    """``db.table`` as SQL, each part quoted by :func:`quote_name` (a ``$branch_x`` suffix stays in the table's part)."""
    database, dot, table = name.partition(".")
    return f"{quote_name(database)}.{quote_name(table)}" if dot else quote_name(name)


def non_finite_word(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def literal_to_sql(value: Any, dtype: DataType | None = None) -> str:
    """SQL text for an internal value; ``dtype`` gives DATE/TIME their typed form."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if dtype is not None and dtype.root == "DATE":
        return f"DATE '{types.to_json_value(dtype, value)}'"
    if dtype is not None and dtype.root == "TIME":
        text = types.to_json_value(dtype, value) + (f".{value % 1000:03d}" if value % 1000 else "")
        return f"TIME '{text}'"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, types.Timestamp):
        text = str(value).replace("T", " ")
        if dtype is not None and dtype.is_ltz:
            return f"TIMESTAMP_LTZ '{text}'"
        return f"TIMESTAMP '{text}'"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            word = non_finite_word(value)
            kind = "FLOAT" if dtype is not None and dtype.root == "FLOAT" else "DOUBLE"
            return f"CAST('{word}' AS {kind})"
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)
