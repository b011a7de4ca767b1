"""The census of index heads and explain in one process against the same work on Spark.

``python bench/bench_spark_metadata.py [--warehouse DIR] [--table large.events] [--where SQL]
[--master local[2]] [--rounds 2] [--quick]``: on a large sample (``python -m indexcore sample build DIR
--scale large --files N``; default ``/tmp/indexcore-bench/large-10000``), each round runs, on a
freshly opened table each time, the in-process census (plan + ``$file_indexes``) and explain,
then the same on Spark (:mod:`indexcore.spark.jobs.metadata`: manifests read by tasks; explain
also as Arrow rows and its funnel, :func:`spark_explain_columns`, with no Explanation built), after one
warm-up job so the JVM's start is not counted. It prints wall and CPU seconds per run (CPU: this
process, plus on Spark the JVM and its Python workers, read from ``/proc`` for every process
below this one; a worker that exits during a job is not counted) and checks the results equal.
``--quick``: a 300-file sample built in a temporary directory, one round on ``local[1]``: it
runs and checks equality, it measures nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexcore import open_warehouse  # noqa: E402
from indexcore.scan.explainer import explain  # noqa: E402
from indexcore.spark.jobs.metadata import spark_census, spark_explain, spark_explain_columns  # noqa: E402
from indexcore.spark.session import get_session  # noqa: E402
from indexcore.views.census import file_indexes  # noqa: E402
from indexcore.write.bulk_sample import build_large_bulk  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _descendant_cpu() -> float:
    """CPU seconds (user + system) of every live process below this one."""
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
        while p and p != me:
            p = parent.get(p)
        if p == me:
            total += cpu[pid]
    return total


def _timed(fn):
    wall, cpu, below = time.perf_counter(), time.process_time(), _descendant_cpu()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu + _descendant_cpu() - below


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warehouse", default="/tmp/indexcore-bench/large-10000")
    ap.add_argument("--table", default="large.events")
    ap.add_argument("--where", default="country = 'NZ'")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a 300-file sample, one round: runs, measures nothing")
    args = ap.parse_args()
    if args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            build_large_bulk(tmp, seed=1, files=300, workers=1)
            args.warehouse, args.master, args.rounds = tmp, "local[1]", 1
            run(args)
        return
    run(args)


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


if __name__ == "__main__":
    main()
