"""Health measured in parts and merged (what Spark tasks and the driver do) equals table_health
in one process, with the parts cut here without Spark: one per (partition, bucket) as the tasks
cut them, one per file (every bucket split, every tie crossing parts), and in reverse plan order.

Truth is the one-process :func:`~indexcore.analysis.health.table_health` over the whole plan and
census; the parts see only their own files and census rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from test_live_rows import four_buckets

from indexcore import open_warehouse
from indexcore.analysis.health import table_health
from indexcore.analysis.health_parts import health_part, merged_health
from indexcore.config import settings
from indexcore.views.census import file_indexes
from indexcore.warehouse.plan_columns import PlanColumns
from indexcore.write import TableWriter, make_schema

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "sample_warehouse")
CONFORMANCE = [  # (format folder, table): DVs, PK merges, bloom/bitmap/BSI, global index, empty partitions
    ("parquet", "pk_table_scan_and_read_dv"), ("parquet", "append_with_bsi_bitmap_bloomfilter"),
    ("parquet", "append_with_global_index_with_partition"), ("parquet", "append_with_empty_partition_with_empty_value"),
    ("orc", "pk_09_with_dv"), ("parquet", "pk_table_with_mor"), ("orc", "append_with_bitmap_alter_table"),
    ("parquet", "pk_table_scan_and_read_first_row"),
]


def _cut(plan, how: str) -> list[np.ndarray]:
    """Rows of the plan per part: by (partition values, bucket), one file each, or one file each
    in reverse (the parts' own order must not matter)."""
    n = plan.num_files
    if how == "bucket":
        values = [p[0] for p in plan.partitions]
        keys: dict = {}
        for i, (pid, b) in enumerate(zip(plan.files["partition_id"].to_pylist(), plan.files["_BUCKET"].to_pylist(),
                                         strict=True)):
            keys.setdefault((values[pid], b), []).append(i)
        return [np.array(r, np.int64) for r in keys.values()]
    rows = [np.array([i], np.int64) for i in range(n)]
    return rows[::-1] if how == "reversed" else rows


def _merged(table, how: str):
    """table_health's figures from parts of the plan cut ``how``, each measured on its own files only."""
    head = table.plan_head()
    plan = table.plan_columns()
    schema = table.read_schema(None, plan.snapshot)
    limit = schema.core_options.small_file_threshold(bool(schema.primary_keys))
    cap = settings().live_rows_merge_files
    parts = []
    for rows in _cut(plan, how):
        sub = PlanColumns(plan.snapshot, plan.files.take(pa.array(rows)), plan.partitions, plan.index_entries,
                          plan.problems, plan.bitmap64)
        census = file_indexes(table, plan.snapshot.id, plan=sub)
        parts.append(health_part(table, sub, census, schema, rows, limit, cap))
    return merged_health(table, head, schema, parts, list(plan.problems), cap)


def _tables(conformance_root: Path | None):
    names = [(SAMPLE, n) for n in open_warehouse(SAMPLE).tables()]
    if conformance_root is not None:
        for fmt, db in CONFORMANCE:
            root = conformance_root / "warehouses" / fmt
            if (root / f"{db}.db").is_dir():
                names.append((str(root), f"{db}.{db}"))
    return names


def _lacking_table(root: Path) -> None:
    """Two files of four small rows without an index, then a bloom filter on ``name`` configured
    and two more files with it: two live files lack it, all four are small and share bucket 0."""
    columns = [("id", "BIGINT"), ("name", "STRING")]
    base = {"bucket": "1", "bucket-key": "id", "file-index.in-manifest-threshold": "1B"}
    w = TableWriter.create(str(root), "db.lacking", make_schema(columns, options=base), seed=5)
    for b in range(4):
        if b == 2:
            w.alter_schema(make_schema(columns, options={**base, "file-index.bloom-filter.columns": "name"}))
        w.write(pa.table({"id": pa.array(range(b * 4, b * 4 + 4), pa.int64()), "name": [f"n{b}-{j}" for j in range(4)]}))


@pytest.mark.parametrize("how", ["bucket", "file", "reversed"])
def test_parts_merge_to_table_health(conformance, tmp_path, how: str) -> None:
    _lacking_table(tmp_path)
    (c,) = table_health(open_warehouse(str(tmp_path)).table("db.lacking")).coverage
    assert (c.files, c.lacking, c.carrying) == (4, 2, 2)
    checked = 0
    for root, name in [*_tables(conformance), (str(tmp_path), "db.lacking")]:
        want = table_health(open_warehouse(root).table(name))
        if not want.files:
            continue
        got = _merged(open_warehouse(root).table(name), how)
        assert got == want, f"{name} cut by {how}"
        checked += 1
    assert checked >= 10


def test_parts_see_what_they_merge(conformance) -> None:
    """The sample and conformance tables exercise each merged figure (else the equality above says
    little): a worst bucket, small files, unusable files, bloom sizing, coverage, stale and
    wrong-column indexes, merge-read primary-key buckets."""
    seen = [table_health(open_warehouse(root).table(name)) for root, name in _tables(conformance)]
    assert any(h.worst_bucket for h in seen) and any(h.small_files for h in seen)
    assert any(h.unusable for h in seen) and any(h.blooms for h in seen) and any(h.coverage for h in seen)
    assert any(c.stale for h in seen for c in h.coverage)
    assert any(h.live_rows != h.rows - h.deleted_rows for h in seen)


def test_live_rows_cap_applies_over_every_part(tmp_path, monkeypatch) -> None:
    """Four buckets of two overlapping level-0 files each (32 live rows by construction): with a
    merge-read cap of 4 files two buckets are merged and two bounded, whichever part holds them;
    each part alone would merge its own bucket, so only the cap over all parts gives table_health."""
    four_buckets(tmp_path)
    exact = table_health(open_warehouse(str(tmp_path)).table("db.four"))
    assert (exact.live_rows, exact.live_rows_exact) == (32, True)
    assert _merged(open_warehouse(str(tmp_path)).table("db.four"), "bucket") == exact
    monkeypatch.setenv("INDEXCORE_LIVE_ROWS_MERGE_FILES", "4")
    capped = table_health(open_warehouse(str(tmp_path)).table("db.four"))
    assert not capped.live_rows_exact and capped.live_rows > 32
    for how in ("bucket", "file", "reversed"):
        assert _merged(open_warehouse(str(tmp_path)).table("db.four"), how) == capped, how
