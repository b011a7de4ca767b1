"""The index inventory's census rows grouped by (file schema id, column, index kind)
(:func:`.advise_existing._keyed_rows`, numpy masks on one number per key) against Arrow's hash
group-by with row lists (the foreign implementation it replaced): the same keys, rows and blob
bytes on every table of the sample and conformance warehouses, the 10k bench table when built,
and rows made by hand (unnamed rows, null sizes, several schemas and kinds)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise_existing import _keyed_rows
from indexcore.views.census_rows import FILE_INDEXES


def _arrow(census: pa.Table) -> dict:
    numbered = census.select(["schema_id", "column_name", "index_type", "index_size_in_bytes"]).append_column(
        "row", pa.array(np.arange(census.num_rows, dtype=np.int64)))
    numbered = numbered.filter(pc.is_valid(numbered["column_name"]))
    keyed = numbered.group_by(["schema_id", "column_name", "index_type"], use_threads=False).aggregate(
        [("row", "list"), ("index_size_in_bytes", "sum")])
    return {(k["schema_id"], k["column_name"], k["index_type"]): (k["row_list"], k["index_size_in_bytes_sum"] or 0)
            for k in keyed.to_pylist()}


def _ours(census: pa.Table) -> dict:
    return {(s, c, k): (rows.tolist(), size) for s, c, k, rows, size in _keyed_rows(census)}


def test_every_table_groups_as_arrow_does(every_census):
    for where, census in every_census:
        assert _ours(census) == _arrow(census), where
    assert sum(census.num_rows > 0 for _, census in every_census) >= 5


def test_rows_made_by_hand():
    def row(sid, column, kind, size):
        return {"schema_id": sid, "column_name": column, "index_type": kind, "index_size_in_bytes": size}

    rows = [row(0, "a", "bitmap", 10), row(0, None, None, None), row(1, "a", "bitmap", 5), row(0, "a", "bitmap", None),
            row(0, "b", "bsi", 7), row(1, "a", "bloom-filter", 3), row(0, None, "bitmap", 1), row(1, "a", "bitmap", 2),
            row(2, "c", "bsi", None)]
    schema = pa.schema([FILE_INDEXES.field(c) for c in ("schema_id", "column_name", "index_type",
                                                         "index_size_in_bytes")])
    census = pa.Table.from_pylist(rows, schema=schema)
    want = _arrow(census)
    assert want[(0, "a", "bitmap")] == ([0, 3], 10) and want[(2, "c", "bsi")] == ([8], 0)
    assert _ours(census) == want
    assert _ours(pa.concat_tables([census.slice(0, 4), census.slice(4)])) == want
    assert _ours(census.slice(0, 0)) == {}
