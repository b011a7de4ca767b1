"""Avro files as Paimon writes them: manifests, manifest lists and index manifests.

The writer schemas are the ones found in manifests written by Paimon Java 1.3 (record name
``org.apache.paimon.avro.generated.record``; optional fields are ``["null", T]`` unions with a
null default). Blocks are zstd-compressed (Paimon's ``manifest.compression`` default) and the
sync marker is derived from the file name, so rebuilding a table gives identical bytes.
"""

from __future__ import annotations

import hashlib
import io

import fastavro
import zstandard

_NS = "org.apache.paimon.avro.generated.record"


def _opt(name: str, typ) -> dict:
    return {"default": None, "name": name, "type": ["null", typ]}


def _stats(name: str) -> dict:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
    ]}


MANIFEST_SCHEMA = {"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_TOTAL_BUCKETS", "type": "int"},
    {"name": "_FILE", "type": {"type": "record", "name": _NS + "__FILE", "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats(_NS + "__FILE__KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats(_NS + "__FILE__VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"logicalType": "timestamp-millis", "type": "long"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
    ]}},
]}

MANIFEST_LIST_SCHEMA = {"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_NUM_ADDED_FILES", "type": "long"},
    {"name": "_NUM_DELETED_FILES", "type": "long"},
    {"name": "_PARTITION_STATS", "type": _stats(_NS + "__PARTITION_STATS")},
    {"name": "_SCHEMA_ID", "type": "long"},
    _opt("_MIN_BUCKET", "int"),
    _opt("_MAX_BUCKET", "int"),
    _opt("_MIN_LEVEL", "int"),
    _opt("_MAX_LEVEL", "int"),
    _opt("_MIN_ROW_ID", "long"),
    _opt("_MAX_ROW_ID", "long"),
]}

INDEX_MANIFEST_SCHEMA = {"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"},
    {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"},
    {"name": "_INDEX_TYPE", "type": "string"},
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": ["null", {
        "type": "record", "name": _NS + "__DELETIONS_VECTORS_RANGES", "fields": [
            {"name": "f0", "type": "string"},
            {"name": "f1", "type": "int"},
            {"name": "f2", "type": "int"},
            _opt("_CARDINALITY", "long"),
        ]}]}),
    _opt("_EXTERNAL_PATH", "string"),
    _opt("_GLOBAL_INDEX", {"type": "record", "name": _NS + "__GLOBAL_INDEX", "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"},
        {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
        _opt("_INDEX_META", "bytes"),
    ]}),
]}


def _write_long(fo, value: int) -> None:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    fo.write(bytes(out))


def _zstd_write_block(fo, block_bytes: bytes, compression_level) -> None:
    data = zstandard.ZstdCompressor(level=compression_level or 1).compress(block_bytes)
    _write_long(fo, len(data))
    fo.write(data)


def _install_zstd_writer() -> None:
    """fastavro wants ``backports.zstd`` to write zstd blocks; use ``zstandard`` instead."""
    import fastavro._write as cwrite
    import fastavro._write_py as pywrite

    for module in (cwrite, pywrite):
        module.BLOCK_WRITERS["zstandard"] = _zstd_write_block


_install_zstd_writer()


def write_avro(schema: dict, records: list[dict], name: str) -> bytes:
    """One Avro object container file, zstd level 1, with a sync marker derived from ``name``."""
    buf = io.BytesIO()
    marker = hashlib.md5(name.encode("utf-8")).digest()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="zstandard",
                    codec_compression_level=1, sync_marker=marker)
    return buf.getvalue()
