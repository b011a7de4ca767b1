"""``dv`` and ``inspect``: look inside one index file without a warehouse around it."""

from __future__ import annotations

import argparse
import json

from ..errors import PredicateError, UnsupportedError
from ..formats.base import listed_positions
from ..formats.deletion_vector import MAGIC_32, MAGIC_64, scan_deletion_vector_file
from ..formats.hash_index import read_hash_index
from ..io import ByteSource, open_file
from ..types import DataType, parse_type

CONTAINER_MAGIC = 1493475289347502
_DV_MAGICS = (MAGIC_32.to_bytes(4, "big"), MAGIC_64.to_bytes(4, "little"))


def register(sub: argparse._SubParsersAction) -> None:
    dv = sub.add_parser("dv", help="decode a deletion-vector index file: every entry and its positions")
    dv.add_argument("file", metavar="FILE", help="path or URL of the DV index file")
    dv.set_defaults(func=run_dv)

    inspect = sub.add_parser("inspect", help="detect what an index file is and print its structure")
    inspect.add_argument("file", metavar="FILE", help="path or URL of the file")
    inspect.add_argument("--schema", action="append", default=[], metavar="COLUMN:TYPE",
                         help="column type for file-index containers (repeatable, e.g. 'c:INT'), or a "
                              "JSON list of {name, type}; with it each index blob is decoded and summarised")
    inspect.set_defaults(func=run_inspect)


def run_dv(args: argparse.Namespace) -> dict:
    dv_file = scan_deletion_vector_file(open_file(args.file))
    return {
        "version": dv_file.version,
        "bitmap": dv_file.bitmap,
        "entries": [{"offset": e.offset, "cardinality": e.cardinality,
                     **listed_positions(e.dv.positions, "positions", e.cardinality)}
                    for e in dv_file.entries],
    }


def parse_schema(items: list[str]) -> dict[str, DataType]:
    """``['a:INT', 'b:DECIMAL(10, 2)']`` or a JSON list of ``{name, type}`` -> column types."""
    schema: dict[str, DataType] = {}
    for item in items:
        text = item.strip()
        if text.startswith("["):
            try:
                fields = [(f["name"], f["type"]) for f in json.loads(text)]
            except (ValueError, KeyError, TypeError) as exc:
                raise PredicateError(f"--schema JSON must be a list of {{name, type}}: {exc}") from exc
        else:
            name, sep, type_text = text.partition(":")
            if not sep or not name.strip():
                raise PredicateError(f"--schema expects COLUMN:TYPE, got {item!r}")
            fields = [(name.strip(), type_text.strip())]
        for name, type_text in fields:
            if not isinstance(type_text, str):
                raise PredicateError(f"--schema type of {name!r} must be a type string")
            schema[name] = parse_type(type_text)
    return schema


def _looks_like_dv(head: bytes, size: int) -> bool:
    return head[:1] == b"\x01" and (size == 1 or (len(head) >= 9 and head[5:9] in _DV_MAGICS))


def run_inspect(args: argparse.Namespace) -> dict:
    schema = parse_schema(args.schema)
    source = open_file(args.file)
    if source.size == 0:
        raise UnsupportedError("empty file: not an index file", file=source.name)
    head = source.read(0, min(source.size, 9), "file head")
    if len(head) >= 8 and int.from_bytes(head[:8], "big", signed=True) == CONTAINER_MAGIC:
        return _inspect_container(source, schema)
    if _looks_like_dv(head, source.size):
        return _inspect_dv(source)
    if source.size % 4 == 0:
        index = read_hash_index(source)
        return {"file": source.name, "kind": "hash-index", "file_size": source.size,
                "detected_by": "no magic matched and the size is a multiple of 4",
                "summary": index.summary()}
    raise UnsupportedError("not a file index, a deletion-vector file or a hash index", file=source.name,
                           structure="file head", offset=0)


def _inspect_dv(source: ByteSource) -> dict:
    dv_file = scan_deletion_vector_file(source)
    return {
        "file": source.name,
        "kind": "deletion-vectors",
        "summary": dv_file.summary(),
        "entries": [{"offset": e.offset, "size": e.size, "length": e.length, "crc": f"{e.crc:#010x}",
                     **e.dv.summary()} for e in dv_file.entries],
    }


def _inspect_container(source: ByteSource, schema: dict[str, DataType]) -> dict:
    from ..formats.container import read_container

    container = read_container(source)
    result = {"file": source.name, "kind": "file-index", **container.summary()}
    if not schema:
        return result
    indexes = []
    for entry in container.head.entries:
        row = {"column": entry.column, "index_type": entry.index_type, "offset": entry.offset,
               "length": entry.length, "empty": entry.empty}
        dtype = schema.get(entry.column)
        if dtype is None:
            row["summary"] = "no type given in --schema"
        else:
            try:
                row["summary"] = container.reader(entry, dtype).summary()
            except UnsupportedError as exc:
                row["summary"] = f"not decoded: {exc.message}"
        indexes.append(row)
    result["indexes"] = indexes
    return result

