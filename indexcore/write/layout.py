"""Table layout shared by the driver and the Spark tasks: schema JSON, paths, names, options,
and the local writes of metadata files (parents created as needed).

Paimon writes its JSON with Jackson's default pretty printer (``"key" : value``, two-space
indent per object level, arrays inline as ``[ a, b ]``); the helpers here print the same.
File names carry UUIDs; here they come from a seeded generator so a rebuild is identical.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Sequence
from typing import Any

from indexcore.types import DataField, DataType, parse_type
from indexcore.warehouse.model import TableSchema

MAX_LEVEL = 5  # default num-levels 6 -> levels 0..5
COMMIT_USER_PREFIX = "indexcore-"


def jackson(value: Any, indent: int = 0) -> str:
    """JSON text exactly as Jackson's ``DefaultPrettyPrinter`` lays it out."""
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{ }"
        items = [f"{pad}{json.dumps(k)} : {jackson(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def make_schema(columns: Sequence[tuple[str, str | DataType]], partition_keys: Sequence[str] = (),
                primary_keys: Sequence[str] = (), options: dict[str, str] | None = None,
                time_millis: int = 0, schema_id: int = 0) -> TableSchema:
    """A :class:`TableSchema` with field ids 0..n-1; primary-key columns become NOT NULL."""
    fields = []
    for i, (name, typ) in enumerate(columns):
        dtype = parse_type(typ) if isinstance(typ, str) else typ
        if name in primary_keys and dtype.nullable:
            dtype = DataType(**{**dtype.__dict__, "nullable": False})
        fields.append(DataField(i, name, dtype))
    return TableSchema(id=schema_id, fields=tuple(fields), partition_keys=tuple(partition_keys),
                       primary_keys=tuple(primary_keys), options=dict(options or {}),
                       time_millis=time_millis, highest_field_id=len(fields) - 1, version=3)


def type_json(dtype: DataType) -> Any:
    """A type as Paimon's schema JSON holds it: SQL text, or for ARRAY/VECTOR an object with the
    element (and a VECTOR's length), ``NOT NULL`` inside ``type`` as Paimon writes it."""
    if dtype.root not in ("ARRAY", "VECTOR") or dtype.element is None:
        return dtype.sql()
    out: dict[str, Any] = {"type": dtype.root + ("" if dtype.nullable else " NOT NULL"),
                           "element": type_json(dtype.element)}
    if dtype.root == "VECTOR" and dtype.length is not None:
        out["length"] = dtype.length
    return out


def schema_json(schema: TableSchema) -> str:
    """``schema/schema-N`` content."""
    fields = []
    for f in schema.fields:
        entry: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_json(f.type)}
        if f.description:
            entry["description"] = f.description
        fields.append(entry)
    doc: dict[str, Any] = {
        "version": schema.version or 3,
        "id": schema.id,
        "fields": fields,
        "highestFieldId": schema.highest_field_id if schema.highest_field_id is not None else len(fields) - 1,
        "partitionKeys": list(schema.partition_keys),
        "primaryKeys": list(schema.primary_keys),
        "options": dict(schema.options),
    }
    if schema.comment is not None:
        doc["comment"] = schema.comment
    doc["timeMillis"] = schema.time_millis or 0
    return jackson(doc)


def field_types(schema: TableSchema, names: Sequence[str]) -> list[DataType]:
    return [schema.field(n).type for n in names]


class Namer:
    """Deterministic Paimon file names: ``<prefix>-<uuid>-<n>`` with the UUID drawn from a seed."""

    def __init__(self, *seed_parts: Any):
        self._random = random.Random(":".join(map(str, seed_parts)))
        self._uuids: dict[str, str] = {}
        self._counters: dict[str, int] = {}

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    def next(self, prefix: str, suffix: str = "") -> str:
        """Next name of this kind: one UUID per kind and namer, a counter after it."""
        if prefix not in self._uuids:
            self._uuids[prefix] = self.uuid()
        n = self._counters.get(prefix, 0)
        self._counters[prefix] = n + 1
        return f"{prefix}-{self._uuids[prefix]}-{n}{suffix}"


def write_bytes(path: str, data: bytes) -> None:
    """Write a local metadata file, creating its folder."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def ensure_dir(path: str) -> str:
    """``path``, once its folder exists."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def write_text(path: str, text: str) -> None:
    """Write a local metadata file as UTF-8 text, creating its folder."""
    write_bytes(path, text.encode("utf-8"))
