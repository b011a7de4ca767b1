"""``dv`` and ``inspect``: look inside one index file (and, when it sits in a table, what its manifest says)."""

from __future__ import annotations

import argparse
import json
import posixpath

from indexcore.errors import IndexCoreError, PredicateError, UnsupportedError
from indexcore.formats.base import listed_positions
from indexcore.formats.bitmap_global_index import BitmapGlobalIndexReader, read_bitmap_footer
from indexcore.formats.btree_index import BTreeIndexReader, read_btree_footer
from indexcore.formats.container import read_container
from indexcore.formats.deletion_vector import scan_deletion_vector_file
from indexcore.formats.detect import (
    BITMAP_GLOBAL,
    BTREE,
    DELETION_VECTORS,
    FILE_INDEX,
    HASH_INDEX,
    TANTIVY,
    VINDEX,
    detect,
)
from indexcore.formats.hash_index import read_hash_index
from indexcore.formats.vector_index import read_tantivy_archive, read_vindex_header
from indexcore.io import ByteSource, Storage, open_file
from indexcore.paimon.index_types import HASH
from indexcore.types import DataType, parse_type, to_json_value
from indexcore.warehouse.global_index import WrappedBitmapReader, global_index_files
from indexcore.warehouse.table import Table


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
    dv_file = scan_deletion_vector_file(open_file(args.file, storage_options=args.storage_options))
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


def run_inspect(args: argparse.Namespace) -> dict:
    schema = parse_schema(args.schema)
    source = open_file(args.file, storage_options=args.storage_options)
    if source.size == 0:
        raise UnsupportedError("empty file: not an index file", file=source.name)
    manifest = _manifest_view(args.file, args.storage_options)
    found = detect(source)
    kind = found.kind
    if manifest is not None and manifest["index_type"] == HASH:
        kind = HASH_INDEX
    elif manifest is not None and not found.certain:
        kind = manifest["index_type"]  # no structure of its own: the manifest decides
    if kind == FILE_INDEX:
        return _inspect_container(source, schema)
    if kind == DELETION_VECTORS:
        return _inspect_dv(source)
    out = {"file": source.name, "kind": kind, "file_size": source.size, "detected_by": found.detected_by}
    if manifest is not None:
        out["index_manifest"] = manifest
        out["detected_by"] += "; the table's index manifest lists it"
    if kind == HASH_INDEX:
        out["certain"] = manifest is not None
        out["summary"] = read_hash_index(source).summary()
    elif kind in (BTREE, BITMAP_GLOBAL):
        out["summary"] = _sorted_index_summary(source, kind, manifest, schema)
    elif kind == VINDEX:
        h = read_vindex_header(source)
        out["summary"] = {"version": h.version, "dimension": h.dimension, "vectors": h.vector_count}
    elif kind == TANTIVY:
        out["summary"] = read_tantivy_archive(source).summary()
    elif manifest is not None:
        out["detected_by"] = "no structure of its own matched; the table's index manifest names its type"
        if kind == "bitmap" and manifest.get("field_type"):
            out["summary"] = WrappedBitmapReader(source, parse_type(manifest["field_type"])).summary()
    else:
        raise UnsupportedError("not a file index, deletion-vector, hash, BTree, bitmap, vector or full-text "
                               "index file", file=source.name, structure="file head", offset=0)
    return out


def _sorted_index_summary(source: ByteSource, kind: str, manifest: dict | None, schema: dict) -> dict:
    """Decode a BTree / bitmap global index with the column type from the manifest or ``--schema``."""
    type_text = (manifest or {}).get("field_type")
    dtype = parse_type(type_text) if type_text else (next(iter(schema.values())) if len(schema) == 1 else None)
    if dtype is None:
        if kind == BTREE:
            footer = read_btree_footer(source)
            return {"version": footer.version, "index_block": [footer.index_offset, footer.index_size],
                    "null_bitmap": footer.has_nulls, "bloom_filter": footer.has_bloom_filter,
                    "keys": "give --schema c:TYPE to decode the keys"}
        footer = read_bitmap_footer(source)
        return {"version": footer.version, "distinct_values": footer.value_count,
                "keys": "give --schema c:TYPE to decode the values"}
    reader = (BTreeIndexReader if kind == BTREE else BitmapGlobalIndexReader)(source, dtype)
    return {k: to_json_value(dtype, v) if k in ("first_key", "last_key") else v for k, v in reader.summary().items()}


def _manifest_view(path: str, storage_options: dict) -> dict | None:
    """What the index manifest of the table holding ``path`` (``<table>/index/FILE``) says about it."""
    index_dir = posixpath.dirname(path.rstrip("/"))
    if posixpath.basename(index_dir) != "index":
        return None
    root = posixpath.dirname(index_dir) or "."
    try:
        storage = Storage(root, storage_options=storage_options)
        if not storage.exists(posixpath.join(storage.root, "schema")):
            return None
        table = Table(storage, storage.root, posixpath.basename(storage.root))
        name = posixpath.basename(path)
        for sid in reversed(table.snapshot_ids()):
            for gif in global_index_files(table, sid):
                if gif.entry.index_file.file_name == name:
                    return {"snapshot": sid, **{k: v for k, v in gif.describe().items()
                                                if k not in ("first_key", "last_key")}}
            for e in table.plan(sid).index_entries:
                if e.index_file.file_name == name:
                    return {"snapshot": sid, "index_type": e.index_file.index_type, "partition": e.partition,
                            "bucket": e.bucket, "file_size": e.index_file.file_size,
                            "row_count": e.index_file.row_count}
    except IndexCoreError:
        return None
    return None


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

