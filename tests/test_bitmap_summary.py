"""Bitmap dictionaries and summaries counted on the bytes (formats/bitmap/summary.py) and the views
and lookup frame built on them (views/indexes.py, frames/bitmap.py): each value's count is the rows
the blob was built from (and what Paimon's blobs hold), the summary is BitmapReader's, and a blob
the parser does not take is left to the reader (None), never answered differently from it."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from index_bytes_checks import flipped
from test_bitmap_lookup import COLUMNS as LOOKUP_COLUMNS
from test_bitmap_lookup import _blob

from indexcore import open_warehouse
from indexcore.errors import IndexCoreError
from indexcore.formats.bitmap import meta as bitmap_meta
from indexcore.formats.bitmap import summary as bitmap_summary
from indexcore.formats.bitmap.keys import KeyCodec
from indexcore.formats.bitmap.lookup import BitmapLookup
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.formats.bitmap.summary import blob_counts, summary_of_counts
from indexcore.frames import bitmap as bitmap_frames
from indexcore.frames.views import view_frame
from indexcore.io import BytesSource
from indexcore.types import json_as_is, parse_type, to_json_value
from indexcore.views import indexes as index_views
from indexcore.write import TableWriter, make_schema

COLUMNS = {**LOOKUP_COLUMNS, "TINYINT": [0, -128, 127, 5, 9, 1]}  # the lookup tests' values, and one more type


def _reader(dtype, blob: bytes) -> BitmapReader:
    bitmap_meta._STARTS.clear()  # a fresh process's reader: no dictionary walked before
    return BitmapReader(dtype, BytesSource(blob, "blob"), {})


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("type_name", sorted(COLUMNS))
def test_counts_are_the_written_rows_and_the_summary_the_readers(type_name: str, version: int):
    dtype = parse_type(type_name)
    codec = KeyCodec(dtype)
    rng = random.Random(f"{type_name}{version}")
    distinct = COLUMNS[type_name]
    for nulls in (0.1, 0.0):
        values = [rng.choice(distinct[:4]) if rng.random() >= nulls else None for _ in range(400)]
        values += distinct[4:5] + ([None] if nulls else [])  # one single-row value (and a null one)
        for block in ("16kb", "96b"):  # one V2 index block, and several
            blob = _blob(dtype, values, version, block)
            counts = blob_counts(blob, codec)
            assert counts is not None
            # truth from construction: each value's rows, in key order, and the null rows
            written = Counter(codec.key(v) for v in values if v is not None)
            assert [(codec.key(v), c) for v, c in counts.dictionary] == sorted(
                written.items(), key=lambda kc: codec.sort_key(kc[0]))
            assert counts.null_count == sum(v is None for v in values)
            reader = _reader(dtype, blob)
            assert summary_of_counts(counts, dtype) == reader.summary(), (nulls, block)
            lite = summary_of_counts(counts, dtype, detail=False)
            assert "top_values" not in lite and "blocks" not in lite
            assert lite == {k: v for k, v in reader.summary().items() if k not in ("top_values", "blocks")}


@pytest.mark.skipif(bitmap_summary._roaring_rows is None, reason="the optional C extension is not built (setup.py)")
@pytest.mark.parametrize("version", [1, 2])
def test_counts_make_no_bitmap(version: int, monkeypatch):
    """The Bitmap page's thousands of blobs: each bitmap is counted by the C decoder, no pyroaring
    bitmap made per value; the counts are still the rows written."""
    dtype = parse_type("INT")
    values = [v % 7 if v % 11 else None for v in range(3000)] + [99]
    blob = _blob(dtype, values, version)
    made = []
    real = bitmap_summary.roaring.deserialize
    monkeypatch.setattr(bitmap_summary.roaring, "deserialize", lambda *a, **k: made.append(a[1:]) or real(*a, **k))
    counts = blob_counts(blob, KeyCodec(dtype))
    assert made == []
    assert counts.dictionary == sorted(Counter(v for v in values if v is not None).items())
    assert counts.null_count == values.count(None)


@pytest.mark.parametrize("version", [1, 2])
def test_paimon_written_blobs(conformance: Path, version: int):
    """Blobs written by Paimon (100,000 strings): the counts of the rows Paimon's reader gives for
    each value, and BitmapReader's summary."""
    dtype = parse_type("STRING")
    blob = (conformance / "file_index" / f"bitmap-index-v{version}").read_bytes()
    expected = json.loads((conformance / "file_index" / "expected.json").read_text())["equal"]
    counts = blob_counts(blob, KeyCodec(dtype))
    assert counts is not None and counts.head.row_count == 100_000
    by_value = dict(counts.dictionary)
    for value, rows in expected.items():
        assert by_value.get(value, 0) == len(rows), value
    assert sum(by_value.values()) + counts.null_count == 100_000
    assert summary_of_counts(counts, dtype) == _reader(dtype, blob).summary()


@pytest.mark.parametrize("version", [1, 2])
def test_damaged_blobs_are_left_to_the_reader_or_counted_as_it_does(version: int):
    """Every byte of a small blob flipped in turn: the counts are None (the reader then says what is
    wrong) or exactly the reader's summary and dictionary; never counted where the reader fails."""
    dtype = parse_type("STRING")
    values = ["a", "bb", None, "a", "ccc", "bb", "a", "d"] * 5 + ["single"]
    blob = _blob(dtype, values, version, "32b")
    codec = KeyCodec(dtype)
    counted = 0
    for at, flip, damaged in flipped(blob):
        got = blob_counts(damaged, codec)
        try:
            reader = _reader(dtype, damaged)
            want = (reader.summary(), list(reader.dictionary()), len(reader.null_bitmap()))
        except (IndexCoreError, ValueError, OverflowError, MemoryError):
            want = None
        if got is None:
            continue
        assert want is not None, (at, flip)
        assert (summary_of_counts(got, dtype), got.dictionary, got.null_count) == want, (at, flip)
        counted += 1
    assert counted > 0


def test_boolean_keys_are_left_to_the_reader():
    dtype = parse_type("BOOLEAN")
    assert blob_counts(_blob(dtype, [True, False, None, True], 2), KeyCodec(dtype)) is None


def _python_view_counts(blob: bytes, codec: KeyCodec):
    """:func:`view_counts` of ``blob`` by the Python path alone (blob_counts and its summary)."""
    counts = blob_counts(blob, codec)
    if counts is None:
        return None
    return (summary_of_counts(counts, codec.dtype, detail=False), [v for v, _ in counts.dictionary],
            [c for _, c in counts.dictionary], counts.null_count)


NATIVE_TYPES = ["STRING", "INT", "BIGINT", "DATE", "TINYINT", "SMALLINT"]  # the key kinds the C counter reads


@pytest.mark.skipif(bitmap_summary._roaring_rows is None, reason="the optional C extension is not built (setup.py)")
@pytest.mark.parametrize("type_name", NATIVE_TYPES)
def test_view_counts_in_c_are_the_python_counts(type_name: str, monkeypatch):
    """V2 blobs of each key kind the C counter reads (one index block and several, nulls, a single
    null row, values out of order): :func:`view_counts` answers in one C call, with exactly the
    Python path's summary, values, counts and null rows; the values are the rows written."""
    dtype = parse_type(type_name)
    codec = KeyCodec(dtype)
    rng = random.Random(type_name)
    distinct = {**COLUMNS, "SMALLINT": [0, -32768, 32767, 5, 9, 1]}[type_name]
    made = []
    real = bitmap_summary.blob_counts
    monkeypatch.setattr(bitmap_summary, "blob_counts", lambda *a: made.append(1) or real(*a))
    for nulls in (0.1, 0.0, -1):
        values = [rng.choice(distinct) if rng.random() >= nulls else None for _ in range(300)]
        if nulls < 0:
            values[7] = None  # one null row: stored as its row number, no bitmap
        for block in ("16kb", "96b", "128b"):
            blob = _blob(dtype, values, 2, block)
            made.clear()
            got = bitmap_summary.view_counts(blob, codec)
            assert made == [], (nulls, block)  # answered in C
            assert got == _python_view_counts(blob, codec), (nulls, block)
            written = Counter(codec.key(v) for v in values if v is not None)
            assert [(codec.key(v), c) for v, c in zip(got[1], got[2], strict=True)] == sorted(
                written.items(), key=lambda kc: codec.sort_key(kc[0]))
            assert got[3] == values.count(None)


@pytest.mark.parametrize("type_name", ["STRING", "INT"])
def test_view_counts_of_damaged_blobs_are_the_python_counts(type_name: str):
    """Every byte of small V2 blobs flipped in turn (and each blob cut short): the C counter
    answers exactly what the Python path answers, None included (the reader then decides)."""
    dtype = parse_type(type_name)
    codec = KeyCodec(dtype)
    distinct = COLUMNS[type_name]
    values = [distinct[i % 4] if i % 9 else None for i in range(40)] + [distinct[4]]
    answered = 0
    for block in ("16kb", "96b"):
        blob = _blob(dtype, values, 2, block)
        damaged = [d for _, _, d in flipped(blob)] + [blob[:n] for n in range(len(blob))]
        for data in damaged:
            got = bitmap_summary.view_counts(data, codec)
            assert got == _python_view_counts(data, codec), data.hex()
            answered += got is not None
    assert answered > 0


def test_view_counts_of_the_other_kinds_are_the_python_counts():
    """V1 blobs, float and timestamp keys: the Python path's answer."""
    for type_name, version in (("STRING", 1), ("INT", 1), ("DOUBLE", 2), ("FLOAT", 2), ("TIMESTAMP(3)", 2)):
        dtype = parse_type(type_name)
        codec = KeyCodec(dtype)
        distinct = COLUMNS.get(type_name) or [codec.value(k) for k in (0, 1_700_000_000_000, -5, 86_400_000)]
        values = [distinct[i % len(distinct)] if i % 7 else None for i in range(50)]
        blob = _blob(dtype, values, version, "32b")
        got = bitmap_summary.view_counts(blob, codec)
        assert got is not None and got == _python_view_counts(blob, codec), type_name


# ------------------------------------------------------------------ the views and the lookup frame


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory) -> Path:
    """A table with bitmaps on ``country`` (text, nulls) and ``amount`` (int), V1 and V2 files, a
    boolean bitmap (left to the reader), containers in ``.index`` files and embedded in manifests."""
    root = tmp_path_factory.mktemp("bitmap_summary")
    rng = np.random.default_rng(5)
    countries = np.array(["NZ", "AU", "US", "DE", None], dtype=object)
    for name, options in (("db.v2", {}), ("db.v1", {"file-index.bitmap.version": "1"}),
                          ("db.inline", {"file-index.in-manifest-threshold": "64kb"})):
        schema = make_schema([("id", "BIGINT"), ("country", "STRING"), ("amount", "INT"), ("flag", "BOOLEAN")],
                             options={"bucket": "2", "bucket-key": "id", "file.format": "parquet",
                                      "file-index.bitmap.columns": "country,amount,flag",
                                      "file-index.in-manifest-threshold": "1b", **options})
        writer = TableWriter.create(str(root), name, schema)
        for commit in range(4):
            n = 300
            writer.write(pa.table({
                "id": pa.array(np.arange(commit * n, (commit + 1) * n, dtype=np.int64)),
                "country": pa.array(list(countries[rng.integers(0, 4 if commit % 2 else 5, n)]), pa.string()),
                "amount": pa.array(rng.integers(0, 40, n).astype(np.int32)),
                "flag": pa.array(rng.integers(0, 2, n).astype(bool))}))
    return root


TABLES = ["db.v2", "db.v1", "db.inline"]


def _by_readers(monkeypatch):
    """Every blob read through its reader, as before the bytes were counted."""
    monkeypatch.setattr(index_views, "view_counts", lambda data, codec: None)
    monkeypatch.setattr(BitmapLookup, "rows", lambda self, data, name: None)


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("sample", [None, 3])
def test_views_on_the_bytes_are_the_readers_views(table_dir: Path, name: str, sample, monkeypatch):
    calls = []
    counts = bitmap_summary.view_counts

    def counted(data, codec):
        out = counts(data, codec)
        calls.append((codec.kind, out is not None))
        return out

    monkeypatch.setattr(index_views, "view_counts", counted)
    def frames(table) -> list:
        return [view_frame(table, "bitmap_indexes", sample=sample),
                view_frame(table, "bitmap_values", sample=sample, column="country"),
                view_frame(table, "bitmap_values", sample=sample)] + \
            [bitmap_frames.bitmap_lookup(table, column, value, sample=sample)
             for column, value in (("country", "'NZ'"), ("country", "NULL"), ("amount", "7"), ("flag", "true"),
                                   ("country", "'none such'"))]

    fast_table = open_warehouse(str(table_dir)).table(name)
    fast = frames(fast_table)
    # text and int blobs are counted on the bytes; boolean ones are left to the reader
    assert set(calls) == {("string", True), ("int", True), ("boolean", False)}
    with monkeypatch.context() as m:
        _by_readers(m)
        slow = frames(open_warehouse(str(table_dir)).table(name))
    for a, b in zip(fast, slow, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert not fast[0].empty and fast[0]["error"].isna().all()
    assert set(fast[0]["version"]) == {1 if name == "db.v1" else 2}
    stored = set(view_frame(fast_table, "file_indexes")["storage_type"])
    assert stored == {"EMBEDDED" if name == "db.inline" else "FILE"}
    assert int(fast[3]["matching_rows"].sum()) > 0
    assert sample is not None or int(fast[4]["matching_rows"].sum()) > 0  # two commits wrote nulls


@pytest.mark.parametrize("name", ["db.v2", "db.v1"])
def test_the_lookup_reuses_the_blobs_the_views_read(table_dir: Path, name: str):
    """The Bitmap page's lookup after its cardinalities reads no ``.index`` file again: the views kept
    the blobs' bytes (bounded by the reader cache's budget); it finds what a fresh table's lookup
    (which reads them) finds. Past half the budget nothing is kept and the lookup reads them itself."""
    probes = (("country", "'NZ'"), ("country", "NULL"), ("amount", "7"))
    fresh = [bitmap_frames.bitmap_lookup(open_warehouse(str(table_dir)).table(name), c, v) for c, v in probes]
    table = open_warehouse(str(table_dir)).table(name)
    view_frame(table, "bitmap_indexes")
    before = table.storage.stats.requests
    again = [bitmap_frames.bitmap_lookup(table, c, v) for c, v in probes]
    assert table.storage.stats.requests == before
    for a, b in zip(again, fresh, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert int(again[0]["matching_rows"].sum()) > 0

    small = open_warehouse(str(table_dir)).table(name)
    small.caches.readers.max_weight = 64  # below one blob's bytes
    view_frame(small, "bitmap_indexes")
    before = small.storage.stats.requests
    pd.testing.assert_frame_equal(bitmap_frames.bitmap_lookup(small, *probes[0]), fresh[0])
    assert small.storage.stats.requests > before


def test_values_are_the_datas_counts(table_dir: Path):
    """Truth from the data files: each file's count of each country, nulls as ``NULL``."""
    import pyarrow.parquet as pq

    table = open_warehouse(str(table_dir)).table("db.v2")
    values = view_frame(table, "bitmap_values", column="country")
    paths = {lf.file.file_name: lf.path for lf in table.plan().files}
    assert set(values["file_name"]) == set(paths)
    for file_name, rows in values.groupby("file_name"):
        column = pq.read_table(paths[file_name], columns=["country"]).column(0).to_pylist()
        assert dict(zip(rows["value"], rows["cardinality"], strict=True)) == {
            ("NULL" if v is None else v): n for v, n in Counter(column).items()}


def test_a_damaged_blob_says_what_the_reader_says(table_dir: Path, tmp_path: Path, monkeypatch):
    """A ``.index`` file with one bitmap's bytes damaged: that file's row carries the reader's error,
    the others are counted; the same frame as through the readers."""
    import shutil

    root = tmp_path / "wh"
    shutil.copytree(table_dir, root)
    table = open_warehouse(str(root)).table("db.v2")
    census = view_frame(table, "file_indexes")
    row = census[(census["column_name"] == "country") & (census["storage_type"] == "FILE")].iloc[0]
    path = Path(row["index_file_path"])
    data = bytearray(path.read_bytes())
    counts = blob_counts(bytes(data[row["index_offset"]:row["index_offset"] + row["index_size_in_bytes"]]),
                         KeyCodec(parse_type("STRING")))
    at = row["index_offset"] + counts.head.body_start  # the first bitmap's cookie
    data[at:at + 4] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    fast = view_frame(open_warehouse(str(root)).table("db.v2"), "bitmap_indexes")
    with monkeypatch.context() as m:
        _by_readers(m)
        slow = view_frame(open_warehouse(str(root)).table("db.v2"), "bitmap_indexes")
    pd.testing.assert_frame_equal(fast, slow)
    bad = fast[fast["error"].notna()]
    assert list(bad["file_name"]) == [row["file_name"]] and list(bad["column"]) == ["country"]
    assert "bitmap" in bad["error"].iloc[0]


# ------------------------------------------------------------------ summaries of readers opened on the bytes


@pytest.fixture(scope="module")
def bloom_dir(tmp_path_factory) -> Path:
    """Bloom filters (two fpp settings by column) and BSI in ``.index`` files and embedded."""
    root = tmp_path_factory.mktemp("bloom_bytes")
    rng = np.random.default_rng(9)
    for name, threshold in (("db.files", "1b"), ("db.inline", "64kb")):
        schema = make_schema([("id", "BIGINT"), ("name", "STRING"), ("amount", "INT")],
                             options={"bucket": "2", "bucket-key": "id", "file.format": "parquet",
                                      "file-index.bloom-filter.columns": "id,name",
                                      "file-index.bloom-filter.id.items": "50",
                                      "file-index.bloom-filter.name.fpp": "0.2",
                                      "file-index.bsi.columns": "amount",
                                      "file-index.in-manifest-threshold": threshold})
        writer = TableWriter.create(str(root), name, schema)
        for commit in range(3):
            n = 200
            writer.write(pa.table({"id": pa.array(np.arange(commit * n, (commit + 1) * n, dtype=np.int64)),
                                   "name": pa.array([f"n{v}" for v in rng.integers(0, 90, n)], pa.string()),
                                   "amount": pa.array(rng.integers(-50, 50, n).astype(np.int32))}))
    return root


@pytest.mark.parametrize("name", ["db.files", "db.inline"])
@pytest.mark.parametrize("sample", [None, 2])
def test_bloom_filters_on_the_bytes_are_the_readers(bloom_dir: Path, name: str, sample, monkeypatch):
    """``$bloom_filters`` from readers opened on each container's bytes equals the view through each
    blob's own reader (every row left to it), for the configured and a target fpp."""
    from indexcore.views import blob_bytes

    fast_table = open_warehouse(str(bloom_dir)).table(name)
    fast = [view_frame(fast_table, "bloom_filters", sample=sample, target_fpp=f) for f in (None, 0.01)]
    every = blob_bytes.census_blob_bytes
    with monkeypatch.context() as m:
        m.setattr(blob_bytes, "census_blob_bytes",
                  lambda *args: tuple([None] * len(got) for got in every(*args)))
        slow_table = open_warehouse(str(bloom_dir)).table(name)
        slow = [view_frame(slow_table, "bloom_filters", sample=sample, target_fpp=f) for f in (None, 0.01)]
    for a, b in zip(fast, slow, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert fast[0]["error"].isna().all() and set(fast[0]["configured_fpp"]) == {0.2, 0.1}
    assert set(fast[0]["configured_items"]) == {50, 1_000_000}


@pytest.mark.parametrize("name", ["db.files", "db.inline"])
def test_range_frame_on_the_bytes_is_the_readers(bloom_dir: Path, name: str, monkeypatch):
    """The Range page's BSI frame and pruning table, with readers opened on the containers' bytes
    and kept for the pruning and the heads taken from the census, equal those through each blob's
    own reader and each file's parsed head."""
    from indexcore.frames import pruning
    from indexcore.frames import range as range_frames
    from indexcore.views import blob_bytes

    def frames(table):
        return (range_frames.range_frame(table, column="amount"),
                pruning.prune_by_sql(table, "amount BETWEEN -10 AND 20", ["bsi", "range-bitmap"]))

    fast = frames(open_warehouse(str(bloom_dir)).table(name))
    every = blob_bytes.census_blob_bytes
    with monkeypatch.context() as m:
        m.setattr(blob_bytes, "census_blob_bytes", lambda *args: tuple([None] * len(got) for got in every(*args)))
        m.setattr(pruning, "_census_heads", lambda *args: {})
        slow = frames(open_warehouse(str(bloom_dir)).table(name))
    for a, b in zip(fast, slow, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert fast[0]["error"].isna().all() and fast[0]["min"].min() < 0 < fast[0]["max"].max()


def test_values_given_as_is_are_to_json_values():
    """``$bitmap_values`` skips ``to_json_value`` for the types it gives back unchanged: for each of
    them every written value is its own JSON form; the types it changes are never skipped."""
    for type_name, values in COLUMNS.items():
        dtype = parse_type(type_name)
        if json_as_is(dtype):
            assert all(to_json_value(dtype, v) is v for v in values), type_name
    for type_name in ("DOUBLE", "FLOAT", "DATE", "TIME", "TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", "DECIMAL(5,2)", "BYTES"):
        assert not json_as_is(parse_type(type_name)), type_name
    assert sorted(n for n in COLUMNS if json_as_is(parse_type(n))) == ["BIGINT", "INT", "STRING", "TINYINT"]


def test_top_values_are_pandas_groupby_of_the_values():
    """The Bitmap page's top values (numpy sums and a heap) are pandas' groupby of the
    ``$bitmap_values`` rows (rows summed, files holding each value counted once), most rows first
    and ties by value: random frames with repeated files, values of many lengths, ties and ``NULL``."""
    def by_pandas(values: pd.DataFrame, n: int) -> pd.DataFrame:
        agg = values.groupby("value", as_index=False).agg(cardinality=("cardinality", "sum"),
                                                           files=("file_name", "nunique"))
        return agg.sort_values(["cardinality", "value"], ascending=[False, True]).head(n).reset_index(drop=True)

    rng = random.Random(7)
    for _ in range(100):
        k = rng.randint(1, 600)
        values = pd.DataFrame({
            "file_name": [f"data-{rng.randint(0, 40)}.parquet" for _ in range(k)],
            "value": [rng.choice(["NZ", "AU", "NULL", "é", "", "zz", str(rng.randint(0, 60))]) for _ in range(k)],
            "cardinality": pd.array([rng.choice([1, 1, 2, 7, 10**9]) for _ in range(k)], "int64")})
        n = rng.choice([1, 3, 20, 100])
        pd.testing.assert_frame_equal(bitmap_frames.top_values(values, n), by_pandas(values, n))
    empty = bitmap_frames.top_values(pd.DataFrame(columns=["file_name", "value", "cardinality"]), 5)
    assert empty.empty and list(empty.columns) == ["value", "cardinality", "files"]
