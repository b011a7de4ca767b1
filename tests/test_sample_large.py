"""``sample build --scale large``: the production-size warehouse's shape, read back by our reader.

Built at a few hundred files with real local Spark (the shape is the same at 50,000).
"""

from __future__ import annotations

import collections
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_spark_pipeline import spark  # noqa: F401 - the session-wide local[2] Spark

import indexcore
from indexcore.frames.views import view_frame
from indexcore.views import view
from indexcore.write.bulk_sample import build_large_bulk
from indexcore.write.large_sample import ORDER_BUCKETS, UPDATE_SHARE, shape

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
FILES = 300
SEED = 7
INDEX_KINDS = {"bitmap", "bloom-filter", "range-bitmap", "bsi"}


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):  # noqa: F811 - the imported fixture
    from indexcore.spark.sample_large import build_large

    root = tmp_path_factory.mktemp("large")
    calls = []
    summary = build_large(str(root), SEED, FILES, spark=spark, progress=lambda d, t, m: calls.append((d, t)))
    return root, summary, calls


def test_files_partitions_and_snapshots(built):
    root, summary, calls = built
    wh = indexcore.open_warehouse(str(root))
    assert sorted(wh.tables()) == ["large.events", "large.orders", "large.users"]
    plans = {name: wh.table(name).plan() for name in wh.tables()}
    assert sum(len(p.files) for p in plans.values()) == FILES == summary["data_files"]
    for name, plan in plans.items():
        assert not plan.problems, (name, plan.problems)
    planned = shape(FILES)
    events = wh.table("large.events")
    partitions = {lf.partition for lf in plans["large.events"].files}
    assert len(partitions) == planned["partitions"] >= FILES // 350
    assert len(events.snapshot_ids()) == planned["event_batches"]
    orders = wh.table("large.orders")
    assert len(orders.snapshot_ids()) == 2 * planned["order_batches"]  # APPEND + COMPACT per batch
    assert calls[-1][0] == calls[-1][1] == planned["order_batches"] + 3 + planned["event_batches"]
    rows = sum(lf.file.row_count for lf in plans["large.events"].files)
    assert 10 * FILES < rows < 1000 * FILES, "small files, like a streaming ingest"


def test_every_index_kind_embedded_and_in_index_files(built):
    root, _, _ = built
    table = indexcore.open_warehouse(str(root)).table("large.events")
    fi = view(table, "file_indexes").to_pandas()
    seen = fi.groupby("index_type", observed=True)["storage_type"].agg(set).to_dict()
    assert set(seen) == INDEX_KINDS
    for kind, storages in seen.items():
        assert storages == {"EMBEDDED", "FILE"}, kind
    for lf in table.plan().files[:50]:
        if lf.file.extra_files:
            assert os.path.exists(os.path.join(os.path.dirname(lf.path), lf.file.extra_files[0]))


def test_deletion_vectors_uneven_over_buckets(built):
    root, _, _ = built
    table = indexcore.open_warehouse(str(root)).table("large.orders")
    dv = view(table, "deletion_vectors").to_pandas()
    deleted = dv.groupby("bucket")["deleted"].sum().reindex(range(ORDER_BUCKETS), fill_value=0)
    assert deleted.sum() > 0
    never = [b for b, share in enumerate(UPDATE_SHARE) if share == 0]
    assert all(deleted[b] == 0 for b in never)
    assert deleted[0] > 2 * deleted[5] > 0
    total = sum(dv_.cardinality for lf in table.plan().files if (dv_ := table.deletion_vector(lf)) is not None)
    assert total == deleted.sum()


def test_dynamic_bucket_hash_index(built):
    root, _, _ = built
    table = indexcore.open_warehouse(str(root)).table("large.users")
    indexes = view(table, "table_indexes").to_pandas()
    assert set(indexes["index_type"]) == {"HASH"}
    buckets = view(table, "hash_buckets").to_pandas()
    assert len(buckets) == len(indexes) > 4


def test_cli_same_seed_same_bytes(built, tmp_path):
    """The CLI with the same seed and size writes the same summary and the same bytes."""
    root, summary, _ = built
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "indexcore", "sample", "build", str(tmp_path), "--scale", "large",
                          "--files", str(FILES), "--seed", str(SEED), "--master", "local[2]", "--format", "json"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {**summary, "warehouse": str(tmp_path)}
    for rel in ("large.db/events/snapshot/snapshot-3", "large.db/orders/snapshot/snapshot-4",
                "large.db/users/schema/schema-0"):
        assert filecmp.cmp(root / rel, tmp_path / rel, shallow=False), rel
    for table in ("events", "orders"):
        manifests = sorted(os.listdir(root / f"large.db/{table}/manifest"))
        assert manifests == sorted(os.listdir(tmp_path / f"large.db/{table}/manifest"))
        for name in manifests[:6]:
            assert filecmp.cmp(root / f"large.db/{table}/manifest" / name,
                               tmp_path / f"large.db/{table}/manifest" / name, shallow=False), name
    bad = subprocess.run([sys.executable, "-m", "indexcore", "sample", "build", str(tmp_path / "x"), "--files", "9"],
                         env=env, cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--scale large" in bad.stderr


def test_shape_at_production_size():
    """The default 50,000 files: 100+ partitions, ~250 event batches, a few hundred snapshots."""
    planned = shape(50_000)
    assert planned["partitions"] >= 100
    assert 200 <= planned["event_batches"] <= 300
    snapshots = planned["event_batches"] + 2 * planned["order_batches"] + 3
    assert 300 <= snapshots <= 600
    with pytest.raises(ValueError):
        shape(50)


@pytest.fixture(scope="module")
def bulk_built(tmp_path_factory):
    root = tmp_path_factory.mktemp("large-bulk")
    return root, build_large_bulk(str(root), SEED, FILES, workers=2)


def _same_tree(left: Path, right: Path) -> bool:
    c = filecmp.dircmp(left, right)
    return not (c.left_only or c.right_only or c.diff_files or c.funny_files) and all(
        _same_tree(left / d, right / d) for d in c.common_dirs)


def _file_shape(table) -> collections.Counter:
    """Every live file without its name: partition, bucket, level, rows, bytes, deletes, where
    its index container is, its index kinds and its deletion vector's cardinality."""
    kinds = view_frame(table, "file_indexes").groupby("file_name")["index_type"].agg(frozenset).to_dict()
    out: collections.Counter = collections.Counter()
    for lf in table.plan().files:
        f = lf.file
        dv = table.deletion_vector(lf)
        out[(lf.partition, lf.bucket, f.level, f.row_count, f.file_size, f.delete_row_count,
             f.embedded_index is not None, len(f.extra_files), kinds.get(f.file_name, frozenset()),
             dv.cardinality if dv is not None else 0)] += 1
    return out


def test_bulk_engine_writes_the_same_tables(built, bulk_built):
    """The bulk engine against the Spark pipeline, same size and seed: the same summary; events
    byte for byte; orders and users the same files but for their names (the tasks that write
    them differ), the same schemas, snapshots, deletion vectors and hash index."""
    spark_root, spark_summary, _ = built
    root, summary = bulk_built
    assert summary == {**spark_summary, "warehouse": str(root)}
    assert _same_tree(spark_root / "large.db" / "events", root / "large.db" / "events")
    theirs, ours = indexcore.open_warehouse(str(spark_root)), indexcore.open_warehouse(str(root))
    for name in ("large.orders", "large.users"):
        rel = Path("large.db", name.split(".")[1], "schema", "schema-0")
        assert (spark_root / rel).read_bytes() == (root / rel).read_bytes()
        a, b = theirs.table(name), ours.table(name)
        assert [a.snapshot(i).commit_kind for i in a.snapshot_ids()] == \
            [b.snapshot(i).commit_kind for i in b.snapshot_ids()]
        assert _file_shape(a) == _file_shape(b)
    for name, v in (("large.orders", "deletion_vectors"), ("large.users", "hash_buckets")):
        x = view(theirs.table(name), v).to_pandas().drop(columns=["file_name", "index_file", "dv_file"], errors="ignore")
        y = view(ours.table(name), v).to_pandas().drop(columns=["file_name", "index_file", "dv_file"], errors="ignore")
        key = [c for c in ("partition", "bucket", "row_count", "deleted") if c in x.columns]
        x = x.astype(str).sort_values(list(x.columns)).reset_index(drop=True)
        y = y.astype(str).sort_values(list(y.columns)).reset_index(drop=True)
        assert key and x.equals(y), name
