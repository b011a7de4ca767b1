"""Pages on the columnar plan (issue 30 item 5): the Range page's pruning table and the unreadable
metadata every page names read ``Table.plan_columns()``, not the object plan.

Truth: the object plan (fastavro, one record at a time) of the same snapshot and its
``decode_sample``, the sampling rule the index views follow.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc

import indexcore
from indexcore.analysis.advise_existing import existing_indexes
from indexcore.expr import quote_name
from indexcore.frames import pruning
from indexcore.frames import table as table_frames
from indexcore.views import indexes
from indexcore.views.common import UNPARTITIONED, dv_cardinality, partition_text, partition_types
from indexcore.warehouse.file_sample import decode_sample, decode_sample_rows

ROOT = Path(__file__).resolve().parent.parent


def _tables(conformance: Path):
    for root in [*sorted((conformance / "warehouses").iterdir()), ROOT / "sample_warehouse"]:
        warehouse = indexcore.open_warehouse(str(root))
        for name in warehouse.tables():
            yield root.name, warehouse.table(name)


def test_decode_sample_rows_pick_the_object_plans_sample(conformance):
    """Every conformance table's latest snapshot, samples of none, one, a few and all: the rows
    picked over the columns are the files ``decode_sample`` picks over the object plan, in order."""
    checked = sampled = 0
    for where, table in _tables(conformance):
        files, columns = table.plan().files, table.plan_columns()
        paths = columns.files["path"].to_pylist()
        indexed = pc.or_(pc.is_valid(columns.files["_EMBEDDED_FILE_INDEX"]),
                         pc.is_valid(columns.files["index_path"])).to_pylist()
        assert indexed == [lf.has_file_index for lf in files], f"{where} {table.name}"
        for n in (None, 0, 1, 3, len(files)):
            want = [lf.path for lf in decode_sample(files, n)]
            assert [paths[i] for i in decode_sample_rows(paths, indexed, n)] == want, f"{where} {table.name} {n}"
            sampled += n is not None and n < sum(indexed)
        checked += 1
    assert checked > 20 and sampled > 5  # real samples were drawn, not only "all files"


def test_pruning_table_and_unreadable_frame_match_the_object_plan(conformance):
    """The pruning table covers exactly ``decode_sample``'s files of the object plan; the
    unreadable metadata are the object plan's problems."""
    for where, table in _tables(conformance):
        for n in (None, 1):
            frame = pruning.prune_by_sql(table, _any_predicate(table), sample=n)
            want = [lf.file.file_name for lf in decode_sample(table.plan().files, n)]
            got = frame["file_name"].tolist() if not frame.empty else []
            assert got == want, f"{where} {table.name} {n}"
        unreadable = table_frames.unreadable_frame(table)
        want = {(p.path, p.structure, p.reason) for p in [*table.plan().problems, *table.problems]}
        assert set(map(tuple, unreadable[["path", "structure", "reason"]].values.tolist())) == want


def _any_predicate(table) -> str:
    return f"{quote_name(table.schema().fields[0].name)} IS NOT NULL"


def test_deletion_vectors_view_matches_the_object_plan(conformance):
    """``$deletion_vectors`` from the columnar plan: per file of the object plan of every snapshot
    of every conformance table, the same name, partition, bucket, rows, level, deleted rows (the
    manifest's cardinality or the decoded DV), density and DV file, in plan order."""
    with_dvs = 0
    for root in sorted((conformance / "warehouses").iterdir()):
        warehouse = indexcore.open_warehouse(str(root))
        for name in warehouse.tables():
            table = warehouse.table(name)
            types = partition_types(table)
            for sid in table.snapshot_ids():
                files = table.plan(sid).files
                got = indexes.deletion_vectors(table, sid).to_pylist()
                want = []
                for lf in files:
                    deleted = dv_cardinality(table, lf) or 0
                    want.append({"file_name": lf.file.file_name,
                                 "partition": partition_text(lf.partition, types) if types else UNPARTITIONED,
                                 "bucket": lf.bucket, "row_count": lf.file.row_count, "level": lf.file.level,
                                 "deleted": deleted, "has_dv": lf.deletion_vector is not None,
                                 "density": deleted / lf.file.row_count if lf.file.row_count else 0.0,
                                 "dv_file": lf.dv_file_path})
                assert got == want, f"{root.name} {name} {sid}"
                with_dvs += any(r["has_dv"] for r in want)
    assert with_dvs > 3  # snapshots with deletion vectors were compared, not only empty columns


def test_hash_indexes_of_the_columnar_plan_match_the_object_plan(conformance):
    """``PlanColumns.hash_indexes`` (which ``$hash_buckets`` and the health's unusable index files
    read) groups the same HASH entries, in the same order, as the object plan, on every snapshot."""
    hashed = 0
    for root in [*sorted((conformance / "warehouses").iterdir()), ROOT / "sample_warehouse"]:
        warehouse = indexcore.open_warehouse(str(root))
        for name in warehouse.tables():
            table = warehouse.table(name)
            for sid in table.snapshot_ids():
                want = table.plan(sid).hash_indexes
                assert list(table.plan_columns(sid).hash_indexes.items()) == list(want.items()), f"{name} {sid}"
                hashed += bool(want)
    assert hashed > 0  # dynamic-bucket tables (the sample warehouse's) were compared


def test_index_inventory_on_columns_matches_the_object_plans(conformance):
    """``existing_indexes`` over the columnar plan (what the health's coverage reads) gives every
    group the object plan's live files give: columns, kinds, counts, bytes, missing files, wrong
    columns, blob paths and problems, on the latest snapshot of every table."""
    groups = missing = 0
    for where, table in _tables(conformance):
        columns = table.plan_columns()
        sid = columns.snapshot.id if columns.snapshot else None
        schema = table.read_schema(None, columns.snapshot)
        got_problems, want_problems = [], []
        got = existing_indexes(table, sid, schema, columns, got_problems)
        want = existing_indexes(table, sid, schema, list(table.plan().files), want_problems)

        def key(g):
            return (g.column, g.index_type, g.configured, g.options, g.live_files, g.bytes, g.missing,
                    g.wrong_column, list(g.blobs))
        assert [key(g) for g in got] == [key(g) for g in want], f"{where} {table.name}"
        assert got_problems == want_problems
        groups += len(want)
        missing += sum(len(g.missing) for g in want)
    assert groups > 20 and missing > 0  # configured indexes some files lack were compared
