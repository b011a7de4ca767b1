"""The census walk's bytes path (issue 30, item 5): heads read a batch at a time as columns
(:meth:`head_batch`) and checked on bytes (:func:`well_formed_head`) give what the container reader
gives, on Paimon's containers, on built ones, on damaged ones (named file, structure and offset)
and on heads longer than the first read."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pyarrow.compute as pc
import pytest

import indexcore
from indexcore.errors import IndexCoreError
from indexcore.formats.container import head_bytes, read_container, well_formed_head, write_container
from indexcore.io import BytesSource
from indexcore.views.census import file_indexes
from indexcore.warehouse.table_heads import HEAD_PREFETCH_BYTES

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"


def _containers(golden: Path) -> list[tuple[str, bytes]]:
    """Paimon's containers and built ones (a head of many long column names: past the first read)."""
    built = write_container([(f"column_{i:03d}_" + "x" * 60, [("bloom-filter", b"\0\0\0\1\xff"), ("bsi", None)])
                             for i in range(60)])
    small = write_container([("c", [("bitmap", b"\1\2\3")])])
    return [(p.name, p.read_bytes()) for p in sorted((golden / "container").glob("*.index"))] + [
        ("built_long.index", built), ("built_small.index", small)]


def _reader_head(data: bytes, name: str) -> bytes:
    """The head as the container reader reads it (16 bytes, then the rest)."""
    head = read_container(BytesSource(data, name=name)).head
    return data[:head.head_length]


def test_well_formed_head_is_head_bytes_on_paimon_and_built_containers(golden: Path) -> None:
    for name, data in _containers(golden):
        whole = _reader_head(data, name)
        for prefix in (data, data[:HEAD_PREFETCH_BYTES], data[:len(whole)], data[:len(whole) - 1]):
            assert well_formed_head(prefix, len(data)) == head_bytes(prefix, len(data), name)
        assert well_formed_head(data, len(data)) == whole
    assert len(_reader_head(*reversed(_containers(golden)[-2]))) > HEAD_PREFETCH_BYTES  # the long one is long


def test_well_formed_head_declines_what_head_bytes_refuses(golden: Path) -> None:
    """Damaged prefixes (magic, version, length, truncation, file size): the bytes path returns
    None exactly where the checked path raises, and the checked path names file, structure, offset."""
    rng = random.Random(11)
    refused = 0
    for name, data in _containers(golden):
        for _ in range(400):
            bad = bytearray(data[:HEAD_PREFETCH_BYTES])
            for _ in range(rng.randint(1, 2)):
                bad[rng.randrange(0, 16)] = rng.randrange(256)
            cut = rng.choice((len(bad), len(bad), 15, 8, 0))
            size = len(data) + rng.choice((0, 0, -len(data) + 10, 1 << 20))
            bad = bytes(bad[:cut])
            try:
                checked = head_bytes(bad, size, name)
            except IndexCoreError as exc:
                assert well_formed_head(bad, size) is None
                assert exc.file == name and exc.structure == "file index head" and exc.offset is not None
                refused += 1
                continue
            assert well_formed_head(bad, size) == checked
    assert refused > 500


def _copy(tmp_path: Path) -> indexcore.Table:
    shutil.copytree(SAMPLE / "demo.db" / "events", tmp_path / "demo.db" / "events")
    return indexcore.open_warehouse(str(tmp_path)).table("demo.events")


def test_head_batch_gives_the_reader_heads_and_named_errors(tmp_path: Path) -> None:
    """Per file, as columns: the head the container reader reads (embedded or on disk), a long
    head read past the first bytes, and a damaged file's error naming it, its structure and offset."""
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("no sample warehouse")
    table = _copy(tmp_path)
    files = [lf for lf in table.plan().files if lf.has_file_index]
    on_disk = [lf for lf in files if lf.file.embedded_index is None]
    assert len(on_disk) >= 3
    long_one, broken, magic = on_disk[0], on_disk[1], on_disk[2]
    Path(long_one.index_path).write_bytes(
        write_container([(f"col_{i:03d}_" + "y" * 80, [("bloom-filter", b"\0\0\0\1\xff")]) for i in range(60)]))
    Path(broken.index_path).write_bytes(b"not a file index" * 8)
    data = bytearray(Path(magic.index_path).read_bytes())
    data[12:16] = struct.pack(">i", len(data) + 5)  # a head longer than the file
    Path(magic.index_path).write_bytes(bytes(data))
    table = indexcore.open_warehouse(str(tmp_path)).table("demo.events")  # nothing kept of the old bytes
    got = table.head_batch([lf.path for lf in files], [lf.index_path for lf in files],
                           [lf.file.embedded_index for lf in files])
    for lf, (head, size, _name, error) in zip(files, got, strict=True):
        if lf in (broken, magic):
            assert head is None and Path(lf.index_path).name in error and "in file index head, at byte" in error
            continue
        raw = lf.file.embedded_index if lf.file.embedded_index is not None else Path(lf.index_path).read_bytes()
        assert error is None and size == len(raw) and head == _reader_head(raw, "x")
    assert len(got[files.index(long_one)][0]) > HEAD_PREFETCH_BYTES
    # the census says the same of them: the long head's entries, the damaged files' errors
    census = file_indexes(table)
    rows = census.filter(pc.equal(census["file_path"].cast("string"), long_one.path))
    assert rows["column_name"].to_pylist() == [f"col_{i:03d}_" + "y" * 80 for i in range(60)]
    for lf in (broken, magic):
        rows = census.filter(pc.equal(census["file_path"].cast("string"), lf.path))
        assert rows.num_rows == 1 and rows["column_name"][0].as_py() is None
        assert Path(lf.index_path).name in rows["error"][0].as_py()
    # kept heads are served again without a read; a second batch is the same
    assert table.head_batch([lf.path for lf in files], [lf.index_path for lf in files],
                            [lf.file.embedded_index for lf in files]) == got
