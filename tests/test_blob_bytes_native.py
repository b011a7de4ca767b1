"""Index containers read whole in C for the per-file views (issue 30, item 5): ``read_wholes`` gives
the bytes and names ``Storage.read_prefixes`` gives, leaves what it cannot open or read (a symlink,
a folder outside the roots, a missing file) to the Python path, and ``census_blob_bytes`` through it
equals the Python path's on every conformance table and the sample warehouse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import indexcore
from indexcore.errors import IndexCoreError
from indexcore.formats import head_batch
from indexcore.io import Storage
from indexcore.views import blob_bytes
from indexcore.views.census import snapshot_census

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"

pytestmark = pytest.mark.skipif(not head_batch.NATIVE, reason="the _container_heads extension is not built "
                                "(python3 setup.py build_ext --inplace)")


def _python_reads(storage: Storage, paths: list, limit: int) -> list:
    """What the Python path makes of each path: (whole bytes or None, name), or the error."""
    out = []
    for read in storage.read_prefixes(paths, limit, served=False):
        if isinstance(read, IndexCoreError):
            out.append(read)
        else:
            out.append((read[0], read[2]) if len(read[0]) == read[1] else (None, None))
    return out


def test_whole_reads_equal_the_python_reads_and_leave_faults_to_it(tmp_path: Path) -> None:
    """Files of every size around the limit, an empty one, a symlinked file, a folder outside the
    roots (through a symlinked folder too) and a missing file: the C reads equal the Python reads
    where it reads, and the others are faults whose Python read refuses them or says why."""
    inside, outside = tmp_path / "wh", tmp_path / "other"
    (inside / "bucket-0").mkdir(parents=True)
    outside.mkdir()
    limit = 64
    sizes = {"a.index": 0, "b.index": 1, "c.index": limit - 1, "d.index": limit, "e.index": limit + 1, "f.index": 1000}
    for name, size in sizes.items():
        (inside / "bucket-0" / name).write_bytes(bytes((i * 7) % 256 for i in range(size)))
    (outside / "x.index").write_bytes(b"outside")
    os.symlink(outside / "x.index", inside / "bucket-0" / "link.index")
    os.symlink(outside, inside / "linked")
    storage = Storage(str(inside))
    paths = [str(inside / "bucket-0" / n) for n in sizes] + [
        str(inside / "bucket-0" / "link.index"), str(outside / "x.index"), str(inside / "linked" / "x.index"),
        str(inside / "bucket-0" / "gone.index"), "bucket-0/b.index"]
    got = head_batch.read_wholes(storage, paths, {}, limit)
    python = _python_reads(Storage(str(inside)), paths, limit)
    faults = set(got.faults)
    assert faults == {6, 7, 8, 9, 10}, got.faults  # symlinked file, outside folders, missing, relative path
    for i, (blob, name) in enumerate(zip(got.blobs, got.names, strict=True)):
        if i in faults:
            assert blob is None
            continue
        want = python[i]
        assert not isinstance(want, IndexCoreError)
        assert blob == want[0], paths[i]
        if blob is not None:
            assert name == want[1] == str(inside / "bucket-0" / Path(paths[i]).name)
    assert [b is not None for b in got.blobs[:6]] == [True, True, True, True, False, False]
    for i in (7, 8):  # outside the roots: the Python path refuses them by name
        assert isinstance(python[i], IndexCoreError) and "outside" in str(python[i])
    python_storage = Storage(str(inside))  # the same bytes and reads counted, none served
    python_storage.read_prefixes([p for i, p in enumerate(paths) if i not in faults], limit, served=False)
    assert (storage.stats.bytes_read, storage.stats.requests, storage.stats.bytes_served) == \
        (python_storage.stats.bytes_read, python_storage.stats.requests, 0)



@pytest.mark.parametrize("prefix", [False, True])
def test_one_limit_per_file_reads_what_one_call_per_limit_reads(tmp_path: Path, prefix: bool) -> None:
    """A batch of files of many sizes, each with its own limit (below, at and above its size), in
    one call: the same bytes, names, faults and stats as one call per limit."""
    (tmp_path / "b").mkdir()
    paths, limits = [], []
    for i, (size, limit) in enumerate([(0, 4), (5, 4), (5, 5), (5, 6), (300, 100), (300, 1000), (7, 0)]):
        path = tmp_path / "b" / f"{i}.index"
        path.write_bytes(bytes((i + j) % 256 for j in range(size)))
        paths.append(str(path))
        limits.append(limit)
    paths.append(str(tmp_path / "b" / "gone.index"))
    limits.append(9)
    storage = Storage(str(tmp_path))
    got = head_batch.read_wholes(storage, paths, {}, limits, prefix=prefix)
    one_by_one = Storage(str(tmp_path))
    for i, (path, limit) in enumerate(zip(paths, limits, strict=True)):
        alone = head_batch.read_wholes(one_by_one, [path], {}, limit, prefix=prefix)
        assert (got.blobs[i], got.names[i], i in got.faults) == (alone.blobs[0], alone.names[0], alone.faults == [0])
    assert got.faults == [len(paths) - 1]
    assert (storage.stats.bytes_read, storage.stats.requests) == (one_by_one.stats.bytes_read,
                                                                  one_by_one.stats.requests)
    with pytest.raises(ValueError):
        head_batch.read_wholes(storage, paths, {}, limits[:-1])

def _tables(conformance: Path) -> list:
    roots = sorted((conformance / "warehouses").iterdir()) + ([SAMPLE] if (SAMPLE / "demo.db").is_dir() else [])
    out = []
    for root in roots:
        warehouse = indexcore.open_warehouse(str(root))
        out += [(root, name) for name in warehouse.tables()]
    return out


@pytest.mark.parametrize("batch", [256, 2])
def test_census_blob_bytes_in_c_equal_the_python_path(conformance: Path, monkeypatch, batch: int) -> None:
    """Every census row's blob bytes, type and container name are the same read in C and in Python
    on every conformance table and the sample warehouse (each table freshly opened: nothing kept);
    in C also with batches of 2 files, the next read on a thread while one is taken."""
    checked = 0
    for root, name in _tables(conformance):
        got = []
        for native in (True, False):
            with monkeypatch.context() as m:
                m.setattr(blob_bytes, "native_storage", lambda storage, native=native: native)
                m.setattr(blob_bytes, "_BATCH", batch)
                table = indexcore.open_warehouse(str(root)).table(name)
                try:
                    census = snapshot_census(table, None)
                except IndexCoreError:
                    break
                got.append(blob_bytes.census_blob_bytes(table, census, None))
        if len(got) == 2:
            assert got[0] == got[1], (root.name, name)
            checked += sum(b is not None for b in got[0][0])
    assert checked > 100
