"""The views (Paimon's system tables and ours) against Paimon-written warehouses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import indexcore
from indexcore import views
from indexcore.errors import IndexCoreError
from indexcore.formats.container import read_container

PAIMON_COLUMNS = {
    "snapshots": ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind", "commit_time",
                  "base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "total_record_count",
                  "delta_record_count", "changelog_record_count", "watermark", "next_row_id"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "options": ["key", "value"],
    "manifests": ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id",
                  "min_partition_stats", "max_partition_stats", "min_row_id", "max_row_id"],
    "files": ["partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
              "file_size_in_bytes", "min_key", "max_key", "null_value_counts", "min_value_stats", "max_value_stats",
              "min_sequence_number", "max_sequence_number", "creation_time", "deleteRowCount", "file_source",
              "first_row_id", "write_cols"],
    "file_indexes": ["partition", "bucket", "file_path", "file_size_in_bytes", "record_count", "schema_id",
                     "column_name", "index_type", "storage_type", "index_file_path", "index_size_in_bytes",
                     "index_container_size_in_bytes", "is_empty"],
    "table_indexes": ["partition", "bucket", "index_type", "file_name", "file_size", "row_count", "dv_ranges",
                      "row_range_start", "row_range_end", "index_field_id", "index_field_name"],
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "partitions": ["partition", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "create_time", "time_retained"],
    "branches": ["branch_name", "create_time"],
}


def _warehouses(conformance: Path) -> list[Path]:
    return [p for p in sorted((conformance / "warehouses").iterdir()) if p.is_dir()]


@pytest.fixture(scope="module")
def parquet(conformance):
    return indexcore.open_warehouse(str(conformance / "warehouses" / "parquet"))


def test_paimon_columns_come_first_and_schemas_are_explicit(parquet):
    table = parquet.table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    assert set(PAIMON_COLUMNS) == set(views.SYSTEM_VIEWS)
    for name, columns in PAIMON_COLUMNS.items():
        result = views.view(table, "$" + name)
        assert result.column_names[:len(columns)] == columns, name
    empty = views.view(parquet.table("append_with_bitmap.append_with_bitmap"), "hash_buckets")
    assert empty.num_rows == 0 and empty.schema.field("keys").type == pa.int64()
    ranges = views.view(table, "table_indexes").schema.field("dv_ranges").type.value_type
    assert [ranges.field(i).name for i in range(ranges.num_fields)] == ["f0", "f1", "f2", "_CARDINALITY"]


def test_file_indexes_agree_with_container_heads(conformance):
    """Each row is an entry of the file's container head; ``FILE`` rows name the .index file and its size."""
    for root in _warehouses(conformance):
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            rows = views.view(table, "file_indexes").to_pylist()
            expected = []
            for lf in table.plan().files:
                if not lf.has_file_index:
                    continue
                try:
                    head = read_container(table.file_index_source(lf)).head
                except IndexCoreError:
                    expected.append((lf.path, None, None))
                    continue
                expected += [(lf.path, e.column, e.index_type) for e in head.entries]
            assert sorted(((r["file_path"], r["column_name"], r["index_type"]) for r in rows), key=str) == \
                sorted(expected, key=str), name
            for r in rows:
                if r["error"] is not None:  # unreadable or missing container: one row, no sizes
                    assert r["column_name"] is None and r["index_container_size_in_bytes"] is None
                elif r["storage_type"] == "FILE":
                    assert r["index_container_size_in_bytes"] == Path(r["index_file_path"]).stat().st_size
                else:
                    assert r["index_file_path"] is None


def test_options_tags_and_branches_list_the_table_folders(conformance, tmp_path):
    src = conformance / "warehouses" / "parquet"
    for db in ("pk_table_scan_and_read_dv", "append_table_with_rt_branch"):
        shutil.copytree(src / f"{db}.db", tmp_path / f"{db}.db")
    folder = tmp_path / "pk_table_scan_and_read_dv.db" / "pk_table_scan_and_read_dv"
    (folder / "tag").mkdir()
    for tag, snap, retained in (("first", 1, 86400.0), ("second", 3, 90.5)):
        data = json.loads((folder / "snapshot" / f"snapshot-{snap}").read_text())
        data.update(tagCreateTime=[2024, 6, 1, 12, 30, 5, 123000000], tagTimeRetained=retained)
        (folder / "tag" / f"tag-{tag}").write_text(json.dumps(data))
    wh = indexcore.open_warehouse(str(tmp_path))
    table = wh.table("pk_table_scan_and_read_dv.pk_table_scan_and_read_dv")

    tags = views.view(table, "tags").to_pylist()
    assert [(t["tag_name"], t["snapshot_id"]) for t in tags] == [("first", 1), ("second", 3)]
    assert sorted(p.name[len("tag-"):] for p in (folder / "tag").iterdir()) == [t["tag_name"] for t in tags]
    assert tags[0]["record_count"] == table.snapshot(1).total_record_count
    assert str(tags[0]["create_time"]) == "2024-06-01 12:30:05.123000"
    assert [t["time_retained"] for t in tags] == ["PT24H", "PT1M30.5S"]
    assert views.view(table, "tags", 3).column("tag_name").to_pylist() == ["second"]

    latest = json.loads(sorted((folder / "schema").iterdir())[-1].read_text())
    options = {r["key"]: r["value"] for r in views.view(table, "options").to_pylist()}
    assert options == latest["options"]
    assert views.view(table, "branches").num_rows == 0

    branched = tmp_path / "append_table_with_rt_branch.db" / "append_table_with_rt_branch"
    main = wh.table("append_table_with_rt_branch.append_table_with_rt_branch")
    names = views.view(main, "branches").column("branch_name").to_pylist()
    assert names == sorted(p.name[len("branch-"):] for p in (branched / "branch").iterdir()) == ["rt"]
    branch = wh.table("append_table_with_rt_branch.append_table_with_rt_branch$branch_rt")
    assert views.view(branch, "branches").column("branch_name").to_pylist() == ["rt"]
    branch_opts = json.loads(sorted((branched / "branch" / "branch-rt" / "schema").iterdir())[-1].read_text())
    assert {r["key"]: r["value"] for r in views.view(branch, "options").to_pylist()} == branch_opts["options"]


def test_a_tag_keeps_an_expired_snapshot_readable(conformance, tmp_path):
    src = conformance / "warehouses" / "parquet" / "pk_table_scan_and_read_dv.db"
    shutil.copytree(src, tmp_path / "pk_table_scan_and_read_dv.db")
    folder = tmp_path / "pk_table_scan_and_read_dv.db" / "pk_table_scan_and_read_dv"
    files = {lf.path.rsplit("/", 1)[-1] for lf in indexcore.open_warehouse(str(tmp_path)).table(
        "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv").plan(2).files}
    (folder / "tag").mkdir()
    shutil.move(folder / "snapshot" / "snapshot-2", folder / "tag" / "tag-kept")
    table = indexcore.open_warehouse(str(tmp_path)).table("pk_table_scan_and_read_dv.pk_table_scan_and_read_dv")
    assert 2 not in table.snapshot_ids()
    got = views.view(table, "files", table.tag("kept").id).column("file_path").to_pylist()
    assert {p.rsplit("/", 1)[-1] for p in got} == files


def test_identifiers():
    ident = views.parse_identifier("db.t$branch_dev$files")
    assert (ident.table, ident.branch, ident.view, ident.table_ref) == ("db.t", "dev", "files", "db.t$branch_dev")
    assert views.parse_identifier("db.t$snapshots") == views.Identifier("db.t", None, "snapshots")
    for bad in ("db.t$nope", "db.t$branch_$files", "db.t$files$tags"):
        with pytest.raises(IndexCoreError):
            views.parse_identifier(bad)


def test_inspect_is_an_alias(parquet):
    table = parquet.table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    assert views.inspect(table).files().equals(views.view(table, "files"))
    assert "bloom_filters" in dir(views.inspect(table))


def test_file_indexes_errors_only_is_the_census_unusable_rows(conformance, tmp_path):
    """``$file_indexes`` with ``errors_only`` (a page that lists unusable files and nothing else)
    holds exactly the census rows of unusable indexes: those with an error, and kinds that are
    not file indexes; on sound tables it is empty."""
    from indexcore.formats.registry import FILE_INDEX_TYPES
    from indexcore.views import view
    from indexcore.views.census import unusable_rows

    src = conformance / "warehouses" / "parquet"
    for name in ("append_with_bitmap_no_embedding.db", "pk_with_bitmap_dv.db"):
        shutil.copytree(src / name, tmp_path / name)
    wh = indexcore.open_warehouse(str(tmp_path))
    files = wh.table("append_with_bitmap_no_embedding.append_with_bitmap_no_embedding").plan().files
    broken = next(lf for lf in files if lf.index_path)
    Path(broken.index_path).write_bytes(b"not a file index" * 8)
    checked = 0
    for name in wh.tables():
        table = wh.table(name)
        full = view(table, "file_indexes").to_pylist()
        unusable = [r for r in full if r["error"] is not None
                    or (r["index_type"] is not None and r["index_type"] not in FILE_INDEX_TYPES)]
        assert view(table, "file_indexes", errors_only=True).to_pylist() == unusable, name
        assert unusable_rows(view(table, "file_indexes")).to_pylist() == unusable, name  # the same on a census
        checked += len(unusable)
    assert checked >= 1


def test_a_sample_or_errors_only_from_the_kept_census_is_the_walked_one(tmp_path):
    """A page counts every file (the census, kept on the table), then asks a sample or the unusable
    rows: those are taken from the kept census, and are the rows a walk of the heads gives (a fresh
    table, nothing kept), in the same order, an unreadable container among them."""
    from indexcore.views.census import file_indexes, kept_view_if_built

    sample_warehouse = Path(__file__).resolve().parent.parent / "sample_warehouse"
    if not (sample_warehouse / "demo.db" / "events").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    shutil.copytree(sample_warehouse / "demo.db" / "events", tmp_path / "demo.db" / "events")
    name = "demo.events"
    files = indexcore.open_warehouse(str(tmp_path)).table(name).plan().files
    indexed = [lf for lf in files if lf.has_file_index]
    assert len(indexed) >= 5
    Path(next(lf for lf in indexed if lf.index_path).index_path).write_bytes(b"not a file index" * 8)
    kept = indexcore.open_warehouse(str(tmp_path)).table(name)
    sid = kept.plan().snapshot.id
    whole = views.view(kept, "file_indexes")
    assert kept_view_if_built(kept, "file_indexes", sid) is whole
    for sample in (1, 2, len(indexed) - 1, len(indexed), None):
        for errors_only in (False, True):
            if sample is None and not errors_only:
                continue
            walked = file_indexes(indexcore.open_warehouse(str(tmp_path)).table(name), sid, errors_only=errors_only,
                                  sample=sample)
            assert kept_view_if_built(kept, "file_indexes", sid) is whole  # the kept census serves it
            kept.caches.head_bytes.clear()  # a walk would read the heads again
            requests = kept.storage.stats.requests
            taken = file_indexes(kept, sid, errors_only=errors_only, sample=sample)
            assert kept.storage.stats.requests == requests, (sample, errors_only)
            assert taken.to_pylist() == walked.to_pylist(), (sample, errors_only)
    assert file_indexes(kept, sid, errors_only=True).num_rows >= 1  # the broken container
