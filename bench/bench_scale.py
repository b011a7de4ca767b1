"""Scale work against the plan it stands on: DV trend (incremental vs re-planning every
snapshot), CLI ``files``, the what-if predicate suggestion and the table overview.

Writes, with our own writer into a temp dir (or reuses ``--warehouse DIR`` holding ``db.events``
and ``db.orders`` as written here), an append table with bitmap, bloom, range-bitmap and BSI
indexes over many partitions and a primary-key table with deletion vectors over many
snapshots, then prints each job's time as a ratio to planning the same snapshot and its peak
traced memory. ``python bench/bench_scale.py [--files 2000] [--warehouse DIR] [--quick]``
(``--quick``: 120 files and 5 order commits; it runs, it measures nothing).

``--sessions DIR[,DIR...]`` measures instead one session's memory on large samples (``python -m
indexcore sample build DIR --scale large --files N``), per warehouse in a fresh process: what the
app holds for the Table page of ``large.events`` (:func:`session`: the kept columnar plan and
census, the frames ``cached_view`` shares between sessions, the DV frame, health and one column's
statistics as ``cache_data`` keeps them); it prints the live files, the resident memory those add
(RSS after minus RSS after the imports) per live file, the peak RSS (VmHWM) and the time, the
growth from one size to the next, and a table of each component's KiB per live file with its
slope between the two largest sizes and 1,000,000 files extrapolated on that slope (said so).
``--concurrent 20`` also runs 20 such sessions at once in one process (threads sharing one
warehouse and the shared frames, as the app's sessions do; each holds shallow copies until all
are done) and prints what each further session adds.

``--server DIR [--concurrent 20]`` starts the app itself (``scripts/app_server.py``) on a large
sample and prints the server's RSS and peak idle, after one headless Chromium tab
(/usr/bin/chromium, playwright) opened the heavy pages (table, bitmap, bloom, range) in turn, then
with 20 tabs open at once (real sessions, pages cycled), with the exceptions the pages showed, the
one-minute load average at the end of each phase, and the RSS and peak after each page of the one
session (the page in which the peak rose is where it was reached).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_app  # noqa: E402  (its server, pages and Chromium; it puts scripts/ on the path)
from bench_app import app_server  # noqa: E402

import indexcore  # noqa: E402
from indexcore.cache import LRU, release_unused  # noqa: E402
from indexcore.cli import main as cli  # noqa: E402
from indexcore.config import settings  # noqa: E402
from indexcore.frames import deletion_vectors as deletion_vectors_frames  # noqa: E402
from indexcore.frames import health as health_frames  # noqa: E402
from indexcore.frames import suggestion as suggestion_frames  # noqa: E402
from indexcore.frames import table as table_frames  # noqa: E402
from indexcore.frames.views import shared_frame, view_frame  # noqa: E402
from indexcore.views import view  # noqa: E402
from indexcore.write import TableWriter, make_schema  # noqa: E402

PARTITIONS = 120


def write_events(root: str, files: int, seed: int = 1) -> None:
    schema = make_schema(
        [("id", "BIGINT"), ("user_id", "BIGINT"), ("country", "STRING"), ("amount", "INT"), ("dt", "STRING")],
        partition_keys=["dt"],
        options={"bucket": "-1", "file-index.bloom-filter.columns": "user_id",
                 "file-index.bloom-filter.user_id.items": "100", "file-index.bitmap.columns": "country",
                 "file-index.range-bitmap.columns": "amount", "file-index.bsi.columns": "id",
                 "file-index.in-manifest-threshold": "600b"})
    writer = TableWriter.create(root, "db.events", schema, seed=seed, overwrite=True)
    rng = random.Random(seed)
    next_id = 0
    for _ in range(max(1, files // PARTITIONS)):
        ids = list(range(next_id, next_id + PARTITIONS * 20))
        next_id += len(ids)
        writer.write(pa.table({
            "id": pa.array(ids, pa.int64()),
            "user_id": pa.array([rng.randrange(100_000) for _ in ids], pa.int64()),
            "country": [("US", "DE", "FR", "JP", "NZ", "BR", "IN", "CN")[rng.randrange(8)] for _ in ids],
            "amount": pa.array([None if i % 13 == 0 else rng.randrange(10_000) for i in ids], pa.int32()),
            "dt": [f"p{i % PARTITIONS:03d}" for i in ids]}))


def write_orders(root: str, batches: int, seed: int = 2) -> None:
    schema = make_schema([("k", "BIGINT"), ("v", "STRING"), ("dt", "STRING")], primary_keys=["dt", "k"],
                         partition_keys=["dt"], options={"bucket": "4", "deletion-vectors.enabled": "true"})
    writer = TableWriter.create(root, "db.orders", schema, seed=seed, overwrite=True)
    rng = random.Random(seed)
    for b in range(batches):
        keys = list(dict.fromkeys((rng.randrange(2000), f"d{rng.randrange(30):02d}") for _ in range(400)))
        writer.write(pa.table({"k": pa.array([k for k, _ in keys], pa.int64()), "v": [f"{b}" for _ in keys],
                               "dt": [d for _, d in keys]}))


def dv_trend_from_scratch(table, max_snapshots: int = 50) -> None:
    for sid in table.snapshot_ids()[-max_snapshots:]:
        view(table, "deletion_vectors", sid).to_pandas()


def measure(what: str, fn) -> tuple[float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, peak


def _reset_peak() -> bool:
    """Start VmHWM again from the current RSS (Linux ``clear_refs`` 5), so a step's own peak can be
    read; False where the kernel does not allow it (the peaks are then the process's so far)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _status_kib(field: str, pid: int | str = "self") -> int:
    """A ``/proc/PID/status`` figure (VmRSS, VmHWM) in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


# what one session of the app holds, in the order measured: the table's kept plan and census
# (Arrow, one per server), then the frames the app's cache_resource shares between sessions
# (pages.common.cached_view: the Table page's $files listing without statistics, the census)
# and the Table page's other per-file results: its deletion-vector frame (cached_view), health and
# one column's statistics of every file (cache_data: kept pickled, as Streamlit keeps them)
COMPONENTS = ("plan", "census", "files_frame", "census_frame", "dv_frame", "health", "stats")
LABELS = {"plan": "plan (Arrow)", "census": "census (Arrow, heads capped)",
          "files_frame": "$files frame (shared)", "census_frame": "census frame (shared)",
          "dv_frame": "DV frame (shared)", "health": "health (cache_data)",
          "stats": "stats, 1 column (cache_data)"}


def cache_data(fn, table, **kwargs) -> bytes:
    """``fn(table, **kwargs)`` as the app's ``cached_frame`` keeps it: computed, the freed memory
    given back (``release_unused``), pickled (Streamlit's cache_data keeps the bytes)."""
    frame = fn(table, **kwargs)
    release_unused()
    return pickle.dumps(frame)


def session(root: str, table_name: str = "large.events", concurrent: int = 1) -> dict:
    """``concurrent`` sessions' work on a large sample, in this (fresh) process, at the same time
    (threads, one shared warehouse, as the app's sessions share it).

    What the app holds: the table keeps one plan and one census (``$file_indexes``) per snapshot;
    the frames a page reads (the ``$files`` listing without statistics, as the Table page asks,
    and the census) are built once and shared read-only (``shared_frame``, as ``cached_view``'s
    cache_resource shares them); each session takes shallow copies (``Context.view``) and holds
    them until all are done. With one session the resident memory each of those adds is measured
    in turn (:data:`COMPONENTS`); the head cache, capped by ``INDEXCORE_HEAD_CACHE_BYTES``, is in
    the census's and said apart."""
    base = _status_kib("VmRSS")
    peaks: dict[str, int] = {}  # alone: each component's peak RSS while it was built (VmHWM reset before it)
    top = _status_kib("VmHWM")
    t0 = time.perf_counter()
    warehouse = indexcore.open_warehouse(root)
    shared = LRU(16)  # the app's cache_resource: one value per key, built once for every session
    held: list = [None] * concurrent
    plan_s: list = [0.0] * concurrent
    done = threading.Barrier(concurrent)
    added: dict[str, int] = {}

    def step(name: str, value):
        nonlocal top
        if concurrent == 1:  # alone: what this component added to the process's resident memory, and its peak
            added[name] = _status_kib("VmRSS") - base - sum(added.values())
            peaks[name] = _status_kib("VmHWM")
            top = max(top, peaks[name])
            _reset_peak()
        return value

    def one(i: int) -> None:
        table = warehouse.table(table_name)
        if concurrent == 1:
            _reset_peak()
        plan = step("plan", table.plan_columns())
        plan_s[i] = time.perf_counter() - t0
        step("census", view(table, "file_indexes"))  # kept on the table: the census frame reads it
        # the frames as pages.common.cached_view makes them (the listing's Arrow view is not kept)
        files = step("files_frame", shared.get_or_build(
            "files", lambda: shared_frame(view_frame(table, "files", stats=False))))
        indexes = step("census_frame", shared.get_or_build(
            "census", lambda: shared_frame(view_frame(table, "file_indexes"))))
        dvs = step("dv_frame", shared.get_or_build(
            "dvs", lambda: shared_frame(view_frame(table, "deletion_vectors"))))
        step("health", shared.get_or_build("health", lambda: cache_data(health_frames.table_health, table)))
        column = table.schema().field_names[1]
        cap = settings().column_stats_files  # the Table page's statistics tab decodes the first `cap` files
        step("stats", shared.get_or_build("stats", lambda: cache_data(
            table_frames.file_stats_frame, table, columns=(column,), limit=cap if plan.num_files > cap else None)))
        held[i] = (plan, files.copy(deep=False), indexes.copy(deep=False), dvs.copy(deep=False))  # shallow
        done.wait()  # every session holds its frames at once

    threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrent)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    rss = _status_kib("VmRSS")
    table = warehouse.table(table_name)
    plan = table.plan_columns()
    assert all(len(h[1]) == plan.num_files for h in held)
    census_kept = ("view", "file_indexes", plan.snapshot.id) in table.caches.derived  # else a step built it again
    return {"warehouse": root, "sessions": concurrent, "live_files": plan.num_files,
            "plan_s": round(min(plan_s), 2), "session_s": round(seconds, 2), "base_mib": round(base / 1024, 1),
            "rss_mib": round(rss / 1024, 1), "peak_mib": round(max(top, _status_kib("VmHWM")) / 1024, 1),
            "peaks_mib": {k: round(v / 1024) for k, v in peaks.items()}, "census_kept": census_kept,
            "kib_per_file": round((rss - base) / max(1, plan.num_files), 2),
            "components_kib": {k: v for k, v in added.items()},
            "head_cache_kib": round(table.caches.head_bytes.weight / 1024)}


def _growth(results: list[dict], million: int = 1_000_000) -> None:
    """Per component: KiB per live file at each size, the slope between the two largest (KiB per
    added file), and 1,000,000 files extrapolated on that slope (said so)."""
    if len(results) < 2:
        return
    a, b = results[-2], results[-1]
    span = b["live_files"] - a["live_files"]
    head = f"{'component':30s}" + "".join(f"{r['live_files']:>10,} f" for r in results)
    print(f"\nper live file (KiB), one session; slope {a['live_files']:,} -> {b['live_files']:,};"
          f" {million:,} EXTRAPOLATED on that slope")
    print(head + f"{'slope':>10s}{'1M (extr.)':>14s}")
    total_1m = 0.0
    for name in COMPONENTS:
        ka, kb = a["components_kib"][name], b["components_kib"][name]
        slope = (kb - ka) / span
        at_1m = kb + slope * (million - b["live_files"])
        if name == "census":  # the head cache is capped: past the cap it adds nothing per file
            heads = b["head_cache_kib"]
            slope = (kb - heads - (ka - min(heads, a["head_cache_kib"]))) / span
            at_1m = kb + slope * (million - b["live_files"])
        total_1m += at_1m
        print(f"{LABELS[name]:30s}" + "".join(f"{r['components_kib'][name] / r['live_files']:12.2f}" for r in results)
              + f"{slope:10.2f}{at_1m / 2**20:10.2f} GiB")
    total = [sum(r["components_kib"].values()) for r in results]
    print(f"{'total':30s}" + "".join(f"{t / r['live_files']:12.2f}" for t, r in zip(total, results, strict=True))
          + f"{(total[-1] - total[-2]) / span:10.2f}{total_1m / 2**20:10.2f} GiB"
          f"  (+{b['base_mib'] / 1024:.2f} GiB interpreter and imports)")
    print(f"head cache: {b['head_cache_kib'] / 1024:.0f} MiB held at {b['live_files']:,} files (capped; in the census)")


def sessions(roots: list[str], concurrent: int = 1) -> None:
    """:func:`session` in a fresh process per warehouse (and per number of sessions: 1, then
    ``concurrent`` when more), then the growth table of each."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    counts = [1] if concurrent <= 1 else [1, concurrent]
    results: dict[int, list] = {n: [] for n in counts}
    for root in roots:
        for n in counts:
            out = subprocess.run([sys.executable, __file__, "--session", root, "--concurrent", str(n)], env=env,
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            results[n].append(r)
            print(f"{r['live_files']:>9,} live files, {n:>2} session{'s' if n > 1 else ' '}: plan {r['plan_s']:6.2f} s,"
                  f" all {r['session_s']:6.2f} s, +{r['rss_mib'] - r['base_mib']:7.1f} MiB"
                  f" ({r['kib_per_file']:.2f} KiB per live file), peak RSS {r['peak_mib']:7.1f} MiB", flush=True)
            if r["peaks_mib"]:
                print("   peak RSS while each was built (MiB): "
                      + ", ".join(f"{k} {v:,}" for k, v in r["peaks_mib"].items())
                      + f"; census kept to the end: {'yes' if r['census_kept'] else 'NO (built again)'}", flush=True)
                print("   held per live file (KiB): " + ", ".join(
                    f"{k} {v / r['live_files']:.2f}" for k, v in r["components_kib"].items()), flush=True)
    if concurrent > 1:  # what each session adds over the shared plan, census and frames: its own state
        for one, many in zip(results[1], results[concurrent], strict=True):
            each = ((many["rss_mib"] - many["base_mib"]) - (one["rss_mib"] - one["base_mib"])) / (concurrent - 1)
            print(f"{one['live_files']:>9,} live files: {concurrent} sessions +{many['rss_mib'] - many['base_mib']:.1f} MiB,"
                  f" each further session +{each:6.1f} MiB ({each * 1024 / max(1, one['live_files']):.3f} KiB per"
                  " live file; its shallow copies and threads)")
    for n in counts:
        for a, b in zip(results[n], results[n][1:], strict=False):
            files = b["live_files"] / a["live_files"]
            added = (b["rss_mib"] - b["base_mib"]) - (a["rss_mib"] - a["base_mib"])
            print(f"{n:>2} session{'s' if n > 1 else ' '}: {a['live_files']:,} -> {b['live_files']:,} files"
                  f" (x{files:.1f}): time x{b['session_s'] / a['session_s']:.1f},"
                  f" memory x{(b['rss_mib'] - b['base_mib']) / (a['rss_mib'] - a['base_mib']):.1f},"
                  f" slope {added * 1024 / (b['live_files'] - a['live_files']):.2f} KiB per added file")
    _growth(results[1])


HEAVY_PAGES = ("table", "bitmap", "bloom", "range")  # the pages that hold the plan, census and $files


def server(root: str, sessions_n: int, pages: tuple[str, ...] = HEAVY_PAGES, timeout_s: float = 1800) -> dict:
    """The app's server (``scripts/app_server.py``) on ``root``: its resident memory (VmRSS) and peak
    (VmHWM) idle, after one headless Chromium tab opened each of ``pages`` in turn, then with
    ``sessions_n`` tabs open at once (real sessions, pages cycled), and the exceptions shown."""
    from playwright.sync_api import sync_playwright  # optional: only this mode drives a browser

    def rss(proc) -> dict:
        return {"rss_mib": round(_status_kib("VmRSS", proc.pid) / 1024), "peak_mib": round(_status_kib("VmHWM", proc.pid) / 1024)}

    def opened(tab, name: str) -> None:
        tab.goto(f"{url}/{bench_app.URL_PATH.get(name, name)}?table={bench_app.PAGES[name]}", wait_until="commit")

    def errors(tab) -> int:
        return tab.locator('[data-testid="stException"]').count()

    out: dict = {"warehouse": root, "pages": list(pages)}
    env = {"INDEXCORE_WAREHOUSE": root}
    with app_server.served(env, timeout=120) as (url, proc), sync_playwright() as pw:
        out["idle"] = rss(proc)
        browser = pw.chromium.launch(executable_path=str(bench_app.CHROMIUM), headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            context = browser.new_context()
            context.set_default_timeout(timeout_s * 1000)
            tab = context.new_page()
            t0 = time.perf_counter()
            shown = 0
            after: dict = {}  # each page: RSS and peak once it was shown (the peak is the process's so far)
            for name in pages:
                opened(tab, name)
                bench_app.wait_done(tab, timeout_s)
                shown += errors(tab)
                after[name] = rss(proc)
            out["one_session"] = {**rss(proc), "s": round(time.perf_counter() - t0, 1), "exceptions": shown,
                                  "load": round(os.getloadavg()[0], 1), "pages": after}
            tab.close()
            tabs = [context.new_page() for _ in range(sessions_n)]
            t0 = time.perf_counter()
            for i, t in enumerate(tabs):
                opened(t, pages[i % len(pages)])
            for t in tabs:
                bench_app.wait_done(t, timeout_s)
            out[f"{sessions_n}_sessions"] = {**rss(proc), "s": round(time.perf_counter() - t0, 1),
                                              "exceptions": sum(errors(t) for t in tabs),
                                              "load": round(os.getloadavg()[0], 1)}
        finally:
            browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--warehouse", help="reuse tables written by an earlier run")
    parser.add_argument("--quick", action="store_true", help="a small warehouse: runs, measures nothing")
    parser.add_argument("--sessions", help="large samples DIR[,DIR...]: one session's memory on each")
    parser.add_argument("--concurrent", type=int, default=1,
                        help="with --sessions: also measure this many sessions at once (threads, one warehouse)")
    parser.add_argument("--table", default="large.events", help="with --session: the table measured")
    parser.add_argument("--session", help=argparse.SUPPRESS)  # one measurement, in a fresh process
    parser.add_argument("--server", help="a large sample DIR: the app server's RSS with 1 and --concurrent sessions")
    args = parser.parse_args()
    if args.server:
        r = server(args.server, max(args.concurrent, 1))
        print(json.dumps(r))
        for phase in ("idle", "one_session", f"{max(args.concurrent, 1)}_sessions"):
            if phase in r:
                print(f"server {phase:12s}: RSS {r[phase]['rss_mib']:6,} MiB, peak {r[phase]['peak_mib']:6,} MiB"
                      + (f", {r[phase]['s']} s, {r[phase]['exceptions']} exceptions shown, load {r[phase]['load']}"
                         if "s" in r[phase] else ""))
            if "pages" in r.get(phase, {}):  # where the one session's peak was reached: the page it rose in
                print("   after each page (RSS / peak MiB): " + ", ".join(
                    f"{name} {v['rss_mib']:,} / {v['peak_mib']:,}" for name, v in r[phase]["pages"].items()))
        return
    if args.session:
        print(json.dumps(session(args.session, args.table, concurrent=args.concurrent)))
        return
    if args.sessions:
        sessions(args.sessions.split(","), args.concurrent)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = args.warehouse or tmp
        if not args.warehouse:
            write_events(root, 120 if args.quick else args.files)
            write_orders(root, 5 if args.quick else 30)

        def fresh(name: str):
            return indexcore.open_warehouse(root).table(name)

        def files_cli() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                cli(["files", root, "db.events", "--format", "json"])

        jobs = [
            ("plan db.events (the floor)", lambda: fresh("db.events").plan()),
            ("CLI files --format json", files_cli),
            ("table_overview", lambda: table_frames.table_overview(fresh("db.events"))),
            ("suggest_predicate", lambda: suggestion_frames.suggest_predicate(fresh("db.events"))),
            ("plan db.orders (the floor)", lambda: fresh("db.orders").plan()),
            ("dv_trend, 50 snapshots (incremental)", lambda: deletion_vectors_frames.dv_trend(fresh("db.orders"))),
            ("dv_trend, 50 snapshots re-planned", lambda: dv_trend_from_scratch(fresh("db.orders"))),
        ]
        floor = 1.0
        files = len(fresh("db.events").plan().files)
        print(f"db.events: {files:,} live files; db.orders: {len(fresh('db.orders').snapshot_ids())} snapshots")
        for name, fn in jobs:
            seconds, peak = measure(name, fn)
            if name.startswith("plan"):
                floor = seconds
            print(f"{name:40s} {seconds:7.2f} s  {seconds / floor:6.2f}x plan  peak {peak / 2**20:7.1f} MiB")


if __name__ == "__main__":
    main()
