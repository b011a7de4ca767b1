"""Index audit checks (no Spark): Paimon-written tables audit clean; tampered indexes are caught."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from indexcore import open_warehouse
from indexcore.analysis.audit import (
    ERROR,
    OK,
    Check,
    Finding,
    Severity,
    audit_file,
    audit_table,
    health_frames,
)
from indexcore.formats.container import read_container
from indexcore.formats.hash_index import write_hash_index
from indexcore.types import DataField, parse_type
from indexcore.warehouse.model import TableSchema
from indexcore.write.datafile import build_file_index_container
from indexcore.write.table import TableWriter

INDEXED = ["append_with_bitmap", "append_with_bitmap_v1", "append_with_bitmap_no_embedding",
           "append_with_bloomfilter", "append_with_bsi", "append_with_bsi_bitmap_bloomfilter",
           "append_with_bitmap_alter_table", "data_evolution_with_index", "pk_with_bitmap_dv",
           "pk_table_scan_and_read_dv", "pk_table_with_dv_cardinality", "pk_dv_index_in_data_with_external"]


def _audit(table):
    plan = table.plan()
    return [f for lf in plan.files for f in audit_file(table, lf, plan)] + audit_table(table, plan)


@pytest.mark.parametrize("name", INDEXED)
def test_paimon_tables_audit_clean(conformance: Path, name: str) -> None:
    table = open_warehouse(conformance / "warehouses" / "parquet").table(f"{name}.{name}")
    plan = table.plan()
    findings = _audit(table)
    assert [f for f in findings if f.severity == ERROR] == []
    # one OK per index entry of every file, and one per deletion vector
    entries = 0
    for lf in plan.files:
        source = table.file_index_source(lf)
        if source is not None:
            entries += len(read_container(source).head.entries)
    ok_index = [f for f in findings if f.check == "index-ok" and f.severity == OK]
    assert len(ok_index) == entries
    dvs = sum(1 for lf in plan.files if lf.deletion_vector is not None)
    assert sum(1 for f in findings if f.check == "dv-ok") == dvs
    health = health_frames(findings)
    assert bool(health["table"]["healthy"].iloc[0])


SCHEMA = TableSchema(
    0, (DataField(0, "id", parse_type("INT NOT NULL")), DataField(1, "name", parse_type("STRING")),
        DataField(2, "v", parse_type("BIGINT"))),
    primary_keys=("id",),
    options={"bucket": "-1", "deletion-vectors.enabled": "true", "file-index.in-manifest-threshold": "1B",
             "file-index.bitmap.columns": "name", "file-index.bsi.columns": "v",
             "file-index.bloom-filter.columns": "id", "file-index.range-bitmap.columns": "v",
             "dynamic-bucket.target-row-num": "50"})


def _rows(ids, name=None, v=None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int32()),
                     "name": [name or f"n{i % 7}" for i in ids],
                     "v": [v if v is not None else i * 3 - 50 for i in ids]})


@pytest.fixture
def written(tmp_path: Path):
    """A dynamic-bucket primary-key table with DVs, hash indexes and four file indexes in .index files."""
    w = TableWriter.create(str(tmp_path), "db.t", SCHEMA)
    w.write(_rows(range(100)))
    w.write(_rows(range(0, 100, 10), name="x", v=7))
    return open_warehouse(str(tmp_path)).table("db.t")


def test_written_table_audits_clean(written) -> None:
    findings = _audit(written)
    assert [f for f in findings if f.severity != OK] == []
    checks = {f.check for f in findings}
    assert {"index-ok", "dv-ok", "hash-keys", "hash-ok", "dv-file-ok"} <= checks


def _fresh(table):
    return open_warehouse(table.storage.url).table(table.name)


def _replace_index(table, lf, rows: pa.Table) -> None:
    """Overwrite a file's .index with one our writer builds from other values."""
    data = build_file_index_container(rows, SCHEMA)
    with open(lf.index_path, "wb") as fh:
        fh.write(data)


def test_stale_index_is_reported(written) -> None:
    lf = max(written.plan().files, key=lambda f: f.file.row_count)
    n = lf.file.row_count
    ids = list(range(1000, 1000 + n))
    _replace_index(written, lf, _rows(ids, name="zz", v=123456))
    table = _fresh(written)
    lf = next(f for f in table.plan().files if f.path == lf.path)
    findings = [f for f in audit_file(table, lf, table.plan()) if f.severity == ERROR]
    by_type = {(f.index_type, f.check) for f in findings}
    assert ("bitmap", "value-coverage") in by_type
    assert ("bitmap", "stale-values") in by_type
    assert ("range-bitmap", "min-max") in by_type
    assert ("bsi", "min-max") in by_type
    bitmap = next(f for f in findings if f.index_type == "bitmap" and f.check == "stale-values")
    assert bitmap.value == ["zz"] and bitmap.column == "name"
    # bloom: the real ids were never added, so most of them test absent
    bloom = [f for f in findings if f.index_type == "bloom-filter"]
    assert bloom and bloom[0].check is Check.VALUE_COVERAGE and bloom[0].column == "id"
    # JSON carries the enums' plain values; a task's dict comes back as the same finding
    d = bitmap.to_dict()
    assert type(d["check"]) is str and type(d["severity"]) is str and d["check"] == "stale-values"
    back = Finding.from_dict(d)
    assert back == bitmap and back.severity is Severity.ERROR and back.check is Check.STALE_VALUES


def test_row_count_mismatch(written) -> None:
    lf = max(written.plan().files, key=lambda f: f.file.row_count)
    _replace_index(written, lf, _rows(range(3)))
    table = _fresh(written)
    lf = next(f for f in table.plan().files if f.path == lf.path)
    findings = audit_file(table, lf)
    counts = {f.index_type for f in findings if f.check == "row-count"}
    assert counts == {"bitmap", "range-bitmap", "bsi"}


def test_corrupt_and_missing_index_files(written) -> None:
    files = sorted(written.plan().files, key=lambda f: f.path)
    with open(files[0].index_path, "r+b") as fh:
        fh.truncate(30)
    os.remove(files[1].index_path)
    table = _fresh(written)
    plan = table.plan()
    by_path = {lf.path: lf for lf in plan.files}
    corrupt = audit_file(table, by_path[files[0].path], plan)
    missing = audit_file(table, by_path[files[1].path], plan)
    assert [f.check for f in corrupt if f.severity == ERROR] == ["index-decodes"]
    assert corrupt[0].path == files[0].index_path and "at byte 12" in corrupt[0].message
    assert [f.check for f in missing if f.severity == ERROR] == ["index-missing"]
    # the DV and key-hash checks of those files still ran
    assert any(f.check == "hash-keys" and f.severity == OK for f in corrupt)


def test_hash_index_checks(written) -> None:
    plan = written.plan()
    (part, b0), (_, b1) = sorted(plan.hash_indexes)
    e0, e1 = plan.hash_indexes[(part, b0)][0], plan.hash_indexes[(part, b1)][0]
    h0 = written.hash_index(e0).hashes.tolist()
    h1 = written.hash_index(e1).hashes.tolist()
    # bucket 0 loses its first five keys and gains a key of bucket 1; the sizes stay
    tampered = h0[5:] + h1[:5]
    with open(written.index_file_path(e0), "wb") as fh:
        fh.write(write_hash_index(tampered))
    table = _fresh(written)
    findings = _audit(table)
    dup = [f for f in findings if f.check == "hash-duplicate"]
    assert len(dup) == 1 and set(dup[0].value) <= set(h1[:5])
    lost = [f for f in findings if f.check == "hash-keys" and f.severity == ERROR]
    assert lost and all(f.bucket == b0 for f in lost)
    assert set(lost[0].value) <= set(h0[:5])
    # 50 keys in a bucket of target 50 is fine; above 2x the target is flagged
    with open(table.index_file_path(e1), "wb") as fh:
        fh.write(write_hash_index(h1 + list(range(10**6, 10**6 + 60))))
    findings = _audit(_fresh(written))
    assert {f.check for f in findings if f.bucket == b1 and f.severity != OK} >= {"hash-oversize", "hash-row-count"}


def test_orphan_index_file_and_dv(written, tmp_path: Path) -> None:
    lf = written.plan().files[0]
    shutil.copy(lf.index_path, os.path.join(os.path.dirname(lf.path), "data-gone.parquet.index"))
    findings = _audit(_fresh(written))
    orphans = [f for f in findings if f.check == "index-unreferenced"]
    assert [os.path.basename(f.path) for f in orphans] == ["data-gone.parquet.index"]


def test_permuted_rows_are_reported(written) -> None:
    """An index over the file's own values in reverse row order: same dictionary, same min/max,
    wrong rows. Only the row-level checks can see it."""
    from indexcore.warehouse.data_file import read_data_file

    lf = max(written.plan().files, key=lambda f: f.file.row_count)
    rows = read_data_file(written.storage, lf, SCHEMA, SCHEMA)
    _replace_index(written, lf, rows.take(list(range(rows.num_rows - 1, -1, -1))))
    table = _fresh(written)
    lf = next(f for f in table.plan().files if f.path == lf.path)
    findings = [f for f in audit_file(table, lf, table.plan()) if f.severity == ERROR]
    assert {(f.index_type, f.check) for f in findings} == {
        ("bitmap", "bitmap-rows"), ("range-bitmap", "value-coverage"), ("bsi", "value-coverage")}
    v = rows.column("v").to_pylist()
    wrong = [x for i, x in enumerate(v) if x != v[len(v) - 1 - i]]
    bsi = next(f for f in findings if f.index_type == "bsi")
    assert bsi.value == wrong[:5] and bsi.message.startswith(f"{len(wrong)} rows")
    names = rows.column("name").to_pylist()
    bitmap = next(f for f in findings if f.index_type == "bitmap")
    assert set(bitmap.value) <= set(names)


@pytest.mark.parametrize("type_sql", ["INT", "BIGINT", "STRING", "DOUBLE", "TIMESTAMP(3)", "DATE"])
def test_vectorized_bloom_test_equals_reader(type_sql: str) -> None:
    """The audit's batch hashing and probing answer as the bloom-filter reader, value by value."""
    import random

    from indexcore.formats.bloom import contains_hashes, distinct_hashes
    from indexcore.formats.column_values import ColumnValues
    from indexcore.formats.registry import new_writer, open_reader
    from indexcore.io import BytesSource
    from indexcore.types.values import from_internal, to_internal

    dtype = parse_type(type_sql)
    rnd = random.Random(11)
    ints = [rnd.randint(-10**6, 10**6) for _ in range(400)]
    arrow = pa.array(ints, pa.int64())
    if type_sql == "INT":
        arrow = pa.array(ints, pa.int32())
    elif type_sql == "STRING":
        arrow = pa.array([f"v{i}é" for i in ints])
    elif type_sql == "DOUBLE":
        arrow = pa.array([i / 7 for i in ints])
    elif type_sql == "TIMESTAMP(3)":
        arrow = pa.array([i * 1000 for i in ints], pa.timestamp("ms"))
    elif type_sql == "DATE":
        arrow = pa.array([i % 50000 for i in ints], pa.date32())
    values = to_internal(arrow, dtype)
    writer = new_writer("bloom-filter", dtype, {"items": "100", "fpp": "0.05"})
    for value in values[:200]:  # half the values are written, the other half mostly test absent
        writer.write(value)
    reader = open_reader("bloom-filter", dtype, BytesSource(writer.serialized_bytes()), {})
    col = ColumnValues(from_internal(values, dtype), dtype)
    found = contains_hashes(reader.bit_set(), reader.num_hash_functions, distinct_hashes(col))
    want = [reader.might_contain(v) for v in col.distinct]
    assert found.tolist() == want and not all(want) and any(want)
