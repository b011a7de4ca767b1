"""Manifests in ORC and Parquet (``manifest.format``) plan and read like the Avro originals.

Paimon writes manifest lists, manifests and index manifests with the table's
``manifest.format``; the row types are the same for every format (ManifestFileMeta,
ManifestEntry with DataFileMeta, IndexManifestEntry). Conformance tables are copied,
every manifest-like file is rewritten in ORC or Parquet with the physical types Paimon's
writers give those row types, and the plan and rows must not change. Tables Paimon Java
itself wrote with ORC manifests pin the ORC mapping.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import indexcore
from indexcore.warehouse import manifest as _manifest  # noqa: F401  (zstd codec for fastavro)
from indexcore.warehouse.data import read_table

# Paimon TINYINT fields; Avro widens them to "int", ORC/Parquet keep them narrow.
TINYINT_FIELDS = {"_KIND", "_FILE_SOURCE"}

# Table -> what its plan must show (so each conversion really exercises that part).
TABLES = {
    "append_with_bitmap": "embedded",                # file index embedded in the manifest
    "append_with_bitmap_no_embedding": "index_path",  # file index in .index files
    "pk_with_bitmap_dv": "dv",                       # PK table, DVs in the index manifest
    "pk_table_with_dv_cardinality": "cardinality",   # DV ranges with _CARDINALITY
    "pk_dv_index_in_data_no_external": "partitioned",  # DV index files in the data dirs
    "append_with_global_index_with_partition": "global",  # _GLOBAL_INDEX rows
    "data_evolution_with_dense_stats": "write_cols",  # _FIRST_ROW_ID, _WRITE_COLS
    "append_table_with_alter_table": "schemas",      # data files of several schema ids
    "pk_09": "dv",                                   # written by Paimon 0.9
}

FEATURES = {
    "embedded": lambda v: any(v["embedded"]),
    "index_path": lambda v: any(lf[1] for lf in v["files"]),
    "dv": lambda v: any(v["deleted"]),
    "cardinality": lambda v: any(r and r.cardinality for r, _p in v["dv"]),
    "partitioned": lambda v: any(lf[2] for lf in v["files"]) and any(v["deleted"]),
    "global": lambda v: any(e.index_file.global_index_meta is not None for e in v["index"]),
    "write_cols": lambda v: any(lf[4].write_cols and lf[4].first_row_id is not None for lf in v["files"]),
    "schemas": lambda v: len({lf[4].schema_id for lf in v["files"]}) > 1,
}


def _arrow_type(avro, fmt: str, name: str, named: dict) -> tuple[pa.DataType, bool]:
    """(arrow type, nullable) Paimon's ORC/Parquet writer uses for an Avro-mapped Paimon type."""
    if isinstance(avro, list):  # ["null", T]: a nullable Paimon type
        inner = [a for a in avro if a != "null"]
        return _arrow_type(inner[0], fmt, name, named)[0], True
    if isinstance(avro, str) and avro in named:
        avro = named[avro]
    if isinstance(avro, dict):
        kind = avro["type"]
        if kind == "record":
            named[avro["name"]] = avro
            return pa.struct([_arrow_field(f, fmt, named) for f in avro["fields"]]), False
        if kind == "array":
            item = _arrow_type(avro["items"], fmt, "element", named)[0]
            # Parquet: 3-level LIST, OPTIONAL "element" (ParquetSchemaConverter); ORC: no nullability
            return pa.list_(pa.field("element" if fmt == "parquet" else "item", item, True)), False
        if avro.get("logicalType") == "timestamp-millis":
            # TIMESTAMP(3): ORC "timestamp"; Parquet INT64 TIMESTAMP_MILLIS (UTC-adjusted)
            return (pa.timestamp("ns") if fmt == "orc" else pa.timestamp("ms", tz="UTC")), False
        return _arrow_type(kind, fmt, name, named)
    if name in TINYINT_FIELDS:
        return pa.int8(), False
    return {"int": pa.int32(), "long": pa.int64(), "string": pa.string(), "bytes": pa.binary(),
            "boolean": pa.bool_(), "float": pa.float32(), "double": pa.float64()}[avro], False


def _arrow_field(avro_field: dict, fmt: str, named: dict) -> pa.Field:
    dtype = _arrow_type(avro_field["type"], fmt, avro_field["name"], named)[0]
    # Paimon's Parquet writer declares every field OPTIONAL; ORC has no nullability.
    return pa.field(avro_field["name"], dtype, True)


def arrow_schema(avro_schema: dict, fmt: str) -> pa.Schema:
    named: dict = {}
    if isinstance(avro_schema, list):  # Paimon 0.9 wrote the top-level row as ["null", record]
        avro_schema = next(a for a in avro_schema if a != "null")
    return pa.schema([_arrow_field(f, fmt, named) for f in avro_schema["fields"]])


def rewrite(path: Path, fmt: str) -> None:
    """Rewrite one Avro manifest-like file in ``fmt`` with the same records."""
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    schema = arrow_schema(reader.writer_schema, fmt)
    table = pa.Table.from_pylist(list(reader), schema=schema)
    path.unlink()
    if fmt == "orc":
        po.write_table(table, str(path), compression="zstd")
    else:
        pq.write_table(table, str(path), compression="zstd")


def copy_with_format(conformance: Path, name: str, dest: Path, fmt: str | None) -> Path:
    """Copy ``name.db`` into ``dest``; rewrite manifests and the schema for ``fmt``."""
    src = conformance / "warehouses" / "parquet" / f"{name}.db"
    root = dest / (fmt or "avro")
    shutil.copytree(src, root / f"{name}.db", copy_function=shutil.copyfile)
    for dirpath, _dirs, _files in os.walk(root):
        os.chmod(dirpath, 0o755)
    table_dir = root / f"{name}.db" / name
    if fmt is not None:
        for f in sorted((table_dir / "manifest").iterdir()):
            rewrite(f, fmt)
        for f in (table_dir / "schema").iterdir():
            schema = json.loads(f.read_text())
            schema["options"]["manifest.format"] = fmt
            f.write_text(json.dumps(schema))
    return root


def _plan_view(table, snapshot_id: int) -> dict:
    plan = table.plan(snapshot_id)
    files = plan.files
    return {
        "files": files,
        "stats": [(lf.file.value_stats.min_values, lf.file.value_stats.max_values,
                   lf.file.value_stats.null_counts, tuple(lf.file.min_key), tuple(lf.file.max_key))
                  for lf in files],
        "embedded": [lf.file.embedded_index for lf in files],
        "dv": [(lf.deletion_vector, lf.dv_file_path) for lf in files],
        "deleted": [dv.to_list() if (dv := table.deletion_vector(lf)) else None for lf in files],
        "index": plan.index_entries,
        "manifests": plan.manifests,
        "entries": table.manifest_entry_list(snapshot_id),
        "problems": [(p.structure, p.reason) for p in plan.problems],
    }


def _relative(view: dict, root: Path) -> dict:
    """Paths relative to the copy's root so the Avro and converted copies compare."""
    out = dict(view)
    prefix = str(root)
    out["files"] = [(lf.path.replace(prefix, ""), (lf.index_path or "").replace(prefix, ""),
                     lf.partition, lf.bucket, lf.file, lf.total_buckets) for lf in view["files"]]
    out["dv"] = [(r, (p or "").replace(prefix, "")) for r, p in view["dv"]]
    return out


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
@pytest.mark.parametrize("name", sorted(TABLES))
def test_manifest_format_matches_avro(conformance, tmp_path, name, fmt):
    if not (conformance / "warehouses" / "parquet" / f"{name}.db").is_dir():
        pytest.skip(f"conformance table {name} absent")
    avro_root = copy_with_format(conformance, name, tmp_path, None)
    conv_root = copy_with_format(conformance, name, tmp_path, fmt)
    magic = b"ORC" if fmt == "orc" else b"PAR1"
    manifests = list((conv_root / f"{name}.db" / name / "manifest").iterdir())
    assert manifests and all(f.read_bytes()[:len(magic)] == magic for f in manifests)

    full = f"{name}.{name}"
    avro = indexcore.open_warehouse(str(avro_root)).table(full)
    conv = indexcore.open_warehouse(str(conv_root)).table(full)
    assert conv.manifest_format == fmt
    snapshot_ids = avro.snapshot_ids()
    assert snapshot_ids and conv.snapshot_ids() == snapshot_ids
    shown = False
    for sid in snapshot_ids:
        expected = _relative(_plan_view(avro, sid), avro_root)
        got = _relative(_plan_view(conv, sid), conv_root)
        assert expected["files"], f"snapshot {sid} of {name} has no live files"
        for key, value in expected.items():
            assert got[key] == value, f"{name} snapshot {sid}: {key} differs in {fmt}"
        columns = conv.plan_columns(sid)  # the columnar plan reads the same manifests alike
        assert _relative({"files": columns.live_files(conv), "dv": []}, conv_root)["files"] == got["files"]
        shown = shown or FEATURES[TABLES[name]](expected)
    assert shown, f"{name}: no snapshot shows {TABLES[name]}"
    avro_problems, conv_problems = [], []
    expected_rows = read_table(avro, problems=avro_problems).to_pylist()
    assert read_table(conv, problems=conv_problems).to_pylist() == expected_rows
    assert [(p.structure, p.reason) for p in conv_problems] == \
        [(p.structure, p.reason) for p in avro_problems]


# Tables Paimon Java wrote with manifest.format=orc, and the row counts their READMEs give:
# append_10 5 adds; parquet_append_table 6 + 3 adds; append_09 5 + 4 + 1 + 1 adds (append
# table, no dedup); pk_table_nested_type 8 inserts less DELETE 1000, 1002, UPDATE_BEFORE 1003;
# mixed 5 ORC + 2 Parquet adds.
JAVA_ORC = {("parquet", "append_10"): 5, ("parquet", "parquet_append_table"): 9,
            ("parquet", "append_09"): 11, ("parquet", "pk_table_nested_type"): 5,
            ("mixed", "append_table_with_multiple_file_format"): 7}


@pytest.mark.parametrize("root,name", sorted(JAVA_ORC))
def test_java_orc_manifests_read(conformance, root, name):
    wh_root = conformance / "warehouses" / root
    table_dir = wh_root / f"{name}.db" / name
    if not table_dir.is_dir():
        pytest.skip(f"conformance table {name} absent")
    table = indexcore.open_warehouse(str(wh_root)).table(f"{name}.{name}")
    assert table.manifest_format == "orc"
    assert all(f.read_bytes()[:3] == b"ORC" for f in (table_dir / "manifest").iterdir())
    problems = []
    assert read_table(table, problems=problems).num_rows == JAVA_ORC[(root, name)]
    assert problems == []
    plan = table.plan()
    assert plan.files and not plan.problems
    assert [lf.file for lf in table.plan_columns().live_files(table)] == [lf.file for lf in plan.files]
    assert sum(lf.file.row_count for lf in plan.files) >= JAVA_ORC[(root, name)]


def test_orc_mapping_matches_java_writer(conformance):
    """The ORC types used above equal the ones Paimon Java wrote (append_10: ORC manifests)."""
    java_dir = conformance / "warehouses" / "parquet" / "append_10.db" / "append_10" / "manifest"
    avro_dir = conformance / "warehouses" / "parquet" / "pk_with_bitmap_dv.db" / "pk_with_bitmap_dv" / "manifest"
    if not java_dir.is_dir() or not avro_dir.is_dir():
        pytest.skip("conformance tables append_10 / pk_with_bitmap_dv absent")
    checked = 0
    for prefix in ("manifest-list-", "manifest-"):
        java = next(f for f in sorted(java_dir.iterdir()) if f.name.startswith(prefix)
                    and (prefix != "manifest-" or not f.name.startswith("manifest-list-")))
        avro = next(f for f in sorted(avro_dir.iterdir()) if f.name.startswith(prefix)
                    and (prefix != "manifest-" or not f.name.startswith("manifest-list-")))
        java_schema = po.ORCFile(str(java)).schema.remove_metadata()
        java_types = {f.name: _strip(f.type) for f in java_schema}
        ours = arrow_schema(fastavro.reader(io.BytesIO(avro.read_bytes())).writer_schema, "orc")
        assert set(ours.names) == set(java_types), prefix
        for f in ours:
            assert f.type == java_types[f.name], f"{prefix}{f.name}"
            checked += 1
    assert checked >= 10


def _strip(dtype: pa.DataType) -> pa.DataType:
    """An Arrow type without field metadata (ORC's paimon.id attributes)."""
    if pa.types.is_struct(dtype):
        return pa.struct([pa.field(f.name, _strip(f.type), f.nullable) for f in dtype])
    if pa.types.is_list(dtype):
        f = dtype.value_field
        return pa.list_(pa.field(f.name, _strip(f.type), f.nullable))
    return dtype
