"""Reading the columns of many Parquet files with a shared ``memo`` (the advisor's sampled files):
a file whose Parquet schema equals one seen before reuses its projection; any other file
(other field ids for the same names, an Arrow schema stored beside it, ids only in that Arrow
schema) gets its own. Truth by construction: each file's field ids hold known values."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from indexcore.io import Storage
from indexcore.warehouse.data import read_raw


def _write(path, columns: dict[str, tuple[int, list]], store_schema: bool = False, id_key: str = "PARQUET:field_id"):
    """A Parquet file of ``name -> (field id, values)``."""
    fields = [pa.field(name, pa.int64(), metadata={id_key: str(fid)}) for name, (fid, _) in columns.items()]
    table = pa.table([pa.array(v, pa.int64()) for _, v in columns.values()], schema=pa.schema(fields))
    pq.write_table(table, str(path), store_schema=store_schema)
    return str(path)


def test_memo_projection_follows_each_files_field_ids(tmp_path):
    same1 = _write(tmp_path / "a1.parquet", {"a": (0, [1, 2]), "b": (1, [10, 11]), "c": (2, [20, 21])})
    same2 = _write(tmp_path / "a2.parquet", {"a": (0, [3]), "b": (1, [12]), "c": (2, [22])})
    # the same names, the ids swapped (a rename): field 1 is now stored as "c"
    swapped = _write(tmp_path / "b.parquet", {"a": (0, [4]), "b": (2, [23]), "c": (1, [13])})
    # an Arrow schema stored beside the Parquet one, and ids only there (no PARQUET:field_id)
    stored = _write(tmp_path / "c.parquet", {"a": (0, [5]), "b": (1, [14]), "c": (2, [24])}, store_schema=True)
    other_key = _write(tmp_path / "d.parquet", {"x": (1, [15]), "y": (2, [25])}, store_schema=True,
                       id_key="paimon.id")
    storage = Storage(str(tmp_path))
    expected = {same1: [10, 11], same2: [12], swapped: [13], stored: [14], other_key: [15]}
    for order in ([same1, swapped, same2, stored, other_key, same1],
                  [other_key, stored, swapped, same2, same1, swapped]):
        memo: dict = {}
        for path in order:
            got = read_raw(storage, path, "parquet", field_ids={1}, memo=memo)
            assert got.num_columns == 1
            assert got.column(0).to_pylist() == expected[path], path
            assert got.to_pylist() == read_raw(storage, path, "parquet", field_ids={1}).to_pylist()
        # only files whose ids are their Parquet schema's own are remembered, one entry per schema
        kept = memo["parquet_projections"]
        assert len(kept) == 2 and sorted(names for _, _, names in kept) == [["b"], ["c"]]
    memo = {}
    both = read_raw(storage, same1, "parquet", field_ids={0, 2}, memo=memo)
    assert both.column_names == ["a", "c"]
    assert read_raw(storage, same2, "parquet", field_ids={1}, memo=memo).column_names == ["b"]
