"""indexcore against Paimon Java (warm JVM, same machine, same files, same run) and paimon-rust.

    python bench/bench_java.py [--quick] [--rounds N]

Operations, each the best of N rounds after a warm-up on both sides:
- snapshot planning of a 1,000 / 10,000 / 50,000-file append table (``--quick``: 1,000), built
  as bench_planning.py builds it: ours ``open_warehouse(...).table(...).plan()`` on a fresh
  warehouse, Java ``newReadBuilder().newScan().plan()``, rust ``new_scan().plan()``;
- FileIndexPredicate over a whole Java-written table (one ``.index`` file per data file, bloom
  and bitmap): ours ``explain`` (plan, stats, file index), Java plan + FileIndexPredicate per file;
- the bloom test and the bitmap lookup on one ``.index`` file, a fresh reader per operation
  (container head, then the column's index): ours read_container + FileIndexPredicate, Java
  ``new FileIndexPredicate(bytes, rowType).testPredicate(p)``;
- DV decode and contains over every deletion vector of a Java-written primary-key table: the
  same number of positions asked on both sides.
Prints ours / Java and ours / rust. Needs scripts/install.sh test (skips with a reason otherwise).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_planning  # noqa: E402
import oracles  # noqa: E402

import indexcore  # noqa: E402
from indexcore.expr import predicate_from_json  # noqa: E402
from indexcore.formats.container import read_container  # noqa: E402
from indexcore.formats.deletion_vector import scan_deletion_vector_file  # noqa: E402
from indexcore.io import BytesSource  # noqa: E402
from indexcore.scan import FileIndexPredicate  # noqa: E402
from indexcore.scan.explainer import explain  # noqa: E402
from indexcore.types import parse_type  # noqa: E402


def best_of(fn, rounds: int) -> float:
    """The best of ``rounds`` timed runs after one warm-up run."""
    fn()
    return bench_planning.best_of(fn, rounds)


def line(what: str, ours: float, java: float | None, rust: float | None = None, unit: str = "ms") -> None:
    scale = 1000 if unit == "ms" else 1e6
    text = f"{what:<44} ours {ours * scale:10.2f} {unit}"
    if java is not None:
        text += f" | Java {java * scale:10.2f} {unit} | ours/Java {ours / java:6.2f}x"
    if rust is not None:
        text += f" | rust {rust * scale:10.2f} {unit} | ours/rust {ours / rust:6.2f}x"
    print(text, flush=True)


def bench_planning_sizes(java, rust, sizes, rounds, tmp: Path) -> None:
    if not bench_planning.SOURCE.is_dir():
        print(f"planning: conformance data not found at {bench_planning.SOURCE}; skipped")
        return
    for n in sizes:
        dst = tmp / f"plan{n}"
        bench_planning.build(dst, n)  # n files, 1,000 per manifest

        def ours(dst=dst, n=n) -> None:
            plan = indexcore.open_warehouse(str(dst)).table("db.t").plan()
            assert len(plan.files) == n

        t_ours = best_of(ours, rounds)
        j = java.ask({"op": "bench", "kind": "plan", "warehouse": str(dst), "table": "db.t", "rounds": rounds})
        t_java = j["seconds"] if j.get("ok") and j["result"] == n else None
        if not j.get("ok"):
            print(f"  Java plan failed: {j['error'].splitlines()[0]}")
        t_rust = None
        if rust is not None:
            r = rust.ask({"op": "time_plan", "warehouse": str(dst), "table": "db.t", "rounds": rounds})
            t_rust = r["seconds"] if r.get("ok") else None
            if not r.get("ok"):
                print(f"  rust plan failed: {r.get('error', 'crashed')}")
        line(f"snapshot planning, {n:,} files", t_ours, t_java, t_rust)
        shutil.rmtree(dst)


def index_table_spec(partitions: int) -> dict:
    rows = [{"values": [i, i % partitions, f"v{i % 97}", i % 13]} for i in range(partitions * 40)]
    return {"columns": [{"name": "k", "type": "INT"}, {"name": "p", "type": "INT"},
                        {"name": "s", "type": "STRING"}, {"name": "n", "type": "BIGINT"}],
            "partition_keys": ["p"],
            "options": {"bucket": "-1", "file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.items": "100",
                        "file-index.bitmap.columns": "n", "file-index.in-manifest-threshold": "1 b",
                        "scan.manifest.parallelism": "1"},
            "commits": [{"rows": rows}]}


def bench_file_indexes(java, rounds: int, ops: int, partitions: int, tmp: Path) -> None:
    wh = str(tmp / "fi")
    spec = index_table_spec(partitions)
    assert java.ask({"op": "write", "warehouse": wh, "table": "db.fi", "spec": spec})["ok"]
    pred = {"op": "or", "children": [{"op": "equal", "field": "s", "literals": ["v17"]},
                                     {"op": "equal", "field": "n", "literals": [3]}]}

    def ours_table() -> None:
        explain(indexcore.open_warehouse(wh).table("db.fi"), "s = 'v17' OR n = 3")

    j = java.ask({"op": "bench", "kind": "file_index_table", "warehouse": wh, "table": "db.fi",
                  "predicate": pred, "rounds": rounds})
    line(f"FileIndexPredicate over a table, {partitions} files", best_of(ours_table, rounds), j.get("seconds"))

    index_file = next(Path(wh).rglob("*.index"))
    data = index_file.read_bytes()
    row_type = {"k": parse_type("INT"), "p": parse_type("INT"), "s": parse_type("STRING"), "n": parse_type("BIGINT")}
    for what, leaf in (("bloom test (s = 'v17')", {"op": "equal", "field": "s", "literals": ["v17"]}),
                       ("bitmap lookup (n = 3)", {"op": "equal", "field": "n", "literals": [3]})):
        p = predicate_from_json(leaf, row_type)

        def ours_blob(p=p) -> None:
            for _ in range(ops):
                FileIndexPredicate(read_container(BytesSource(data, name=index_file.name)), row_type).evaluate(p)

        j = java.ask({"op": "bench", "kind": "blob", "warehouse": wh, "table": "db.fi", "path": str(index_file),
                      "predicate": leaf, "ops": ops, "rounds": rounds})
        java_per_op = j["seconds"] / ops if j.get("ok") else None
        line(f"{what}, fresh reader per op", best_of(ours_blob, rounds) / ops, java_per_op, unit="us")


def bench_dv(java, rounds: int, keys: int, tmp: Path) -> None:
    wh = str(tmp / "dv")
    first = [{"values": [k, f"a{k}"]} for k in range(keys)]
    second = [{"values": [k, f"b{k}"]} for k in range(0, keys, 3)]
    spec = {"columns": [{"name": "k", "type": "INT"}, {"name": "v", "type": "STRING"}], "primary_keys": ["k"],
            "options": {"bucket": "2", "deletion-vectors.enabled": "true", "scan.manifest.parallelism": "1"},
            "commits": [{"rows": first, "compact": True}, {"rows": second}]}
    assert java.ask({"op": "write", "warehouse": wh, "table": "db.dv", "spec": spec})["ok"]
    full = java.ask({"op": "query", "warehouse": wh, "table": "db.dv"})
    positions = sum(f["row_count"] for f in full["files"].values() if f["dv_cardinality"])
    dv_files = sorted(p for p in Path(wh).rglob("index/index-*") if p.read_bytes()[:1] == b"\x01")

    def ours() -> None:
        decoded = [scan_deletion_vector_file(p.read_bytes()) for p in dv_files]
        entries = [e for f in decoded for e in f.entries]
        per = positions // max(1, len(entries))
        for e in entries:
            for pos in range(per):
                e.dv.is_deleted(pos)

    j = java.ask({"op": "bench", "kind": "dv", "warehouse": wh, "table": "db.dv", "rounds": rounds})
    line(f"DV decode + contains, {positions:,} positions", best_of(ours, rounds), j.get("seconds"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="indexcore vs Paimon Java and paimon-rust, same run")
    ap.add_argument("--quick", action="store_true", help="1,000 files only, fewer rounds and operations")
    ap.add_argument("--rounds", type=int, default=None)
    args = ap.parse_args(argv)
    reason = oracles.java_skip_reason()
    if reason:
        print(f"bench_java: skipped: {reason}")
        return 0
    rounds = args.rounds or (2 if args.quick else 5)
    sizes = [1_000] if args.quick else [1_000, 10_000, 50_000]
    rust = oracles.RustOracle() if oracles.rust_skip_reason() is None else None
    if rust is None:
        print(f"rust: skipped: {oracles.rust_skip_reason()}")
    with tempfile.TemporaryDirectory() as tmp, oracles.JavaOracle(tmp) as java:
        tmp_path = Path(tmp)
        bench_planning_sizes(java, rust, sizes, rounds, tmp_path)
        bench_file_indexes(java, rounds, 200 if args.quick else 2000, 20 if args.quick else 200, tmp_path)
        bench_dv(java, rounds, 2_000 if args.quick else 50_000, tmp_path)
    if rust is not None:
        rust.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
