"""Index bytes per (kind, storage) and the container heads (:func:`.index_bytes.census_index_bytes`),
grouped in numpy, against Arrow's own hash group-by of the same census rows (the foreign
implementation: count_distinct of files, sums, the first container size per file): on every
table of the sample and the conformance warehouses, the 10k bench table when built, and census
rows made by hand with nulls, plain-text paths, several chunks and a container size that differs
between a file's rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.index_bytes import CONTAINER_HEAD, census_index_bytes
from indexcore.views.census_rows import FILE_INDEXES


def _arrow(census: pa.Table) -> dict:
    """The same figures by Arrow's group-by."""
    rows: dict = {}

    def add(kind, storage, files, size):
        acc = rows.setdefault((kind, storage), [0, 0])
        acc[0] += files
        acc[1] += size

    ok = census.filter(pc.is_valid(census["column_name"]))
    ok = ok.set_column(ok.schema.get_field_index("file_path"), "file_path", ok["file_path"].cast(pa.string()))
    for g in ok.group_by(["index_type", "storage_type"], use_threads=False).aggregate(
            [("file_path", "count_distinct"), ("index_size_in_bytes", "sum")]).to_pylist():
        add(g["index_type"], g["storage_type"], g["file_path_count_distinct"], g["index_size_in_bytes_sum"] or 0)
    per_file = ok.group_by(["file_path", "storage_type"], use_threads=False).aggregate(
        [("index_container_size_in_bytes", "first"), ("index_size_in_bytes", "sum")])
    per_file = per_file.filter(pc.is_valid(per_file["index_container_size_in_bytes_first"]))
    heads = pc.max_element_wise(pc.subtract(per_file["index_container_size_in_bytes_first"],
                                            per_file["index_size_in_bytes_sum"]), 0)
    for storage, head in zip(per_file["storage_type"].to_pylist(), heads.to_pylist(), strict=True):
        add(CONTAINER_HEAD, storage, 1, head)
    return rows


def test_every_table_counts_as_arrow_does(every_census):
    for where, census in every_census:
        assert census_index_bytes(census) == _arrow(census), where
    assert sum(census.num_rows > 0 for _, census in every_census) >= 5


def _row(path, kind, storage, size, container, column="c"):
    return {"file_path": path, "column_name": column, "index_type": kind, "storage_type": storage,
            "index_size_in_bytes": size, "index_container_size_in_bytes": container}


def test_rows_made_by_hand():
    rows = [_row("a", "bitmap", "FILE", 100, 500), _row("a", "bloom-filter", "FILE", 300, 500),
            _row("b", "bitmap", "EMBEDDED", 40, 90), _row("b", "bitmap", "EMBEDDED", None, 90),
            _row("c", "bsi", "FILE", None, 70),  # no blob size given: its head is 0
            _row("d", "bitmap", "FILE", 10, None), _row("d", "bsi", "FILE", 5, 60),  # first given: 60
            _row("e", "bitmap", "FILE", 10, 80), _row("e", "bsi", "FILE", 5, 95),  # mixed: the first, 80
            _row("f", "bitmap", "FILE", 500, 100),  # blobs larger than the container: head 0
            _row("g", None, None, None, None, column=None),  # an unreadable container: left out
            _row("h", "bitmap", None, 7, 20)]
    cols = ["file_path", "column_name", "index_type", "storage_type", "index_size_in_bytes",
            "index_container_size_in_bytes"]
    schema = pa.schema([FILE_INDEXES.field(c) for c in cols])
    plain = pa.Table.from_pylist(rows, schema=schema.set(0, pa.field("file_path", pa.string())))
    shared = pa.Table.from_pylist(rows, schema=schema)
    chunked = pa.concat_tables([shared.slice(0, 5), shared.slice(5)])
    want = _arrow(plain)
    assert want[(CONTAINER_HEAD, "FILE")] == [5, (500 - 400) + 0 + (60 - 15) + (80 - 15) + 0]  # a, c, d, e, f
    for census in (plain, shared, chunked):
        assert census_index_bytes(census) == want
    assert census_index_bytes(plain.slice(0, 0)) == {}


def test_sums_past_a_float64s_exact_integers_stay_exact():
    big = (1 << 53) + 1  # a float64 bincount would round it
    rows = [_row("a", "bitmap", "FILE", big, big + 10), _row("a", "bsi", "FILE", 3, big + 10),
            _row("b", "bitmap", "FILE", 1, 9), _row("c", "bitmap", "EMBEDDED", big, big + 2)]
    cols = ["file_path", "column_name", "index_type", "storage_type", "index_size_in_bytes",
            "index_container_size_in_bytes"]
    census = pa.Table.from_pylist(rows, schema=pa.schema([FILE_INDEXES.field(c) for c in cols]))
    want = _arrow(census)
    assert want[("bitmap", "FILE")] == [2, big + 1] and want[(CONTAINER_HEAD, "FILE")] == [2, 7 + 8]
    assert census_index_bytes(census) == want
