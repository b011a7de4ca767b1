"""Memory of a snapshot's metadata (issue 29, item 2): the census's repeated text columns share the
plan's buffers, sessions asking at once build one plan and one census, and embedded heads (bytes
the plan already holds) are not kept a second time."""

from __future__ import annotations

import os
import pickle
import platform
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from warehouse_tables import SAMPLE, every_table, warehouse_roots

import indexcore
from indexcore.cache import LRU
from indexcore.config import Settings
from indexcore.frames.views import view_frame
from indexcore.views import view
from indexcore.views.census_rows import FILE_INDEXES, SHARED_TEXT, plain
from indexcore.views.common import to_frame
from indexcore.warehouse.plan_columns import text_key

WAIT = 60  # seconds a test waits for threads to arrive before it fails


def _arrived(counter: list, lock: threading.Lock, n: int) -> threading.Event:
    """Set once ``n`` threads have counted themselves in ``counter``."""
    done = threading.Event()

    def count() -> None:
        with lock:
            counter[0] += 1
            if counter[0] >= n:
                done.set()
    return done, count


def test_concurrent_callers_of_one_key_build_it_once():
    """Eight threads ask for one missing key while its build is still running (it waits until
    all eight have asked): one build, one value for all; without single-flight each would build."""
    lru = LRU(10)
    counter, lock = [0], threading.Lock()
    everyone, arrive = _arrived(counter, lock, 8)
    builds, got = [], [None] * 8

    def build():
        assert everyone.wait(WAIT), "the other callers never arrived"
        builds.append(object())
        return builds[-1]

    def caller(i: int) -> None:
        arrive()
        got[i] = lru.get_or_build("snapshot", build)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert len(builds) == 1 and all(g is builds[0] for g in got)
    assert lru.get("snapshot") is builds[0] and not lru._building  # nothing left behind


def test_a_failed_build_is_built_again_by_the_next_caller():
    lru = LRU(10)

    def fail():
        raise ValueError("unreadable")

    with pytest.raises(ValueError):
        lru.get_or_build("k", fail)
    assert "k" not in lru and not lru._building
    assert lru.get_or_build("k", lambda: 7, weight=lambda v: 3) == 7 and lru.weight == 3


def test_sessions_opening_one_snapshot_at_once_share_one_plan_and_one_census(monkeypatch):
    """Six sessions (threads over one shared table, as the app's) ask for the census while the
    plan is still being built: one plan built, and every session holds the same census object."""
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    from indexcore.warehouse.table import Table

    table = indexcore.open_warehouse(str(SAMPLE)).table("demo.events")
    counter, lock = [0], threading.Lock()
    everyone, arrive = _arrived(counter, lock, 6)
    plans = []
    real = Table._plan_columns

    def slow_plan(self, snap):
        assert everyone.wait(WAIT), "the other sessions never arrived"
        plans.append(snap.id)
        return real(self, snap)

    monkeypatch.setattr(Table, "_plan_columns", slow_plan)
    got = [None] * 6

    def session(i: int) -> None:
        arrive()
        got[i] = view(table, "file_indexes")

    threads = [threading.Thread(target=session, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert len(plans) == 1
    assert got[0] is not None and all(g is got[0] for g in got)


def test_the_census_shares_the_plans_text_and_reads_as_plain_text(conformance):
    """On every conformance and sample table: the census's path and file-name columns are
    dictionaries over the plan's own columns (the same buffers, not a copy), each row's value is
    its file's (the plan's row it indexes), its own buffers are a fraction of the plain columns',
    and its frames (``to_pandas`` and :func:`to_frame`) read as the plain census's do."""
    checked = shared_bytes = plain_bytes = 0
    for root, table in every_table(warehouse_roots()):
        census = view(table, "file_indexes")
        assert census.schema == FILE_INDEXES, (str(root), table.name)
        if census.num_rows == 0:
            continue
        plan = table.plan_columns()
        flat = plain(census)
        paths = {lf.path: lf for lf in table.plan().files}
        for r in flat.select(["file_path", "file_name", "index_file_path", "storage_type"]).to_pylist():
            lf = paths[r["file_path"]]  # a row names a live file of the object plan
            assert r["file_name"] == lf.file.file_name
            assert r["index_file_path"] == (lf.index_path if r["storage_type"] == "FILE" else None)
        column = census["file_path"].chunks[0]
        if column.dictionary.buffers()[2].address == plan.files["path"].chunks[0].buffers()[2].address:
            checked += 1  # the plan's own path text
        for name in ("file_path", "file_name", "index_file_path", "partition"):
            assert census.schema.field(name).type == SHARED_TEXT
            shared_bytes += sum(c.indices.nbytes for c in census[name].chunks)
            plain_bytes += flat[name].nbytes
        pd.testing.assert_frame_equal(to_frame(census), flat.to_pandas())
        assert list(census.to_pandas()["file_path"].astype(object)) == flat["file_path"].to_pylist()
    assert checked > 10
    assert shared_bytes * 4 < plain_bytes, (shared_bytes, plain_bytes)


def test_to_frame_of_an_empty_census_and_of_a_view_without_dictionaries():
    empty = FILE_INDEXES.empty_table()
    pd.testing.assert_frame_equal(to_frame(empty), plain(empty).to_pandas())
    t = pa.table({"a": [1, None], "b": ["x", None]})
    pd.testing.assert_frame_equal(to_frame(t), t.to_pandas())


@pytest.mark.parametrize("native", [False, True])
def test_embedded_heads_are_cut_again_not_kept(conformance, native, monkeypatch):
    """A census on the Python path keeps the heads of ``.index`` files (read from storage), weighed
    by the memory they hold, and not the heads embedded in manifests (slices of bytes the plan
    holds). The census walk in C (:mod:`indexcore.formats.head_batch`) keeps no head: the census
    it builds is kept, and a few heads asked again are read again."""
    from indexcore.formats import head_batch
    from indexcore.views import census as census_module

    if native and not head_batch.NATIVE:
        pytest.skip("the _container_heads extension is not built")
    if not native:
        monkeypatch.setattr(census_module, "native_storage", lambda storage: False)
    embedded = kept = 0
    for _root, table in every_table(warehouse_roots()):
        table.caches.head_bytes.clear()
        census = plain(view(table, "file_indexes"))
        for path, storage, index_path in zip(census["file_path"].to_pylist(), census["storage_type"].to_pylist(),
                                             census["index_file_path"].to_pylist(), strict=True):
            hit = table.caches.head_bytes.peek((path, index_path if storage == "FILE" else None))
            if storage == "EMBEDDED":
                embedded += 1
                assert hit is None
            elif hit is not None and hit[0] is not None:
                kept += 1
        for key, ((head, _size, name, _error), weight) in table.caches.head_bytes._items.items():
            assert weight >= len(head or b"") + len(key[0]) + len(key[1] or "") + len(name)
    assert embedded > 0 and (kept == 0 if native else kept > 0)


def test_index_census_reads_the_census_as_the_whole_frame_did(conformance):
    """``index_census`` (on Arrow now) gives the kinds and the unusable rows, with their places in
    the census as the frame's index, that filtering the census's whole plain frame gives."""
    from indexcore.frames.table import index_census

    unusable = 0
    for _root, table in every_table(warehouse_roots()):
        frame = plain(view(table, "file_indexes")).to_pandas()
        kinds, bad = index_census(table)
        assert kinds == set(frame["index_type"].dropna())
        pd.testing.assert_frame_equal(bad, frame[frame["error"].notna()])
        unusable += len(bad)
    assert unusable > 0


_FREED_HEAP = """
import sys
from indexcore.cache import release_unused
def rss():
    with open('/proc/self/status') as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith('VmRSS:'))
start = rss()
held = [bytes(65536) for _ in range(1000)]  # 64 MiB in blocks under glibc's mmap threshold: the heap
pin = bytes(65536)  # above them: glibc's own trim (of the heap's top only) cannot give them back
del held
before = rss()
release_unused()
print(start, before, rss())
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists() or platform.libc_ver()[0] != "glibc",
                    reason="RSS from /proc and glibc's malloc_trim")
def test_release_unused_gives_freed_heap_back_to_the_os():
    """64 MiB freed below a live block stays resident (glibc trims only the heap's top) until
    release_unused, which a plan's and a kept view's build call: at 100,000 files that was
    0.7 KiB per live file after the plan and 0.4 after the census."""
    out = subprocess.run([sys.executable, "-c", _FREED_HEAP], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    start, before, after = map(int, out.stdout.split())
    assert before - start > 32 * 1024, "the freed blocks were given back without release_unused"
    assert before - after > 32 * 1024, f"release_unused gave back {(before - after) // 1024} MiB of 64"


def test_a_plan_and_a_kept_view_give_back_what_their_build_freed(monkeypatch):
    """The plan's build and each kept view's build end with release_unused (not every read)."""
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    from indexcore.views import common
    from indexcore.warehouse import table_plan_columns

    calls = []
    monkeypatch.setattr(table_plan_columns, "release_unused", lambda: calls.append("plan"))
    monkeypatch.setattr(common, "release_unused", lambda: calls.append("view"))
    table = indexcore.open_warehouse(str(SAMPLE)).table("demo.events")
    view(table, "files")
    assert calls == ["plan", "view"]
    view(table, "files")
    table.plan_columns()
    assert calls == ["plan", "view"]  # kept: nothing built, nothing released


def test_a_large_frame_gives_back_what_its_conversion_freed(monkeypatch):
    """to_frame and view_frame of a view of RELEASE_ROWS rows or more end with release_unused (the
    conversion's scratch, and an unkept view's own buffers); a small one makes no syscall."""
    from indexcore.frames import views as frame_views
    from indexcore.views import common

    calls = []
    monkeypatch.setattr(common, "release_unused", lambda: calls.append("to_frame"))
    monkeypatch.setattr(frame_views, "release_unused", lambda: calls.append("view_frame"))
    big = pa.table({"path": pa.array([f"p/{i}" for i in range(common.RELEASE_ROWS)]),
                    "name": pa.array(["a", "b"] * (common.RELEASE_ROWS // 2)).dictionary_encode()})
    frame = to_frame(big)
    assert calls == ["to_frame"] and frame["name"].tolist()[:2] == ["a", "b"]
    to_frame(big.slice(0, common.RELEASE_ROWS - 1))
    assert calls == ["to_frame"]
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    table = indexcore.open_warehouse(str(SAMPLE)).table("demo.events")
    monkeypatch.setattr(common, "RELEASE_ROWS", 1)
    monkeypatch.setattr(frame_views, "RELEASE_ROWS", 1)
    calls.clear()
    frame_views.view_frame(table, "files", stats=False)
    assert calls == ["to_frame", "view_frame"]


def test_sessions_opening_one_table_at_once_share_one_table(monkeypatch):
    """Eight sessions (threads over one warehouse) open a table while its schema check is still
    answering (it waits until all eight have asked): one Table for all, so one plan and one census;
    before, each thread that found it missing made its own, with its own caches."""
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    warehouse = indexcore.open_warehouse(str(SAMPLE))
    counter, lock = [0], threading.Lock()
    everyone, arrive = _arrived(counter, lock, 8)
    real = type(warehouse.storage).exists

    def slow_exists(self, path):
        assert everyone.wait(WAIT), "the other sessions never arrived"
        return real(self, path)

    monkeypatch.setattr(type(warehouse.storage), "exists", slow_exists)
    got = [None] * 8

    def session(i: int) -> None:
        arrive()
        got[i] = warehouse.table("demo.events")

    threads = [threading.Thread(target=session, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert got[0] is not None and all(g is got[0] for g in got)


def test_a_cached_frame_gives_back_what_its_computation_freed(monkeypatch):
    """The app's cached_frame (health, a column's statistics, ...) ends with release_unused: at
    100,000 files health's scratch otherwise stayed resident, about 0.9 KiB per live file."""
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    common = pytest.importorskip("pages.common")
    from indexcore.frames.registry import spec_of
    from indexcore.frames.table import size_skew

    calls = []
    monkeypatch.setattr(common, "release_unused", lambda: calls.append(1))
    common.cached_frame.clear()
    groups, _skew = common.cached_frame(spec_of(size_skew).key, str(SAMPLE), (), "demo.events", None,
                                        (("by", "bucket"),))
    assert calls == [1] and len(groups)


def test_the_end_of_a_page_run_gives_back_what_the_run_held(monkeypatch):
    """A run's unpickled frames (each session's own copies of cached frames) are let go of at the
    end of the run and their memory given back: 20 sessions at 100,000 files held about 34 MiB
    each beyond one session's."""
    common = pytest.importorskip("pages.common")
    calls = []
    monkeypatch.setattr(common, "release_unused", lambda: calls.append(1))
    run = type("Run", (), {"_run": {("frame", "x"): pd.DataFrame({"a": [1]})}})()
    common.Context.end_run(run)
    assert run._run == {} and calls == [1]


def test_files_and_census_frames_share_the_plans_strings(conformance):
    """On every conformance and sample table: the ``$files`` frame and the census frame hold the
    same Python string object for a file's path, name and ``.index`` path (the plan's, made once: not one copy per
    frame), and both read as the plain views' ``to_pandas`` do. It fails if either frame makes its
    own strings."""
    checked = indexes = 0
    for root, table in every_table(warehouse_roots()):
        census = view(table, "file_indexes")
        if census.num_rows == 0:
            continue
        files = view_frame(table, "files", stats=False)
        frame = view_frame(table, "file_indexes")
        pd.testing.assert_frame_equal(files, view(table, "files", stats=False).to_pandas())
        pd.testing.assert_frame_equal(frame, plain(census).to_pandas())
        row_of = {p: i for i, p in enumerate(files["file_path"])}
        for path, name, index in zip(frame["file_path"], frame["file_name"], frame["index_file_path"], strict=True):
            i = row_of[path]
            assert files["file_path"].iat[i] is path, (str(root), table.name, path)
            assert files["file_name"].iat[i] is name, (str(root), table.name, name)
            if index is not None:  # with embedded indexes too: the census's dictionary of those used
                assert files["index_file"].iat[i] is index, (str(root), table.name, index)
                indexes += 1
            checked += 1
    assert checked > 100 and indexes > 100


def test_a_few_rows_of_a_large_dictionary_make_only_their_own_strings():
    """A frame of a few census rows (a sample, the unusable rows) does not make the strings of
    every path of the plan its dictionary is: ``texts`` is not asked."""
    values = pa.array([f"/w/t/bucket-0/f{i}.parquet" for i in range(1000)])
    few = pa.table({"file_path": pa.DictionaryArray.from_arrays(pa.array([3, None, 7], pa.int32()), values)})
    asked = []
    frame = to_frame(few, lambda arr: asked.append(arr) or arr.to_numpy(zero_copy_only=False))
    assert asked == [] and list(frame["file_path"]) == ["/w/t/bucket-0/f3.parquet", None, "/w/t/bucket-0/f7.parquet"]
    many = pa.table({"file_path": pa.DictionaryArray.from_arrays(pa.array(list(range(999, -1, -1)) + [None],
                                                                          pa.int32()), values)})
    kept = values.to_numpy(zero_copy_only=False)
    frame = to_frame(many, lambda arr: kept if arr is values or text_key(arr) == text_key(values) else None)
    assert frame["file_path"].iat[0] is kept[999] and frame["file_path"].iat[1000] is None


def test_a_plan_with_its_strings_made_pickles_without_them():
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    plan = indexcore.open_warehouse(str(SAMPLE)).table("demo.events").plan_columns()
    objects = plan.text_objects("path")
    assert plan.text_objects("path") is objects and not objects.flags.writeable
    again = pickle.loads(pickle.dumps(plan))
    assert again.files.equals(plan.files) and len(again.texts) == 0
    assert list(again.text_objects("path")) == list(objects)
    with pytest.raises(KeyError):
        plan.text_objects("_PARTITION")


def test_the_default_budget_keeps_a_million_file_census_beside_its_other_views():
    """A 1,000,000-file census of four indexed columns (4,000,000 rows) stays kept while the DV
    view, the ``$files`` view and the by-path map of the same files (1,000,000 each) are kept
    after it: with the old 2,000,000-row budget the DV view pushed it out and health walked every
    head again (130 s at 966,800 files)."""
    kept = LRU(Settings().derived_rows)
    kept.put(("view", "file_indexes", 1), "census", 4 * 1_000_000)
    for key in (("view", "deletion_vectors", 1), ("view", "files", 1), ("live files by path", 1)):
        kept.put(key, key, 1_000_000)
    assert ("view", "file_indexes", 1) in kept


def test_the_inventory_keeps_the_census_paths_a_dictionary():
    """The index inventory (health, advise) groups the census's rows without turning its
    ``file_path`` into plain text: at 1,000,000 files that copy raised health's peak by 1.1 GB.
    Each group's files stay rows of the census's dictionary, and map to the same live files."""
    from indexcore.analysis.advise import index_inventory

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    table = indexcore.open_warehouse(str(sample)).table("demo.events")
    census = view(table, "file_indexes")
    assert pa.types.is_dictionary(census["file_path"].type)
    groups, _problems = index_inventory(table)
    parts = [paths for g in groups for paths, _rows in g.blobs._parts]
    assert parts and all(pa.types.is_dictionary(p.type) for p in parts)
    for g in groups:
        for path in g.blobs:
            assert g.blobs[path].file.path == path
