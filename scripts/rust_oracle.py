"""paimon-rust (pypaimon-rust) answering JSON lines; run by scripts/oracles.py in .venv-rust.

{"op": "rows", "warehouse", "table", "where"}: rows of DataFusion SQL over the table;
{"op": "plan", "warehouse", "table", "predicate"}: data files of ReadBuilder.with_filter(...)
.new_scan().plan() (names read out of each split's Java-compatible serialization);
{"op": "time_plan", "warehouse", "table", "rounds"}: seconds to open the table and plan, best of rounds.
"""

import datetime
import decimal
import json
import re
import sys
import time

from pypaimon_rust.datafusion import PaimonCatalog, SQLContext

FILE = re.compile(rb"data-[0-9a-f]{8}-[0-9a-f-]{27}-\d+\.(?:parquet|orc|avro)")


def plain(v):
    if isinstance(v, datetime.datetime):
        return int(v.replace(tzinfo=datetime.UTC).timestamp() * 1000)
    if isinstance(v, datetime.date):
        return (v - datetime.date(1970, 1, 1)).days
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v


def typed(v):
    """A literal of scripts/differential.py's rust_predicate: tagged DATE/TIMESTAMP/DECIMAL to objects."""
    if isinstance(v, dict) and len(v) == 1:
        (tag, x), = v.items()
        if tag == "date":
            return datetime.date(1970, 1, 1) + datetime.timedelta(days=x)
        if tag == "timestamp_millis":
            return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=x)
        if tag == "decimal":
            return decimal.Decimal(x)
    return v


def predicate(p):
    if "children" in p:
        return {**p, "children": [predicate(c) for c in p["children"]]}
    return {**p, "literals": [typed(v) for v in p.get("literals", [])]}


def answer(req):
    op = req["op"]
    if op == "rows":
        ctx = SQLContext()
        ctx.register_catalog("paimon", {"warehouse": req["warehouse"]})
        sql = f"SELECT * FROM paimon.{req['table']}"
        if req.get("where"):
            sql += f" WHERE {req['where']}"
        rows = []
        for b in ctx.sql(sql):
            for r in b.to_pylist():
                rows.append([plain(v) for v in r.values()])
        return {"rows": rows}
    table = PaimonCatalog({"warehouse": req["warehouse"]}).get_table(req["table"])
    if op == "plan":
        rb = table.new_read_builder()
        if req.get("predicate") is not None:
            rb = rb.with_filter(predicate(req["predicate"]))
        files = []
        for s in rb.new_scan().plan().splits():
            files += [m.decode() for m in FILE.findall(s.serialize())]
        return {"plan_files": files}
    if op == "time_plan":  # cold like ours: a new catalog and table each round
        best = None
        for _ in range(req.get("rounds", 3) + 1):
            t0 = time.perf_counter()
            fresh = PaimonCatalog({"warehouse": req["warehouse"]}).get_table(req["table"])
            n = len(fresh.new_read_builder().new_scan().plan().splits())
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        return {"seconds": best, "splits": n}
    raise ValueError(op)


for line in sys.stdin:
    try:
        out = answer(json.loads(line))
        out["ok"] = True
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - a pyo3 PanicException is a BaseException; answer it
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
