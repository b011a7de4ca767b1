"""Live rows (:mod:`indexcore.analysis.live_rows`): the rows a read returns, not the files' records,
on tables written by our own writer whose rows are known by construction: ten keys, then four
updated and two deleted, so eight rows live."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import indexcore
from indexcore.analysis import health as H
from indexcore.analysis.diff import diff
from indexcore.analysis.live_rows import live_rows
from indexcore.warehouse.data import read_table
from indexcore.write import TableWriter, make_schema

LIVE = 8  # ids 0..9 written, 0..3 rewritten, 8 and 9 deleted


def _write(root, name: str, options: dict[str, str], pk: bool = True) -> None:
    schema = make_schema([("id", "BIGINT"), ("v", "STRING")], primary_keys=("id",) if pk else (),
                         options=options)
    w = TableWriter.create(str(root), name, schema, seed=1)
    w.write(pa.table({"id": pa.array(range(10), pa.int64()), "v": ["a"] * 10}))
    if pk:
        w.write(pa.table({"id": pa.array(range(4), pa.int64()), "v": ["b"] * 4}),
                deletes=pa.table({"id": pa.array([8, 9], pa.int64()), "v": ["x", "x"]}))
    else:
        w.write(pa.table({"id": pa.array([10, 11], pa.int64()), "v": ["c", "c"]}))


@pytest.fixture()
def warehouse(tmp_path):
    _write(tmp_path, "db.dv", {"bucket": "1", "deletion-vectors.enabled": "true"})
    _write(tmp_path, "db.merged", {"bucket": "1"})
    _write(tmp_path, "db.append", {"bucket": "-1"}, pk=False)
    return tmp_path


def test_deletion_vector_table_counts_live_rows_exactly(warehouse):
    table = indexcore.open_warehouse(str(warehouse)).table("db.dv")
    got = live_rows(table)
    assert got.records == sum(lf.file.row_count for lf in table.plan().files) > LIVE
    assert (got.live, got.exact, got.text) == (LIVE, True, "8")
    h = H.table_health(table)
    assert (h.rows, h.live_rows, h.live_rows_exact) == (got.records, LIVE, True)
    # the first commit left one level-0 file: a batch read of a DV table skips it until compacted
    first = live_rows(table, table.snapshot_ids()[0])
    assert (first.live, first.exact, first.unread_level0) == (0, True, 10)


def test_overlapping_primary_key_files_are_merge_read_for_the_exact_count(warehouse):
    """Two level-0 files of one bucket: a merge read of that bucket gives the 8 live rows."""
    got = live_rows(indexcore.open_warehouse(str(warehouse)).table("db.merged"))
    assert (got.records, got.live, got.exact, got.merged_buckets, got.text) == (16, LIVE, True, 0, "8")


@pytest.mark.parametrize("name", ["db.dv", "db.merged", "db.append"])
def test_live_rows_are_counted_on_the_plan_columns_without_the_object_plan(warehouse, name):
    """Counted on the columnar plan: no object plan of the snapshot is built, the merge-read
    bucket's files are made from the columns (the same 8 live rows as above)."""
    table = indexcore.open_warehouse(str(warehouse)).table(name)
    got = live_rows(table)
    assert got.live == (LIVE if name != "db.append" else 12) and got.exact
    assert table.caches.plans.get(table.snapshot().id) is None


def test_past_the_merge_cap_overlapping_files_give_an_upper_bound_said_as_such(warehouse, monkeypatch):
    """With a cap of one data file the bucket of two is not merge-read: records minus the two
    retracts (16 - 2) bounds the 8 from above, and the figure says so."""
    monkeypatch.setenv("INDEXCORE_LIVE_ROWS_MERGE_FILES", "1")
    got = live_rows(indexcore.open_warehouse(str(warehouse)).table("db.merged"))
    assert (got.records, got.live, got.exact, got.merged_buckets) == (16, 14, False, 1)
    assert got.live >= LIVE and got.text == "≤ 14"


def four_buckets(tmp_path) -> list[int]:
    """``db.four``: four buckets of two overlapping level-0 files each (keys 0..39 written, 0..19
    rewritten, every key divisible by 5 deleted: 32 live by construction); the deleted keys."""
    schema = make_schema([("id", "BIGINT"), ("v", "STRING")], primary_keys=("id",), options={"bucket": "4"})
    w = TableWriter.create(str(tmp_path), "db.four", schema, seed=1)
    w.write(pa.table({"id": pa.array(range(40), pa.int64()), "v": ["a"] * 40}))
    gone = [k for k in range(40) if k % 5 == 0]
    w.write(pa.table({"id": pa.array([k for k in range(20) if k % 5], pa.int64()), "v": ["b"] * 16}),
            deletes=pa.table({"id": pa.array(gone, pa.int64()), "v": ["x"] * len(gone)}))
    return gone


def test_merge_read_counts_every_bucket_within_the_cap(tmp_path, monkeypatch):
    """Four buckets of overlapping level-0 files (keys 0..39 written, 0..19 rewritten, every key
    divisible by 5 deleted: 32 live by construction); a cap of 4 files merges two buckets and
    bounds the other two; no cap short of 8 files gives the exact 32."""
    gone = four_buckets(tmp_path)
    table = indexcore.open_warehouse(str(tmp_path)).table("db.four")
    groups: dict = {}
    for lf in table.plan().files:
        groups.setdefault(lf.bucket, []).append(lf)
    assert len(groups) == 4 and all(len(g) == 2 for g in groups.values())
    got = live_rows(table)
    assert (got.live, got.exact, got.text) == (40 - len(gone), True, "32")
    monkeypatch.setenv("INDEXCORE_LIVE_ROWS_MERGE_FILES", "4")
    capped = live_rows(indexcore.open_warehouse(str(tmp_path)).table("db.four"))
    assert not capped.exact and capped.merged_buckets == 2 and capped.live >= 32 and capped.text.startswith("≤ ")


def test_merge_read_orders_by_the_sequence_field(tmp_path):
    """Keys 0..3 written with ts 10, then deletes of keys 0 and 1 at ts 5 and of key 2 at ts 20:
    deduplicate orders records by ``sequence.field`` first, so only key 2's delete is the newest
    (3 live). The count reads the keys, the sequence field and the row kinds: leaving the sequence
    field out would let every delete win (1 live)."""
    schema = make_schema([("id", "BIGINT"), ("ts", "BIGINT"), ("v", "STRING")], primary_keys=("id",),
                         options={"bucket": "1", "sequence.field": "ts"})
    w = TableWriter.create(str(tmp_path), "db.seq", schema, seed=1)
    w.write(pa.table({"id": pa.array(range(4), pa.int64()), "ts": pa.array([10] * 4, pa.int64()), "v": ["a"] * 4}))
    w.write(pa.table({"id": pa.array([], pa.int64()), "ts": pa.array([], pa.int64()), "v": pa.array([], pa.string())}),
            deletes=pa.table({"id": pa.array([0, 1, 2], pa.int64()), "ts": pa.array([5, 5, 20], pa.int64()),
                              "v": ["x"] * 3}))
    table = indexcore.open_warehouse(str(tmp_path)).table("db.seq")
    assert len(table.plan().files) == 2
    got = live_rows(table)
    assert (got.live, got.exact) == (3, True)


def test_diff_reports_live_rows_not_records(warehouse):
    table = indexcore.open_warehouse(str(warehouse)).table("db.dv")
    first, last = table.snapshot_ids()[0], table.snapshot_ids()[-1]
    summary = diff(table, first, last)["summary"]
    assert (summary["rows_from"], summary["rows_to"], summary["rows_exact"]) == (0, LIVE, True)
    assert summary["records_to"] == sum(lf.file.row_count for lf in table.plan(last).files) > LIVE


def test_warehouse_page_rows_are_live_rows(warehouse, open_page, monkeypatch):
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(warehouse))
    at = open_page("warehouse", warehouse=warehouse)
    metrics = {m.label: m.value for m in at.metric}
    # 8 (DV table) + 12 (append) + 8 (two overlapping level-0 files, merge-read)
    assert metrics["Rows"] == f"{LIVE + 12 + LIVE}"


def test_table_page_rows_are_live_rows(warehouse, open_page, monkeypatch):
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(warehouse))
    shown = {}
    for name in ("db.dv", "db.merged"):
        at = open_page("table", table=name, warehouse=warehouse)
        shown[name] = {m.label: m.value for m in at.metric}["Rows"]
    assert shown == {"db.dv": str(LIVE), "db.merged": str(LIVE)}
    monkeypatch.setenv("INDEXCORE_LIVE_ROWS_MERGE_FILES", "1")
    at = open_page("table", table="db.merged", warehouse=warehouse)
    rows = next(m for m in at.metric if m.label == "Rows")
    assert rows.value == "≤ 14" and "INDEXCORE_LIVE_ROWS_MERGE_FILES" in rows.help


def test_live_rows_equal_the_rows_a_read_returns_on_every_sample_table():
    """On every table and snapshot of the bundled sample (partitioned, many buckets, some buckets
    disjoint and counted from metadata, some merge-read) the count equals the rows a batch read
    returns; it said more than the records when its per-bucket sums were misaligned."""
    root = Path(__file__).resolve().parent.parent / "sample_warehouse"
    if not root.is_dir():
        pytest.skip("sample_warehouse/ is missing")
    wh = indexcore.open_warehouse(str(root))
    checked = 0
    for name in wh.tables():
        table = wh.table(name)
        for sid in table.snapshot_ids():
            got = live_rows(table, sid)
            if got.exact:
                assert got.live == read_table(table, sid).num_rows, (name, sid)
                checked += 1
    assert checked >= 5


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_bucket_counter_counts_each_bucket_as_its_files_say(tmp_path, engine):
    """:class:`BucketCounter` (buckets merged together for deduplicate, one by one for partial-update)
    gives each bucket's rows: per bucket, the keys whose newest record (highest sequence number,
    read from the data files by pyarrow) is not a retract; and the same as
    :func:`merged_bucket_rows` of the bucket alone."""
    import pyarrow.parquet as pq

    from indexcore.warehouse.data import BucketCounter, merged_bucket_rows

    schema = make_schema([("id", "BIGINT"), ("v", "STRING")], primary_keys=("id",),
                         options={"bucket": "4", "merge-engine": engine})
    w = TableWriter.create(str(tmp_path), "db.four", schema, seed=1)
    w.write(pa.table({"id": pa.array(range(40), pa.int64()), "v": ["a"] * 40}))
    gone = [k for k in range(40) if k % 5 == 0] if engine == "deduplicate" else []
    w.write(pa.table({"id": pa.array(range(30, 47), pa.int64()), "v": ["b"] * 17}),
            deletes=pa.table({"id": pa.array(gone, pa.int64()), "v": ["x"] * len(gone)}) if gone else None)
    table = indexcore.open_warehouse(str(tmp_path)).table("db.four")
    groups: dict = {}
    for lf in table.plan().files:
        groups.setdefault(lf.bucket, []).append(lf)
    assert len(groups) == 4 and any(len(g) > 1 for g in groups.values())
    truth = []
    for _bucket, files in sorted(groups.items()):
        newest: dict = {}
        for lf in files:
            t = pq.read_table(lf.path, columns=["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"]).to_pylist()
            for r in t:
                if r["_KEY_id"] not in newest or r["_SEQUENCE_NUMBER"] > newest[r["_KEY_id"]][0]:
                    newest[r["_KEY_id"]] = (r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"])
        truth.append(sum(kind in (0, 2) for _seq, kind in newest.values()))
    assert sum(truth) == 47 - len(gone)
    counter = BucketCounter(table, table.schema(), [])
    assert counter.together == (engine == "deduplicate")
    for _bucket, files in sorted(groups.items()):
        assert counter.add(files)
    assert counter.bucket_rows() == truth and counter.rows() == sum(truth)
    assert [merged_bucket_rows(table, table.schema(), files, []) for _b, files in sorted(groups.items())] == truth


def test_buckets_without_retracts_are_counted_by_their_distinct_keys(tmp_path):
    """A deduplicate table partitioned by ``pt`` with the key (pt, id, k): 40 keys per partition
    written, then 17 of them (and 7 new) written again, no delete: two overlapping level-0 files
    per bucket that retract nothing, so the count reads only (id, k) (:class:`KeyCounter`) and gives
    the distinct keys by construction, the rows a merge read returns and :class:`BucketCounter`'s."""
    from indexcore.analysis.live_rows import KeyCounter
    from indexcore.warehouse.data import BucketCounter

    schema = make_schema([("pt", "STRING"), ("id", "BIGINT"), ("k", "STRING"), ("v", "STRING")],
                         primary_keys=("pt", "id", "k"), partition_keys=("pt",), options={"bucket": "3"})
    w = TableWriter.create(str(tmp_path), "db.keys", schema, seed=1)
    rows = lambda pt, ids, v: pa.table({"pt": [pt] * len(ids), "id": pa.array(ids, pa.int64()),  # noqa: E731
                                        "k": [f"k{i % 3}" for i in ids], "v": [v] * len(ids)})
    w.write(pa.concat_tables([rows("a", list(range(40)), "x"), rows("b", list(range(40)), "x")]))
    w.write(pa.concat_tables([rows("a", list(range(30, 47)), "y"), rows("b", list(range(33, 40)), "y")]))
    live = 47 + 40  # distinct (pt, id, k) by construction
    table = indexcore.open_warehouse(str(tmp_path)).table("db.keys")
    files = table.plan().files
    assert all(lf.file.delete_row_count == 0 for lf in files)
    groups: dict = {}
    for lf in files:
        groups.setdefault((lf.partition, lf.bucket), []).append(lf)
    assert any(len(g) > 1 and {lf.file.level for lf in g} == {0} for g in groups.values())
    s = table.schema()
    assert KeyCounter.keys_of(s) == ["id", "k"]
    keys, merged = KeyCounter(table, s, ["id", "k"], []), BucketCounter(table, s, [])
    for g in groups.values():
        assert keys.add(g) and merged.add(g)
    assert keys.rows() == merged.rows() == live == read_table(table).num_rows
    got = live_rows(table)
    assert (got.live, got.exact, got.merged_buckets) == (live, True, 0)
