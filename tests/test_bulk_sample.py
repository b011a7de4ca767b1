"""``sample build --scale large`` with the bulk engine (no Spark): checked against truth by
construction (the generator's rows per file, each row's bucket by the per-row hash), against
pyarrow's Parquet reader, pypaimon and Paimon Java. Its equality with the Spark pipeline is in
``test_sample_large.py`` (same 300 files, same seed)."""

from __future__ import annotations

import collections
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_pypaimon_interop import pypaimon_read

import indexcore
from indexcore.formats.binary_row import bucket_of, key_hash, long_key_hashes
from indexcore.frames.views import view_frame
from indexcore.types import parse_type
from indexcore.views import view
from indexcore.warehouse.data import read_table
from indexcore.write import large_sample as L
from indexcore.write.bulk_sample import build_large_bulk

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import oracles  # noqa: E402

FILES = 300
SEED = 11


@pytest.fixture(scope="module")
def bulk(tmp_path_factory):
    root = tmp_path_factory.mktemp("bulk")
    calls = []
    summary = build_large_bulk(str(root), SEED, FILES, workers=2, progress=lambda d, t, m: calls.append((d, t, m)))
    return root, summary, calls


def expected_event_files(files: int, seed: int) -> collections.Counter:
    """Rows of every events data file by (dt, hr, bucket, rows), from the generator's slots alone:
    a slot of ``rows`` per bucket over ``n`` buckets writes ``n`` files; their row counts add up
    to ``rows * n`` and come from the rows the generator drew for each bucket."""
    plan = L.shape(files)
    others = plan["order_batches"] * len(L.REGIONS) * L.ORDER_BUCKETS + 6 * len(L.REGIONS) * plan["users_step"]
    out: collections.Counter = collections.Counter()
    first = 0
    pools = L.user_pools()
    for b in range(plan["event_batches"]):
        tasks = L.event_slots(b, plan["event_batches"], plan["partitions"],
                              L.event_count(b, plan["event_batches"], files - others), seed)
        for t in range(len(tasks)):
            _, hour, bucket = L.event_rows(tasks, t, first, seed, pools)
            for (h, bk), n in collections.Counter(zip(hour.tolist(), bucket.tolist(), strict=True)).items():
                out[(L.hour_day(h), h % 24, bk, n)] += 1
        first += sum(L.task_rows(tasks, t) for t in range(len(tasks)))
    return out


def test_long_key_hashes_equal_the_per_row_hash():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 3000), [0, 1, -1, 2**63 - 1, -(2**63), 2**31, -(2**31)]])
    types = [parse_type("BIGINT")]
    assert long_key_hashes(values).tolist() == [key_hash((int(v),), types) for v in values]


def test_files_and_rows_by_construction(bulk):
    root, summary, calls = bulk
    wh = indexcore.open_warehouse(str(root))
    assert sorted(wh.tables()) == ["large.events", "large.orders", "large.users"]
    plans = {name: wh.table(name).plan() for name in wh.tables()}
    assert sum(len(p.files) for p in plans.values()) == FILES == summary["data_files"]
    assert all(not p.problems for p in plans.values())
    assert calls[-1][:2] == (L.steps(FILES), L.steps(FILES)) and len(calls) == L.steps(FILES) + 1
    events = plans["large.events"].files
    got = collections.Counter((lf.partition[0], lf.partition[1], lf.bucket, lf.file.row_count) for lf in events)
    assert got == expected_event_files(FILES, SEED)
    # every file's rows as pyarrow reads them: the count, and each user_id in the file's bucket
    types = [parse_type("BIGINT")]
    for lf in events:
        table = pq.read_table(lf.path)
        assert table.num_rows == lf.file.row_count
        assert {bucket_of(key_hash((u,), types), L.EVENT_BUCKETS) for u in table.column("user_id").to_pylist()} \
            == {lf.bucket}
        assert set(table.column("dt").to_pylist()) == {lf.partition[0]}
    assert summary["tables"]["events"]["records"] == sum(n * c[3] for c, n in
                                                         expected_event_files(FILES, SEED).items())


def test_index_kinds_dvs_and_hash_index(bulk):
    root, _, _ = bulk
    wh = indexcore.open_warehouse(str(root))
    events = wh.table("large.events")
    fi = view_frame(events, "file_indexes")  # text as text, not categories
    assert fi.groupby("index_type")["storage_type"].agg(set).to_dict() == {
        k: {"EMBEDDED", "FILE"} for k in ("bitmap", "bloom-filter", "range-bitmap", "bsi")}
    assert fi.groupby("file_name")["index_type"].agg(frozenset).nunique() == 1  # all four on every file
    orders = wh.table("large.orders")
    dv = view(orders, "deletion_vectors").to_pandas()
    deleted = dv.groupby("bucket")["deleted"].sum().reindex(range(L.ORDER_BUCKETS), fill_value=0)
    assert deleted[0] > 2 * deleted[5] > 0 and deleted[6] == deleted[7] == 0
    users = wh.table("large.users")
    assert set(view(users, "table_indexes").to_pandas()["index_type"]) == {"HASH"}
    buckets = view(users, "hash_buckets").to_pandas()
    assert buckets["keys"].max() == L.USERS_TARGET_ROWS and (buckets["keys"] == buckets["distinct"]).all()


def test_pypaimon_reads_what_we_read(bulk):
    root, _, _ = bulk
    wh = indexcore.open_warehouse(str(root))
    names = ["large.events", "large.orders", "large.users"]
    keys = {"large.events": ["event_id"], "large.orders": ["order_id", "status"], "large.users": ["user_id", "tier"]}
    for name in names:
        theirs = pypaimon_read(str(root), [name], keys[name])[name]
        assert "error" not in theirs, theirs
        ours = read_table(wh.table(name))
        assert theirs["rows"] == ours.num_rows > 0
        assert theirs["values"] == sorted([str(v) for v in r] for r in
                                          zip(*(ours.column(c).to_pylist() for c in keys[name]), strict=True))


def test_paimon_java_reads_rows_dvs_and_our_index_files(bulk, tmp_path):
    """Java reads every row, sees our deletion vectors, and its FileIndexPredicate over our
    containers (embedded and ``.index``) never skips a file holding a matching row."""
    reason = oracles.java_skip_reason()
    if reason:
        pytest.skip(reason)
    root, summary, _ = bulk
    wh = indexcore.open_warehouse(str(root))
    events = read_table(wh.table("large.events"))
    probe = events.column("event_id")[len(events) // 2].as_py()
    # bloom filters only: the oracle's Paimon 1.0 has no BSI or range-bitmap and reads bitmap V1 only
    predicates = [{"op": "equal", "field": "event_id", "literals": [probe]},
                  {"op": "equal", "field": "event_id", "literals": ["ev-absent"]}]
    with oracles.JavaOracle(str(tmp_path)) as java:
        verdicts = collections.Counter()
        for pred in predicates:
            ans = java.ask({"op": "query", "warehouse": str(root), "table": "large.events", "predicate": pred})
            assert "error" not in ans, ans
            assert len(ans["files"]) == summary["tables"]["events"]["data_files"]
            for name, f in ans["files"].items():
                assert f["file_index"] in ("REMAIN", "SKIP"), name
                assert not (f["file_index"] == "SKIP" and f["matching_raw_rows"]), (pred, name)
                verdicts[f["file_index"]] += 1
        assert verdicts["SKIP"] > 0 and verdicts["REMAIN"] > 0
        whole = java.ask({"op": "query", "warehouse": str(root), "table": "large.events", "predicate": None})
        assert len(whole["rows"]) == events.num_rows == summary["tables"]["events"]["records"]
        orders = wh.table("large.orders")
        ours = {lf.file.file_name: (dv.cardinality if (dv := orders.deletion_vector(lf)) is not None else 0)
                for lf in orders.plan().files}
        ans = java.ask({"op": "query", "warehouse": str(root), "table": "large.orders", "predicate": None})
        assert {n: f["dv_cardinality"] for n, f in ans["files"].items()} == ours and sum(ours.values()) > 0
        assert len(ans["rows"]) == read_table(orders).num_rows
        users = java.ask({"op": "query", "warehouse": str(root), "table": "large.users", "predicate": None})
        assert len(users["rows"]) == read_table(wh.table("large.users")).num_rows


def test_cli_default_engine_is_bulk_and_workers_do_not_change_bytes(bulk, tmp_path):
    root, summary, _ = bulk
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "indexcore", "sample", "build", str(tmp_path), "--scale", "large",
                          "--files", str(FILES), "--seed", str(SEED), "--workers", "1", "--format", "json"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {**summary, "warehouse": str(tmp_path)}
    cmp = filecmp.dircmp(root, tmp_path)

    def same(c: filecmp.dircmp) -> bool:
        return not (c.left_only or c.right_only or c.diff_files or c.funny_files) and all(
            same(s) for s in c.subdirs.values())

    assert same(cmp)
    for args, message in ((["--engine", "bulk", "--master", "local[1]"], "--master applies to --engine spark"),
                          (["--engine", "spark", "--workers", "2"], "--workers applies to --engine bulk"),
                          (["--scale", "small", "--engine", "bulk"], "small sample")):
        bad = subprocess.run([sys.executable, "-m", "indexcore", "sample", "build", str(tmp_path / "x"),
                              "--scale", "large", *args], env=env, cwd=ROOT, capture_output=True, text=True)
        assert bad.returncode != 0 and message in bad.stderr, bad.stderr


def test_dynamic_buckets_as_paimon_assigns_them(tmp_path):
    """The heap-based assigner against the rule spelled out: a known key keeps its bucket, a new
    one goes to the lowest bucket below the target, else to the lowest unused bucket number,
    over several calls and partitions (and with a hole in the bucket numbers)."""
    from indexcore.write import TableWriter, make_schema

    schema = make_schema([("p", "STRING"), ("k", "BIGINT")], partition_keys=["p"], primary_keys=["p", "k"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "7"})
    writer = TableWriter.create(str(tmp_path), "db.t", schema)
    writer._dynamic.counts[("b",)] = {0: 7, 2: 3}  # bucket 1 free, bucket 2 part-full
    index: dict = {("a",): {}, ("b",): {}}
    counts: dict = {("a",): {}, ("b",): {0: 7, 2: 3}}
    rng = np.random.default_rng(5)
    for _ in range(6):
        pairs = [(("a",) if rng.random() < 0.5 else ("b",), int(h)) for h in rng.integers(0, 120, 60)]
        expected = []
        for p, h in pairs:
            if h not in index[p]:
                c = counts[p]
                b = next((b for b in sorted(c) if c[b] < 7), None)
                if b is None:
                    b = next(b for b in range(len(c) + 1) if b not in c)
                index[p][h] = b
                c[b] = c.get(b, 0) + 1
            expected.append(index[p][h])
        assert writer.assign_dynamic(pairs) == expected
    assert max(max(c.values()) for c in counts.values()) == 7 and len(counts[("b",)]) > 3
