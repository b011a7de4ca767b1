"""Allowed roots hold for every URL form: symlinks, protocol aliases, ``::`` chains, table folders.

Each escape named in issue 11 is tried against a warehouse root with a real Paimon table
outside it; all are refused with one message, whether or not the target exists.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

import indexcore
from indexcore.errors import StorageError
from indexcore.io import Storage, open_file
from indexcore.io.roots import Roots, canonical_protocol, layers

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"
REFUSED = "not allowed: outside the allowed roots"


@pytest.fixture
def tree(tmp_path):
    """``root/`` (an allowed warehouse) and ``outside/`` (a warehouse with demo.users) beside it."""
    if not (SAMPLE / "demo.db" / "users").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "demo.db").mkdir(parents=True)
    shutil.copytree(SAMPLE / "demo.db" / "users", outside / "demo.db" / "users")
    shutil.copytree(SAMPLE / "demo.db" / "orders", root / "demo.db" / "orders")
    (root / "escape").symlink_to(outside)
    (root / "demo.db" / "users").symlink_to(outside / "demo.db" / "users")
    with zipfile.ZipFile(outside / "wh.zip", "w") as z:
        z.write(outside / "demo.db" / "users" / "schema" / "schema-0", "demo.db/users/schema/schema-0")
    (outside / "not-a-zip.zip").write_bytes(b"plain bytes")
    return root, outside


def _refused(url: str, roots: list[str]) -> str:
    with pytest.raises(StorageError) as info:
        indexcore.open_warehouse(url, allowed_roots=roots)
    assert REFUSED in str(info.value), str(info.value)
    return str(info.value).replace(url, "<url>")


def test_inside_the_root_is_readable(tree):
    root, _ = tree
    wh = indexcore.open_warehouse(str(root), allowed_roots=[str(root)])
    assert wh.table("demo.orders").plan().files
    assert indexcore.open_warehouse(f"file://{root}", allowed_roots=[str(root)]).tables() == ["demo.orders"]


def test_symlink_through_file_url_is_refused(tree):
    root, _ = tree
    _refused(f"file://{root}/escape", [str(root)])
    _refused(str(root / "escape"), [str(root)])
    storage = Storage(str(root), allowed_roots=[str(root)])
    with pytest.raises(StorageError, match=REFUSED):
        storage.read_bytes(f"file://{root}/escape/demo.db/users/schema/schema-0")
    with pytest.raises(StorageError, match=REFUSED):
        storage.read_bytes("escape/demo.db/users/schema/schema-0")


def test_local_protocol_alias_is_refused(tree):
    root, _ = tree
    assert canonical_protocol("local") == "file"
    _refused(f"local://{root}/escape", [str(root)])
    storage = Storage(str(root), allowed_roots=[str(root)])
    with pytest.raises(StorageError, match=REFUSED):
        storage.open(f"local://{root}/escape/demo.db/users/schema/schema-0")


def test_simplecache_chain_is_refused(tree, monkeypatch):
    root, _ = tree
    _refused(f"simplecache::file://{root}/escape", [str(root)])
    # even when the operator allows the caching layer, its target must be inside a root
    monkeypatch.setenv("INDEXCORE_ALLOWED_PROTOCOLS", "file,simplecache")
    _refused(f"simplecache::file://{root}/escape", [str(root)])
    assert layers(f"simplecache::file://{root}/escape")[-1].path == str((root / "escape").resolve())


def test_zip_chain_is_refused(tree):
    root, outside = tree
    _refused(f"zip://demo.db::file://{outside}/wh.zip", [str(root)])
    shutil.copy(outside / "wh.zip", root / "wh.zip")
    # inside the root too: zip is not a protocol the roots allow
    _refused(f"zip://demo.db::file://{root}/wh.zip", [str(root)])
    with pytest.raises(StorageError, match=REFUSED):
        open_file(f"zip://demo.db/users/schema/schema-0::file://{outside}/wh.zip", allowed_roots=[str(root)])
    storage = Storage(str(root), allowed_roots=[str(root)])
    with pytest.raises(StorageError, match=REFUSED):
        storage.read_bytes(f"zip://demo.db/users/schema/schema-0::file://{root}/wh.zip")


def test_symlinked_table_folder_is_refused(tree):
    root, _ = tree
    wh = indexcore.open_warehouse(str(root), allowed_roots=[str(root)])
    assert wh.tables() == ["demo.orders"]
    with pytest.raises(StorageError, match=REFUSED):
        wh.table("demo.users").plan()
    # without explicit roots the warehouse itself is the root: the same link is refused
    assert indexcore.open_warehouse(str(root)).tables() == ["demo.orders"]


def test_no_existence_oracle(tree):
    """A refusal reads the same for a target that exists, one that does not, and a broken archive."""
    root, outside = tree
    (root / "dangling").symlink_to(outside / "nothing-here")
    messages = {
        _refused(f"zip://x::file://{outside}/wh.zip", [str(root)]),
        _refused(f"zip://x::file://{outside}/not-a-zip.zip", [str(root)]),
        _refused(f"zip://x::file://{outside}/missing.zip", [str(root)]),
        _refused(f"file://{root}/escape", [str(root)]),
        _refused(f"file://{root}/dangling", [str(root)]),
        _refused(str(outside), [str(root)]),
        _refused(str(outside / "missing"), [str(root)]),
    }
    assert messages == {f"{REFUSED} (file: <url>)"} or len(messages) == 1, messages
    storage = Storage(str(root), allowed_roots=[str(root)])
    texts = set()
    for path in (f"{outside}/demo.db/users/schema/schema-0", f"{outside}/missing", "dangling/x", "escape/x"):
        with pytest.raises(StorageError) as info:
            storage.read_bytes(path)
        texts.add(info.value.message)
    assert texts == {REFUSED}


def test_protocols_not_allowed_are_refused(tree, monkeypatch):
    root, _ = tree
    _refused("memory://wh", [str(root)])
    assert Roots(["s3://bucket/wh"]).protocols == {"s3"}
    assert canonical_protocol("s3a") == canonical_protocol("s3")
    monkeypatch.setenv("INDEXCORE_ALLOWED_PROTOCOLS", "memory")
    _refused(str(root), [str(root)])  # the operator allowed memory only


def test_the_app_uses_the_same_check(tree, monkeypatch):
    """The app's sidebar opens warehouses through the same storage check."""
    from streamlit.testing.v1 import AppTest

    root, _ = tree
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(root))
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", f"file://{root}/escape")
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=60)
    at.run()
    assert any(REFUSED in e.value for e in at.sidebar.error), [e.value for e in at.sidebar.error]


def test_a_resolved_directory_still_refuses_a_symlinked_file_and_dot_dot(tree):
    """Resolving a directory once (the fast path for walks over many files) keeps every check:
    a symlinked file beside a readable one, ``..`` out of it, and a path through it all hold."""
    root, outside = tree
    folder = root / "demo.db" / "orders" / "schema"
    (folder / "leak").symlink_to(outside / "demo.db" / "users" / "schema" / "schema-0")
    storage = Storage(str(root), allowed_roots=[str(root)])
    first = storage.resolve(str(folder / "schema-0"))
    assert first == str(folder / "schema-0")
    assert storage.resolve(f"file://{folder}/schema-0") == first
    assert storage.open(str(folder / "schema-0")).read_all().startswith(b"{")
    assert storage.resolve(f"{folder}/..") == str(folder.parent)
    for escape in (str(folder / "leak"), f"{folder}/../../../escape/demo.db",
                   f"{folder}/../../../../outside/wh.zip"):
        with pytest.raises(StorageError, match=REFUSED):
            storage.resolve(escape)
    assert storage.resolve(str(folder / "schema-0")) == first


def test_a_symlinked_directory_under_a_resolved_one_is_still_resolved(tree):
    """Directories resolve through their kept parent (one lstat per new directory): a symlinked
    directory below a resolved one, or one level deeper, still leads outside and is refused,
    while its real siblings stay readable."""
    root, outside = tree
    table = root / "demo.db" / "orders"
    storage = Storage(str(root), allowed_roots=[str(root)])
    assert storage.resolve(str(table / "schema" / "schema-0")) == str(table / "schema" / "schema-0")
    (table / "bucket-9").symlink_to(outside / "demo.db" / "users")
    (table / "dt=1").mkdir()
    (table / "dt=1" / "bucket-0").symlink_to(outside / "demo.db" / "users" / "schema")
    for escape in (table / "bucket-9" / "schema" / "schema-0", table / "dt=1" / "bucket-0" / "schema-0"):
        with pytest.raises(StorageError, match=REFUSED):
            storage.resolve(str(escape))
    (table / "dt=1" / "bucket-1").mkdir()
    (table / "dt=1" / "bucket-1" / "f").write_bytes(b"x")
    assert storage.resolve(str(table / "dt=1" / "bucket-1" / "f")) == str(table / "dt=1" / "bucket-1" / "f")


def test_read_prefix_opens_no_symlinked_file_out_of_the_roots(tree):
    """``read_prefix`` (one open per head in a census) opens files of a resolved directory without
    following a symlink: a symlinked file out of the roots is refused, one within them is read,
    and a missing file is our StorageError naming it."""
    root, outside = tree
    folder = root / "demo.db" / "orders" / "schema"
    (folder / "leak").symlink_to(outside / "demo.db" / "users" / "schema" / "schema-0")
    (folder / "alias").symlink_to(folder / "schema-0")
    storage = Storage(str(root), allowed_roots=[str(root)])
    data, size, name = storage.read_prefix(str(folder / "schema-0"), 4)  # resolves the directory
    assert data == b"{" + (folder / "schema-0").read_bytes()[1:4] and size == (folder / "schema-0").stat().st_size
    assert name == str(folder / "schema-0")
    with pytest.raises(StorageError, match=REFUSED):
        storage.read_prefix(str(folder / "leak"), 4)
    assert storage.read_prefix(str(folder / "alias"), 4)[0] == data
    with pytest.raises(StorageError, match="file not found") as caught:
        storage.read_prefix(str(folder / "schema-9"), 4)
    assert "schema-9" in str(caught.value)


def test_read_prefixes_keeps_each_files_error_to_itself(tree):
    """A batch of heads (a census) reads every readable file; a missing or refused one is its own
    error naming it, in its place, and costs the others nothing."""
    root, outside = tree
    folder = root / "demo.db" / "orders" / "schema"
    (folder / "leak").symlink_to(outside / "demo.db" / "users" / "schema" / "schema-0")
    storage = Storage(str(root), allowed_roots=[str(root)])
    good = str(folder / "schema-0")
    before = storage.stats.snapshot()
    got = storage.read_prefixes([good, str(folder / "gone"), str(folder / "leak"), good], 8)
    assert got[0] == got[3] == ((folder / "schema-0").read_bytes()[:8], (folder / "schema-0").stat().st_size, good)
    assert isinstance(got[1], StorageError) and "gone" in str(got[1]) and "file not found" in str(got[1])
    assert isinstance(got[2], StorageError) and REFUSED in str(got[2])
    assert storage.stats.snapshot() == (before[0] + 16, before[1] + 2)  # two reads of 8 bytes


def test_read_prefixes_with_a_kept_memo_still_refuses_a_symlink_out(tree):
    """A caller's memo of resolved directories, kept across calls (explain reads one ``.index``
    file at a time), spares the per-file checks but not the refusal of a file symlinked out of the
    roots; ``served=False`` counts the bytes as read only (readers count what they use)."""
    root, outside = tree
    folder = root / "demo.db" / "orders" / "schema"
    (folder / "leak").symlink_to(outside / "demo.db" / "users" / "schema" / "schema-0")
    storage = Storage(str(root), allowed_roots=[str(root)])
    good = str(folder / "schema-0")
    memo: dict = {}
    served = storage.stats.bytes_served
    for _ in range(2):
        (got,) = storage.read_prefixes([good], 1 << 16, served=False, folders=memo)
        assert got == ((folder / "schema-0").read_bytes(), (folder / "schema-0").stat().st_size, good)
        (leak,) = storage.read_prefixes([str(folder / "leak")], 8, served=False, folders=memo)
        assert isinstance(leak, StorageError) and REFUSED in str(leak)
    assert memo == {str(folder): str(folder)}
    assert storage.stats.bytes_served == served


def test_a_bytes_window_reads_and_counts_as_a_slice_does():
    """:class:`BytesSource` windows (a whole ``.index`` file's blobs) read the same bytes and count
    the same read and served bytes as the generic slice, with the same error past the end."""
    from indexcore.errors import CorruptFileError
    from indexcore.io import ByteSource, BytesSource, ReadStats

    data = bytes(range(256)) * 4
    fast, slow = ReadStats(), ReadStats()
    window = BytesSource(data, "f", fast).slice(100, 300, name="f#c.bitmap")
    generic = ByteSource.slice(BytesSource(data, "f", slow), 100, 300, name="f#c.bitmap")
    for offset, length in ((0, 10), (290, 10), (5, 0), (0, 300)):
        assert window.read(offset, length) == generic.read(offset, length) == data[100 + offset:100 + offset + length]
    inner, inner_generic = window.slice(10, 20), generic.slice(10, 20)
    assert inner.read(0, 20) == inner_generic.read(0, 20) == data[110:130]
    assert (fast.bytes_read, fast.bytes_served, fast.requests) == (slow.bytes_read, slow.bytes_served, slow.requests)
    for source in (window, generic):
        with pytest.raises(CorruptFileError, match="needs 10 bytes but the file has 5 left") as caught:
            source.read(295, 10, "bitmap")
        assert caught.value.file == "f#c.bitmap" and caught.value.structure == "bitmap"


def test_read_raw_reads_small_files_whole_and_refuses_a_symlink_out(tree, monkeypatch):
    """A small local Parquet data file is read whole through a directory resolved once (no
    ``lstat`` per file), with the same table pyarrow reads from the path; a data file symlinked
    out of the roots beside it is still refused, one symlinked within them is read."""
    import os

    import pyarrow.parquet as pq

    from indexcore.warehouse import data_file as data_mod

    root, outside = tree
    bucket = root / "demo.db" / "orders" / "bucket-0"
    files = sorted(bucket.glob("*.parquet"))
    foreign = sorted((outside / "demo.db" / "users").rglob("*.parquet"))[0]
    (bucket / "leak.parquet").symlink_to(foreign)
    (bucket / "alias.parquet").symlink_to(files[0])
    storage = Storage(str(root), allowed_roots=[str(root)])
    first = data_mod.read_raw(storage, str(files[0]))  # resolves the bucket directory
    assert first.equals(pq.read_table(files[0]))
    lstats = []
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: lstats.append(p) or real_lstat(p, *a, **k))
    before = storage.stats.snapshot()[0]
    for f in files[1:]:
        assert data_mod.read_raw(storage, str(f)).equals(pq.read_table(f))
    assert lstats == []  # the directory's files are opened without following a symlink
    assert storage.stats.snapshot()[0] - before == sum(f.stat().st_size for f in files[1:])
    with pytest.raises(StorageError, match=REFUSED):
        data_mod.read_raw(storage, str(bucket / "leak.parquet"))
    assert data_mod.read_raw(storage, str(bucket / "alias.parquet")).equals(first)
    with pytest.raises(StorageError, match="data file not found"):
        data_mod.read_raw(storage, str(bucket / "gone.parquet"))
    monkeypatch.setattr(data_mod, "WHOLE_READ_BYTES", 0)  # larger files: Arrow reads the path
    assert data_mod.read_raw(storage, str(files[0])).equals(first)
    with pytest.raises(StorageError, match=REFUSED):
        data_mod.read_raw(storage, str(bucket / "leak.parquet"))


def test_read_prefixes_reads_a_small_file_in_one_pread(tree, monkeypatch):
    """A file shorter than the window asked for (a small ``.index`` file read whole) is read in one
    ``pread`` (its short read is its end and its size); a longer one in one ``pread`` and an
    ``fstat`` for its size. The bytes and sizes are the files' own."""
    import os

    root, _ = tree
    folder = root / "demo.db" / "orders" / "schema"
    small = folder / "schema-0"
    (folder / "empty").write_bytes(b"")
    storage = Storage(str(root), allowed_roots=[str(root)])
    storage.read_prefixes([str(small)], 4)  # resolves the directory
    calls = []
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: calls.append((n, at)) or real(fd, n, at))
    whole = 1 << 16
    got = storage.read_prefixes([str(small), str(folder / "empty"), str(small)], whole)
    assert got[0] == got[2] == (small.read_bytes(), small.stat().st_size, str(small))
    assert got[1] == (b"", 0, str(folder / "empty"))
    assert calls == [(whole, 0)] * 3
    calls.clear()
    assert storage.read_prefixes([str(small)], 8)[0] == (small.read_bytes()[:8], small.stat().st_size, str(small))
    assert calls == [(8, 0)]
