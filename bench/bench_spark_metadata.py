"""The census of index heads and explain in one process against the same work on Spark.

``python bench/bench_spark_metadata.py [--warehouse DIR] [--table large.events] [--where SQL]
[--master local[2]] [--rounds 2] [--quick]``: on a large sample (``python -m indexcore sample build DIR
--scale large --files N``; default ``/tmp/indexcore-bench/large-10000``), each round runs, on a
freshly opened table each time, the in-process census (plan + ``$file_indexes``) and explain,
then the same on Spark (:mod:`indexcore.spark.jobs.metadata`: manifests read by tasks; explain
also as Arrow rows and its funnel, :func:`spark_explain_columns`, with no Explanation built), after one
warm-up job so the JVM's start is not counted. It prints wall and CPU seconds per run (CPU: this
process, plus on Spark the JVM and its Python workers, read from ``/proc`` for every process
below this one but the S3 server; a worker that exits during a job is not counted) and checks the
results equal.
``--quick``: a 300-file sample built in a temporary directory, one round on ``local[1]``: it
runs and checks equality, it measures nothing.

``--s3 [--delay 0.02] [--store lean|moto]``: the census on Spark from an object store that adds
``--delay`` to every request: the warehouse's files, data files left out (a census never reads
them), are served on 127.0.0.1 by ``bench/lean_s3.py`` (the default: a read-only asyncio stand-in,
about 0.1 ms of CPU per request) or put in a moto S3 server (``--store moto``, ``bench/slow_s3.py``:
about 1.1 ms per request, more than the bound leaves on 2 cores) and the census runs on the ``s3://`` URL with
the storage layer's per-task concurrency (``INDEXCORE_CONCURRENCY``). It prints the measured wall
time against (files x delay) / (tasks x concurrency) (issue 29's bound: within 2x), the same with
the requests the census made instead of files, the same census at no delay on the same server (this
machine's CPU floor: the client's and the store's work per request), the store's CPU per request, the requests
by method (GET, HEAD; the server keeps connections alive, as S3 does), and with
``--in-process`` the one-process census on the same store. The result is checked equal to the
local one-process census (paths aside). ``--quick`` runs both modes on the 300-file sample (the S3
one at 2 ms; ``--quick --s3`` only that one).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexcore import open_warehouse  # noqa: E402
from indexcore.cache import release_unused  # noqa: E402
from indexcore.config import settings  # noqa: E402
from indexcore.scan.explainer import explain  # noqa: E402
from indexcore.spark.jobs.metadata import (  # noqa: E402
    live_file_estimate,
    spark_census,
    spark_explain,
    spark_explain_columns,
)
from indexcore.spark.session import get_session  # noqa: E402
from indexcore.views.census import file_indexes  # noqa: E402
from indexcore.views.census_rows import plain  # noqa: E402
from indexcore.write.bulk_sample import build_large_bulk  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _descendant_cpu(skip: int | None = None) -> float:
    """CPU seconds (user + system) of every live process below this one (``skip``: a child whose
    own tree is not counted, the S3 server: its CPU is the store's, not the client's)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK
    me, total = os.getpid(), 0.0
    for pid in cpu:
        p = parent.get(pid)
        while p and p != me and p != skip:
            p = parent.get(p)
        if p == me and pid != skip:
            total += cpu[pid]
    return total


def _timed(fn, skip: int | None = None):
    wall, cpu, below = time.perf_counter(), time.process_time(), _descendant_cpu(skip)
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu + _descendant_cpu(skip) - below


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warehouse", default="/tmp/indexcore-bench/large-10000")
    ap.add_argument("--table", default="large.events")
    ap.add_argument("--where", default="country = 'NZ'")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a 300-file sample, one round: runs, measures nothing")
    ap.add_argument("--s3", action="store_true", help="the census on Spark from an S3 stand-in (--store) with --delay")
    ap.add_argument("--delay", type=float, default=0.02, help="seconds added to every S3 request (default 0.02)")
    ap.add_argument("--in-process", action="store_true", help="with --s3: also the one-process census on the store")
    ap.add_argument("--store", choices=sorted(STORES), default="lean",
                    help="with --s3: the S3 stand-in, bench/lean_s3.py (default) or moto (bench/slow_s3.py)")
    ap.add_argument("--driver-memory", default=None, metavar="SIZE",
                    help="spark.driver.memory of the local session (local masters run tasks in the driver's JVM)")
    ap.add_argument("--aggregates", action="store_true",
                    help="one round, pieces run one at a time, explain compared on funnel, problems and each "
                         "file's path and stage (for 1,000,000 files)")
    args = ap.parse_args()
    if args.quick:  # both modes on one small sample (the suite runs this)
        with tempfile.TemporaryDirectory() as tmp:
            build_large_bulk(tmp, seed=1, files=300, workers=1)
            args.warehouse, args.master, args.rounds, args.delay = tmp, "local[1]", 1, 0.002
            if not args.s3:
                run(args)
            run_s3(args)
        return
    (run_s3 if args.s3 else run_aggregates if args.aggregates else run)(args)


STORES = {"lean": "lean_s3.py", "moto": "slow_s3.py"}  # --store: the S3 stand-in's script in bench/


class SlowS3:
    """``bench/lean_s3.py`` (``kind`` "lean") or ``bench/slow_s3.py`` (moto) serving ``root`` (data
    files left out) in a child process."""

    def __init__(self, root: str, delay: float, kind: str = "lean"):
        self.kind = kind
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / STORES[kind]), root, "--delay", str(delay),
                                      "--skip-suffix", ".parquet", "--skip-suffix", ".orc"],
                                     stdout=subprocess.PIPE, text=True)
        self.info = json.loads(self.proc.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{self.info['port']}"
        self.options = {"endpoint_url": self.endpoint, "key": "testing", "secret": "testing"}

    def stats(self, delay: float | None = None) -> dict:
        path = "/__bench_stats" if delay is None else f"/__bench_delay/{delay}"
        with urllib.request.urlopen(self.endpoint + path) as r:
            return json.loads(r.read())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _without_paths(census: pa.Table) -> pa.Table:
    """The census with its path columns dropped (the store's URL differs from the local root's)."""
    return plain(census).drop_columns([c for c in ("file_path", "index_file_path")
                                       if c in census.column_names]).combine_chunks()


def run_s3(args: argparse.Namespace) -> None:
    root, name = args.warehouse, args.table
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        os.environ.setdefault(k, v)
    files = len(open_warehouse(root).table(name).plan().files)
    want = _without_paths(file_indexes(open_warehouse(root).table(name)))
    started = time.perf_counter()
    store = SlowS3(root, 0.0, args.store)
    loaded = time.perf_counter() - started
    try:
        url, opts = "s3://lake", store.options
        spark = get_session(args.master)
        tasks = spark.sparkContext.defaultParallelism
        concurrency = settings().concurrency
        # warm-up (JVM, Python workers, no delay) on the warehouse's smallest table: a census of the
        # measured one would cost as much as a run
        local = open_warehouse(root)
        small = min(local.tables(), key=lambda t: live_file_estimate(local.table(t)))
        spark_census(url, small, spark=spark, storage_options=opts)
        print(f"{name}: {files:,} live files; {store.info['objects']:,} objects ({store.info['bytes'] / 2**20:.0f} MiB) "
              f"served by {store.kind} ({STORES[store.kind]}, up in {loaded:.1f} s); Spark {args.master} ({tasks} tasks at once), storage concurrency "
              f"{concurrency} per task, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")

        runs = iter(range(1, 1000))

        def census(delay: float):
            # a distinct (harmless) option per run: the tasks' Python workers keep the tables they
            # opened, heads cached, by URL and options; each run must start cold
            cold = {**opts, "default_block_size": 5 * 2**20 + next(runs)}
            before = store.stats(delay)
            out, wall, cpu = _timed(lambda: spark_census(url, name, spark=spark, storage_options=cold), store.proc.pid)
            after = store.stats()
            methods = {k: v - before["methods"].get(k, 0) for k, v in sorted(after["methods"].items())}
            return (out, wall, cpu, after["requests"] - before["requests"], after["cpu_seconds"] - before["cpu_seconds"],
                    methods)

        slow, wall, cpu, requests, moto_cpu, methods = census(args.delay)
        floor, wall0, cpu0, requests0, moto_cpu0, _ = census(0.0)
        same = _without_paths(slow.table).equals(want) and _without_paths(floor.table).equals(want)
        bound = files * args.delay / (tasks * concurrency)
        by_requests = requests * args.delay / (tasks * concurrency)
        print(f"census on Spark at {args.delay * 1000:g} ms per request: {wall:.1f} s wall ({cpu:.1f} s CPU here and "
              f"in the workers), {requests:,} requests ({', '.join(f'{n:,} {m}' for m, n in methods.items())}), "
              f"{slow.tasks} tasks; equal to the local census: {same}")
        print(f"  (files x delay) / (tasks x concurrency) = {files:,} x {args.delay * 1000:g} ms / ({tasks} x "
              f"{concurrency}) = {bound:.2f} s: measured {wall / bound:.2f}x (goal <= 2x)")
        print(f"  (requests x delay) / (tasks x concurrency) = {by_requests:.2f} s: measured {wall / by_requests:.2f}x")
        print(f"  the same census at 0 ms on the same server (this machine's CPU floor): {wall0:.1f} s wall, "
              f"{cpu0:.1f} s CPU ({cpu0 / max(requests0, 1) * 1000:.2f} ms per request: the client's, with Spark's "
              f"own), {requests0:,} requests; the store's own CPU ({store.kind}) {moto_cpu0:.1f} s "
              f"({moto_cpu0 / max(requests0, 1) * 1000:.2f} ms per request; {moto_cpu:.1f} s at the delay, "
              f"{moto_cpu / max(requests, 1) * 1000:.2f} ms per request)")
        print(f"  floor with the delay overlapped: max(bound, CPU floor) = {max(bound, wall0):.1f} s: measured "
              f"{wall / max(bound, wall0):.2f}x of it")
        if args.in_process:
            store.stats(args.delay)
            before = store.stats()
            cold = {**opts, "default_block_size": 5 * 2**20 + next(runs)}
            # this process only: an idle Spark worker that exits meanwhile would take its CPU off the sum
            wall1, cpu1 = time.perf_counter(), time.process_time()
            local = file_indexes(open_warehouse(url, storage_options=cold).table(name))
            wall1, cpu1 = time.perf_counter() - wall1, time.process_time() - cpu1
            after = store.stats()
            n, store_cpu = after["requests"] - before["requests"], after["cpu_seconds"] - before["cpu_seconds"]
            bound1 = files * args.delay / concurrency
            print(f"census in one process on the same store at {args.delay * 1000:g} ms: {wall1:.1f} s wall, "
                  f"{cpu1:.1f} s CPU here ({cpu1 / max(n, 1) * 1000:.2f} ms per request), {n:,} requests, the store's "
                  f"CPU {store_cpu:.1f} s; (files x delay) / concurrency = {bound1:.2f} s: {wall1 / bound1:.2f}x; "
                  f"equal: {_without_paths(local).equals(want)}")
        if not same:
            raise SystemExit("the census on Spark from the store differs from the local one")
    finally:
        store.close()


def run(args: argparse.Namespace) -> None:
    root, name = args.warehouse, args.table
    spark = get_session(args.master)
    spark_census(root, name, spark=spark)  # warm-up: JVM, Python workers
    files = len(open_warehouse(root).table(name).plan().files)
    print(f"{name} at {root}: {files:,} live files; Spark {args.master}, {os.cpu_count()} cores")
    rows = []
    for r in range(args.rounds):
        local_census, w1, c1 = _timed(lambda: file_indexes(open_warehouse(root).table(name)))
        remote_census, w2, c2 = _timed(lambda: spark_census(root, name, spark=spark).table)
        local_ex, w3, c3 = _timed(lambda: explain(open_warehouse(root).table(name), args.where))
        remote_ex, w4, c4 = _timed(lambda: spark_explain(root, name, args.where, spark=spark))
        remote_cols, w5, c5 = _timed(lambda: spark_explain_columns(root, name, args.where, spark=spark))
        same_census = remote_census.equals(local_census)
        a, b = local_ex.to_json(), remote_ex.to_json()
        same_ex = all(a[k] == b[k] for k in ("files", "funnel", "problems")) and remote_cols.funnel == a["funnel"]
        rows.append((r, w1, c1, w2, c2, same_census, w3, c3, w4, c4, same_ex, w5, c5))
        print(f"round {r}: census in-process {w1:.2f} s wall / {c1:.2f} s CPU, Spark {w2:.2f} s / {c2:.2f} s "
              f"(equal: {same_census}); explain in-process {w3:.2f} s / {c3:.2f} s, Spark {w4:.2f} s / "
              f"{c4:.2f} s (equal: {same_ex}); explain on Spark as Arrow rows and funnel (no Explanation) "
              f"{w5:.2f} s / {c5:.2f} s")
        if not (same_census and same_ex):
            raise SystemExit(f"round {r}: Spark's results differ from the in-process ones "
                             f"(census equal: {same_census}, explain equal: {same_ex})")
    for label, wi, ci, ws, cs in (("census", 1, 2, 3, 4), ("explain", 6, 7, 8, 9), ("explain columns", 6, 7, 11, 12)):
        best = [min(row[i] for row in rows) for i in (wi, ci, ws, cs)]
        print(f"{label}: least of {len(rows)} rounds: in-process {best[0]:.2f} s wall / {best[1]:.2f} s CPU; "
              f"Spark {best[2]:.2f} s wall / {best[3]:.2f} s CPU")


def _release() -> None:
    """Drop what the last run left (its table's caches went with it) and hand memory back."""
    gc.collect()
    release_unused()


def run_aggregates(args: argparse.Namespace) -> None:
    """The census and explain on Spark against one process, each run once and dropped in turn."""
    root, name = args.warehouse, args.table
    spark = get_session(args.master, conf={"spark.driver.memory": args.driver_memory} if args.driver_memory else None)
    local = open_warehouse(root)
    small = min(local.tables(), key=lambda t: live_file_estimate(local.table(t)))
    spark_census(root, small, spark=spark)  # warm-up (JVM, Python workers) on the smallest table
    files = live_file_estimate(open_warehouse(root).table(name))
    print(f"{name} at {root}: {files:,} live files (manifest lists); Spark {args.master}, "
          f"{spark.sparkContext.defaultParallelism} tasks at once, {os.cpu_count()} cores", flush=True)
    load = {}

    def timed(label: str, fn):
        load[label] = os.getloadavg()[0]
        if "one process" in label:  # this process only: an idle Spark worker that exits meanwhile takes its CPU along
            wall, cpu = time.perf_counter(), time.process_time()
            out = fn()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        else:
            out, wall, cpu = _timed(fn)
        print(f"  {label}: {wall:.2f} s wall, {cpu:.2f} s CPU (load {load[label]:.1f} before)", flush=True)
        return out, wall, cpu

    remote, *spark_census_t = timed("census on Spark", lambda: spark_census(root, name, spark=spark))
    remote_rows, remote_tasks = remote.table, remote.tasks
    del remote
    _release()
    local_census, *local_census_t = timed("census in one process (plan + $file_indexes)",
                                          lambda: file_indexes(open_warehouse(root).table(name)))
    _release()
    # equal values (the dictionaries of the shared text columns differ: one process's are the plan's own)
    same_census = plain(remote_rows).equals(plain(local_census))
    census_rows = local_census.num_rows
    del remote_rows, local_census
    _release()
    cols, *spark_explain_t = timed(f"explain {args.where!r} on Spark (Arrow rows and funnel)",
                                   lambda: spark_explain_columns(root, name, args.where, spark=spark))
    remote_ex = (cols.funnel, [str(p) for p in cols.problems], cols.files.column("path").to_pylist(),
                 cols.files.column("skipped_by").to_pylist())
    del cols
    _release()
    ex, *local_explain_t = timed(f"explain {args.where!r} in one process",
                                 lambda: explain(open_warehouse(root).table(name), args.where))
    decided = ex.files
    if hasattr(decided, "skipped_by"):  # explain's columns: no decision object
        paths, stages = list(decided.objects("path")), decided.skipped_by().tolist()
    else:
        paths, stages = [f.path for f in decided], [getattr(f.skipped_by, "value", None) for f in decided]
    local_ex = (ex.funnel, [str(p) for p in ex.problems], paths, stages)
    del ex, decided
    _release()
    same_ex = [a == b for a, b in zip(remote_ex, local_ex, strict=True)]
    print(f"census: {census_rows:,} rows, {remote_tasks} tasks; Spark equal to one process: {same_census}")
    print(f"explain: {len(paths):,} files, funnel read {local_ex[0].get('read')}; Spark equal to one process: "
          f"funnel {same_ex[0]}, problems {same_ex[1]}, paths in order {same_ex[2]}, stages {same_ex[3]}")
    for label, sp, lo in (("census", spark_census_t, local_census_t), ("explain", spark_explain_t, local_explain_t)):
        print(f"{label}: Spark {sp[0]:.2f} s wall / {sp[1]:.2f} s CPU; one process {lo[0]:.2f} s wall / "
              f"{lo[1]:.2f} s CPU; Spark / one process wall {sp[0] / lo[0]:.2f}x")
    if not (same_census and all(same_ex)):
        raise SystemExit("Spark's results differ from the in-process ones")


if __name__ == "__main__":
    main()
