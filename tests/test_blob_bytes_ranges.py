"""Census blobs as bytes read only up to the last byte a file's wanted blobs need
(:func:`indexcore.views.blob_bytes.census_blob_bytes`): bloom sizing at 1,000,000 files read
20,133 ``.index`` files whole (6 KB to 64 KB each) for a 316-byte filter after a 152-byte head.

Truth by construction: a table written here with a bloom filter (first in each container) and a
bitmap on a distinct value per row (one container of 800 KB); each blob's bytes are cut from the
whole file read with ``open`` at the entry the Python head parser finds; the bytes read are what
each file's wanted blobs end at, never the whole file."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from indexcore.formats.container import read_container
from indexcore.io import BytesSource
from indexcore.views import view
from indexcore.views.blob_bytes import census_blob_bytes
from indexcore.warehouse import Warehouse
from indexcore.warehouse.table_heads import WHOLE_INDEX_BYTES
from indexcore.write import TableWriter, make_schema

ROWS = (50, 300, 30_000)  # the last file's bitmap makes its container 800 KB


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranges")
    schema = make_schema([("id", "BIGINT"), ("name", "STRING"), ("tag", "STRING")], options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": "20",
        "file-index.bitmap.columns": "tag", "file-index.in-manifest-threshold": "1B"})
    w = TableWriter.create(str(root), "db.t", schema, seed="ranges")
    for rows in ROWS:
        w.write(pa.table({"id": pa.array(range(rows), pa.int64()), "name": [f"n{j % 40}" for j in range(rows)],
                          "tag": [f"tag-value-{j}" for j in range(rows)]}))
    return Warehouse(str(root)).table("db.t")


def _truth(table, census: pa.Table) -> list[bytes | None]:
    """Each row's blob cut from its whole ``.index`` file at the entry the Python head parser reads."""
    out = []
    for row in census.to_pylist():
        full = table.storage.resolve(row["index_file_path"])
        data = Path(full).read_bytes()
        entry = read_container(BytesSource(data, full)).entry(row["column_name"], row["index_type"])
        out.append(data[entry.offset:entry.offset + entry.length])
    return out


def test_blobs_equal_the_whole_files_cut_and_only_their_prefix_is_read(table):
    census = view(table, "file_indexes")
    sizes = {p: Path(table.storage.resolve(p)).stat().st_size for p in census["index_file_path"].to_pylist()}
    assert max(sizes.values()) > WHOLE_INDEX_BYTES  # one container too large to read whole
    blooms = census.filter(pc.equal(census["index_type"], "bloom-filter"))
    before = table.storage.stats.bytes_read
    got, _types, names = census_blob_bytes(table, blooms, None)
    read = table.storage.stats.bytes_read - before
    assert got == _truth(table, blooms)  # the 800 KB container's filter too: it ends in its first page
    ends = blooms["index_offset"].to_numpy() + blooms["index_size_in_bytes"].to_numpy()
    assert read == int(ends.sum()) < sum(sizes.values()) // 100
    assert names == [table.storage.display(table.storage.resolve(p)) for p in blooms["index_file_path"].to_pylist()]


def test_a_file_is_read_once_up_to_its_last_wanted_blob(table):
    census = view(table, "file_indexes")
    before = table.storage.stats.snapshot()
    got, _types, _names = census_blob_bytes(table, census, None)
    after = table.storage.stats.snapshot()
    truth = _truth(table, census)
    large = [i for i, r in enumerate(census.to_pylist())
             if r["index_offset"] + r["index_size_in_bytes"] > WHOLE_INDEX_BYTES]
    assert len(large) == 1  # the 800 KB bitmap: past the bytes read at once, left to its reader
    assert got == [None if i in large else t for i, t in enumerate(truth)]
    # each file read once, to the end of its last blob within the bytes read at once
    need: dict[str, int] = {}
    for r in census.to_pylist():
        end = r["index_offset"] + r["index_size_in_bytes"]
        if end <= WHOLE_INDEX_BYTES:
            need[r["index_file_path"]] = max(need.get(r["index_file_path"], 0), end)
    assert after[1] - before[1] == len(ROWS) == len(need)
    assert after[0] - before[0] == sum(need.values())
