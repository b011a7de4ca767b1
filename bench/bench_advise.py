"""The advisor's cost: ``advise`` over a 100-query workload on a 1,000-file table.

Writes an append table with our writer into a temp dir (100 partitions x 10 commits = 1,000
files of 60 rows; a bloom filter on ``id``, a bitmap on ``device``), then times:
  floor: ``explain`` of every query of the workload (what advise cannot avoid doing);
  ours:  ``advise`` with its default sample (existing-index verdicts, candidates built on
         32 sampled files, statements), on a fresh Table object.
Prints the ratio (goal <= 1.5x). ``--quick``: 10 files and 8 queries (it runs; not a measurement).
"""

from __future__ import annotations

import argparse
import random
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

PARTITIONS, COMMITS, ROWS = 100, 10, 60
QUERIES = 100


def build(root: str, partitions: int = PARTITIONS, commits: int = COMMITS) -> None:
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


def workload(queries: int = QUERIES, partitions: int = PARTITIONS, commits: int = COMMITS) -> str:
    rng = random.Random(5)
    lines = []
    for i in range(queries):
        kind = i % 4
        if kind == 0:
            lines.append(f"SELECT * FROM db.t WHERE id = 'id-{rng.randrange(partitions * commits * ROWS):08d}'")
        elif kind == 1:
            lines.append(f"SELECT count(*) FROM db.t WHERE country = 'C{rng.randrange(20):02d}'")
        elif kind == 2:
            lo = rng.randrange(commits) * 1000
            lines.append(f"SELECT * FROM db.t WHERE amount BETWEEN {lo + 5} AND {lo + 20}")
        else:
            lines.append(f"SELECT * FROM db.t WHERE p = 'p{rng.randrange(partitions):03d}' AND device = 'web'")
    return ";\n".join(lines) + ";\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small table and workload: runs, measures nothing")
    args = parser.parse_args()
    partitions, commits, queries = (5, 2, 8) if args.quick else (PARTITIONS, COMMITS, QUERIES)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        build(tmp, partitions, commits)
        print(f"built {partitions * commits} files in {time.perf_counter() - t0:.1f}s")
        text = workload(queries, partitions, commits)
        table = Warehouse(tmp).table("db.t")
        found, _ = scans(parse_workload(text), "db.t", table.schema().field_names)
        table.plan()
        t0 = time.perf_counter()
        for scan in found:
            explain(table, scan.where)
        floor = time.perf_counter() - t0

        table = Warehouse(tmp).table("db.t")
        table.plan()
        t0 = time.perf_counter()
        advice = advise(table, text)
        ours = time.perf_counter() - t0
        print(f"queries: {len(found)}, files: {len(table.plan().files)}, candidates: {len(advice.candidates)}")
        print(f"floor (explain x {len(found)}): {floor:.2f}s")
        print(f"advise:                 {ours:.2f}s")
        print(f"ratio: {ours / floor:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
