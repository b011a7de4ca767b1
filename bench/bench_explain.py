"""Explain with the file-index stage against pypaimon 2.1's filtered plan, and the index stage
against its floor, at production size.

For each size (10,000 and 50,000 live data files by default) the large sample (``python -m
indexcore sample build DIR --scale large --files N``, cached as bench_app.py caches it in
``$TMPDIR/indexcore-bench/large-N``) is explained with ``country = 'NZ'`` on ``large.events``.
Each figure comes from a fresh process, imports done before its clock starts:

* ours: ``open_warehouse(...).table(...)`` then ``explain(table, WHERE)`` (planning, partition,
  bucket, level, stats, deletion vectors and the file-index stage); the index stage alone is
  the time spent in ``FileIndexStage.decide``;
* pypaimon: pypaimon 2.1 in ``.venv-pypaimon`` (its own pyarrow and pandas): catalog, table,
  read builder with the same filter, ``plan().splits()``. It has no file-index stage, so this is
  what planning with the filter costs there;
* floor of the index stage: for exactly the files ours consulted (the ours run lists them), read
  each ``.index`` file whole (one ``open``/``read``; embedded indexes come from the manifest, read
  untimed), walk its container head with ``struct`` to the column's bitmap blob and look for the
  literal's bytes in it: reading and testing the index bytes, nothing else.

Peak memory is each process's ``ru_maxrss`` once its answer is made (imports included on both
sides; ours before it lists the consulted files for the floor). Explain and pypaimon are compared
on wall time and on CPU time (``process_time``: what a shared, loaded machine distorts least).
Runs are interleaved (ours, floor, pypaimon) ``--repeat`` times; each ratio is the median of the per-run
ratios, printed with its spread (least .. most). Goals (issue 30): explain within 1.0x pypaimon,
the index stage within 3x its floor, peak memory within 1.2x pypaimon's.

``--quick`` writes a small table (a few hundred files, bitmap on ``country``) with indexcore's
writer into a temp dir and runs one round: it proves the bench runs, it measures nothing.

``--cold`` drops the table's ``.index`` files from the page cache (``posix_fadvise``) before ours
and before the floor, so both read them from the disk (by default the floor runs right after ours,
on what ours left in the page cache). The index stage is also compared on CPU time.

    python bench/bench_explain.py [--sizes 10000,50000] [--cache DIR] [--repeat 3] [--cold] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PYPAIMON = ROOT / ".venv-pypaimon" / "bin" / "python"
TABLE = "large.events"
COLUMN, LITERAL = "country", "NZ"
WHERE = f"{COLUMN} = '{LITERAL}'"
CONTAINER_MAGIC = 1493475289347502
GOALS = {"explain / pypaimon": 1.0, "explain / pypaimon, CPU": 1.0, "index stage / floor": 3.0,
         "index stage / floor, CPU": 3.0, "peak memory / pypaimon": 1.2}


def _env() -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("INDEXCORE_ALLOWED_ROOTS", None)
    return env


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------ children (fresh processes)

def child_ours(warehouse: str, listing: str) -> dict:
    from indexcore import open_warehouse
    from indexcore.scan.explainer import explain
    from indexcore.scan.file_index import FileIndexStage

    spent = [0.0, 0.0]
    decide = FileIndexStage.decide

    def timed(self, batch):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return decide(self, batch)
        finally:
            spent[0] += time.perf_counter() - t0
            spent[1] += time.process_time() - c0

    FileIndexStage.decide = timed
    t0, c0 = time.perf_counter(), time.process_time()
    ex = explain(open_warehouse(warehouse).table(TABLE), WHERE)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _peak_mib()  # explain's, before the listing below (its JSON text is the bench's, not explain's)
    consulted = [f.path for f in ex.files if f.raw_index_result is not None and f.index_location]
    Path(listing).write_text(json.dumps(consulted))
    return {"seconds": seconds, "cpu": cpu, "index_stage": spent[0], "index_stage_cpu": spent[1],
            "files": len(ex.files), "consulted": len(consulted),
            "kept": ex.funnel["read"]["files"], "peak_mib": peak}


def _blob(data: bytes, column: str) -> bytes:
    """The column's bitmap blob of a container, by one walk of its head (``struct`` only)."""
    magic, _version, _length, columns = struct.unpack_from(">qiii", data)
    if magic != CONTAINER_MAGIC:
        raise ValueError("not a file index container")
    pos = 20
    for _ in range(columns):
        (n,) = struct.unpack_from(">H", data, pos)
        name = data[pos + 2:pos + 2 + n]
        pos += 2 + n
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(count):
            (k,) = struct.unpack_from(">H", data, pos)
            kind = data[pos + 2:pos + 2 + k]
            start, size = struct.unpack_from(">ii", data, pos + 2 + k)
            pos += 10 + k
            if name == column.encode() and kind == b"bitmap" and start >= 0:
                return data[start:start + size]
    return b""


def child_floor(warehouse: str, listing: str) -> dict:
    from indexcore import open_warehouse

    wanted = set(json.loads(Path(listing).read_text()))
    files = [lf for lf in open_warehouse(warehouse).table(TABLE).plan().files if lf.path in wanted]
    sources = [(lf.file.embedded_index, None) if lf.file.embedded_index is not None else (None, lf.index_path)
               for lf in files]
    needle = LITERAL.encode()
    t0, c0 = time.perf_counter(), time.process_time()
    found = 0
    for embedded, path in sources:
        if embedded is None:
            with open(path, "rb") as fh:
                embedded = fh.read()
        found += _blob(embedded, COLUMN).find(needle) >= 0
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": seconds, "cpu": cpu, "files": len(sources), "found": found}


def evict(warehouse: Path) -> int:
    """Drop the table's ``.index`` files from the page cache (``posix_fadvise``), so the run that
    follows reads them from the disk, as a first explain after a while does (``--cold``)."""
    n = 0
    for path in (warehouse / TABLE.replace(".", ".db/", 1)).rglob("*.index"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            n += 1
        finally:
            os.close(fd)
    return n


PYPAIMON_CODE = """
import json, resource, sys, time
from pypaimon import CatalogFactory
warehouse, table, column, literal = sys.argv[1:5]
t0, c0 = time.perf_counter(), time.process_time()
t = CatalogFactory.create({"warehouse": warehouse}).get_table(table)
rb = t.new_read_builder()
rb = rb.with_filter(rb.new_predicate_builder().equal(column, literal))
splits = rb.new_scan().plan().splits()
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"seconds": seconds, "cpu": cpu, "files": sum(len(s.files) for s in splits),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _run(cmd: list[str], timeout: float) -> dict:
    out = subprocess.run(cmd, env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if out.returncode:
        return {"error": (out.stderr.strip() or out.stdout.strip())[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_ours(warehouse: Path, listing: Path, timeout: float) -> dict:
    return _run([sys.executable, __file__, "--child", "ours", str(warehouse), str(listing)], timeout)


def run_floor(warehouse: Path, listing: Path, timeout: float) -> dict:
    return _run([sys.executable, __file__, "--child", "floor", str(warehouse), str(listing)], timeout)


def run_pypaimon(warehouse: Path, timeout: float) -> dict:
    if not PYPAIMON.exists():
        return {"error": ".venv-pypaimon not found (scripts/install.sh test makes it)"}
    return _run([str(PYPAIMON), "-c", PYPAIMON_CODE, str(warehouse), TABLE, COLUMN, LITERAL], timeout)


# ------------------------------------------------------------------ warehouses

def large(cache: Path, files: int) -> Path:
    """The large sample of ``files`` files, built once into ``cache`` (bench_app.py's cache)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_app import build  # the one home of the cached large sample

    return build(cache, files)[0]


def small(root: Path, commits: int = 12, buckets: int = 16) -> Path:
    """A small ``large.events``-shaped table (bitmap on ``country``) written by indexcore's writer."""
    import numpy as np
    import pyarrow as pa

    from indexcore.write import TableWriter, make_schema

    schema = make_schema([("id", "BIGINT"), ("country", "STRING"), ("amount", "INT")],
                         options={"bucket": str(buckets), "bucket-key": "id", "file.format": "parquet",
                                  "file-index.bitmap.columns": COLUMN})
    writer = TableWriter.create(str(root), TABLE, schema)
    rng = np.random.default_rng(7)
    countries = np.array(["NZ", "AU", "US", "DE", "FR", "JP", "BR", "IN"])
    for commit in range(commits):
        n = 2_000
        writer.write(pa.table({"id": np.arange(commit * n, (commit + 1) * n, dtype=np.int64),
                               "country": countries[rng.integers(0, len(countries), n)],
                               "amount": rng.integers(0, 1000, n).astype(np.int32)}))
    return root


# ------------------------------------------------------------------ report

def _ratio(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Median, least and most of the per-run ratios ``a / b``."""
    ratios = [a / b for a, b in pairs if b > 0]
    if not ratios:
        return float("nan"), float("nan"), float("nan")
    return statistics.median(ratios), min(ratios), max(ratios)


def measure(warehouse: Path, repeat: int, timeout: float, cold: bool = False) -> dict:
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "consulted.json"
        for _ in range(max(repeat, 1)):
            if cold:
                evict(warehouse)
            ours = run_ours(warehouse, listing, timeout)
            if cold:
                evict(warehouse)
            floor = run_floor(warehouse, listing, timeout) if "error" not in ours else {"error": "no ours run"}
            rounds.append((ours, floor, run_pypaimon(warehouse, timeout)))
    return {"rounds": rounds}


def report(label: str, result: dict) -> dict:
    rounds = result["rounds"]
    errors = [f"{kind}: {r['error']}" for rnd in rounds for kind, r in zip(("ours", "floor", "pypaimon"), rnd,
                                                                             strict=True) if "error" in r]
    ok = [rnd for rnd in rounds if all("error" not in r for r in rnd[:2])]
    print(f"\n== {label}")
    for e in dict.fromkeys(errors):
        print(f"  problem: {e}")
    if not ok:
        return {}
    ours = [r[0] for r in ok]
    print(f"  files {ours[-1]['files']:,}; index stage consulted {ours[-1]['consulted']:,}; "
          f"read after the index {ours[-1]['kept']:,}")
    print("  ours explain s     " + " ".join(f"{r['seconds']:7.2f}" for r in ours))
    print("  ours index stage s " + " ".join(f"{r['index_stage']:7.2f}" for r in ours))
    print("  floor s            " + " ".join(f"{r[1]['seconds']:7.2f}" for r in ok))
    print("  index stage CPU s  " + " ".join(f"{r.get('index_stage_cpu', float('nan')):7.2f}" for r in ours))
    print("  floor CPU s        " + " ".join(f"{r[1].get('cpu', float('nan')):7.2f}" for r in ok))
    paired = [rnd for rnd in ok if "error" not in rnd[2]]
    if paired:
        print("  pypaimon plan s    " + " ".join(f"{r[2]['seconds']:7.2f}" for r in paired))
        print("  ours CPU s         " + " ".join(f"{r[0]['cpu']:7.2f}" for r in paired))
        print("  pypaimon CPU s     " + " ".join(f"{r[2]['cpu']:7.2f}" for r in paired))
        print("  peak MiB ours      " + " ".join(f"{r[0]['peak_mib']:7.0f}" for r in paired))
        print("  peak MiB pypaimon  " + " ".join(f"{r[2]['peak_mib']:7.0f}" for r in paired))
    figures = {"index stage / floor": _ratio([(r[0]["index_stage"], r[1]["seconds"]) for r in ok]),
               "index stage / floor, CPU": _ratio([(r[0]["index_stage_cpu"], r[1]["cpu"]) for r in ok])}
    if paired:
        figures["explain / pypaimon"] = _ratio([(r[0]["seconds"], r[2]["seconds"]) for r in paired])
        figures["explain / pypaimon, CPU"] = _ratio([(r[0]["cpu"], r[2]["cpu"]) for r in paired])
        figures["peak memory / pypaimon"] = _ratio([(r[0]["peak_mib"], r[2]["peak_mib"]) for r in paired])
    for name, (median, least, most) in figures.items():
        goal = GOALS[name]
        print(f"  {name:24} {median:6.2f}x median of {len(ok if 'floor' in name else paired)} "
              f"(spread {least:.2f} .. {most:.2f}); goal <= {goal:g}x: {'MET' if median <= goal else 'NOT MET'}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,50000", help="comma-separated file counts of the large sample")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "indexcore-bench"))
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (fresh processes each)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a child process may take")
    parser.add_argument("--quick", action="store_true", help="one round on a small written table (runs, measures nothing)")
    parser.add_argument("--cold", action="store_true",
                        help="drop the table's .index files from the page cache before ours and before the floor")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, warehouse, listing = args.child
        print(json.dumps((child_ours if kind == "ours" else child_floor)(warehouse, listing)))
        return
    print(f"explain {TABLE} WHERE {WHERE}")
    if args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            warehouse = small(Path(tmp))
            figures = report("quick: a small written table (not a measurement)",
                             measure(warehouse, 1, args.timeout))
        if not figures:
            raise SystemExit("the quick run failed")
        return
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    for n in [int(s) for s in args.sizes.split(",") if s]:
        report(f"{n:,} files{' (.index files cold)' if args.cold else ''}",
               measure(large(cache, n), args.repeat, args.timeout, args.cold))


if __name__ == "__main__":
    main()
