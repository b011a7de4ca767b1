"""The census's few-valued text columns as dictionaries (issue 29, item 2): column name, index kind,
storage type and error cost 4 bytes a row, not a copy of the text; every reader of them (lists,
codes, group-bys, counts of files) answers as over plain text. Truth: Arrow and pandas over the
plain census (:func:`plain`), and the census of every conformance and sample table."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from warehouse_tables import SAMPLE, every_table, warehouse_roots

import indexcore
from indexcore.spark.jobs import metadata
from indexcore.views import view
from indexcore.views.census import census_files
from indexcore.views.census_rows import FILE_INDEXES, SHARED_TEXT, codes_of, plain, values_of
from indexcore.views.common import to_frame
from indexcore.write.bulk_sample import build_large_bulk

FEW = ("column_name", "index_type", "storage_type", "error")


def _censuses():
    """``(where, census)`` of every conformance and sample table (its tests ask for ``conformance``:
    they skip without it)."""
    for root, table in every_table(warehouse_roots()):
        yield f"{root.name}/{table.name}", view(table, "file_indexes")


def test_the_few_valued_text_columns_are_dictionaries_of_their_texts(conformance):
    """On every conformance and sample table: the four columns are :data:`SHARED_TEXT` over each of
    their texts once (no null in a dictionary), and read as the plain census reads."""
    rows = 0
    for name, census in _censuses():
        assert census.schema == FILE_INDEXES, name
        flat = plain(census)
        for column in FEW:
            assert census.schema.field(column).type == SHARED_TEXT, (name, column)
            for chunk in census[column].chunks:
                texts = chunk.dictionary.to_pylist()
                assert None not in texts and len(set(texts)) == len(texts), (name, column, texts)
            assert values_of(census[column]) == flat[column].to_pylist(), (name, column)
        rows += census.num_rows
        pd.testing.assert_frame_equal(to_frame(census), flat.to_pandas())
    assert rows > 100


def _chunks() -> pa.ChunkedArray:
    """Two chunks over different dictionaries (a Spark census's tasks'), with nulls."""
    one = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 0], pa.int32()), pa.array(["id", "name"]))
    two = pa.DictionaryArray.from_arrays(pa.array([1, None, 0, 2], pa.int32()), pa.array(["zip", "id", "unused"]))
    return pa.chunked_array([one, two])


def test_values_and_codes_of_a_dictionary_column_are_its_plain_texts():
    column = _chunks()
    texts = column.cast(pa.string()).to_pylist()
    assert values_of(column) == texts == ["id", "name", None, "id", "id", None, "zip", "unused"]
    values, codes = codes_of(column)
    assert [values[c] for c in codes] == texts
    values, codes = codes_of(pa.chunked_array([pa.array([3, None, 3, 5], pa.int64())]))  # not text
    assert [values[c] for c in codes] == [3, None, 3, 5]


def test_the_spark_census_is_one_chunk_over_one_dictionary_and_groups():
    """:func:`metadata._in_plan_order` (where a Spark census's task tables are put together): each
    column one chunk, its tasks' dictionaries unified; grouping it gives what plain text gives."""
    tasks = []
    for order, (columns, kinds) in enumerate([(["id", "name", None], ["bitmap", "bsi", None]),
                                              (["zip", "id"], ["bloom-filter", "bitmap"])]):
        n = len(columns)
        tasks.append(pa.table({"column_name": pa.array(columns).dictionary_encode(),
                               "index_type": pa.array(kinds).dictionary_encode(),
                               "size": pa.array(range(n), pa.int64()),
                               metadata.ORDER: pa.array([order * 10 + i for i in range(n)], pa.int64())}))
    schema = pa.schema([("column_name", SHARED_TEXT), ("index_type", SHARED_TEXT), ("size", pa.int64())])
    census, places = metadata._in_plan_order(tasks, schema)
    assert census.schema == schema and places.tolist() == [0, 1, 2, 10, 11]
    for column in ("column_name", "index_type"):
        assert census[column].num_chunks == 1
    assert census["column_name"].cast(pa.string()).to_pylist() == ["id", "name", None, "zip", "id"]
    got = census.group_by(["column_name", "index_type"], use_threads=False).aggregate([("size", "sum")])
    want = plain(census).group_by(["column_name", "index_type"], use_threads=False).aggregate([("size", "sum")])
    assert sorted(plain(got).to_pylist(), key=str) == sorted(want.to_pylist(), key=str)


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    root = tmp_path_factory.mktemp("large")
    build_large_bulk(str(root), 1, 1000, workers=1)
    return indexcore.open_warehouse(str(root)).table("large.events")


def test_the_few_valued_columns_cost_4_bytes_a_row(events):
    """At 1,000 files (about 3,700 rows): the four columns cost 4 bytes a row each (their
    dictionaries a few texts), at least 15 bytes a row less than plain text (about 21 here)."""
    census = view(events, "file_indexes")
    flat = plain(census)
    ours, text = (sum(t[c].nbytes for c in FEW) for t in (census, flat))
    rows = census.num_rows
    assert rows > 3000
    assert ours <= 16 * rows + 4096, (ours, rows)
    assert text - ours > 15 * rows, (ours, text, rows)


def test_files_counted_on_the_census_as_pandas_counts_them_without_a_path_text(events):
    """:func:`census_files` equals pandas' ``nunique`` of the plain census frame's paths, for every
    kind and column; counting makes no path text (traced: less than the paths' own bytes)."""
    census = view(events, "file_indexes")
    frame = plain(census).to_pandas()
    assert census["file_path"].num_chunks == 1
    kinds = sorted(set(frame["index_type"].dropna()))
    assert len(kinds) >= 2
    cases = [(None, None)] + [((k,), None) for k in kinds] + [(tuple(kinds), None)]
    cases += [((k,), c) for k in kinds for c in sorted(set(frame.loc[frame["index_type"] == k, "column_name"]))]
    for kind, column in cases:
        hit = pd.Series(True, index=frame.index)
        if kind is not None:
            hit &= frame["index_type"].isin(kind)
        if column is not None:
            hit &= frame["column_name"] == column
        assert census_files(census, kind, column) == frame.loc[hit, "file_path"].nunique(), (kind, column)
    assert census_files(census, ("no-such-kind",)) == 0
    assert census_files(plain(census), tuple(kinds)) == frame.loc[frame["index_type"].isin(kinds), "file_path"].nunique()

    path_bytes = sum(len(p) for p in census["file_path"].chunk(0).dictionary.to_pylist())
    tracemalloc.start()
    try:
        census_files(census, tuple(kinds[:1]))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < path_bytes / 2, (peak, path_bytes)


def test_unusable_rows_and_rows_of_a_kind_are_those_of_plain_text(conformance):
    """The filters over the dictionary columns (kinds, a column, errors) keep the rows plain text keeps."""
    from indexcore.views.census import census_rows_of, unusable_rows

    seen = 0
    for name, census in _censuses():
        flat = plain(census)
        assert plain(unusable_rows(census)).equals(unusable_rows(flat)), name
        kinds = [k for k in pc.unique(flat["index_type"]).to_pylist() if k is not None]
        for kind in kinds:
            for column in {c for c in flat.filter(pc.equal(flat["index_type"], kind))["column_name"].to_pylist()}:
                assert plain(census_rows_of(census, [kind], column)).equals(census_rows_of(flat, [kind], column))
                seen += 1
    assert seen > 10


_POOLS: list = []  # proxy pools measured in: alive as long as what they allocated


def test_a_kind_filter_decodes_no_row(events):
    """The filters over the kinds and column names (:func:`texts_in`, as ``census_rows_of``,
    ``unusable_rows`` and the Bloom page's bloom rows use it) work on the dictionary: Arrow's
    ``equal`` of a dictionary column decodes every row first (at 1,000,000 files about 46 MiB)."""
    from indexcore.views.census import texts_in

    census = view(events, "file_indexes")
    for column in ("index_type", "column_name"):
        decoded = plain(census)[column].nbytes
        wanted = pa.array([census[column].chunk(0).dictionary[0].as_py()])
        default = pa.default_memory_pool()
        proxy = pa.proxy_memory_pool(default)
        _POOLS.append(proxy)
        pa.set_memory_pool(proxy)
        try:
            got = texts_in(census[column], wanted)
            peak = proxy.max_memory()
        finally:
            pa.set_memory_pool(default)
        assert got.to_pylist() == pc.equal(plain(census)[column], wanted[0]).to_pylist()
        assert peak < decoded / 4, (column, peak, decoded)


def test_the_bitmap_page_counts_files_as_pandas_counts_the_plain_census(open_page, monkeypatch):
    """The Bitmap page's counts (files with a file index, files carrying a bitmap, files with the
    picked column's bitmap) counted on the census's path indices: what pandas' ``nunique`` of the
    plain census's paths gives."""
    from indexcore.frames.bitmap import BITMAP_TYPES

    monkeypatch.setenv("INDEXCORE_DECODE_SAMPLE", "2")
    at = open_page("bitmap", table="demo.events")
    census = plain(view(indexcore.open_warehouse(str(SAMPLE)).table("demo.events"), "file_indexes")).to_pandas()
    column = at.selectbox(key="bitmap_column").value
    carrying = census.loc[census["index_type"].isin(BITMAP_TYPES), "file_path"].nunique()
    on_column = census.loc[census["index_type"].isin(BITMAP_TYPES) & (census["column_name"] == column),
                           "file_path"].nunique()
    caption = next(c.value for c in at.caption if "fixed random sample of 2" in c.value)
    assert f"of the {census['file_path'].nunique():,} files with a file index" in caption
    assert f"of the {carrying:,} carrying this index" in caption
    assert at.metric[0].value == str(on_column) and on_column > 2


def test_distinct_codes_and_a_blobs_length_count_as_arrow_does(events):
    """:func:`distinct_codes` is Arrow's ``count_distinct`` of the indices (nulls left out, across
    chunks); a :class:`Blobs` of census rows (health and advise count each index's files by it) has
    as many files as pandas finds paths."""
    from indexcore.views.census_blobs import Blobs, CensusBlobs
    from indexcore.views.census_rows import distinct_codes

    codes = [pa.array([3, None, 3, 0], pa.int32()), pa.array([7, 0, None], pa.int32()), pa.array([], pa.int32())]
    assert distinct_codes(codes, 9) == pc.count_distinct(pa.chunked_array(codes)).as_py() == 3
    census = view(events, "file_indexes")
    frame = plain(census).to_pandas()
    for kind in sorted(set(frame["index_type"].dropna())):
        rows = frame.index[frame["index_type"] == kind].to_numpy()
        blobs = Blobs(CensusBlobs(events, census, events.live_files_by_path()))
        half = len(rows) // 2  # two parts, as a group gathers them
        for part in (rows[:half], rows[half:]):
            blobs.add(census["file_path"].take(pa.array(part)), part)
        assert len(blobs) == frame.loc[rows, "file_path"].nunique() > 0, kind


def test_the_census_index_paths_are_the_plans_text_bytes(events):
    """Some files embed their index (no ``.index`` path in the plan): the census's ``.index`` paths
    are still a dictionary over the plan's own text bytes (offsets of their own, 4 bytes a file),
    each value the object plan's; a take whose skipped rows hold text is a copy, as Arrow's."""
    from indexcore.views.census import _texts_at

    census, plan = view(events, "file_indexes"), events.plan_columns()
    column = plan.files["index_path"].chunk(0)
    assert 0 < column.null_count < len(column)  # both kinds of storage
    dictionary = census["index_file_path"].chunk(0).dictionary
    assert dictionary.buffers()[2].address == column.buffers()[2].address
    assert dictionary.buffers()[1].size <= 4 * (len(dictionary) + 1)
    files = {lf.path: lf for lf in events.plan().files}
    flat = plain(census)
    for path, index_path, storage in zip(*(flat[c].to_pylist() for c in ("file_path", "index_file_path", "storage_type")),
                                         strict=True):
        assert index_path == (files[path].index_path if storage == "FILE" else None)

    texts = pa.array(["a", None, "bc", None, None, "def", "g"])
    for rows in ([0, 2, 5], [2], [0, 2, 5, 6], [0, 5], [5, 6]):
        got = _texts_at(texts, np.asarray(rows, np.int64))
        assert got.to_pylist() == texts.take(pa.array(rows)).to_pylist(), rows
    view_of = _texts_at(texts.slice(1), np.asarray([1, 4, 5], np.int64))  # a slice: its offset kept
    assert view_of.to_pylist() == ["bc", "def", "g"] and view_of.buffers()[2].address == texts.buffers()[2].address
