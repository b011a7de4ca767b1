"""The census walk in C (issue 30, item 5): container heads of local ``.index`` files read and parsed
a batch at a time by ``_container_heads`` give the same ``$file_indexes`` as the Python path, on
every conformance table, the sample warehouse and damaged files built here (error text naming the
file, the structure and the byte offset included); the C reader's faults agree with the careful
Python parser on thousands of mutated heads."""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pyarrow.compute as pc
import pytest

import indexcore
from indexcore.errors import IndexCoreError
from indexcore.formats import head_batch
from indexcore.formats.container import head_bytes, head_spans, write_container
from indexcore.io import Storage
from indexcore.views import census as census_module
from indexcore.views.census import file_indexes
from indexcore.views.census_rows import plain
from indexcore.warehouse.table_heads import HEAD_PREFETCH_BYTES

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"

pytestmark = pytest.mark.skipif(not head_batch.NATIVE, reason="the _container_heads extension is not built "
                                "(python3 setup.py build_ext --inplace)")


def _census(root: Path, name: str, native: bool, monkeypatch, **kwargs):
    """``$file_indexes`` of a freshly opened table (nothing kept), through the C walk or the Python one."""
    with monkeypatch.context() as m:
        if not native:
            m.setattr(census_module, "native_storage", lambda storage: False)
        table = indexcore.open_warehouse(str(root)).table(name)
        if kwargs.pop("objects", False):  # the walk over live file objects (advise's)
            kwargs["files"] = table.plan().files
        return plain(file_indexes(table, **kwargs))


def _roots(conformance: Path) -> list[Path]:
    roots = sorted((conformance / "warehouses").iterdir())
    return roots + ([SAMPLE] if (SAMPLE / "demo.db").is_dir() else [])


def test_c_and_python_census_are_identical_on_conformance_and_sample(conformance: Path, monkeypatch) -> None:
    on_disk = embedded = tables = 0
    for root in _roots(conformance):
        for name in indexcore.open_warehouse(str(root)).tables():
            native = _census(root, name, True, monkeypatch)
            python = _census(root, name, False, monkeypatch)
            assert native.equals(python), (root, name)
            for kwargs in ({"errors_only": True}, {"sample": 3}, {"objects": True},
                           {"objects": True, "errors_only": True, "sample": 2}):
                assert _census(root, name, True, monkeypatch, **kwargs).equals(
                    _census(root, name, False, monkeypatch, **kwargs)), (root, name, kwargs)
            kinds = native["storage_type"].to_pylist()
            on_disk += kinds.count("FILE")
            embedded += kinds.count("EMBEDDED")
            tables += native.num_rows > 0
    assert tables >= 3 and on_disk > 0 and embedded > 0  # both kinds of container walked


@pytest.mark.parametrize("batch", [1, 2, 5])
def test_batches_read_ahead_on_a_thread_give_the_one_batch_census(conformance: Path, monkeypatch, batch) -> None:
    """Batches of 1, 2 or 5 files (their heads read on a thread while the last is folded): the
    census of every table equals the Python walk's, rows in the same order."""
    tables = 0
    for root in _roots(conformance):
        for name in indexcore.open_warehouse(str(root)).tables():
            python = _census(root, name, False, monkeypatch)
            with monkeypatch.context() as m:
                m.setattr(census_module, "NATIVE_BATCH", batch)
                native = _census(root, name, True, monkeypatch)
            assert native.equals(python), (root, name, batch)
            tables += native.num_rows > batch * census_module.NATIVE_AHEAD
    assert tables >= 2  # tables of more batches than are read at once


def test_read_ahead_yields_every_batch_in_order_and_stops_cleanly() -> None:
    """``read_ahead`` gives each start's read in order, whatever order the reads end in, reads
    each once, and a consumer that stops early leaves no read running."""
    import threading

    done, lock = [], threading.Lock()

    def read(lo: int) -> int:
        sum(range(20_000 * (7 - lo % 7)))  # work that differs per batch: some later batches end first
        with lock:
            done.append(lo)
        return lo * 10

    assert list(census_module.read_ahead(read, range(0, 20, 3))) == [(lo, lo * 10) for lo in range(0, 20, 3)]
    assert sorted(done) == list(range(0, 20, 3))
    assert list(census_module.read_ahead(read, range(0, 1))) == [(0, 0)]
    done.clear()
    ahead = census_module.read_ahead(read, range(100))
    next(ahead)
    ahead.close()  # the pool shut down: what was submitted has ended
    assert len(done) <= census_module.NATIVE_AHEAD + 1


def _damage(tmp_path: Path, root: Path, half: int) -> dict[str, str]:
    """A copy at ``root`` of the sample's demo.events whose ``.index`` files are damaged one way each
    (the first or second ``half`` of the ways: the sample has nine such files); which way each
    file is, by its data file path."""
    shutil.copytree(SAMPLE / "demo.db" / "events", root / "demo.db" / "events")
    table = indexcore.open_warehouse(str(root)).table("demo.events")
    on_disk = [lf for lf in table.plan().files if lf.has_file_index and lf.file.embedded_index is None]
    good = Path(on_disk[0].index_path).read_bytes()
    length = struct.unpack_from(">i", good, 12)[0]
    outside = tmp_path / "outside.index"
    outside.write_bytes(good)
    inside = root / "inside.index"
    inside.write_bytes(good)
    span_at = 16 + 4 + 2 + struct.unpack_from(">H", good, 20)[0] + 4  # first entry: its kind's length
    span_at += 2 + struct.unpack_from(">H", good, span_at)[0]  # its start
    damages = {
        "wrong magic": lambda p: p.write_bytes(b"\0" * 8 + good[8:]),
        "bad version": lambda p: p.write_bytes(good[:8] + struct.pack(">i", 2) + good[12:]),
        "shorter than a head": lambda p: p.write_bytes(good[:20]),
        "truncated head": lambda p: p.write_bytes(good[:length - 3]),
        "impossible column count": lambda p: p.write_bytes(good[:16] + struct.pack(">i", 1 << 20) + good[20:]),
        "span past the end": lambda p: p.write_bytes(good[:span_at] + struct.pack(">i", len(good)) + good[span_at + 4:]),
        "empty file": lambda p: p.write_bytes(b""),
        "missing": lambda p: p.unlink(),
        "a directory": lambda p: (p.unlink(), p.mkdir()),
        "symlink inside the roots": lambda p: (p.unlink(), p.symlink_to(inside)),
        "symlink outside the roots": lambda p: (p.unlink(), p.symlink_to(outside)),
        "non-ASCII names": lambda p: p.write_bytes(write_container([("prix_€", [("bloom-filter", b"\0\0\0\1\xff")]),
                                                                      ("ä", [("bitmap", None)])])),
        "long head": lambda p: p.write_bytes(write_container(
            [(f"column_{i:03d}_" + "z" * 70, [("bloom-filter", b"\0\0\0\1\xff"), ("bsi", None)]) for i in range(60)])),
        "redundant bytes": lambda p: p.write_bytes(write_container([("c", [("bitmap", b"\1\2\3")])], b"extra")),
    }
    ways = list(damages.items())[half * 7:half * 7 + 7]
    assert len(on_disk) >= len(ways)
    which = {}
    for lf, (why, damage) in zip(on_disk[:len(ways)], ways, strict=True):
        damage(Path(lf.index_path))
        which[lf.path] = why
    return which


def test_c_and_python_census_are_identical_on_damaged_files(tmp_path: Path, monkeypatch) -> None:
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("no sample warehouse")
    errors, which, censuses = {}, {}, []
    for half in (0, 1):
        root = tmp_path / f"wh{half}"
        damaged = _damage(tmp_path, root, half)
        native = _census(root, "demo.events", True, monkeypatch)
        assert native.equals(_census(root, "demo.events", False, monkeypatch))
        assert native.equals(_census(root, "demo.events", True, monkeypatch))  # folders resolved again: the same
        assert _census(root, "demo.events", True, monkeypatch, objects=True).equals(
            _census(root, "demo.events", False, monkeypatch, objects=True))
        for path, column, error in zip(native["file_path"].to_pylist(), native["column_name"].to_pylist(),
                                       native["error"].to_pylist(), strict=True):
            if column is None:  # an unreadable container (not an entry's column or kind)
                errors[damaged.get(path)] = error
        which.update(damaged)
        censuses.append(native)
    assert len(which) == 14
    for why in ("wrong magic", "bad version", "shorter than a head", "truncated head", "impossible column count",
                "span past the end", "empty file"):
        assert why in errors and "in file index head, at byte" in errors[why] and ".index" in errors[why], why
    assert "missing" in errors and "a directory" in errors and "symlink outside the roots" in errors
    for why in ("symlink inside the roots", "non-ASCII names", "long head", "redundant bytes"):
        assert why in which.values() and why not in errors, why  # read, through the Python path or in C
    native = censuses[1]
    rows = native.filter(pc.equal(native["file_path"],
                                  next(p for p, w in which.items() if w == "non-ASCII names")))
    assert rows["column_name"].to_pylist() == ["prix_€", "ä"]


def _python_head(storage: Storage, path: str):
    """What the Python path reads of one ``.index`` file: (pairs, spans, size), or its error."""
    try:
        data, size, name = storage.read_prefix(path, HEAD_PREFETCH_BYTES)
        head = head_bytes(data, size, name)
        if head is None:
            head = Path(path).read_bytes()[:struct.unpack_from(">i", data, 12)[0]]
        pairs, spans = head_spans(head, size, name)
        return pairs, spans, size
    except IndexCoreError as exc:
        return exc


def test_c_reader_agrees_with_the_careful_parser_on_mutated_heads(tmp_path: Path, golden: Path) -> None:
    """Thousands of mutated heads (Paimon's containers and built ones): the C reader reads exactly
    what the Python path reads, and faults (HEAD: at the careful parser's offset) where it refuses;
    a fault of kind NAME (a name not ASCII) is left to the Python path."""
    sources = [p.read_bytes() for p in sorted((golden / "container").glob("*.index"))]
    sources.append(write_container([(f"c{i}", [("bitmap", b"\1" * 9), ("bsi", None)]) for i in range(40)]))
    rng = random.Random(30)
    folder = tmp_path / "heads"
    folder.mkdir()
    paths = []
    for i in range(1500):
        data = bytearray(rng.choice(sources))
        length = struct.unpack_from(">i", data, 12)[0]
        for _ in range(rng.randint(0, 3)):
            data[rng.randrange(0, min(length + 2, len(data)))] = rng.randrange(256)
        cut = rng.choice((len(data), len(data), len(data), rng.randrange(0, len(data) + 1)))
        path = folder / f"{i:04d}.index"
        path.write_bytes(bytes(data[:cut]))
        paths.append(str(path))
    storage = Storage(str(tmp_path))
    layouts = head_batch.Layouts()
    got = head_batch.read_heads(storage, paths, [None] * len(paths), layouts, HEAD_PREFETCH_BYTES)
    faults = {i: (kind, detail) for i, kind, detail in got.faults}
    spans_at = 0
    read = refused = named = 0
    for i, path in enumerate(paths):
        python = _python_head(storage, path)
        if i in faults:
            kind, detail = faults[i]
            if kind == head_batch.NAME:
                named += 1  # left to the Python path: a name it decodes, or a fault it names
                assert isinstance(python, IndexCoreError) or not all(c.isascii() for p in python[0] for c in p)
                continue
            assert kind == head_batch.HEAD and isinstance(python, IndexCoreError), (path, python)
            assert python.offset == detail and python.structure == "file index head" and python.file == path
            refused += 1
            continue
        pairs, empty = layouts.shapes[got.layout[i]]
        n = int(got.entries[i])
        spans = tuple(got.spans[spans_at:spans_at + 2 * n].tolist())
        spans_at += 2 * n
        assert (pairs, spans, int(got.size[i])) == python, path
        assert empty == tuple(offset == -1 for offset in spans[::2])
        read += 1
    assert spans_at == len(got.spans) and read > 300 and refused > 300


def test_files_of_folders_outside_the_roots_take_the_checked_path(tmp_path: Path) -> None:
    """A folder outside the allowed roots is never read in C: its files fault (FOLDER) and the
    checked path refuses them by name."""
    inside, outside = tmp_path / "wh", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    data = write_container([("c", [("bitmap", b"\1\2\3")])])
    (outside / "x.index").write_bytes(data)
    (inside / "y.index").write_bytes(data)
    os.symlink(outside, inside / "linked")
    storage = Storage(str(inside))
    paths = [str(outside / "x.index"), str(inside / "y.index"), str(inside / "linked" / "x.index"), "y.index"]
    got = head_batch.read_heads(storage, paths, [None] * 4, head_batch.Layouts(), HEAD_PREFETCH_BYTES)
    assert [(i, kind) for i, kind, _ in got.faults] == [(0, head_batch.FOLDER), (2, head_batch.FOLDER),
                                                         (3, head_batch.FOLDER)]
    assert got.size.tolist() == [-1, len(data), -1, -1]
    for path in (paths[0], paths[2]):
        with pytest.raises(IndexCoreError, match="outside"):
            storage.read_prefix(path, 16)


def test_odd_entries_are_faults_left_to_the_python_path(tmp_path: Path) -> None:
    """What the C reader does not take (no text path, a path without a folder, a NUL, a ``::``
    chain, embedded bytes that are not ``bytes``) is a FOLDER fault, never a crash; embedded
    containers are parsed from their bytes as on-disk ones are."""
    data = write_container([("c", [("bitmap", b"\1\2\3"), ("bsi", None)])])
    (tmp_path / "x.index").write_bytes(data)
    storage = Storage(str(tmp_path))
    good = str(tmp_path / "x.index")
    paths = [None, b"/x.index", "x.index", str(tmp_path) + "/a\0b.index", "memory::" + good, good, good, None]
    embedded = [None, None, None, None, None, bytearray(data), None, data]
    layouts = head_batch.Layouts()
    got = head_batch.read_heads(storage, paths, embedded, layouts, HEAD_PREFETCH_BYTES)
    assert [(i, kind) for i, kind, _ in got.faults] == [(i, head_batch.FOLDER) for i in range(6)]
    assert got.size.tolist() == [-1] * 6 + [len(data)] * 2
    assert layouts.shapes == [((("c", "bitmap"), ("c", "bsi")), (False, True))]
    body = struct.unpack_from(">i", data, 12)[0]  # the first blob starts where the head ends
    assert got.layout.tolist()[6:] == [0, 0] and got.spans.tolist() == [body, 3, -1, 0] * 2
