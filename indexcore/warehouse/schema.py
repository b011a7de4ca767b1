"""``schema/schema-N`` files: JSON with field ids, keys and options (Paimon's TableSchema)."""

from __future__ import annotations

import json
from typing import Any

from indexcore.errors import CorruptFileError, IndexCoreError
from indexcore.paimon.layout import SCHEMA_PREFIX
from indexcore.types import DataField, DataType, field_type_from_json
from indexcore.warehouse.model import TableSchema


def parse_schema(data: bytes | str, name: str = "<schema>") -> TableSchema:
    """Decode one schema JSON document; a malformed one raises CorruptFileError.

    Field ids and names must be unique, partition and primary keys must name fields, and
    every type must be one Paimon can write (precision and length in range).
    """
    try:
        obj: dict[str, Any] = json.loads(data)
        if not isinstance(obj, dict):
            raise TypeError("the document is not an object")
        fields = tuple(
            DataField(_int(f["id"], "fields.id"), _text(f["name"], "fields.name"), field_type_from_json(f["name"], f["type"]),
                      f.get("description"))
            for f in _list(obj["fields"], "fields"))
        options = obj.get("options") or {}
        if not isinstance(options, dict):
            raise TypeError(f"options must be an object, not {type(options).__name__}")
        schema = TableSchema(
            id=_int(obj["id"], "id"),
            fields=fields,
            partition_keys=tuple(_text(k, "partitionKeys") for k in _list(obj.get("partitionKeys") or [],
                                                                          "partitionKeys")),
            primary_keys=tuple(_text(k, "primaryKeys") for k in _list(obj.get("primaryKeys") or [],
                                                                      "primaryKeys")),
            options={str(k): str(v) for k, v in options.items()},
            comment=obj.get("comment"),
            time_millis=obj.get("timeMillis"),
            highest_field_id=obj.get("highestFieldId"),
            version=obj.get("version"),
        )
        _check(schema)
        return schema
    except CorruptFileError:
        raise
    except KeyError as exc:
        raise CorruptFileError(f"bad schema JSON: required field {exc} is missing", file=name,
                               structure="schema") from exc
    except (ValueError, TypeError, IndexCoreError) as exc:
        raise CorruptFileError(f"bad schema JSON: {exc}", file=name, structure="schema") from exc


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"{what} must be an int, not {value!r:.40}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, not {value!r:.40}")
    return value


def _list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list, not {type(value).__name__}")
    return value


def _check(schema: TableSchema) -> None:
    names = [f.name for f in schema.fields]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate field names in {names}")
    ids = [f.id for f in schema.fields]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate field ids in {ids}")
    for what, keys in (("partition key", schema.partition_keys), ("primary key", schema.primary_keys)):
        for key in keys:
            if key not in names:
                raise ValueError(f"{what} {key!r} is not a field of the schema")
    for f in schema.fields:
        _check_type(f.type, f.name)


def _check_type(dtype: DataType, where: str) -> None:
    """Paimon's bounds: DECIMAL(1..38, 0..p), TIMESTAMP/TIME(0..9), CHAR/VARCHAR/BINARY lengths >= 1."""
    root, p, s = dtype.root, dtype.precision, dtype.scale
    if root == "DECIMAL" and p is not None and not (1 <= p <= 38 and 0 <= (s or 0) <= p):
        raise ValueError(f"field {where!r}: DECIMAL({p}, {s}) is out of range")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME") and p is not None and not 0 <= p <= 9:
        raise ValueError(f"field {where!r}: {root}({p}) has a precision outside 0..9")
    if dtype.length is not None and not 0 <= dtype.length <= (1 << 31) - 1:
        raise ValueError(f"field {where!r}: length {dtype.length} is out of range")
    for child in (dtype.element, dtype.key, dtype.value):
        if child is not None:
            _check_type(child, where)
    for f in dtype.fields:
        _check_type(f.type, f"{where}.{f.name}")


def schema_id_from_name(name: str) -> int | None:
    if not name.startswith(SCHEMA_PREFIX):
        return None
    tail = name[len(SCHEMA_PREFIX):]
    return int(tail) if tail.isdigit() else None
