"""``advise(timings=...)``: the caller's dict gets the CPU seconds of each phase (what the bench
prints beside the explains), their sum within the run's own CPU time, and the advice is the same
with and without it."""

import json
import time

import pyarrow as pa

from indexcore.analysis.advise import advise
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema


def _table(root: str):
    schema = make_schema([("id", "STRING"), ("country", "STRING"), ("amount", "INT"), ("p", "STRING")],
                         partition_keys=["p"], options={"bucket": "-1", "file.format": "parquet",
                                                        "file-index.bitmap.columns": "country"})
    writer = TableWriter.create(root, "db.t", schema, seed=3)
    for c in range(4):
        writer.write(pa.table({"id": [f"id-{c}-{i}" for i in range(40)], "country": [f"C{i % 4}" for i in range(40)],
                               "amount": pa.array([c * 100 + i for i in range(40)], pa.int32()),
                               "p": [f"p{i % 2}" for i in range(40)]}))
    return Warehouse(root).table("db.t")


def test_phases_are_timed_and_change_nothing(tmp_path):
    text = ("SELECT * FROM db.t WHERE country = 'C1';\nSELECT * FROM db.t WHERE amount BETWEEN 105 AND 120;\n"
            "SELECT * FROM db.t WHERE id = 'id-2-7' OR country = 'C3';\n")
    _table(str(tmp_path))

    def plain(o):
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items() if "seconds" not in k}
        return [plain(v) for v in o] if isinstance(o, list) else o

    spent: dict[str, float] = {"explain": 0.0}  # added to what the dict holds
    start = time.process_time()
    timed = advise(Warehouse(str(tmp_path)).table("db.t"), text, sample=0, details=True, timings=spent)
    total = time.process_time() - start
    bare = advise(Warehouse(str(tmp_path)).table("db.t"), text, sample=0, details=True)
    assert json.dumps(plain(timed.to_json(details=True)), sort_keys=True, default=str) == \
        json.dumps(plain(bare.to_json(details=True)), sort_keys=True, default=str)
    assert {"read workload", "plan", "parse statements", "existing indexes", "explain", "summarise explains",
            "verdicts", "candidates: read sampled files", "candidates: build", "candidates: measure",
            "candidates: rank", "statements"} <= set(spent)
    assert all(v >= 0 for v in spent.values())
    assert spent["explain"] > 0 and spent["candidates: build"] > 0  # three explains, candidates built
    assert sum(spent.values()) <= total + 1e-6
