"""Explain and a page's frames on a storage that adds 20 ms to every request (an object store).

Builds a primary-key table with indexcore's writer into a temp dir: 100 buckets, ten commits,
1,000 live data files with file indexes (bitmap on ``status``, bloom filter on ``customer``;
small ones embedded in the manifest, the others in ``.index`` files) and deletion vectors.
It is read through ``slow://``, an fsspec filesystem over the local files that sleeps 20 ms per
request (list, info, read) and counts them. Three runs of the same work, each on a fresh
warehouse:

* ``ours``: the storage layer as shipped (read-ahead, cache, concurrent prefetch, 32 at once);
* ``sequential``: read-ahead, cache and prefetch off, one request at a time (the reader before
  issue 11: every head, block, bitmap and DV read one after the other);
* ``local``: the same work on the local path, no delay (the CPU part of the work).

The floor is ``ours`` run with no delay (the same code path: cache, read-ahead, prefetch; the
least of two) plus (distinct objects that must be touched x 20 ms / concurrency); ``local`` (the
plain local path, no cache) is printed for reference only.
Prints requests, bytes and wall time, ``ours`` against the floor (goal <= 2x) and against
``sequential`` (goal >= 10x faster). Asserts nothing.

Run: ``python bench/bench_object_store.py [--delay 0.02] [--quick]`` (``--quick``: 30 files, 2 ms;
it runs, it measures nothing)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from fsspec import register_implementation
from fsspec.implementations.local import LocalFileSystem
from fsspec.spec import AbstractFileSystem

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from indexcore import open_warehouse  # noqa: E402
from indexcore.config import settings  # noqa: E402
from indexcore.scan.explainer import explain  # noqa: E402
from indexcore.views import view  # noqa: E402
from indexcore.write import TableWriter, make_schema  # noqa: E402

TABLE = "bench.orders"
WHERE = "customer = 'c7' AND status = 'b'"


class SlowFileSystem(AbstractFileSystem):
    """Local files behind ``slow://``, each request delayed (threads overlap their delays)."""

    protocol = ("slow",)
    root_marker = "/"
    delay = 0.02
    requests = 0
    _lock = threading.Lock()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.local = LocalFileSystem()

    @classmethod
    def _strip_protocol(cls, path):
        path = path[len("slow://"):] if path.startswith("slow://") else path
        return "/" + path.lstrip("/") if path else "/"

    def _tick(self):
        with SlowFileSystem._lock:
            SlowFileSystem.requests += 1
        time.sleep(self.delay)

    def ls(self, path, detail=True, **kwargs):
        self._tick()
        return self.local.ls(self._strip_protocol(path), detail=detail)

    def info(self, path, **kwargs):
        self._tick()
        return self.local.info(self._strip_protocol(path))

    def cat_file(self, path, start=None, end=None, **kwargs):
        self._tick()
        return self.local.cat_file(self._strip_protocol(path), start=start, end=end)

    def _open(self, path, mode="rb", **kwargs):
        self._tick()
        return self.local._open(self._strip_protocol(path), mode)


def build(root: str, buckets: int = 100, commits: int = 10) -> None:
    schema = make_schema(
        [("id", "BIGINT"), ("status", "STRING"), ("customer", "STRING"), ("total", "INT")],
        primary_keys=["id"],
        options={"bucket": str(buckets), "deletion-vectors.enabled": "true", "file.format": "parquet",
                 "file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "customer",
                 "file-index.bloom-filter.customer.items": "200", "file-index.in-manifest-threshold": "400B"})
    writer = TableWriter.create(root, TABLE, schema)
    rng = np.random.default_rng(1)
    for commit in range(commits):
        n = 20_000 if commit == 0 else 3_000
        ids = np.arange(n) if commit == 0 else rng.choice(20_000, n, replace=False)
        writer.write(pa.table({
            "id": ids.astype(np.int64),
            "status": np.array(["a", "b", "c", "d"])[rng.integers(0, 4, n)],
            "customer": [f"c{x % (50 + commit * 40)}" for x in ids],
            "total": rng.integers(0, 1000, n).astype(np.int32)}))


def work(url: str) -> dict:
    """Plan, explain and the bitmap page's frame on a fresh warehouse; wall time and I/O."""
    SlowFileSystem.requests = 0
    start = time.perf_counter()
    table = open_warehouse(url).table(TABLE)
    ex = explain(table, WHERE)
    t_explain = time.perf_counter() - start
    frame = view(table, "bitmap_indexes").to_pandas()  # the Bitmap page's per-index frame (pandas)
    wall = time.perf_counter() - start
    return {"explain_s": t_explain, "frame_s": wall - t_explain, "wall_s": wall,
            "requests": table.storage.stats.requests, "fs_requests": SlowFileSystem.requests,
            "bytes": table.storage.stats.bytes_read, "files": len(ex.files), "frame_rows": len(frame),
            "funnel": ex.funnel}


def pruned(result: dict) -> dict:
    """The funnel's files, rows and bytes per stage, without the index reads it took."""
    return {stage: {k: v for k, v in counts.items() if not k.startswith("index_")}
            for stage, counts in result["funnel"].items()}


def objects_touched(root: str) -> int:
    """Distinct objects the work must read: metadata, manifests, .index files, DV files."""
    table = open_warehouse(root).table(TABLE)
    plan = table.plan()
    snap = plan.snapshot
    meta = 2 + 2 + len([n for n in (snap.base_manifest_list, snap.delta_manifest_list, snap.index_manifest) if n])
    index_files = {lf.index_path for lf in plan.files if lf.index_path}
    dv_files = {lf.dv_file_path for lf in plan.files if lf.dv_file_path}
    return meta + len(plan.manifests) + len(index_files) + len(dv_files)


SEQUENTIAL = {"INDEXCORE_READAHEAD": "0", "INDEXCORE_CACHE_BYTES": "0", "INDEXCORE_CONCURRENCY": "1"}
SAVED = {k: os.environ.get(k) for k in SEQUENTIAL}


def sequential_settings(on: bool) -> None:
    """No read-ahead, no cache, one fetch at a time for the warehouses opened next (or back)."""
    for key, value in SEQUENTIAL.items():
        if on:
            os.environ[key] = value
        elif SAVED[key] is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = SAVED[key]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.02)
    ap.add_argument("--quick", action="store_true", help="10 buckets, 3 commits, 2 ms: runs, measures nothing")
    args = ap.parse_args()
    if args.quick:
        args.delay = 0.002
    SlowFileSystem.delay = args.delay
    register_implementation("slow", SlowFileSystem, clobber=True)
    root = tempfile.mkdtemp(prefix="indexcore-bench-os-")
    try:
        t = time.perf_counter()
        build(root, *((10, 3) if args.quick else (100, 10)))
        table = open_warehouse(root).table(TABLE)
        files = table.plan().files
        print(f"built {len(files)} files in {time.perf_counter() - t:.1f}s: "
              f"{sum(lf.file.embedded_index is not None for lf in files)} embedded indexes, "
              f"{sum(lf.index_path is not None for lf in files)} .index files, "
              f"{sum(lf.deletion_vector is not None for lf in files)} with a DV "
              f"in {len({lf.dv_file_path for lf in files if lf.dv_file_path})} DV files")
        work(root)  # warm imports
        local = work(root)
        # the floor's CPU part on the same code path as ours (cache, read-ahead, prefetch), no delay
        SlowFileSystem.delay = 0.0
        work(f"slow://{root}")
        cpu = min((work(f"slow://{root}") for _ in range(2)), key=lambda r: r["wall_s"])
        SlowFileSystem.delay = args.delay
        ours = work(f"slow://{root}")
        sequential_settings(True)
        seq = work(f"slow://{root}")
        sequential_settings(False)
        # the same files and rows at every stage (index bytes and requests differ with read-ahead)
        assert pruned(ours) == pruned(seq) == pruned(local) == pruned(cpu)
        objects = objects_touched(root)
        floor = cpu["wall_s"] + objects * args.delay / max(settings().concurrency, 1)
        print(f"objects that must be touched: {objects}; floor = ours without delay {cpu['wall_s']:.2f}s + "
              f"{objects} x {args.delay * 1000:.0f} ms / {max(settings().concurrency, 1)} = {floor:.2f}s")
        print(f"{'run':<11} {'requests':>9} {'bytes':>11} {'explain s':>10} {'frame s':>8} {'wall s':>8}")
        for name, r in (("local", local), ("no delay", cpu), ("ours", ours), ("sequential", seq)):
            print(f"{name:<11} {r['fs_requests'] if name != 'local' else r['requests']:>9} {r['bytes']:>11,} "
                  f"{r['explain_s']:>10.2f} {r['frame_s']:>8.2f} {r['wall_s']:>8.2f}")
        print(f"ours / floor = {ours['wall_s'] / floor:.2f}x (goal <= 2)")
        print(f"sequential / ours = {seq['wall_s'] / ours['wall_s']:.1f}x faster (goal >= 10)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
