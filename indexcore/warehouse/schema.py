"""``schema/schema-N`` files: JSON with field ids, keys and options (Paimon's TableSchema)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import CorruptFileError, IndexCoreError
from ..paimon.layout import SCHEMA_PREFIX
from ..types import DataField, field_type_from_json
from .model import TableSchema


def parse_schema(data: bytes | str, name: str = "<schema>") -> TableSchema:
    """Decode one schema JSON document; a malformed one raises CorruptFileError."""
    try:
        obj: dict[str, Any] = json.loads(data)
        fields = tuple(
            DataField(int(f["id"]), f["name"], field_type_from_json(f["name"], f["type"]), f.get("description"))
            for f in obj["fields"])
        return TableSchema(
            id=int(obj["id"]),
            fields=fields,
            partition_keys=tuple(obj.get("partitionKeys") or ()),
            primary_keys=tuple(obj.get("primaryKeys") or ()),
            options={str(k): str(v) for k, v in (obj.get("options") or {}).items()},
            comment=obj.get("comment"),
            time_millis=obj.get("timeMillis"),
            highest_field_id=obj.get("highestFieldId"),
            version=obj.get("version"),
        )
    except CorruptFileError:
        raise
    except (ValueError, KeyError, TypeError, IndexCoreError) as exc:
        raise CorruptFileError(f"bad schema JSON: {exc}", file=name, structure="schema") from exc


def schema_id_from_name(name: str) -> int | None:
    if not name.startswith(SCHEMA_PREFIX):
        return None
    tail = name[len(SCHEMA_PREFIX):]
    return int(tail) if tail.isdigit() else None
