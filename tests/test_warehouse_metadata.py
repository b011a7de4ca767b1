"""Warehouse metadata against the Paimon-written conformance warehouses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import indexcore
from indexcore.formats.container import read_container
from indexcore.formats.deletion_vector import read_deletion_vector
from indexcore.warehouse import Warehouse

ROOTS = ("parquet", "mixed")
INDEX_LINE = re.compile(r"^(bitmap|bloom-?filter|bsi) index:\s*(.+)$", re.MULTILINE)
TYPE_NAMES = {"bitmap": "bitmap", "bloomfilter": "bloom-filter", "bloom-filter": "bloom-filter", "bsi": "bsi"}


@pytest.fixture(scope="module")
def warehouses(conformance: Path) -> dict[str, Warehouse]:
    return {r: indexcore.open_warehouse(str(conformance / "warehouses" / r)) for r in ROOTS}


def all_tables(warehouses):
    return [(wh, name) for wh in warehouses.values() for name in wh.tables()]


def readme(wh: Warehouse, name: str) -> str:
    path = Path(wh.table(name).path, "README")
    return path.read_text() if path.is_file() else ""


def test_lists_every_table(warehouses, conformance):
    for root, wh in warehouses.items():
        dirs = sorted(f"{d.name[:-3]}.{t.name}" for d in (conformance / "warehouses" / root).glob("*.db")
                      for t in d.iterdir() if (t / "schema").is_dir())
        assert wh.tables() == dirs


def test_every_snapshot_plans_to_its_record_count(warehouses):
    """Paimon's totalRecordCount is the row count of the live files: ADD/DELETE merged right."""
    checked = 0
    for wh, name in all_tables(warehouses):
        table = wh.table(name)
        for snap in table.snapshots():
            plan = table.plan(snap.id)
            assert plan.snapshot == snap
            assert sum(f.file.row_count for f in plan.files) == snap.total_record_count, (name, snap.id)
            checked += 1
    assert checked > 100


def test_live_paths_exist_and_stats_decode(warehouses):
    for wh, name in all_tables(warehouses):
        table = wh.table(name)
        plan = table.plan()
        assert plan.files, name
        for lf in plan.files:
            assert os.path.isfile(lf.path), lf.path
            if lf.index_path:
                assert os.path.isfile(lf.index_path)
            if lf.dv_file_path:
                assert os.path.isfile(lf.dv_file_path)
            vs = lf.file.value_stats
            assert len(vs.min_values) == len(vs.max_values) == len(vs.null_counts)
            assert all(n is None or 0 <= n <= lf.file.row_count for n in vs.null_counts)
            for lo, hi in zip(vs.min_values, vs.max_values, strict=True):
                if lo is not None and hi is not None and not isinstance(lo, float):
                    assert lo <= hi, (name, lo, hi)


def test_readme_index_types_are_listed(warehouses):
    checked = 0
    for wh, name in all_tables(warehouses):
        wanted = {(TYPE_NAMES[m.group(1)], c.strip()) for m in INDEX_LINE.finditer(readme(wh, name))
                  for c in m.group(2).split(",")}
        if not wanted:
            continue
        table = wh.table(name)
        found = set()
        for lf in table.plan().files:
            source = table.file_index_source(lf)
            if source is not None:
                found |= {(e.index_type, e.column) for e in read_container(source).head.entries}
        assert wanted <= found, (name, wanted - found)
        checked += 1
    assert checked >= 8


def test_deletion_vectors(warehouses):
    dv_tables = 0
    for wh, name in all_tables(warehouses):
        table = wh.table(name)
        if table.options.get("deletion-vectors.enabled") != "true":
            continue
        dv_tables += 1
        plan = table.plan()
        with_dv = [lf for lf in plan.files if lf.deletion_vector is not None]
        assert with_dv, name
        for lf in with_dv:
            dv = table.deletion_vector(lf)
            if lf.deletion_vector.cardinality is not None:  # recorded since Paimon 1.x
                assert dv.cardinality == lf.deletion_vector.cardinality
            assert dv.cardinality > 0
            source = table.storage.open(lf.dv_file_path)
            assert read_deletion_vector(source, lf.deletion_vector.offset).cardinality == dv.cardinality
            assert all(0 <= p < lf.file.row_count for p in dv.positions)
    assert dv_tables >= 8


def test_global_bitmap_index_is_decoded_not_a_problem(warehouses):
    from indexcore.warehouse.global_index import global_index_files

    wh = warehouses["parquet"]
    for name in ("append_with_global_index.append_with_global_index",
                 "append_with_global_index_with_partition.append_with_global_index_with_partition"):
        plan = wh.table(name).plan()
        assert plan.files and not plan.unknown_indexes and not plan.problems
        assert {g.index_type for g in global_index_files(wh.table(name))} == {"bitmap"}
    first = wh.table("append_with_global_index.append_with_global_index").plan(1)
    assert not first.index_entries and not first.problems


def test_time_travel(warehouses):
    table = warehouses["parquet"].table("pk_table_scan_and_read_dv.pk_table_scan_and_read_dv")
    snaps = table.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    assert table.snapshot() == snaps[-1]
    for s in snaps:
        assert table.snapshot(s.id) == s
        at = table.snapshot_at(s.time_millis)
        assert at.time_millis == s.time_millis and at.id >= s.id
    assert table.snapshot_at(snaps[0].time_millis - 1) is None
    older = table.plan(snaps[0].id)
    assert {f.file.file_name for f in older.files} != {f.file.file_name for f in table.plan().files}


def test_schema_evolution(warehouses):
    table = warehouses["parquet"].table("pk_table_with_alter_table.pk_table_with_alter_table")
    schemas = table.schemas()
    assert len(schemas) > 1
    first, last = schemas[0], schemas[-1]
    assert "key_2" in last.field_names and "key2" in first.field_names
    assert first.field("key2").id == last.field("key_2").id
    assert last.field_by_id(first.field("key2").id).name == "key_2"
    ids = {lf.file.schema_id for lf in table.plan().files}
    assert len(ids) > 1
    for lf in table.plan().files:
        fields = table.schema(lf.file.schema_id).fields
        assert len(lf.file.value_stats.min_values) == len(fields)


def test_partitions_and_default_name(warehouses):
    wh = warehouses["parquet"]
    for name, default in (("append_with_empty_partition.append_with_empty_partition", "__DEFAULT_PARTITION__"),
                          ("append_with_empty_partition_with_specific_name."
                           "append_with_empty_partition_with_specific_name", "__HIVE_DEFAULT_PARTITION__")):
        files = wh.table(name).plan().files
        nulls = [lf for lf in files if lf.partition == (None,)]
        assert nulls and all(f"f0={default}/" in lf.path for lf in nulls)
        assert {lf.partition_spec["f0"] for lf in files} == {None, "2024", "2025"}
        assert sum(lf.file.row_count for lf in nulls) == 3


def test_external_paths_are_relocated(warehouses):
    wh = warehouses["parquet"]
    for name in ("pk_dv_index_in_data_with_external.pk_dv_index_in_data_with_external",
                 "pk_dv_index_not_in_data_with_external.pk_dv_index_not_in_data_with_external"):
        plan = wh.table(name).plan()
        assert not plan.problems
        assert all(lf.file.external_path for lf in plan.files)
        assert all("/external/" in lf.path and os.path.isfile(lf.path) for lf in plan.files)


def test_branches_tags_old_versions(warehouses):
    wh = warehouses["parquet"]
    table = wh.table("append_table_with_rt_branch.append_table_with_rt_branch")
    assert table.branches() == ["rt"]
    branch = table.branch("rt")
    assert branch.snapshot().total_record_count == sum(f.file.row_count for f in branch.plan().files)
    assert table.tags() == {}
    for name in ("pk_09.pk_09", "append_09.append_09"):
        plan = wh.table(name).plan()
        assert plan.files and not plan.problems


def test_bad_parts_become_problems(warehouses, tmp_path):
    src = Path(warehouses["parquet"].table("pk_with_bitmap_dv.pk_with_bitmap_dv").path)
    dst = tmp_path / "wh" / "db.db" / "t"
    shutil.copytree(src, dst)
    manifests = sorted((dst / "manifest").glob("manifest-8*"))
    manifests[0].write_bytes(b"not avro at all")
    (dst / "manifest" / next(p.name for p in (dst / "manifest").glob("index-manifest-*"))).unlink()
    wh = Warehouse(str(tmp_path / "wh"))
    plan = wh.table("db.t").plan()
    structures = {p.structure for p in plan.problems}
    assert {"manifest", "index manifest"} <= structures
    assert not any(lf.deletion_vector for lf in plan.files)


def run_cli(*args: str) -> tuple[int, dict | None, str]:
    proc = subprocess.run([sys.executable, "-m", "indexcore", *args, "--format", "json"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr


def test_cli_commands(conformance, tmp_path):
    wh = str(conformance / "warehouses" / "parquet")
    rc, out, _ = run_cli("tables", wh)
    assert rc == 0 and "pk_with_bitmap_dv.pk_with_bitmap_dv" in out["tables"]
    rc, out, _ = run_cli("snapshots", wh, "pk_with_bitmap_dv.pk_with_bitmap_dv")
    assert rc == 0 and [s["id"] for s in out["snapshots"]] == [1, 2, 3, 4]
    rc, out, _ = run_cli("files", wh, "pk_with_bitmap_dv.pk_with_bitmap_dv")
    assert rc == 0
    (f,) = out["files"]
    assert f["index"]["columns"] == {"f0": ["bitmap"], "f1": ["bitmap"], "f2": ["bitmap"]}
    assert f["deletion_vector"] == {"cardinality": 2} and f["index"]["embedded"] is False
    rc, out, _ = run_cli("files", wh, "pk_with_bitmap_dv.pk_with_bitmap_dv", "--snapshot", "1")
    assert rc == 0 and out["files"][0]["deletion_vector"] is None
    rc, out, _ = run_cli("files", wh, "append_with_global_index.append_with_global_index")
    assert rc == 0 and out["files"] and not out["problems"]  # its global bitmap indexes are decoded now
    rc, out, _ = run_cli("bucket-index", wh, "pk_09.pk_09")
    assert rc == 0 and out["buckets"] == []
    rc, out, err = run_cli("files", wh, "missing.table")
    assert rc == 2 and "missing" in err


def test_file_schema_falls_back_to_the_latest_with_a_problem(tmp_path):
    """One policy for "the schema a file was written under": its own, else the latest, reported."""
    import pyarrow as pa

    from indexcore.warehouse.data import read_table
    from indexcore.write import TableWriter, make_schema

    writer = TableWriter.create(str(tmp_path), "d.t", make_schema([("a", "INT")]), seed=2)
    writer.write(pa.table({"a": pa.array([1, 2, 3], pa.int32())}))
    schema_dir = tmp_path / "d.db" / "t" / "schema"
    doc = json.loads((schema_dir / "schema-0").read_text())
    (schema_dir / "schema-1").write_text(json.dumps({**doc, "id": 1}))
    (schema_dir / "schema-0").unlink()
    table = Warehouse(str(tmp_path)).table("d.t")
    (lf,) = table.plan().files
    problems: list = []
    assert table.file_schema(lf, problems).id == 1
    assert [(p.path, p.structure) for p in problems] == [(lf.path, "schema")]
    assert "no schema 0" in problems[0].reason and "latest schema 1" in problems[0].reason
    read_problems: list = []
    assert read_table(table, problems=read_problems).column("a").to_pylist() == [1, 2, 3]
    assert [p.structure for p in read_problems] == ["schema"]


@pytest.mark.parametrize("options,primary_keys,skips", [
    ({}, ("k",), False),
    ({"deletion-vectors.enabled": "true"}, ("k",), True),
    ({"deletion-vectors.enabled": "true", "deletion-vectors.merge-on-read": "true"}, ("k",), False),
    ({"merge-engine": "first-row"}, ("k",), True),
    ({"deletion-vectors.enabled": "true"}, (), False),
])
def test_level0_rule(options, primary_keys, skips):
    from indexcore.paimon.options import CoreOptions

    assert CoreOptions.parse(options).batch_skips_level0(primary_keys) is skips
