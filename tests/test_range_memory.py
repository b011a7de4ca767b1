"""Memory of the Range page's steps (issue 29, item 2): looking up census rows by path works on the
census's dictionary, not on every decoded row, and a sample takes the plan's kept strings instead
of making one per path. Truth: Arrow's own lookups over plain text; memory in a pool of its own
(Arrow) or traced (Python strings)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import indexcore
from indexcore.frames import pruning
from indexcore.views import view
from indexcore.views.census import census_of_sample, indexed_rows, texts_in
from indexcore.warehouse.file_sample import sample_positions
from indexcore.write.bulk_sample import build_large_bulk

FILES = 1000
_POOLS: list = []  # proxy pools the peaks were measured in: alive as long as what they allocated


def _peak_of(fn):
    """``fn()`` and the most Arrow memory it had allocated at once, in a proxy pool of its own."""
    default = pa.default_memory_pool()
    proxy = pa.proxy_memory_pool(default)
    _POOLS.append(proxy)
    pa.set_memory_pool(proxy)
    try:
        return fn(), proxy.max_memory()
    finally:
        pa.set_memory_pool(default)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("large")
    build_large_bulk(str(root), 1, FILES, workers=1)
    return str(root)


@pytest.fixture(scope="module")
def events(built):
    return indexcore.open_warehouse(built).table("large.events")


def _census_column(rows: int, distinct: int, chunks: int = 2) -> pa.ChunkedArray:
    texts = pa.array([f"/w/large.db/events/dt=2024-01-{i % 28:02d}/bucket-{i % 64}/data-{i:09d}.parquet"
                      for i in range(distinct)])
    rng = np.random.default_rng(3)
    parts = []
    for _ in range(chunks):
        codes = rng.integers(0, distinct, rows // chunks).astype(np.int32)
        parts.append(pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes % 17 == 0), texts))
    return pa.chunked_array(parts)


def test_texts_in_answers_as_arrow_over_plain_text_without_decoding_the_rows():
    """``texts_in`` of a dictionary column (chunks, nulls) is Arrow's ``is_in`` / ``index_in`` of
    the same column as plain text; it allocates a small part of that text, where Arrow's lookup
    over the dictionary array decodes it first (the premise: about 400 MB at 1,000,000 files)."""
    column = _census_column(200_000, 50_000)
    plain = column.cast(pa.string())
    values = column.chunk(0).dictionary.take(pa.array(np.arange(0, 50_000, 7)))
    want_in = pc.fill_null(pc.is_in(plain, value_set=values), False)
    want_at = pc.index_in(plain, value_set=values)
    got_in, ours = _peak_of(lambda: texts_in(column, values))
    got_at, ours_at = _peak_of(lambda: texts_in(column, values, where=True))
    assert got_in.equals(want_in) and got_at.equals(want_at)
    assert want_in.to_numpy().sum() > 10_000 and got_at.null_count > 10_000  # both answers occur
    _, arrows = _peak_of(lambda: pc.is_in(column, value_set=values))
    text_bytes = plain.nbytes
    assert arrows > text_bytes // 2  # the premise: Arrow decodes the dictionary column
    assert max(ours, ours_at) < text_bytes // 5
    plain_in = texts_in(plain, values)  # a plain column: Arrow's own lookup
    assert plain_in.equals(want_in)


def test_a_census_sample_and_the_pruning_heads_decode_no_census_path(events):
    """The Range page's sampled census and its pruning table's heads: the rows that the census
    as plain text gives, with far less Arrow memory than the census's paths as text."""
    table = events
    snap = table.snapshot().id
    census = view(table, "file_indexes")
    paths_text = census["file_path"].cast(pa.string())
    assert pa.types.is_dictionary(census["file_path"].type) and census.num_rows > 3 * FILES // 2
    plan = table.plan_columns()
    sample = 50
    rows = indexed_rows(plan, sample)
    picked = plan.files.column("path").take(pa.array(rows))
    at = pc.fill_null(pc.index_in(paths_text, value_set=picked), -1).to_numpy()
    hit = np.flatnonzero(at >= 0)
    want = census.take(hit[np.argsort(at[hit], kind="stable")])
    got, peak = _peak_of(lambda: census_of_sample(table, census, snap, sample))
    assert got.equals(want) and 0 < got.num_rows < census.num_rows
    assert peak < paths_text.nbytes // 3

    paths = picked.to_pylist()
    heads, peak = _peak_of(lambda: pruning._census_heads(table, snap, paths))
    assert sorted(heads) == sorted(set(paths))
    mine = census.filter(pc.is_in(paths_text, value_set=picked))
    for path, head in heads.items():
        rows_of = mine.filter(pc.equal(mine["file_path"].cast(pa.string()), path))
        assert [(e.column, e.index_type, e.offset, e.length) for e in head.entries] == list(zip(
            *(rows_of[c].to_pylist() for c in ("column_name", "index_type", "index_offset", "index_size_in_bytes")),
            strict=True))
    assert peak < paths_text.nbytes // 3


def test_a_sample_of_indexed_files_takes_the_plans_kept_strings(events):
    """``indexed_rows`` with a sample picks the same files as a draw over fresh path strings, and
    makes no string per path: the plan's kept ones (its frames') are taken."""
    plan = events.plan_columns()
    kept = plan.text_objects("path")
    every = indexed_rows(plan)
    fresh = plan.files.column("path").take(pa.array(every)).to_pylist()
    want = every[sample_positions(fresh, 40)]
    fresh_bytes = sum(len(p) for p in fresh)
    del fresh
    tracemalloc.start()
    try:
        got = indexed_rows(plan, 40)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.tolist() == want.tolist() and kept is plan.text_objects("path")
    assert peak < fresh_bytes // 3


def test_the_pruning_table_of_a_sample_is_the_one_over_every_file_restricted(events):
    """``prune_by_sql`` of a sample (the plan's kept strings, the census looked up by dictionary)
    gives, for each sampled file, the row the unsampled table gives it."""
    sql = "amount BETWEEN 10 AND 100"
    whole = pruning.prune_by_sql(events, sql, index_types=("range-bitmap", "bsi"))
    part = pruning.prune_by_sql(events, sql, index_types=("range-bitmap", "bsi"), sample=60)
    assert 0 < len(part) < len(whole)
    key = "file_name" if "file_name" in whole.columns else whole.columns[0]
    merged = part.merge(whole, on=list(part.columns), how="left", indicator=True)
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"].head()
    assert part[key].is_unique


def _both_peaks(fn):
    """``fn()`` and its peak of Python (tracemalloc: numpy included) plus Arrow (:func:`_peak_of`) memory."""
    tracemalloc.start()
    try:
        got, arrow = _peak_of(fn)
        _, python = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return got, python + arrow


def test_the_index_columns_of_a_page_copy_no_row_of_the_census(built):
    """The column picker's names (``pages.common.index_columns``) are the census's, as a filter of
    the whole census frame gives them; read on the Arrow census's dictionaries, not a copy of each
    hit row nor a hash table of them (at 1,000,000 files about 170 MB on the Range page)."""
    from indexcore.frames.views import view_frame
    from pages.common import Context, index_columns  # the app's pages: Streamlit, imported by this test only
    from pages.selection import Selection

    ctx = Context(Selection(warehouse=built, table="large.events"), (), indexcore.open_warehouse(built))
    frame = view_frame(ctx.table, "file_indexes")
    kinds = ("range-bitmap", "bsi")
    want = sorted(frame[frame["index_type"].isin(kinds)]["column_name"].dropna().unique().tolist())
    index_columns(ctx, kinds)  # once before: the census the table keeps, first-call state
    ctx.end_run()  # a new run: the names are worked out again on the kept census
    got, peak = _both_peaks(lambda: index_columns(ctx, kinds))
    assert got == want == ["amount", "event_time"]
    hits = int(frame["index_type"].isin(kinds).sum())
    assert hits > len(frame) // 3 and peak < hits * 24  # a filter of the census: 8 bytes a column a hit row


def test_the_bitmap_estimate_reads_two_columns_of_the_carrying_rows(events):
    """The Bitmap page's matching-rows estimate counts the rows of every file carrying the column's
    bitmap (truth: the census's files in Arrow, their row counts from the plan) without copying
    every column of the carrying rows of the census."""
    from indexcore.formats.registry import page_kinds
    from indexcore.frames import bitmap

    census = view(events, "file_indexes")
    column = "country"
    mask = pc.and_(texts_in(census["index_type"], pa.array(list(page_kinds("bitmap")))),
                   pc.fill_null(pc.equal(census["column_name"], column), False))
    paths = pc.unique(census.filter(mask)["file_path"].cast(pa.string()))
    plan = events.plan_columns()
    rows = pc.sum(plan.files.filter(pc.is_in(plan.files["path"], value_set=paths))["_ROW_COUNT"]).as_py()
    many = pa.concat_tables([census] * 8).combine_chunks()  # every row 8 times: the same files and counts,
    # and rows enough that copying them outweighs what a call makes besides
    lookup = bitmap.bitmap_lookup(events, column, "'US'", sample=30)
    assert 0 < len(lookup) < len(paths)
    bitmap.matching_rows_estimate(lookup, many, column, sampled=True)  # once before: first-call state
    got, peak = _both_peaks(lambda: bitmap.matching_rows_estimate(lookup, many, column, sampled=True))
    assert got.population == len(paths) and got.sample == len(lookup)
    found = lookup["matching_rows"].astype(float).sum()
    assert got.value == pytest.approx(found / lookup["row_count"].astype(float).sum() * rows)
    hits = 8 * int(pc.sum(mask).as_py())
    assert peak < hits * 8 * many.num_columns // 2  # a copy of the carrying rows: 8 bytes a column each


def test_embedded_indexes_of_a_sample_are_taken_without_joining_the_plan(events):
    """The sampled files' embedded file indexes (what the index pages decode) are the plan's bytes
    of each path (truth: the plan's rows as Python values), None for a path not planned; on a plan
    of many decoded batches (as at 1,000,000 files) they cost about what they return, where Arrow's
    take of the chunked column copied every embedded index first."""
    import dataclasses

    from indexcore.views import blob_bytes

    plan = events.plan_columns()
    batched = dataclasses.replace(plan, files=pa.Table.from_batches(plan.files.to_batches(max_chunksize=64)))
    assert batched.files.column("_EMBEDDED_FILE_INDEX").num_chunks > 10
    truth = dict(zip(plan.files.column("path").to_pylist(), plan.files.column("_EMBEDDED_FILE_INDEX").to_pylist(),
                     strict=True))
    embedded = [p for p, v in truth.items() if v is not None]
    assert len(embedded) > 100
    wanted = embedded[::7] + ["/not/planned.parquet"] + embedded[3::11]
    got, peak = _peak_of(lambda: blob_bytes._embedded_of(batched, wanted))
    assert got == [truth.get(p) for p in wanted] and got[len(embedded[::7])] is None
    column = batched.files.column("_EMBEDDED_FILE_INDEX")
    _, joined = _peak_of(lambda: column.take(pa.array([0, 5])))
    assert joined > column.nbytes // 2  # the premise: Arrow joins the chunks
    assert peak < column.nbytes // 4


def test_bloom_tallies_copy_only_the_columns_they_read(events):
    """The Bloom page's sizing (and health's) tallies every bloom filter of the census; its filters
    copy the five columns a tally reads, not all sixteen of each bloom row (at 1,000,000 files,
    about 1M rows twice: most of the Bloom page's peak). The tally equals the one of the whole rows."""
    from indexcore.analysis import bloom_sizing

    census = view(events, "file_indexes")
    by_path = events.live_files_by_path(None)
    blooms = pc.and_kleene(pc.equal(census["index_type"], "bloom-filter"), pc.is_null(census["error"]))
    _, whole_rows = _peak_of(lambda: census.filter(blooms))  # what a filter of all the columns copies
    got, peak = _peak_of(lambda: bloom_sizing.census_tallies(events, census, by_path))
    assert list(got) == ["event_id"] and len(got["event_id"]["rows"]) == int(pc.sum(blooms).as_py())
    want = bloom_sizing._tally_columns(events, "event_id", census.filter(blooms), lambda paths: by_path.many(
        paths.cast(pa.string()).to_pylist()))
    assert got["event_id"] == want
    assert peak < whole_rows  # two copies of every column of the bloom rows before: 2.5 times that
