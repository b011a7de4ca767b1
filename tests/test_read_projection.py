"""Reading the columns of many Parquet files with a shared ``memo`` (the advisor's sampled files):
a file whose Parquet schema equals one seen before reuses its projection; any other file
(other field ids for the same names, an Arrow schema stored beside it, ids only in that Arrow
schema) gets its own. Truth by construction: each file's field ids hold known values."""

from __future__ import annotations

import posixpath

import pyarrow as pa
import pyarrow.parquet as pq

from indexcore.io import Storage
from indexcore.warehouse.data_file import read_data_file, read_raw


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


def _live(path, schema_id: int, partition: dict | None = None, write_cols=None):
    from indexcore.warehouse.model import DataFileMeta, LiveFile

    meta = DataFileMeta(posixpath.basename(path), 0, 0, (), (), None, None, 0, 0, schema_id, 0, write_cols=write_cols)
    return LiveFile(tuple((partition or {}).values()), partition or {}, 0, meta, path)


def _schema(schema_id: int, fields: list[tuple[int, str, str]], partition_keys: tuple[str, ...] = ()):
    from indexcore.types import DataField, parse_type
    from indexcore.warehouse.model import TableSchema

    return TableSchema(schema_id, tuple(DataField(i, n, parse_type(t)) for i, n, t in fields), partition_keys)


def _typed(path, columns: dict[str, tuple[int | None, pa.DataType, list]]):
    """A Parquet file of ``name -> (field id or None: no id stored, Arrow type, values)``."""
    fields = [pa.field(n, t, metadata=None if fid is None else {"PARQUET:field_id": str(fid)})
              for n, (fid, t, _) in columns.items()]
    pq.write_table(pa.table([pa.array(v, t) for _, t, v in columns.values()], schema=pa.schema(fields)), str(path))
    return str(path)


def test_memo_evolves_each_file_as_without_it(tmp_path):
    """read_data_file with a shared memo (columns picked straight where a file stores them as the
    table types them) gives every file's rows as without one: the values written, renamed columns
    by field id, an INT widened to BIGINT, an added column as nulls, a partition column from the
    file's partition, a file without ids by name, a data-evolution file missing a written column."""
    table = _schema(2, [(0, "k", "BIGINT"), (1, "name", "STRING"), (2, "added", "INT"), (3, "p", "STRING")], ("p",))
    old = _schema(0, [(0, "k", "INT"), (1, "label", "STRING"), (3, "p", "STRING")], ("p",))
    now = _schema(2, list((f.id, f.name, f.type.sql()) for f in table.fields), ("p",))
    files = {
        "same1": (_typed(tmp_path / "s1.parquet", {"k": (0, pa.int64(), [1, 2]), "name": (1, pa.string(), ["a", "b"]),
                                                   "added": (2, pa.int32(), [7, None]), "p": (3, pa.string(), ["x", "x"])}),
                  table, {"k": [1, 2], "name": ["a", "b"], "added": [7, None], "p": ["x", "x"]}),
        "same2": (_typed(tmp_path / "s2.parquet", {"k": (0, pa.int64(), [3]), "name": (1, pa.string(), ["c"]),
                                                   "added": (2, pa.int32(), [8]), "p": (3, pa.string(), ["y"])}),
                  now, {"k": [3], "name": ["c"], "added": [8], "p": ["y"]}),
        # written under schema 0: k an INT, name called "label", no "added", p not stored
        "old": (_typed(tmp_path / "o.parquet", {"k": (0, pa.int32(), [4, 5]), "label": (1, pa.string(), ["d", "e"])}),
                old, {"k": [4, 5], "name": ["d", "e"], "added": [None, None], "p": ["z", "z"]}),
        # no field ids stored: matched by the file schema's names
        "noids": (_typed(tmp_path / "n.parquet", {"name": (None, pa.string(), ["f"]), "k": (None, pa.int64(), [6]),
                                                  "added": (None, pa.int32(), [9]), "p": (None, pa.string(), ["z"])}),
                  table, {"k": [6], "name": ["f"], "added": [9], "p": ["z"]}),
        # a BIGINT stored as Parquet INT32: cast to the table's type, not passed through
        "narrow": (_typed(tmp_path / "w.parquet", {"k": (0, pa.int32(), [10]), "name": (1, pa.string(), ["g"]),
                                                   "added": (2, pa.int32(), [11]), "p": (3, pa.string(), ["w"])}),
                   table, {"k": [10], "name": ["g"], "added": [11], "p": ["w"]}),
    }
    storage = Storage(str(tmp_path))
    cases = [(k, cols) for k in files for cols in (None, ["name", "k"], ["added"], ["p", "k"], ["p", "name"])]
    for order in (cases, cases[::-1]):
        memo: dict = {}
        for key, cols in order:
            path, fs, expected = files[key]
            lf = _live(path, fs.id, {"p": "z"})
            got = read_data_file(storage, lf, fs, table, columns=cols, memo=memo)
            names = cols or list(table.field_names)
            assert got.column_names == names
            assert got.schema == read_data_file(storage, lf, fs, table, columns=cols).schema
            assert {n: got.column(n).to_pylist() for n in names} == {n: expected[n] for n in names}, (key, cols)
    # a data-evolution file holds only its written columns: the others read as nulls, memo or not
    path, fs, _ = files["same1"]
    memo = {}
    for _ in range(2):
        got = read_data_file(storage, _live(path, fs.id, {"p": "x"}, write_cols=("k",)), fs, table,
                             columns=["k", "name"], memo=memo)
        assert got.to_pydict() == {"k": [1, 2], "name": [None, None]}
