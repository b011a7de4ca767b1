"""Avro records decoded to Arrow columns by our own C decoder (``_avro_columns``), for any writer
schema of nulls, booleans, ints, longs, floats, doubles, bytes, strings, fixed, records, arrays
and ``["null", T]`` unions (every manifest-like schema Paimon writes, Paimon 0.9's
``["null", record]`` rows included).

:func:`compile_program` turns the writer schema into the decoder's program (None when the schema
holds a type the decoder does not do: maps, enums, decimals, wider unions; the caller then uses
polars or fastavro); :func:`decode_blocks` runs it over a container's inflated blocks and wraps
the column buffers as Arrow arrays without copying them. Types are those of the record path
(:func:`.avro_file._converter`): 32-bit offsets, naive timestamps, ``fixed`` as binary.
The extension is optional (built by ``pip install -e .`` where a C compiler exists):
:data:`AVAILABLE` says whether it loaded.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from indexcore.errors import CorruptFileError

try:
    from indexcore.warehouse import _avro_columns
except ImportError:  # built without a C compiler: manifests decode through polars or fastavro
    _avro_columns = None

AVAILABLE = _avro_columns is not None

NULL, BOOL, INT, LONG, FLOAT, DOUBLE, BYTES, STRING, FIXED, RECORD, UNION, ARRAY = range(12)
_PRIMITIVE = {"null": (NULL, pa.null()), "boolean": (BOOL, pa.bool_()), "int": (INT, pa.int32()),
              "long": (LONG, pa.int64()), "float": (FLOAT, pa.float32()), "double": (DOUBLE, pa.float64()),
              "bytes": (BYTES, pa.binary()), "string": (STRING, pa.string())}
_LOGICAL = {("int", "date"): pa.date32(), ("int", "time-millis"): pa.time32("ms"),
            ("long", "time-micros"): pa.time64("us"), ("long", "timestamp-millis"): pa.timestamp("ms"),
            ("long", "timestamp-micros"): pa.timestamp("us"), ("long", "timestamp-nanos"): pa.timestamp("ns"),
            ("long", "local-timestamp-millis"): pa.timestamp("ms"),
            ("long", "local-timestamp-micros"): pa.timestamp("us"),
            ("long", "local-timestamp-nanos"): pa.timestamp("ns")}
_MIN_SIZE = {NULL: 0, BOOL: 1, INT: 1, LONG: 1, FLOAT: 4, DOUBLE: 8, BYTES: 1, STRING: 1, UNION: 1, ARRAY: 1}
MAX_DEPTH = 32


class Unsupported(Exception):
    """A writer schema the C decoder does not do (the caller falls back)."""


@dataclass(frozen=True)
class Shape:
    """One decoded column and how it becomes Arrow: its column index, Arrow type, and children
    (a record's fields by name, a list's item)."""

    column: int
    type: pa.DataType
    op: int
    children: tuple[tuple[str, Shape], ...] = ()


@dataclass(frozen=True)
class Program:
    """A compiled writer schema: the decoder's nodes, each column's op, the top record's fields."""

    nodes: bytes
    kinds: bytes
    fields: tuple[tuple[str, Shape], ...]


class _Compiler:
    def __init__(self) -> None:
        self.nodes: list[list[int]] = []
        self.kinds: list[int] = []
        self.named: dict[str, Any] = {}
        self.open: set[str] = set()

    def column(self, op: int, keep: bool) -> int:
        if not keep:
            return -1
        self.kinds.append(op)
        return len(self.kinds) - 1

    def node(self, op: int, column: int, arg: int = 0) -> int:
        self.nodes.append([op, column, arg, 0])
        return len(self.nodes) - 1

    def close(self, at: int) -> None:
        self.nodes[at][3] = len(self.nodes)

    def resolve(self, schema: Any, namespace: str) -> tuple[Any, str]:
        if isinstance(schema, str) and schema not in _PRIMITIVE:
            full = schema if "." in schema else f"{namespace}.{schema}" if namespace else schema
            for key in (full, schema):
                if key in self.named:
                    if key in self.open:
                        raise Unsupported(f"recursive type {schema}")
                    return self.named[key]
            raise Unsupported(f"unknown type {schema}")
        return schema, namespace

    def compile(self, schema: Any, keep: bool, namespace: str, depth: int) -> tuple[Shape | None, int]:
        """Nodes for ``schema``; its Shape (None when not kept) and its least encoded size."""
        if depth > MAX_DEPTH:
            raise Unsupported("schema nested too deep")
        schema, namespace = self.resolve(schema, namespace)
        if isinstance(schema, list):
            if len(schema) != 2 or "null" not in schema or schema[0] == schema[1]:
                raise Unsupported("a union other than [null, T]")
            at = self.node(UNION, -1, schema.index("null"))
            shape, _ = self.compile(schema[1 - schema.index("null")], keep, namespace, depth + 1)
            self.close(at)
            return shape, 1
        if isinstance(schema, str):
            op, t = _PRIMITIVE[schema]
            self.close(self.node(op, self.column(op, keep and op != NULL)))
            return (Shape(len(self.kinds) - 1, t, op) if keep and op != NULL else None), _MIN_SIZE[op]
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r}")
        kind = schema.get("type")
        if isinstance(kind, dict | list):
            return self.compile(kind, keep, namespace, depth + 1)
        if kind in _PRIMITIVE:
            logical = schema.get("logicalType")
            if logical == "decimal":
                raise Unsupported("decimal")
            op, t = _PRIMITIVE[kind]
            t = _LOGICAL.get((kind, logical), t)
            self.close(self.node(op, self.column(op, keep and op != NULL)))
            return (Shape(len(self.kinds) - 1, t, op) if keep and op != NULL else None), _MIN_SIZE[op]
        name = schema.get("name")
        full = None
        if name and kind in ("record", "fixed"):
            namespace = schema.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
            full = name if "." in name else f"{namespace}.{name}" if namespace else name
            self.named[full] = self.named[name] = (schema, namespace)
        if kind == "fixed":
            size = int(schema["size"])
            if schema.get("logicalType") == "decimal" or size < 1:
                raise Unsupported("decimal or empty fixed")
            self.close(self.node(FIXED, self.column(FIXED, keep), size))
            return (Shape(len(self.kinds) - 1, pa.binary(), FIXED) if keep else None), size
        if kind == "array":
            at = self.node(ARRAY, self.column(ARRAY, keep))
            col = self.nodes[at][1]
            item, least = self.compile(schema["items"], keep, namespace, depth + 1)
            if least < 1:
                raise Unsupported("array of zero-width items")
            self.close(at)
            if not keep:
                return None, 1
            return Shape(col, pa.list_(item.type), ARRAY, (("item", item),)), 1
        if kind == "record":
            self.open.update(k for k in (full, name) if k)
            at = self.node(RECORD, self.column(RECORD, keep), len(schema["fields"]))
            col = self.nodes[at][1]
            children, least = [], 0
            for f in schema["fields"]:
                shape, size = self.compile(f["type"], keep, namespace, depth + 1)
                least += size
                if keep:
                    children.append((f["name"], shape if shape is not None else Shape(-1, pa.null(), NULL)))
            self.close(at)
            self.open.difference_update(k for k in (full, name) if k)
            if not keep:
                return None, least
            return Shape(col, pa.struct([pa.field(n, s.type) for n, s in children]), RECORD, tuple(children)), least
        raise Unsupported(f"Avro type {kind!r}")


REFUSE_NULL = 2  # a UNION node's argument flag: a null here is an error (a row must be a record)


def compile_program(schema: Any, fields: frozenset[str] | None = None) -> Program | None:
    """The decoder's program for rows of the record ``schema`` (parsed JSON; Paimon 0.9 wrote rows
    as ``["null", record]``, whose null rows the decoder refuses), decoding only the top-level
    ``fields`` asked for (all by default); None when the decoder cannot do it."""
    top, null_at = schema, None
    if isinstance(schema, list) and len(schema) == 2 and "null" in schema:
        null_at = schema.index("null")
        top = schema[1 - null_at]
    if _avro_columns is None or not isinstance(top, dict) or top.get("type") != "record":
        return None
    c = _Compiler()
    try:
        row = c.node(UNION, -1, null_at | REFUSE_NULL) if null_at is not None else None
        at = c.node(RECORD, -1, len(top["fields"]))
        tops, least = [], 0
        for f in top["fields"]:
            keep = fields is None or f["name"] in fields
            shape, size = c.compile(f["type"], keep, top.get("namespace", ""), 1)
            least += size
            if keep:
                tops.append((f["name"], shape if shape is not None else Shape(-1, pa.null(), NULL)))
        c.close(at)
        if row is not None:
            c.close(row)
            least += 1
    except (Unsupported, KeyError, TypeError, ValueError, RecursionError):
        return None
    if least < 1:  # a record of no bytes: its count alone could make rows without end
        return None
    return Program(array("i", [v for n in c.nodes for v in n]).tobytes(), bytes(c.kinds), tuple(tops))


def _arrow(shape: Shape, columns: list) -> pa.Array:
    if shape.column < 0:  # a null field: no buffers
        return None
    length, nulls, validity, values, offsets = columns[shape.column]
    vbuf = pa.py_buffer(validity) if validity is not None else None
    if shape.op == RECORD:
        children = [_arrow(s, columns) for _, s in shape.children]
        children = [pa.nulls(length) if a is None else a for a in children]
        return pa.Array.from_buffers(shape.type, length, [vbuf], nulls, children=children)
    if shape.op == ARRAY:
        item = _arrow(shape.children[0][1], columns)
        return pa.Array.from_buffers(shape.type, length, [vbuf, pa.py_buffer(offsets)], nulls, children=[item])
    if shape.op in (BYTES, STRING):
        return pa.Array.from_buffers(shape.type, length, [vbuf, pa.py_buffer(offsets), pa.py_buffer(values)], nulls)
    if shape.op == FIXED:
        data = pa.py_buffer(values)
        size = data.size // length if length else 1
        arr = pa.Array.from_buffers(pa.binary(size), length, [vbuf, data], nulls)
        return arr.cast(pa.binary())
    return pa.Array.from_buffers(shape.type, length, [vbuf, pa.py_buffer(values)], nulls)


def decode_blocks(program: Program, blocks: list[tuple[int, int, bytes]], name: str) -> pa.Table:
    """The rows of ``blocks`` (file offset, record count, inflated data) as a table of the
    program's fields. Raises CorruptFileError naming the file, the block's offset, the record and
    the byte in the block's inflated data where decoding failed."""
    try:
        columns = _avro_columns.decode(program.nodes, len(program.kinds), program.kinds,
                                       [(data, count) for _, count, data in blocks])
    except ValueError as exc:
        why, block, at, record = exc.args
        raise CorruptFileError(f"cannot decode Avro record {record} of block {block}: {why} "
                               f"(byte {at} of the block's inflated data)", file=name, structure="avro block",
                               offset=blocks[block][0]) from exc
    rows = sum(count for _, count, _ in blocks)
    arrays = []
    for _, shape in program.fields:
        arr = _arrow(shape, columns)
        arrays.append(pa.nulls(rows) if arr is None else arr)
    return pa.Table.from_arrays(arrays, names=[n for n, _ in program.fields])


def all_distinct(strings: pa.ChunkedArray | pa.Array) -> bool | None:
    """Whether no two of ``strings`` (a string column without nulls) are equal, by one exact hash
    pass in the C extension (about a tenth of ``pc.unique``'s cost on 50,000 file names); None
    when the extension is not built or the column is of another type (the caller checks it so)."""
    if _avro_columns is None or strings.type != pa.string() or strings.null_count:
        return None
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    return _avro_columns.distinct([(c.buffers()[1], c.buffers()[2], c.offset, len(c)) for c in chunks if len(c)])
