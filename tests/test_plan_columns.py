"""Manifests decoded straight to Arrow columns, and the plan as columns (issues 29 and 30).

Truth: fastavro's records of the same bytes (a foreign decoder) for every manifest-like file of
the conformance warehouses; the object plan (fastavro, one record at a time) for every plan;
hand-built ADD/DELETE sequences whose live files are known by construction for the merge.
"""

from __future__ import annotations

import datetime
import io
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import indexcore
from indexcore.errors import CorruptFileError
from indexcore.views import system as system_views
from indexcore.warehouse import manifest_columns, plan_columns, table_plan_columns
from indexcore.warehouse.manifest import MANIFEST_ENTRY, read_records
from indexcore.warehouse.manifest_columns import check_table, null_codec_container, read_manifest_table
from indexcore.warehouse.plan_columns import ENTRY, merge_rows

ROOT = Path(__file__).resolve().parent.parent
AVRO_MAGIC = b"Obj\x01"


def _manifest_files(conformance: Path) -> list[Path]:
    files = sorted(p for p in (conformance / "warehouses").glob("**/manifest/*") if p.is_file())
    assert len(files) > 500, "the conformance warehouses hold hundreds of manifest-like files"
    return files


def _fmt(data: bytes) -> str:
    return "avro" if data[:4] == AVRO_MAGIC else "parquet" if data[:4] == b"PAR1" else "orc"


def _naive(value):
    """fastavro's values as the columns give them: timestamps without their UTC zone."""
    if isinstance(value, dict):
        return {k: _naive(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_naive(v) for v in value]
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.replace(tzinfo=None)
    return value


def _same_as_records(paths: list[Path], decoder: str | None = None) -> tuple[int, set]:
    compared, formats = 0, set()
    for path in paths:
        data = path.read_bytes()
        fmt = _fmt(data)
        records = read_records(data, fmt, str(path))
        got = read_manifest_table(data, fmt, str(path), decoder=decoder).to_pylist()
        assert got == _naive(records), f"{path}: columns differ from fastavro's records"
        compared += 1
        formats.add(fmt)
    return compared, formats


def test_every_conformance_manifest_decodes_as_fastavro_does(conformance):
    compared, formats = _same_as_records(_manifest_files(conformance))
    assert compared > 500 and formats == {"avro", "orc"}


@pytest.mark.parametrize("decoder", ["polars", "fastavro"])
def test_the_fallback_decoders_give_the_same_columns(conformance, decoder):
    """Without the C extension (no compiler) manifests decode through polars, or fastavro's
    records (a fork() child, or no polars): the same columns."""
    files = _manifest_files(conformance)
    compared, _ = _same_as_records(files[::7], decoder)
    assert compared > 50


def test_paimon_09_rows_and_zstd_blocks_decode(conformance):
    """Paimon 0.9 wrote each row as a ``["null", record]`` union (polars refuses it) and every
    Paimon writes zstd by default, which polars cannot inflate: both come out as columns."""
    lists = sorted((conformance / "warehouses/parquet/pk_09.db/pk_09/manifest").glob("manifest-list-*"),
                   key=lambda p: -p.stat().st_size)
    data = lists[0].read_bytes()
    assert fastavro.reader(io.BytesIO(data)).codec == "zstandard"
    assert isinstance(fastavro.reader(io.BytesIO(data)).writer_schema, list)
    assert null_codec_container(data, "x") is None
    table = read_manifest_table(data, "avro", str(lists[0]))
    assert table.num_rows == len(read_records(data, "avro", "x")) > 0
    assert "_FILE_NAME" in table.column_names


def _manifest_bytes(conformance: Path) -> tuple[bytes, dict, list[dict]]:
    folder = conformance / "warehouses/parquet/append_with_bitmap_no_embedding.db/append_with_bitmap_no_embedding"
    for p in sorted((folder / "manifest").glob("manifest-*")):
        if not p.name.startswith("manifest-list"):
            data = p.read_bytes()
            reader = fastavro.reader(io.BytesIO(data))
            return data, reader.writer_schema, list(reader)
    raise AssertionError("no manifest")


def _write(schema: dict, records: list[dict], codec: str = "deflate") -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec=codec)
    return out.getvalue()


def test_bad_bytes_name_file_structure_and_offset(conformance):
    data, schema, records = _manifest_bytes(conformance)
    with pytest.raises(CorruptFileError) as exc:
        read_manifest_table(data[:len(data) - 20], "avro", "m-1")
    assert exc.value.file == "m-1" and "avro block" in str(exc.value) and exc.value.offset is not None
    with pytest.raises(CorruptFileError, match="bad magic"):
        read_manifest_table(b"Obj\x02" + data[4:], "avro", "m-2")
    synced = bytearray(data)
    synced[-1] ^= 0xFF  # the last sync marker
    with pytest.raises(CorruptFileError, match="sync marker"):
        read_manifest_table(bytes(synced), "avro", "m-3")


def test_a_block_that_inflates_past_the_budget_is_refused(conformance, monkeypatch):
    _data, schema, records = _manifest_bytes(conformance)
    many = _write(schema, records * 400, codec="deflate")
    monkeypatch.setattr("indexcore.warehouse.manifest.INFLATE_FLOOR", 1024)
    monkeypatch.setattr("indexcore.warehouse.manifest.INFLATE_RATIO", 2)
    with pytest.raises(CorruptFileError, match="inflates past"):
        read_manifest_table(many, "avro", "bomb")


def test_checks_on_columns_name_the_record_and_field(conformance):
    _data, schema, records = _manifest_bytes(conformance)
    odd = [dict(r) for r in records * 3]
    odd[2] = {**odd[2], "_KIND": 7}
    with pytest.raises(CorruptFileError, match=r"manifest entry 2: field _KIND is 7"):
        check_table(read_manifest_table(_write(schema, odd), "avro", "k"), MANIFEST_ENTRY, "k")
    negative = [dict(r) for r in records * 2]
    negative[1] = {**negative[1], "_FILE": {**negative[1]["_FILE"], "_FILE_SIZE": -5}}
    with pytest.raises(CorruptFileError, match=r"manifest entry 1: field _FILE._FILE_SIZE must not be negative: -5"):
        check_table(read_manifest_table(_write(schema, negative), "avro", "n"), MANIFEST_ENTRY, "n")
    good = read_manifest_table(_write(schema, records), "avro", "g")
    check_table(good, MANIFEST_ENTRY, "g")
    with pytest.raises(CorruptFileError, match="field _FILE is missing"):
        check_table(good.drop_columns(["_FILE"]), MANIFEST_ENTRY, "g")


def _entries(rows: list[tuple[int, str]]) -> pa.Table:
    """Manifest entries (kind, file name) of one partition and bucket, in manifest order."""
    n = len(rows)
    cols = {f.name: pa.nulls(n, f.type) for f in ENTRY}
    cols["_KIND"] = pa.array([k for k, _ in rows], pa.int32())
    cols["_PARTITION"] = pa.array([b"p"] * n, pa.binary())
    cols["_BUCKET"] = pa.array([0] * n, pa.int32())
    cols["_LEVEL"] = pa.array([0] * n, pa.int32())
    cols["_FILE_NAME"] = pa.array([name for _, name in rows], pa.string())
    return pa.table(cols, schema=ENTRY)


ADD, DEL = 0, 1


@pytest.mark.parametrize("rows,live", [
    ([(ADD, "a"), (ADD, "b"), (ADD, "c")], [0, 1, 2]),
    ([(ADD, "a"), (ADD, "b"), (DEL, "a"), (ADD, "c"), (ADD, "a")], [1, 3, 4]),  # re-added: last place
    ([(ADD, "a"), (DEL, "a")], []),
    ([(DEL, "a"), (ADD, "b")], [1]),  # a DELETE of a file never added removes nothing
    ([(ADD, "a"), (ADD, "b"), (ADD, "a")], [2, 1]),  # added twice: the first place, the last entry
    ([(ADD, "a"), (DEL, "a"), (ADD, "a"), (DEL, "a"), (ADD, "b")], [4]),
])
def test_merge_keeps_what_the_last_entry_says_in_plan_order(rows, live):
    assert merge_rows(_entries(rows)).tolist() == live


def test_merge_key_includes_bucket_and_level():
    t = _entries([(ADD, "a"), (ADD, "a"), (DEL, "a")])
    t = t.set_column(ENTRY.get_field_index("_LEVEL"), "_LEVEL", pa.array([0, 1, 0], pa.int32()))
    assert merge_rows(t).tolist() == [1]


def _objects(files) -> list[tuple]:
    return [(lf.path, lf.index_path, lf.partition, lf.partition_spec, lf.bucket, lf.total_buckets,
             lf.deletion_vector, lf.dv_file_path, lf.file, lf.bitmap64) for lf in files]


def test_plan_columns_equal_the_object_plan_on_every_conformance_table(conformance):
    """Every snapshot of every conformance table: the same live files in the same order, every
    field of each (stats, keys, extra files, DV ranges, embedded indexes), the same problems."""
    plans = 0
    deleting = 0
    for root in sorted((conformance / "warehouses").iterdir()):
        warehouse = indexcore.open_warehouse(str(root))
        for name in warehouse.tables():
            table = warehouse.table(name)
            for sid in table.snapshot_ids():
                plan, columns = table.plan(sid), table.plan_columns(sid)
                assert _objects(columns.live_files(table)) == _objects(plan.files), f"{root.name} {name} {sid}"
                assert set(columns.problems) == set(plan.problems)
                assert list(columns.index_entries) == plan.index_entries
                assert columns.files.column("path").to_pylist() == [lf.path for lf in plan.files]
                assert columns.partition_values() == [lf.partition for lf in plan.files]
                plans += 1
            kinds = {e.kind for e in table.manifest_entry_list()}
            deleting += "DELETE" in kinds
    assert plans > 150 and deleting > 10


def test_plan_columns_are_kept_and_shared(conformance):
    root = conformance / "warehouses" / "parquet"
    table = indexcore.open_warehouse(str(root)).table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    first = table.plan_columns()
    assert table.plan_columns() is first
    assert first.files.column("dv_offset").null_count < first.num_files  # its DVs are columns


def test_an_unreadable_manifest_is_a_problem_as_in_the_object_plan(conformance, tmp_path):
    import shutil

    src = conformance / "warehouses/parquet/append_with_bitmap_no_embedding.db"
    shutil.copytree(src, tmp_path / "append_with_bitmap_no_embedding.db")
    folder = tmp_path / "append_with_bitmap_no_embedding.db/append_with_bitmap_no_embedding/manifest"
    victim = next(p for p in sorted(folder.iterdir())
                  if p.name.startswith("manifest-") and not p.name.startswith("manifest-list"))
    victim.write_bytes(victim.read_bytes()[:40])
    full = "append_with_bitmap_no_embedding.append_with_bitmap_no_embedding"
    objects = indexcore.open_warehouse(str(tmp_path)).table(full)
    columns = indexcore.open_warehouse(str(tmp_path)).table(full)
    for sid in objects.snapshot_ids():
        plan, cols = objects.plan(sid), columns.plan_columns(sid)
        assert _objects(cols.live_files(columns)) == _objects(plan.files)
        assert {(p.path, p.structure) for p in cols.problems} == {(p.path, p.structure) for p in plan.problems}
    assert any(p.structure == "manifest" and victim.name in p.path for p in columns.plan_columns().problems) or \
        any(victim.name in p.path for p in columns.problems)


def test_manifest_columns_module_imports_no_polars_at_top():
    """polars is the optional columnar decoder: importing indexcore must not need it."""
    source = Path(manifest_columns.__file__).read_text()
    assert "\nimport polars" not in source and "\nfrom polars" not in source


def _conformance_tables(conformance: Path):
    for root in sorted((conformance / "warehouses").iterdir()):
        warehouse = indexcore.open_warehouse(str(root))
        for name in warehouse.tables():
            yield root, warehouse.table(name)


def test_files_view_equals_the_object_plan(conformance):
    """``$files`` (built on columns) against each LiveFile of the object plan, field by field,
    and its rendered stats against the objects' decoded stats."""
    from indexcore.views import view
    from indexcore.views.common import dv_cardinality, partition_text, stats_text

    checked = 0
    for root, table in _conformance_tables(conformance):
        plan = table.plan()
        got = view(table, "files").to_pylist()
        assert len(got) == len(plan.files), f"{root.name} {table.name}"
        types = [f.type for f in table.schema().partition_fields]
        for row, lf in zip(got, plan.files, strict=True):
            m = lf.file
            assert (row["partition"], row["bucket"], row["file_path"], row["file_name"]) == \
                (partition_text(lf.partition, types), lf.bucket, lf.path, m.file_name)
            assert (row["file_format"], row["schema_id"], row["level"], row["record_count"],
                    row["file_size_in_bytes"]) == (m.file_format, m.schema_id, m.level, m.row_count, m.file_size)
            assert (row["min_sequence_number"], row["max_sequence_number"], row["creation_time"],
                    row["deleteRowCount"], row["first_row_id"], row["external_path"]) == \
                (m.min_sequence_number, m.max_sequence_number, m.creation_time, m.delete_row_count, m.first_row_id,
                 m.external_path)
            assert row["file_source"] == {0: "APPEND", 1: "COMPACT"}.get(m.file_source)
            assert row["write_cols"] == (list(m.write_cols) if m.write_cols is not None else None)
            assert (row["embedded_index"], row["index_file"]) == (m.embedded_index is not None, lf.index_path)
            assert row["deletion_vector_cardinality"] == dv_cardinality(table, lf)
            schema = table.file_schema(lf)
            names = m.value_stats_cols if m.value_stats_cols is not None else m.write_cols
            names = list(names) if names is not None else list(schema.field_names)
            vtypes = [schema.field(n).type if n in schema.field_names else None for n in names]
            assert row["min_value_stats"] == stats_text(names, vtypes, m.value_stats.min_values)
            assert row["max_value_stats"] == stats_text(names, vtypes, m.value_stats.max_values)
            assert row["null_value_counts"] == stats_text(names, [None] * len(names), m.value_stats.null_counts)
            if table.schema().trimmed_primary_keys:
                assert row["min_key"] == partition_text(tuple(m.min_key), table.key_types(m.schema_id))
            checked += 1
        paths = [lf.path for lf in plan.files][::2]
        whole = view(table, "files")
        assert whole.filter(pc.is_in(whole["file_path"], pa.array(paths, pa.string()))).equals(
            system_views.files(table, paths=paths))
    assert checked > 200


def test_census_equals_the_parsed_heads_of_the_object_plan(conformance):
    """``$file_indexes`` (columns, heads read column-wise) against each LiveFile's container head
    parsed by :func:`parse_head` (the entry-object parser)."""
    from indexcore.views import view

    files_with_index = 0
    for root, table in _conformance_tables(conformance):
        census = view(table, "file_indexes").to_pylist()
        expected = []
        for lf, head, error in table.iter_index_heads(table.plan().files):
            files_with_index += 1
            if head is None:
                expected.append((lf.path, None, None, None, error))
                continue
            for e in head.entries:
                expected.append((lf.path, e.column, e.index_type, e.offset, None))
        got = [(r["file_path"], r["column_name"], r["index_type"], r["index_offset"],
                r["error"] if r["column_name"] is None else None) for r in census]
        assert got == expected, f"{root.name} {table.name}"
    assert files_with_index > 20


def test_sample_positions_draw_what_random_sample_of_the_files_draws():
    """The census samples positions; the files it names are those ``random.sample`` of the files
    themselves picks (what sample_files drew before), in path order."""
    import random

    from indexcore.warehouse.file_sample import sample_positions

    paths = [f"p/{(i * 7919) % 1000:04d}" for i in range(1000)]
    for n, seed in ((1, 0), (10, 0), (999, 3)):
        assert [paths[i] for i in sample_positions(paths, n, seed)] == sorted(random.Random(seed).sample(paths, n))


def test_negative_buckets_keep_their_folders():
    from indexcore.warehouse.table_plan_columns import _signed32

    for bucket in (-2, -1, 0, 1, 2**31 - 1):
        assert _signed32(((7 << 32) | (bucket & 0xFFFFFFFF)) & 0xFFFFFFFF) == bucket


def _row(*fields: bytes) -> bytes:
    """A BinaryRow of fixed-width 8-byte slots (no variable part)."""
    return len(fields).to_bytes(4, "big") + b"\0" * (((len(fields) + 63 + 8) // 64) * 8) + \
        b"".join(f.ljust(8, b"\0") for f in fields)


def _many_files_table(conformance: Path, dst: Path, n_files: int, per_manifest: int = 1000) -> str:
    """An append table of ``n_files`` live files in manifests with the Avro schemas Paimon writes
    (taken from a conformance table); returns its name."""
    import json

    src = conformance / "warehouses/parquet/append_with_bitmap_no_embedding.db/append_with_bitmap_no_embedding"
    schemas = {}
    for p in sorted((src / "manifest").iterdir()):
        kind = "list" if p.name.startswith("manifest-list-") else "entry" if p.name.startswith("manifest-") else None
        if kind and kind not in schemas:
            schemas[kind] = fastavro.reader(io.BytesIO(p.read_bytes())).writer_schema
    table = dst / "db.db" / "t"
    for sub in ("manifest", "schema", "snapshot"):
        (table / sub).mkdir(parents=True)
    (table / "schema" / "schema-0").write_text(json.dumps({
        "version": 3, "id": 0, "fields": [{"id": 0, "name": "id", "type": "BIGINT"}], "highestFieldId": 0,
        "partitionKeys": [], "primaryKeys": [], "options": {"bucket": "-1"}, "timeMillis": 0}))
    metas = []
    for m in range(n_files // per_manifest):
        entries = [{"_VERSION": 2, "_KIND": 0, "_PARTITION": _row(), "_BUCKET": 0, "_TOTAL_BUCKETS": -1, "_FILE": {
            "_FILE_NAME": f"data-{m}-{i}.parquet", "_FILE_SIZE": 4096 + i, "_ROW_COUNT": 100,
            "_MIN_KEY": _row(), "_MAX_KEY": _row(),
            "_KEY_STATS": {"_MIN_VALUES": _row(), "_MAX_VALUES": _row(), "_NULL_COUNTS": []},
            "_VALUE_STATS": {"_MIN_VALUES": _row(i.to_bytes(8, "little")), "_MAX_VALUES": _row(i.to_bytes(8, "little")),
                             "_NULL_COUNTS": [0]},
            "_MIN_SEQUENCE_NUMBER": 0, "_MAX_SEQUENCE_NUMBER": 99, "_SCHEMA_ID": 0, "_LEVEL": 0,
            "_EXTRA_FILES": [], "_CREATION_TIME": None, "_DELETE_ROW_COUNT": 0, "_EMBEDDED_FILE_INDEX": None,
            "_FILE_SOURCE": 0, "_VALUE_STATS_COLS": None, "_EXTERNAL_PATH": None}} for i in range(per_manifest)]
        name = f"manifest-{m}"
        (table / "manifest" / name).write_bytes(_write(schemas["entry"], entries, codec="deflate"))
        metas.append({"_VERSION": 2, "_FILE_NAME": name, "_FILE_SIZE": (table / "manifest" / name).stat().st_size,
                      "_NUM_ADDED_FILES": per_manifest, "_NUM_DELETED_FILES": 0, "_SCHEMA_ID": 0,
                      "_PARTITION_STATS": {"_MIN_VALUES": _row(), "_MAX_VALUES": _row(), "_NULL_COUNTS": []}})
    (table / "manifest" / "manifest-list-base").write_bytes(_write(schemas["list"], metas))
    (table / "manifest" / "manifest-list-delta").write_bytes(_write(schemas["list"], []))
    (table / "snapshot" / "snapshot-1").write_text(json.dumps({
        "version": 3, "id": 1, "schemaId": 0, "baseManifestList": "manifest-list-base",
        "deltaManifestList": "manifest-list-delta", "commitUser": "t", "commitIdentifier": 1, "commitKind": "APPEND",
        "timeMillis": 1, "totalRecordCount": n_files * 100, "deltaRecordCount": n_files * 100}))
    (table / "snapshot" / "LATEST").write_text("1")
    return "db.t"


def test_the_columnar_plan_keeps_no_python_object_per_file(conformance, tmp_path):
    """Python memory the plan keeps, per live file: a few bytes on columns (distinct partitions,
    the manifest list), about 1.9 KB with a LiveFile per file (measured at 10,000 files)."""
    import tracemalloc

    n = 8000
    name = _many_files_table(conformance, tmp_path, n)
    indexcore.open_warehouse(str(tmp_path)).table(name).plan_columns()  # imports and first-use memos
    kept = {}
    for what in ("plan_columns", "plan"):
        table = indexcore.open_warehouse(str(tmp_path)).table(name)
        tracemalloc.start()
        try:
            result = getattr(table, what)()
            kept[what] = tracemalloc.get_traced_memory()[0] / n
        finally:
            tracemalloc.stop()
        assert (result.num_files if what == "plan_columns" else len(result.files)) == n
    assert kept["plan_columns"] < 64, kept
    assert kept["plan"] > 10 * kept["plan_columns"], kept  # the measure sees objects when there are some


def test_health_totals_and_small_files_from_columns_equal_the_object_plan(conformance):
    from indexcore.analysis.health import table_health

    for _root, table in list(_conformance_tables(conformance))[::4]:
        files = table.plan().files
        h = table_health(table)
        assert (h.files, h.rows, h.data_bytes) == (len(files), sum(lf.file.row_count for lf in files),
                                                   sum(lf.file.file_size for lf in files))
        small: dict = {}
        for lf in files:
            if lf.file.file_size < h.small_file_threshold:
                small[(lf.partition, lf.bucket)] = small.get((lf.partition, lf.bucket), 0) + 1
        assert h.small_files == sum(small.values())


def test_by_path_makes_only_the_files_asked_for(conformance):
    root = conformance / "warehouses" / "parquet"
    table = indexcore.open_warehouse(str(root)).table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    plan = table.plan_columns()
    by_path = plan.by_path(table)
    paths = plan.files.column("path").to_pylist()
    assert len(by_path) == len(paths) and list(by_path) == paths and paths[0] in by_path
    assert by_path[paths[-1]] == next(lf for lf in table.plan().files if lf.path == paths[-1])
    assert list(by_path._made) == [paths[-1]]


def test_buckets_and_partitions_views_sum_the_object_plan_in_first_seen_order(conformance):
    from indexcore.views import view
    from indexcore.views.common import partition_text

    for _root, table in _conformance_tables(conformance):
        types = [f.type for f in table.schema().partition_fields]
        for name, by_bucket in (("buckets", True), ("partitions", False)):
            groups: dict = {}
            for lf in table.plan().files:
                g = groups.setdefault((lf.partition, lf.bucket) if by_bucket else (lf.partition,), {
                    "partition": partition_text(lf.partition, types), "bucket": lf.bucket, "record_count": 0,
                    "file_size_in_bytes": 0, "file_count": 0, "last_update_time": None})
                g["record_count"] += lf.file.row_count
                g["file_size_in_bytes"] += lf.file.file_size
                g["file_count"] += 1
                created = lf.file.creation_time
                if created is not None and (g["last_update_time"] is None or created > g["last_update_time"]):
                    g["last_update_time"] = created
            got = view(table, name).to_pylist()
            expected = [{k: v for k, v in g.items() if k in got[0]} for g in groups.values()] if got else []
            assert got == expected, f"{table.name} ${name}"


@pytest.mark.parametrize("batch", [1, 3000])
def test_manifests_decoded_in_batches_give_the_object_plan(conformance, monkeypatch, batch):
    """plan_columns decodes the manifests it lacks together, a batch of up to BATCH_BYTES stored
    bytes at a time: one manifest per batch, or a few, give the same plan as one at a time."""
    monkeypatch.setattr(table_plan_columns, "BATCH_BYTES", batch)
    root = conformance / "warehouses" / "parquet"
    warehouse = indexcore.open_warehouse(str(root))
    compared = 0
    for name in ("pk_with_bitmap_dv.pk_with_bitmap_dv", "append_with_bitmap_no_embedding.append_with_bitmap_no_embedding"):
        objects, columns = warehouse.table(name), indexcore.open_warehouse(str(root)).table(name)
        for sid in sorted(objects.snapshot_ids(), reverse=True):  # the latest first: every manifest missing
            assert _objects(columns.plan_columns(sid).live_files(columns)) == _objects(objects.plan(sid).files)
            compared += 1
    assert compared > 2


def test_views_of_one_sample_share_their_live_files_and_an_early_stop_makes_few(monkeypatch):
    """iter_file_indexes makes the blobs' live files on the table's kept by-path map: a second view
    of the same files gets the same objects (none made again), and a caller that stops after the
    first blob has made only the first slice's files, not the snapshot's."""
    from indexcore.views import census_blobs as census

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    table = indexcore.open_warehouse(str(sample)).table("demo.events")
    first = [b.file for b in census.iter_file_indexes(table)]
    again = [b.file for b in census.iter_file_indexes(table, index_types=["bitmap"])]
    assert again and all(any(lf is f for f in first) for lf in again)
    monkeypatch.setattr(census, "_BLOB_SLICE", 2)
    fresh = indexcore.open_warehouse(str(sample)).table("demo.events")
    files = fresh.plan_columns().num_files
    assert files > 2
    next(census.iter_file_indexes(fresh))
    assert len(fresh.live_files_by_path()._made) <= 2 < files


@pytest.mark.parametrize("name", ["demo.events", "demo.orders"])
def test_file_stats_frame_on_the_plan_columns_is_the_object_plans(name):
    """The Table page's column statistics read the files made from the columnar plan (no object
    plan is built): the same frame as column_stats over the object plan's files, every file, the
    first two and one picked path."""
    from indexcore.scan.stats import column_stats, file_stats_frame, stats_json

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    table = indexcore.open_warehouse(str(sample)).table(name)
    files = indexcore.open_warehouse(str(sample)).table(name).plan().files
    schema = table.schema()
    column = schema.field_names[1]
    for kwargs, want in (({}, files), ({"limit": 2}, files[:2]), ({"paths": (files[-1].path,)}, files[-1:])):
        frame = file_stats_frame(table, columns=(column,), **kwargs)
        assert frame["file_name"].tolist() == [lf.path.rsplit("/", 1)[-1] for lf in want]
        expected = [stats_json(schema, column_stats(lf, schema, table.file_schema(lf), key_stats=bool(
            schema.primary_keys), only=[column]), [column])[column] for lf in want]
        assert [{k: r[k] for k in ("min", "max")} for r in frame.to_dict("records")] == \
               [{k: e[k] for k in ("min", "max")} for e in expected]
    assert table.caches.plans.get(table.snapshot().id) is None


def test_file_stats_frame_of_every_file_keeps_no_live_files(monkeypatch):
    """The statistics of every file are read from live files made a slice at a time (here 2) and
    not kept on the table (they held 3.4 KiB per live file at 100,000 files): the same frame as
    the object plan's files; a picked path still comes from (and stays in) the kept map."""
    from indexcore.scan import stats
    from indexcore.scan.stats import column_stats, file_stats_frame, stats_json

    monkeypatch.setattr(stats, "STATS_FILES_SLICE", 2)
    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    table = indexcore.open_warehouse(str(sample)).table("demo.events")
    want = indexcore.open_warehouse(str(sample)).table("demo.events").plan().files
    assert len(want) > 2
    schema = table.schema()
    column = schema.field_names[1]
    for kwargs, files in (({}, want), ({"limit": 3}, want[:3])):
        frame = file_stats_frame(table, columns=(column,), **kwargs)
        assert frame["file_name"].tolist() == [lf.path.rsplit("/", 1)[-1] for lf in files]
        expected = [stats_json(schema, column_stats(lf, schema, table.file_schema(lf), key_stats=False,
                                                    only=[column]), [column])[column] for lf in files]
        assert [{k: r[k] for k in ("min", "max", "null_count")} for r in frame.to_dict("records")] == \
               [{k: e[k] for k in ("min", "max", "null_count")} for e in expected]
        assert len(table.live_files_by_path()._made) == 0
    file_stats_frame(table, columns=(column,), paths=(want[-1].path,))
    assert list(table.live_files_by_path()._made) == [want[-1].path]


@pytest.mark.parametrize("name, sql", [("demo.events", "country = 'FR'"), ("demo.faulty", "country = 'IN'"),
                                       ("demo.orders", "status = 'PAID'")])
def test_explain_on_a_table_keeping_the_columnar_plan_plans_no_objects(name, sql):
    """A page that planned the snapshot as columns (its census) explains on objects made from those
    columns, not on a second, object plan: the same files, decisions, funnel and problems as an
    explain that plans objects (a table keeping no plan)."""
    from indexcore.scan.explainer import explain

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    table = indexcore.open_warehouse(str(sample)).table(name)
    table.plan_columns()
    got = explain(table, sql)
    assert table.caches.plans.get(table.snapshot().id) is None
    fresh = indexcore.open_warehouse(str(sample)).table(name)
    want = explain(fresh, sql)
    assert fresh.caches.plans.get(fresh.snapshot().id) is not None
    assert got.to_frame().equals(want.to_frame()) and got.funnel == want.funnel
    assert sorted(map(repr, got.problems)) == sorted(map(repr, want.problems))


def test_hypothetical_bloom_check_takes_the_largest_file_from_the_columns():
    """The What-if page checks a hypothetical bloom filter's items against the largest live file's
    rows on every run: read from the columnar plan, not from an object plan built for one number."""
    from indexcore.analysis.whatif import ITEMS_OVER_ROWS, check_hypothetical
    from indexcore.errors import IndexCoreError

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    largest = max(lf.file.row_count for lf in indexcore.open_warehouse(str(sample)).table("demo.events").plan().files)
    table = indexcore.open_warehouse(str(sample)).table("demo.events")
    assert check_hypothetical(table, "bloom-filter", {"items": str(ITEMS_OVER_ROWS * largest)}) > 0
    with pytest.raises(IndexCoreError, match=f"far above the {largest:,} rows"):
        check_hypothetical(table, "bloom-filter", {"items": str(ITEMS_OVER_ROWS * largest + 1)})
    assert table.caches.plans.get(table.snapshot().id) is None


def test_range_pruning_makes_live_files_only_for_its_sample():
    """The Range page decodes a sample's indexes (range_frame, on the census's columns: no live
    file), then prunes the same sample: the pruning table reads the plan's rows (statistics from
    their manifest records, entries from the census, the kept readers) and makes no live file
    either, and its files are the sample's."""
    from indexcore.frames import pruning
    from indexcore.frames import range as range_frames

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    table = indexcore.open_warehouse(str(sample)).table("demo.events")
    frame = range_frames.range_frame(table, sample=3)
    assert not table.live_files_by_path()._made
    pruned = pruning.prune_by_sql(table, "user_id > 10", sample=3)
    assert not table.live_files_by_path()._made
    assert set(pruned["file_name"]) == set(frame["file_name"])


def test_a_cold_plan_takes_the_decoded_batch_whole_and_equals_a_plan_of_kept_slices(conformance):
    """A plan that decodes every manifest now takes the batch's entries as whole columns (one
    chunk, not one per manifest); the same snapshot planned again from the kept per-manifest
    slices (the plan dropped, the manifests kept), and the object plan, give the same rows."""
    import dataclasses

    root = conformance / "warehouses" / "parquet"
    taken = 0
    for name in indexcore.open_warehouse(str(root)).tables():
        table = indexcore.open_warehouse(str(root)).table(name)
        snap = table.snapshot()
        if snap is None or table.manifest_format != "avro" or len(table.plan_head().manifests) < 2:
            continue
        cold = table.plan_columns()
        taken += cold.files.column("_FILE_NAME").num_chunks == 1
        table.caches.plans.clear()
        again = table.plan_columns()
        assert again is not cold and again.files.equals(cold.files), name
        assert [dataclasses.astuple(p) for p in again.problems] == [dataclasses.astuple(p) for p in cold.problems]
        assert _objects(cold.live_files(table)) == _objects(table.plan().files), name
    assert taken > 5


def test_planned_files_are_slotted_and_survive_pickle_and_replace(conformance):
    """A planned LiveFile holds no ``__dict__`` (one per file of the object plan); it pickles (a
    Spark task's input) and ``replace``s as the dataclass it is, from both plans."""
    import dataclasses
    import pickle

    table = indexcore.open_warehouse(str(conformance / "warehouses" / "parquet")).table(
        "pk_with_bitmap_dv.pk_with_bitmap_dv")
    for files in (table.plan().files, table.plan_columns().live_files(table)):
        assert files and not any(hasattr(lf, "__dict__") for lf in files)
        back = pickle.loads(pickle.dumps(files))
        assert _objects(back) == _objects(files)
        moved = dataclasses.replace(files[0], bucket=files[0].bucket + 1)
        assert moved.bucket == files[0].bucket + 1 and moved.path == files[0].path
        with pytest.raises(dataclasses.FrozenInstanceError):
            files[0].bucket = 3


_POOLS: list = []  # the proxy pools the peaks were measured in: alive as long as what they allocated


def _peak_of(fn) -> tuple[int, int]:
    """The most Arrow memory ``fn()`` had allocated at once (in a proxy pool of its own) and the
    bytes of what it returned (dropped before the default pool is back)."""
    default = pa.default_memory_pool()
    proxy = pa.proxy_memory_pool(default)
    _POOLS.append(proxy)
    pa.set_memory_pool(proxy)
    try:
        result = fn()
        size = result.nbytes
        del result
        return proxy.max_memory(), size
    finally:
        pa.set_memory_pool(default)


def test_take_rows_takes_from_the_chunks_without_joining_them():
    """A plan's columns are a chunk per decoded batch; Arrow's take of such a column joins every
    chunk first (a copy of the whole column per call). ``take_rows`` gives the same rows, in the
    order asked (runs, jumps, repeats, sorted back), and allocates about what it returns."""
    chunk = pa.array([f"/w/db/t/dt=2024-01-01/bucket-0/data-{i:08d}.parquet" for i in range(100_000)])
    table = pa.table({"path": pa.chunked_array([chunk] * 8), "n": pa.chunked_array([pa.array(range(100_000))] * 8)})
    rng = np.random.default_rng(7)
    for rows in ([5], [], list(range(99_990, 100_010)), [799_999, 0, 400_000, 400_000, 3],
                 rng.integers(0, 800_000, 5_000), np.sort(rng.integers(0, 800_000, 4_096))):
        assert plan_columns.take_rows(table, rows).equals(table.take(pa.array(np.asarray(rows, np.int64))))
    rows = np.sort(rng.integers(0, 800_000, 4_096))
    joined, _ = _peak_of(lambda: table.take(pa.array(rows)))
    ours, taken = _peak_of(lambda: plan_columns.take_rows(table, rows))
    assert joined > table.nbytes // 2  # the premise: Arrow's own take joined the chunks
    assert ours < 4 * taken + (1 << 20), (ours, taken)
