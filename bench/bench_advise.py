"""The advisor's cost against its floor: ``advise`` over workloads of 12, 100 and 1,000 queries
and a 10 MB query log on a 1,000-file table.

Writes an append table with our writer into a temp dir (100 partitions x 10 commits = 1,000
files of 60 rows; a bloom filter on ``id``, a bitmap on ``device``), then per workload times:

  floor: ``explain`` of every *distinct* condition of the workload (what advise cannot avoid);
  ours:  ``advise`` with its defaults (every query measured exactly: no query reaches more than
         ``EXACT_FILES`` files here), on a fresh Table object, in a child process whose peak
         resident memory is reported too.

Times are CPU seconds of the process (all threads), best of two (``--repeat``; one for the 10 MB log): the
machine is shared and wall time swings with the others' load; wall time is printed beside.
Goals (issue 27): at most 1.5x the floor for 12, 100 and 1,000 queries; the 10 MB log (about
170,000 lines drawn from 200 distinct conditions, as a log repeats its queries) within 2x its
floor and under 1 GB. ``--quick``: 12 and 100 queries only, on a 300-file table. ``--compare CHECKOUT``:
this checkout's advise and another's (e.g. ``main``) on the same table, their runs alternating
(``--rounds``), as on a shared machine only back-to-back runs compare. ``--golden DIR``: advise's
JSON without its ``*seconds`` on fixed workloads, to compare two checkouts byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexcore.analysis.advise import advise  # noqa: E402
from indexcore.analysis.workload import parse_workload, scans  # noqa: E402
from indexcore.scan import explain  # noqa: E402
from indexcore.warehouse import Warehouse  # noqa: E402
from indexcore.write import TableWriter, make_schema  # noqa: E402

ROWS = 60
LOG_BYTES = 10 * 1024 * 1024
LOG_DISTINCT = 200


def build(root: str, partitions: int, commits: int) -> None:
    schema = make_schema([("id", "STRING"), ("device", "STRING"), ("country", "STRING"), ("amount", "INT"),
                          ("p", "STRING")], partition_keys=["p"],
                         options={"bucket": "-1", "file.format": "parquet", "manifest.format": "avro",
                                  "file-index.bloom-filter.columns": "id",
                                  "file-index.bloom-filter.id.items": "100",
                                  "file-index.bitmap.columns": "device"})
    writer = TableWriter.create(root, "db.t", schema, seed=1)
    n = 0
    for c in range(commits):
        cols: dict[str, list] = {"id": [], "device": [], "country": [], "amount": [], "p": []}
        for p in range(partitions):
            for i in range(ROWS):
                cols["id"].append(f"id-{n:08d}")
                cols["device"].append(("ios", "android", "web")[i % 3])
                cols["country"].append(("AA", "ZZ", f"C{(p + c) % 20:02d}")[i % 3])
                cols["amount"].append(0 if i % 4 == 0 else 10_000 if i % 4 == 1 else c * 1000 + i)
                cols["p"].append(f"p{p:03d}")
                n += 1
        writer.write(pa.table({**cols, "amount": pa.array(cols["amount"], pa.int32())}))


def condition(rng: random.Random, i: int, partitions: int, commits: int) -> str:
    kind = i % 4
    if kind == 0:
        return f"id = 'id-{rng.randrange(partitions * commits * ROWS):08d}'"
    if kind == 1:
        return f"country = 'C{rng.randrange(20):02d}'"
    if kind == 2:
        lo = rng.randrange(commits) * 1000
        return f"amount BETWEEN {lo + 5} AND {lo + 20}"
    return f"p = 'p{rng.randrange(partitions):03d}' AND device = 'web'"


def workload(queries: int, partitions: int, commits: int) -> str:
    rng = random.Random(5)
    return "".join(f"SELECT * FROM db.t WHERE {condition(rng, i, partitions, commits)};\n" for i in range(queries))


def query_log(size: int, partitions: int, commits: int) -> str:
    """A log of ``count<TAB>query`` lines drawn from :data:`LOG_DISTINCT` conditions."""
    rng = random.Random(7)
    pool = [condition(rng, i, partitions, commits) for i in range(LOG_DISTINCT)]
    shapes = ("SELECT * FROM db.t WHERE {}", "SELECT count(*) FROM db.t WHERE {}",
              "SELECT id, amount FROM db.t t WHERE {}")
    lines, total = [], 0
    while total < size:
        line = f"{rng.randrange(1, 50)}\t{rng.choice(shapes).format(rng.choice(pool))}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


#: A workload of OR, IN, IS NULL and <> conditions (pairs of candidates, null and negated leaves).
OR_WORKLOAD = ("SELECT * FROM db.t WHERE country = 'C04' OR id = 'id-00000123';\n"
               "SELECT * FROM db.t WHERE country IN ('C01', 'C02') AND device <> 'web';\n"
               "SELECT * FROM db.t WHERE amount IS NULL OR device = 'ios';\n"
               "SELECT * FROM db.t WHERE amount <> 5 AND id IN ('id-00000007', 'id-00001234');\n"
               "SELECT * FROM db.t WHERE (amount < 30 OR country = 'C07') AND p = 'p003';\n"
               "SELECT * FROM db.t WHERE id IS NOT NULL AND country = 'AA';\n")


def golden(out_dir: str) -> None:
    """``advise(..., details=True)`` JSON without its ``*seconds`` figures, one file per workload (12
    and 100 queries, :data:`OR_WORKLOAD`) and sample (None, 0, 7), on the ``--quick`` table kept in
    ``out_dir/table`` (built by the first checkout run, read by the next: the JSON names its files),
    written to ``out_dir/<this checkout's directory name>``: run it from two checkouts, then
    ``diff -r`` the two folders (a change meant to be faster only changes nothing there)."""
    def plain(o):
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items() if "seconds" not in k}
        return [plain(v) for v in o] if isinstance(o, list) else o

    root, out = Path(out_dir) / "table", Path(out_dir) / ROOT.name
    if not root.exists():
        build(str(root), 30, 10)
    out.mkdir(parents=True, exist_ok=True)
    works = {"12": workload(12, 30, 10), "100": workload(100, 30, 10), "or": OR_WORKLOAD}
    for name, text in works.items():
        for sample in (None, 0, 7):
            advice = advise(Warehouse(str(root)).table("db.t"), text, sample=sample, details=True)
            body = json.dumps(plain(advice.to_json(details=True)), sort_keys=True, default=str)
            (out / f"{name}_sample_{sample}.json").write_text(body)
            print(f"{out}: {name} queries, sample {sample}: {len(body):,} bytes", flush=True)


def _timed(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``; CPU time (every thread of the process) is what the ratio
    uses: on a machine shared with other work, wall time swings with their load."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def _explain_each(table, wheres: list[str]) -> None:
    """The floor: each condition explained, its explanation dropped (as advise drops it)."""
    for where in wheres:
        explain(table, where)


def measure(root: str, text: str, repeat: int, phases: bool = False) -> dict:
    """floor and advise times of one workload (run in a child: its peak memory is the advisor's);
    each the best of ``repeat`` runs, the floor and advise alternating, each on a fresh Table.
    ``phases``: advise's CPU seconds per phase too (``advise(timings=...)``), medians of the runs."""
    table = Warehouse(root).table("db.t")
    found, _ = scans(parse_workload(text), "db.t", table.schema().row_type())
    distinct = sorted({s.where for s in found if s.where})
    floors, ours = [], []
    advice = None
    spent: list[dict[str, float]] = []
    for _ in range(repeat):
        table = Warehouse(root).table("db.t")
        table.plan()
        floors.append(_timed(lambda t=table: _explain_each(t, distinct)))
        table = Warehouse(root).table("db.t")
        table.plan()
        box: dict = {}
        timings: dict[str, float] | None = {} if phases else None
        ours.append(_timed(lambda t=table, b=box, d=timings: b.setdefault("a", advise(t, text, timings=d))))
        if timings is not None:
            spent.append(timings)
        advice = box["a"]
    floor_wall, floor_cpu = min(f[0] for f in floors), min(f[1] for f in floors)
    ours_wall, ours_cpu = min(o[0] for o in ours), min(o[1] for o in ours)
    paired = sorted(o[1] / f[1] for f, o in zip(floors, ours, strict=True) if f[1])
    return {"queries": len(found), "distinct": len(distinct), "bytes": len(text), "floor": floor_wall,
            "advise": ours_wall, "floor_cpu": floor_cpu, "advise_cpu": ours_cpu,
            "ratio": ours_cpu / floor_cpu if floor_cpu else float("inf"),
            "paired": (statistics.median(paired), paired[0], paired[-1]) if paired else None,
            "candidates": len(advice.candidates),
            "phases": {k: statistics.median(d.get(k, 0.0) for d in spent) for k in spent[0]} if spent else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _child(script: Path, root: str, workload: Path, repeat: int, phases: bool = False) -> dict:
    """:func:`measure` in a child process running ``script`` (this file, or another checkout's)."""
    env = {**os.environ, "PYTHONPATH": str(script.parent.parent)}  # that checkout's own code
    return json.loads(subprocess.run([sys.executable, str(script), "--child", root, str(workload), "--repeat",
                                      str(repeat), *(["--phases"] if phases else [])], check=True,
                                     capture_output=True, text=True, env=env).stdout)


def _compare(label: str, root: str, workload: Path, other: str, rounds: int, repeat: int) -> None:
    """This checkout's advise against ``other``'s on one workload, their children alternating."""
    runs: dict[str, list[dict]] = {"this": [], "other": []}
    scripts = {"other": Path(other).resolve() / "bench" / "bench_advise.py", "this": Path(__file__).resolve()}
    for _ in range(rounds):
        for name in ("other", "this"):
            runs[name].append(_child(scripts[name], root, workload, repeat))
    for name in ("other", "this"):
        ratios = [r["ratio"] for r in runs[name]]
        paired = [r["paired"][0] for r in runs[name] if r.get("paired")]
        cpu = ", ".join(f"{r['floor_cpu']:.2f}/{r['advise_cpu']:.2f}" for r in runs[name])
        print(f"{label:>14} {name:>5} ({scripts[name].parent.parent}): best of {repeat} per round "
              f"{', '.join(f'{x:.2f}x' for x in ratios)} (median {statistics.median(ratios):.2f}x; floor/advise "
              f"CPU s {cpu}; peak RSS {max(r['peak_rss_mb'] for r in runs[name]):.0f} MB)"
              + (f"; paired medians {', '.join(f'{x:.2f}x' for x in paired)} (median "
                 f"{statistics.median(paired):.2f}x; pairs from {min(r['paired'][1] for r in runs[name]):.2f}x "
                 f"to {max(r['paired'][2] for r in runs[name]):.2f}x)" if paired and repeat > 1 else ""), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="12 and 100 queries on a 300-file table")
    ap.add_argument("--case", choices=["12", "100", "1000", "log"], action="append",
                    help="run only these workloads (repeatable)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="runs of the floor and of advise per workload, alternating; the best of each "
                         "is kept (default 2; one for the 10 MB log)")
    ap.add_argument("--compare", metavar="CHECKOUT",
                    help="another checkout of indexcore (e.g. /work/main): its advise runs on the same table back "
                         "to back with this one's, alternating (--rounds times), so both see the same load")
    ap.add_argument("--rounds", type=int, default=3, help="alternations with --compare (default 3)")
    ap.add_argument("--phases", action="store_true",
                    help="print advise's CPU seconds per phase (medians of the runs) beside the floor")
    ap.add_argument("--golden", metavar="DIR", help="write advise's JSON (without *seconds) for the 12- and "
                    "100-query and OR workloads, samples None, 0 and 7, into DIR (compare two checkouts' files)")
    ap.add_argument("--child", nargs=2, metavar=("ROOT", "WORKLOAD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat < 1 or args.rounds < 1:
        ap.error("--repeat and --rounds must be at least 1")
    if args.compare and not (Path(args.compare) / "bench" / "bench_advise.py").is_file():
        ap.error(f"--compare: no bench/bench_advise.py in {args.compare}")
    if args.golden:
        golden(args.golden)
        return
    if args.child:
        text = Path(args.child[1]).read_text()
        print(json.dumps(measure(args.child[0], text, 1 if len(text) > 1_000_000 else args.repeat, args.phases)))
        return
    partitions, commits = (30, 10) if args.quick else (100, 10)
    cases = [("12 queries", 12), ("100 queries", 100)] + ([] if args.quick else [("1,000 queries", 1000),
                                                                                 ("10 MB log", None)])
    if args.case:
        cases = [c for c in cases if (str(c[1]) if c[1] else "log") in args.case]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        build(tmp, partitions, commits)
        print(f"built {partitions * commits} files of {ROWS} rows in {time.perf_counter() - t0:.1f}s")
        for label, n in cases:
            text = workload(n, partitions, commits) if n else query_log(LOG_BYTES, partitions, commits)
            path = Path(tmp) / "workload.sql"
            path.write_text(text)
            if args.compare:
                _compare(label, tmp, path, args.compare, args.rounds, args.repeat)
                continue
            out = _child(Path(__file__), tmp, path, args.repeat, args.phases)
            goal = 2.0 if n is None else 1.5
            print(f"{label:>14}: {out['queries']:,} queries, {out['distinct']:,} distinct; floor "
                  f"{out['floor_cpu']:.2f}s CPU ({out['floor']:.2f}s wall), advise {out['advise_cpu']:.2f}s CPU "
                  f"({out['advise']:.2f}s wall), ratio {out['ratio']:.2f}x (goal <= {goal}x), "
                  f"peak RSS {out['peak_rss_mb']:.0f} MB", flush=True)
            if out.get("paired") and args.repeat > 1:
                med, lo, hi = out["paired"]
                print(f"{'':>14}  paired: median {med:.2f}x of {args.repeat} back-to-back (floor, advise) "
                      f"runs ({lo:.2f}..{hi:.2f})", flush=True)
            if out.get("phases"):
                spent = out["phases"]
                own = sum(v for k, v in spent.items() if k != "explain")
                print(f"{'':>14}  advise's phases (CPU ms, medians): " + ", ".join(
                    f"{k} {v * 1000:.1f}" for k, v in sorted(spent.items(), key=lambda kv: -kv[1]))
                      + f"; beside its explains {own * 1000:.1f}", flush=True)


if __name__ == "__main__":
    main()
