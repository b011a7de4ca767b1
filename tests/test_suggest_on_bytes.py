"""The predicate suggestion's inputs read without an object per file give what the per-file path
gives: its sampled files' statistics, decoded from the columnar plan a column at a time
(``suggestion._latest_stats`` / ``plan_stages.plan_value_stats``), equal those each live file's
manifest record gives (``pruning.file_stats``, LazyStats); its bitmap dictionaries read on the
blobs' bytes (``blob_counts``) equal the readers' ``dictionary()``, damaged blobs included. On every
table of the conformance warehouses and the sample warehouse (schema evolution, every column type,
NaN, truncated strings, dense stats columns) and tables written here."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from indexcore import open_warehouse
from indexcore.errors import IndexCoreError
from indexcore.formats.container import read_container
from indexcore.frames import suggestion
from indexcore.frames.pruning import file_stats
from indexcore.io import BytesSource
from indexcore.write import TableWriter, make_schema

ROOT = Path(__file__).resolve().parent.parent


def _same(table) -> int:
    schema = table.schema()
    try:
        files, _total = suggestion.suggestion_sample(table)
    except IndexCoreError:
        return 0
    latest = [lf for lf in files if lf.file.schema_id == schema.id]
    got = suggestion._latest_stats(table, None, schema, latest)
    want = {lf.path: file_stats(table, lf) for lf in latest}
    assert list(got) == list(want)
    for path, cells in want.items():
        assert list(got[path]) == list(cells), path
        assert repr(got[path]) == repr(cells), path  # repr: a NaN equals itself
    return len(latest)


@pytest.mark.parametrize("folder", ["warehouses/parquet", "warehouses/orc"])
def test_plan_stats_equal_each_files_own_on_the_conformance_warehouses(conformance: Path, folder: str):
    wh = open_warehouse(str(conformance / folder))
    checked = sum(_same(wh.table(name)) for name in wh.tables())
    assert checked > 50


def test_plan_stats_equal_each_files_own_on_the_sample_warehouse():
    wh = open_warehouse(str(ROOT / "sample_warehouse"))
    assert sum(_same(wh.table(name)) for name in wh.tables()) > 0


def test_files_not_in_the_plan_are_read_file_by_file():
    wh = open_warehouse(str(ROOT / "sample_warehouse"))
    table = next(t for t in map(wh.table, wh.tables()) if suggestion.suggestion_sample(t)[0])
    lf = suggestion.suggestion_sample(table)[0][0]
    moved = dataclasses.replace(lf, path=lf.path + ".elsewhere")
    assert suggestion._latest_stats(table, None, table.schema(), [moved]) == {moved.path: file_stats(table, moved)}


def _dictionaries(table, monkeypatch, on_bytes: bool):
    if not on_bytes:
        monkeypatch.setattr(suggestion, "_blob_dictionary", lambda *args: None)
    files, _total = suggestion.suggestion_sample(table)
    schema = table.schema()
    out = suggestion._bitmap_dictionaries(table, files, {f.name: f for f in schema.fields})
    monkeypatch.undo()
    return out


def _bitmap_tables(conformance: Path):
    for folder in ("warehouses/parquet", "warehouses/orc"):
        wh = open_warehouse(str(conformance / folder))
        for name in wh.tables():
            if "bitmap" in str(wh.table(name).schema().options):
                yield conformance / folder, name
    wh = open_warehouse(str(ROOT / "sample_warehouse"))
    for name in wh.tables():
        yield ROOT / "sample_warehouse", name


def test_bitmap_dictionaries_on_the_bytes_equal_the_readers(conformance: Path, monkeypatch):
    counted = 0
    for root, name in _bitmap_tables(conformance):
        fast = _dictionaries(open_warehouse(str(root)).table(name), monkeypatch, True)
        slow = _dictionaries(open_warehouse(str(root)).table(name), monkeypatch, False)
        assert fast == slow, name
        counted += len(fast[0])
    assert counted > 10


@pytest.fixture(scope="module")
def bitmap_table(tmp_path_factory) -> Path:
    """Bitmap indexes on a string and an int, V1 and V2 (several index blocks), in small ``.index``
    files (db.v1, db.v2) and embedded in the manifest (db.e2)."""
    root = tmp_path_factory.mktemp("suggest_bitmaps")
    for name, version, threshold in (("v1", 1, "1b"), ("v2", 2, "1b"), ("e2", 2, "64kb")):
        schema = make_schema([("id", "BIGINT"), ("country", "STRING"), ("amount", "INT")],
                             options={"file.format": "parquet", "file-index.bitmap.columns": "country,amount",
                                      "file-index.bitmap.country.version": str(version),
                                      "file-index.bitmap.amount.version": str(version),
                                      "file-index.bitmap.country.index-block-size": "64b",
                                      "file-index.in-manifest-threshold": threshold})
        writer = TableWriter.create(str(root), f"db.{name}", schema)
        rng = np.random.default_rng(version)
        countries = np.array(["NZ", "AU", "US", "DE", "FR", "a longer country name", None], dtype=object)
        for commit in range(5):
            n = 200
            writer.write(pa.table({
                "id": pa.array(np.arange(commit * n, (commit + 1) * n, dtype=np.int64)),
                "country": pa.array(list(countries[rng.integers(0, 7 - commit % 3, n)]), pa.string()),
                "amount": pa.array(rng.integers(0, 30 + commit, n).astype(np.int32))}))
    return root


@pytest.mark.parametrize("name", ["v1", "v2", "e2"])
def test_bitmap_dictionaries_on_the_bytes_equal_the_readers_on_tables_written_here(bitmap_table: Path, name: str,
                                                                                   monkeypatch):
    table_of = lambda: open_warehouse(str(bitmap_table)).table(f"db.{name}")  # noqa: E731
    calls = []
    real = suggestion._blob_dictionary

    def counted(*args):
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(suggestion, "_blob_dictionary", counted)
    files, _total = suggestion.suggestion_sample(table_of())
    fast = suggestion._bitmap_dictionaries(table_of(), files, {f.name: f for f in table_of().schema().fields})
    monkeypatch.undo()
    assert calls and all(calls)
    assert all((lf.file.embedded_index is not None) == (name == "e2") for lf in files)
    assert fast == _dictionaries(table_of(), monkeypatch, False)
    # truth from the data: each (column, value)'s rows over the files
    rows = pa.concat_tables([pq.read_table(lf.path) for lf in files])
    for column in ("country", "amount"):
        values = [v for v in rows.column(column).to_pylist() if v is not None]
        for value in set(values):
            assert fast[0][(column, value)][1] == values.count(value)


def test_a_damaged_bitmap_blob_is_read_by_the_reader(bitmap_table: Path, tmp_path: Path, monkeypatch):
    """Flipped bytes in a bitmap blob: what the suggestion takes from it is what the reader gives
    (or, where the reader fails, the file's values are left out as before)."""
    import shutil

    copy = tmp_path / "wh"
    shutil.copytree(bitmap_table, copy)
    table = open_warehouse(str(copy)).table("db.v2")
    files, _total = suggestion.suggestion_sample(table)
    victim = next(lf for lf in files if lf.index_path)
    data = bytearray(Path(victim.index_path).read_bytes())
    head = read_container(BytesSource(bytes(data))).head
    entry = next(e for e in head.entries if e.index_type == "bitmap" and e.column == "country")
    for at in range(entry.offset, entry.offset + entry.length, max(1, entry.length // 40)):
        damaged = bytearray(data)
        damaged[at] ^= 0xFF
        Path(victim.index_path).write_bytes(bytes(damaged))
        fast = _dictionaries(open_warehouse(str(copy)).table("db.v2"), monkeypatch, True)
        slow = _dictionaries(open_warehouse(str(copy)).table("db.v2"), monkeypatch, False)
        assert fast == slow, at
    Path(victim.index_path).write_bytes(bytes(data))
