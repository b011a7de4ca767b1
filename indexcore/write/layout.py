"""Table layout shared by the driver and the Spark tasks: schema JSON, paths, names, options.

Paimon writes its JSON with Jackson's default pretty printer (``"key" : value``, two-space
indent per object level, arrays inline as ``[ a, b ]``); the helpers here print the same.
File names carry UUIDs; here they come from a seeded generator so a rebuild is identical.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..types import DataField, DataType, parse_type
from ..warehouse.model import DEFAULT_PARTITION_NAME, TableSchema

KEY_FIELD_ID_START = 1_073_741_823  # SpecialFields: Integer.MAX_VALUE / 2
SEQUENCE_NUMBER_ID = 2_147_483_646
VALUE_KIND_ID = 2_147_483_645
MAX_LEVEL = 5  # default num-levels 6 -> levels 0..5
DEFAULT_IN_MANIFEST_THRESHOLD = 500
INDEXCORE_USER_PREFIX = "indexcore-"


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


def schema_json(schema: TableSchema) -> str:
    """``schema/schema-N`` content."""
    fields = []
    for f in schema.fields:
        entry: dict[str, Any] = {"id": f.id, "name": f.name, "type": f.type.sql()}
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


def partition_path(schema: TableSchema, partition: tuple) -> str:
    """``k1=v1/k2=v2/`` (empty for an unpartitioned table), nulls as the default partition name."""
    parts = []
    for f, value in zip(schema.partition_fields, partition, strict=True):
        parts.append(f"{f.name}={DEFAULT_PARTITION_NAME if value is None else _partition_text(f.type, value)}")
    return "".join(p + "/" for p in parts)


def _partition_text(dtype: DataType, value: Any) -> str:
    from ..types import to_python

    if dtype.root == "DATE":
        return str(to_python(dtype, value))
    return str(value)


def bucket_dir(schema: TableSchema, partition: tuple, bucket: int) -> str:
    return f"{partition_path(schema, partition)}bucket-{bucket}"


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


_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def memory_size(text: str | None, default: int) -> int:
    """Paimon's ``MemorySize.parse`` for the units its options use (``500 b``, ``1kb``, ``16mb``)."""
    if text is None:
        return default
    m = _SIZE.match(str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a memory size: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass(frozen=True)
class ColumnIndex:
    """One file index to build: column, Paimon index type, and that index's options."""

    column: str
    index_type: str
    options: tuple[tuple[str, str], ...] = ()


INDEX_TYPES = ("bloom-filter", "bitmap", "range-bitmap", "bsi")


def file_index_plan(schema: TableSchema) -> list[ColumnIndex]:
    """The file indexes the options ask for (``file-index.<type>.columns`` and friends).

    Options of one index are ``file-index.<type>.<option>`` overridden by
    ``file-index.<type>.<column>.<option>``, as Paimon's ``FileIndexOptions`` reads them.
    """
    opts = schema.options
    plan = []
    for index_type in INDEX_TYPES:
        prefix = f"file-index.{index_type}."
        raw = opts.get(prefix + "columns")
        if not raw:
            continue
        columns = [c.strip() for c in raw.split(",") if c.strip()]
        shared = {k[len(prefix):]: v for k, v in opts.items()
                  if k.startswith(prefix) and k != prefix + "columns"
                  and not any(k.startswith(prefix + c + ".") for c in schema.field_names)}
        for column in columns:
            schema.field(column)
            col_prefix = prefix + column + "."
            merged = dict(shared)
            merged.update({k[len(col_prefix):]: v for k, v in opts.items() if k.startswith(col_prefix)})
            plan.append(ColumnIndex(column, index_type, tuple(sorted(merged.items()))))
    order = {name: i for i, name in enumerate(schema.field_names)}
    return sorted(plan, key=lambda c: (order[c.column], INDEX_TYPES.index(c.index_type)))
