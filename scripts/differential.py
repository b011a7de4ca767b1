"""Differential tests of indexcore against Paimon Java and paimon-rust on random tables (issue 26).

    python scripts/differential.py --cases 200 --seed 1 [--first N] [--queries 4] [--keep DIR] [--no-rust]

Each case: a random table spec (types INT, BIGINT, STRING, DOUBLE, DATE, DECIMAL, TIMESTAMP,
BOOLEAN with nulls; partitions; fixed or dynamic buckets; append or primary-key with or without
deletion vectors; bloom and bitmap file indexes embedded or in ``.index`` files; several
commits with updates and deletes, a schema change, a compaction) written by Paimon Java, then
random predicates (every leaf function both sides have, AND/OR/NOT nesting, literals from the
data and outside it, NULLs in IN lists), each answered by Java, paimon-rust and indexcore's CLI
(``rows``, ``explain --all-files``, ``files``, ``show '$table_indexes'``, ``bucket-index``).

Checks, file by file: rows (must equal Java's full read under Predicate.test); live files and
DV cardinalities; the file-index decision of each file (must equal Java's FileIndexPredicate,
except where Java skips a file whose own rows match: Java unsafe, we keep it and say so; we must
never skip a file whose rows match); the hash index. The filtered plan of Java and of rust is
compared with ours and its differences are counted by kind. Every disagreement is minimised
(the predicate shrunk while the disagreement stays) and printed with its spec.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import decimal
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracles import JavaOracle, RustOracle, indexcore_cli, java_skip_reason, rust_skip_reason  # noqa: E402

TYPES = ["INT", "BIGINT", "STRING", "DOUBLE", "DATE", "DECIMAL(10,2)", "TIMESTAMP", "BOOLEAN"]
BLOOM_OK = {"INT", "BIGINT", "STRING", "DOUBLE", "DATE", "TIMESTAMP"}
# Paimon 1.0's bitmap writer throws on BOOLEAN (ClassCastException Boolean -> Byte), and bloom
# and bitmap refuse DECIMAL: those columns get no index.
BITMAP_OK = {"INT", "BIGINT", "STRING", "DATE", "TIMESTAMP"}
STRINGS = ["", "a", "b", "ab", "abc", "zz", "é", "it's", "B"]
EPOCH = datetime.date(1970, 1, 1)
LEAVES = ["equal", "notEqual", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual",
          "isNull", "isNotNull", "in", "notIn", "between"]
# Paimon's string patterns (Spark's LIKE 'x%', '%x', '%x%'): STRING columns only, never under an
# odd number of NOTs (they have no negation, so Paimon does not push NOT LIKE down)
PATTERNS = {"startsWith": "{}%", "endsWith": "%{}", "contains": "%{}%"}
NEGATE = {"equal": "notEqual", "notEqual": "equal", "lessThan": "greaterOrEqual",
          "greaterOrEqual": "lessThan", "lessOrEqual": "greaterThan", "greaterThan": "lessOrEqual",
          "isNull": "isNotNull", "isNotNull": "isNull", "in": "notIn", "notIn": "in"}
SQL_OP = {"equal": "=", "notEqual": "<>", "lessThan": "<", "lessOrEqual": "<=", "greaterThan": ">",
          "greaterOrEqual": ">="}


# ------------------------------------------------------------------------- values

def draw(rng: random.Random, t: str, outside: bool = False):
    if t == "INT":
        return rng.choice([-100, 1000]) if outside else rng.randint(-3, 12)
    if t == "BIGINT":
        return rng.choice([-(2**40), 2**50]) if outside else rng.randint(-3, 12) * 1_000_000_007
    if t == "STRING":
        return rng.choice(["zzz", "0", "a\u0000"[:1] + "q"]) if outside else rng.choice(STRINGS)
    if t == "DOUBLE":
        return rng.choice([-1e6, 1e6, 0.1]) if outside else rng.randint(-4, 12) / 4
    if t == "DATE":
        return rng.choice([0, 30000]) if outside else 19000 + rng.randint(0, 12)
    if t.startswith("DECIMAL"):
        return rng.choice(["-99999.99", "99999.99"]) if outside else f"{rng.randint(-300, 900) / 100:.2f}"
    if t == "TIMESTAMP":
        base = 1_700_000_000_000
        return rng.choice([0, base * 2]) if outside else base + rng.randint(0, 10) * 1000 + rng.choice([0, 0, 123])
    if t == "BOOLEAN":
        return rng.random() < 0.5
    raise ValueError(t)


def canon(t: str, v):
    """One comparable form for a value from Java, rust or indexcore's JSON."""
    if v is None:
        return None
    if t == "DATE" and isinstance(v, str):
        return (datetime.date.fromisoformat(v) - EPOCH).days
    if t == "TIMESTAMP" and isinstance(v, str):
        d = datetime.datetime.fromisoformat(v.replace(" ", "T")).replace(tzinfo=datetime.UTC)
        return round(d.timestamp() * 1000)
    if t.startswith("DECIMAL"):
        return decimal.Decimal(str(v)).quantize(decimal.Decimal("0.01"))
    if t == "DOUBLE":
        return float(v)
    return v


def _sql_literal(t: str, v, cast_decimal: bool = True) -> str:
    if v is None:
        return "NULL"
    if t == "STRING":
        return "'" + v.replace("'", "''") + "'"
    if t == "DATE":
        return f"DATE '{EPOCH + datetime.timedelta(days=v)}'"
    if t == "TIMESTAMP":
        d = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=v)
        return f"TIMESTAMP '{d.isoformat(sep=' ', timespec='milliseconds')}'"
    if t == "BOOLEAN":
        return "TRUE" if v else "FALSE"
    if t.startswith("DECIMAL"):
        return f"CAST('{v}' AS {t})" if cast_decimal else str(v)
    return repr(v)


# ------------------------------------------------------------------------- specs

def random_spec(rng: random.Random) -> dict:
    pk = rng.random() < 0.5
    ncols = rng.randint(2, 5)
    cols = [{"name": "k", "type": "INT"}]
    partitioned = rng.random() < 0.5
    if partitioned:
        cols.append({"name": "p", "type": "INT"})
    cols += [{"name": f"c{i}", "type": rng.choice(TYPES)} for i in range(ncols)]
    opts = {"scan.manifest.parallelism": "1", "file.format": rng.choice(["parquet", "parquet", "orc"])}
    dynamic = False
    if pk:
        dynamic = rng.random() < 0.35
        opts["bucket"] = "-1" if dynamic else str(rng.randint(1, 3))
        if rng.random() < 0.6:
            opts["deletion-vectors.enabled"] = "true"
    else:
        opts["bucket"] = rng.choice(["-1", "2"])
        if opts["bucket"] != "-1":
            opts["bucket-key"] = "k"
    values = [c for c in cols if c["name"].startswith("c")]
    bloom = [c["name"] for c in values if c["type"] in BLOOM_OK and rng.random() < 0.5]
    bitmap = [c["name"] for c in values if c["type"] in BITMAP_OK and c["name"] not in bloom and rng.random() < 0.5]
    if bloom:
        opts["file-index.bloom-filter.columns"] = ",".join(bloom)
        for b in bloom:  # Paimon's default, 1,000,000 items, is a 600 KB filter per file
            opts[f"file-index.bloom-filter.{b}.items"] = str(rng.choice([5, 50, 1000]))
    if bitmap:
        opts["file-index.bitmap.columns"] = ",".join(bitmap)
    opts["file-index.in-manifest-threshold"] = rng.choice(["1 b", "500 kb"])
    commits = []
    ncommits = rng.randint(2, 4)
    alter_at = rng.randint(1, ncommits - 1) if rng.random() < 0.3 else None
    width = len(cols)
    added = None
    keys_seen: list[tuple] = []
    for ci in range(ncommits):
        commit: dict = {"rows": []}
        if ci == alter_at:
            added = rng.choice(["BIGINT", "STRING"])
            commit["add_column"] = {"name": "x", "type": added}
            width += 1
        for _ in range(rng.randint(3, 25)):
            k = rng.randint(0, 20) if pk else rng.randint(-3, 12)
            p = rng.randint(0, 2) if partitioned else None
            row = [k] + ([p] if partitioned else [])
            for c in cols[len(row):]:
                row.append(None if rng.random() < 0.15 else draw(rng, c["type"]))
            if added is not None:
                row.append(None if rng.random() < 0.3 else draw(rng, added))
            entry = {"values": row}
            if pk and keys_seen and rng.random() < 0.15:
                victim = rng.choice(keys_seen)
                entry = {"kind": "delete", "values": list(victim) + [None] * (width - len(victim))}
            if dynamic:
                entry["bucket"] = entry["values"][0] % 3
            commit["rows"].append(entry)
            keys_seen.append(tuple(row[:2] if partitioned else row[:1]))
        if ci == ncommits - 1 and rng.random() < 0.35 and not (not pk and opts["bucket"] == "-1"):
            commit["compact"] = True
        commits.append(commit)
    spec = {"columns": cols, "partition_keys": ["p"] if partitioned else [], "options": opts, "commits": commits}
    if pk:
        spec["primary_keys"] = ["k", "p"] if partitioned else ["k"]
    return spec


def schema_of(spec: dict) -> list[tuple[str, str]]:
    cols = [(c["name"], c["type"]) for c in spec["columns"]]
    for c in spec["commits"]:
        if "add_column" in c:
            cols.append((c["add_column"]["name"], c["add_column"]["type"]))
    return cols


def data_values(spec: dict, col: int) -> list:
    return [r["values"][col] for c in spec["commits"] for r in c["rows"] if col < len(r["values"])]


# ------------------------------------------------------------------------- predicates

def pattern_literal(rng: random.Random, op: str, seen: list[str]) -> str:
    """A non-empty piece of a value in the data (the start, end or middle as ``op`` tests), or
    one outside it."""
    words = [v for v in seen if v]
    if not words or rng.random() < 0.2:
        return rng.choice(["zzz", "q", "b"])
    w = rng.choice(words)
    n = rng.randint(1, len(w))
    if op == "startsWith":
        return w[:n]
    if op == "endsWith":
        return w[-n:]
    i = rng.randint(0, len(w) - n)
    return w[i:i + n]


def random_leaf(rng: random.Random, spec: dict, negated: bool = False) -> dict:
    cols = schema_of(spec)
    i = rng.randrange(len(cols))
    name, t = cols[i]
    seen = [v for v in data_values(spec, i) if v is not None]

    def lit():
        return draw(rng, t, outside=True) if not seen or rng.random() < 0.2 else rng.choice(seen)
    op = rng.choice(LEAVES + (list(PATTERNS) if t == "STRING" and not negated else []))
    if op in PATTERNS:
        return {"op": op, "field": name, "literals": [pattern_literal(rng, op, seen)]}
    if t == "BOOLEAN" and op in ("lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual", "between"):
        op = rng.choice(["equal", "notEqual"])
    if op in ("isNull", "isNotNull"):
        lits = []
    elif op in ("in", "notIn"):
        lits = [lit() for _ in range(rng.randint(1, 4))]
        if op == "in" and rng.random() < 0.15:
            lits.append(None)
    elif op == "between":
        lits = sorted([lit(), lit()], key=lambda v: canon(t, v))
    else:
        lits = [lit()]
    return {"op": op, "field": name, "literals": lits}


def random_predicate(rng: random.Random, spec: dict, depth: int = 0, negated: bool = False) -> dict:
    r = rng.random()
    if depth >= 3 or r < 0.45:
        return random_leaf(rng, spec, negated)
    if r < 0.55:
        return {"op": "not", "children": [random_predicate(rng, spec, depth + 1, not negated)]}
    return {"op": rng.choice(["and", "or"]),
            "children": [random_predicate(rng, spec, depth + 1, negated) for _ in range(rng.randint(2, 3))]}


def pushable(p: dict, negated: bool = False) -> bool:
    """No string pattern under an odd number of NOTs (Paimon cannot negate one)."""
    if p["op"] == "not":
        return pushable(p["children"][0], not negated)
    if "children" in p:
        return all(pushable(c, negated) for c in p["children"])
    return not (negated and p["op"] in PATTERNS)


def nnf(p: dict, neg: bool = False) -> dict:
    """Without NOT, as Paimon's Predicate.negate() builds it (between -> two comparisons)."""
    op = p["op"]
    if op == "not":
        return nnf(p["children"][0], not neg)
    if op in ("and", "or"):
        flip = {"and": "or", "or": "and"}[op] if neg else op
        return {"op": flip, "children": [nnf(c, neg) for c in p["children"]]}
    if op == "between":
        lo, hi = p["literals"]
        parts = [{"op": "greaterOrEqual", "field": p["field"], "literals": [lo]},
                 {"op": "lessOrEqual", "field": p["field"], "literals": [hi]}]
        return nnf({"op": "and", "children": parts}, neg)
    if neg:
        return {**p, "op": NEGATE[op]}
    return p


def to_sql(p: dict, types: dict[str, str], cast_decimal: bool = True) -> str:
    """SQL text; DataFusion wants DECIMAL literals CAST, ours takes them as exact numbers."""
    op = p["op"]
    if op == "not":
        return f"NOT ({to_sql(p['children'][0], types, cast_decimal)})"
    if op in ("and", "or"):
        return "(" + f" {op.upper()} ".join(to_sql(c, types, cast_decimal) for c in p["children"]) + ")"
    f, t, lits = f'"{p["field"]}"', types[p["field"]], p["literals"]

    def sql_literal(t, v):
        return _sql_literal(t, v, cast_decimal)
    if op == "isNull":
        return f"{f} IS NULL"
    if op == "isNotNull":
        return f"{f} IS NOT NULL"
    if op in ("in", "notIn"):
        return f"{f} {'NOT ' if op == 'notIn' else ''}IN ({', '.join(sql_literal(t, v) for v in lits)})"
    if op == "between":
        return f"{f} BETWEEN {sql_literal(t, lits[0])} AND {sql_literal(t, lits[1])}"
    if op in PATTERNS:
        return f"{f} LIKE {sql_literal(t, PATTERNS[op].format(lits[0]))}"
    return f"{f} {SQL_OP[op]} {sql_literal(t, lits[0])}"


def indexcore_sql(p: dict, types: dict[str, str]) -> str:
    return to_sql(p, types, cast_decimal=False)


def rust_predicate(p: dict, types: dict[str, str]) -> dict | None:
    """paimon-rust's with_filter dict (typed literals tagged); None for NULL literals."""
    op = p["op"]
    if op in ("and", "or"):
        kids = [rust_predicate(c, types) for c in p["children"]]
        return None if any(k is None for k in kids) else {"method": op, "children": kids}
    t = types[p["field"]]
    if any(v is None for v in p["literals"]) or op in PATTERNS:  # paimon-rust 0.4.0's with_filter has no patterns
        return None
    if t in ("INT", "BIGINT", "STRING", "DOUBLE", "BOOLEAN"):
        return {"method": op, "field": p["field"], "literals": p["literals"]}
    # with_filter wants datetime.date / datetime.datetime / decimal.Decimal objects: tagged here,
    # built by scripts/rust_oracle.py
    tag = "date" if t == "DATE" else "timestamp_millis" if t == "TIMESTAMP" else "decimal"
    return {"method": op, "field": p["field"], "literals": [{tag: v} for v in p["literals"]]}


def has_or(p: dict) -> bool:
    """An OR after NOT is pushed down (NOT AND becomes OR), as Java sees the predicate."""
    return '"or"' in json.dumps(nnf(p))


def leaves(p: dict) -> int:
    return 1 if "children" not in p else sum(leaves(c) for c in p["children"])


def shrinks(p: dict):
    """Smaller predicates: each child in place of a compound, a compound without one child."""
    if "children" not in p:
        return
    for c in p["children"]:
        yield c
    if p["op"] in ("and", "or") and len(p["children"]) > 2:
        for i in range(len(p["children"])):
            yield {**p, "children": p["children"][:i] + p["children"][i + 1:]}
    for i, c in enumerate(p["children"]):
        for s in shrinks(c):
            yield {**p, "children": p["children"][:i] + [s] + p["children"][i + 1:]}


# ------------------------------------------------------------------------- one case

def file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class Case:
    def __init__(self, java: JavaOracle, rust: RustOracle | None, wh: str, table: str, spec: dict):
        self.java, self.rust, self.wh, self.table, self.spec = java, rust, wh, table, spec
        self.cols = schema_of(spec)
        self.types = dict(self.cols)
        self.notes: list[str] = []  # differences that are not disagreements (Java unsafe, plans)

    def rows_key(self, rows) -> list:
        out = []
        for r in rows:
            if isinstance(r, dict):
                r = [r.get(n) for n, _ in self.cols]
            out.append(tuple(repr(canon(t, v)) for (_, t), v in zip(self.cols, r, strict=False)))
        return sorted(out)

    def check(self, pred: dict, counts: collections.Counter) -> list[str]:
        """Disagreements for one predicate (each a short text); counts what was compared."""
        problems = []
        j = self.java.ask({"op": "query", "warehouse": self.wh, "table": self.table, "predicate": nnf(pred)})
        if not j.get("ok"):
            counts["java_query_errors"] += 1
            print(f"Java could not answer {json.dumps(nnf(pred))} on {self.wh}: "
                  f"{' | '.join(j['error'].splitlines()[:2])}", file=sys.stderr)
            return []
        where = indexcore_sql(pred, self.types)
        ours = indexcore_cli("rows", self.wh, self.table, "--where", where)
        counts["predicates"] += 1
        if "error" in ours:
            problems.append(f"rows: indexcore error {ours['error']}")
        elif self.rows_key(ours["rows"]) != self.rows_key(j["rows"]):
            counts["wrong_row_sets"] += 1
            problems.append(f"rows: indexcore {len(ours['rows'])} rows, Java {len(j['rows'])}")
        ex = indexcore_cli("explain", self.wh, self.table, "--where", where, "--all-files")
        if "error" in ex:
            problems.append(f"explain: indexcore error {ex['error']}")
            return problems
        mine = {file_name(f["path"]): f for f in ex["files"]}
        if set(mine) != set(j["files"]):
            problems.append(f"explain files {sorted(mine)} != Java live files {sorted(j['files'])}")
            return problems
        for name, jf in j["files"].items():
            f = mine[name]
            counts["files_compared"] += 1
            ji, oi, match = jf.get("file_index"), f.get("index_decision"), jf["matching_raw_rows"]
            if isinstance(oi, dict) and "rows" in oi:  # a bitmap result: the row positions kept
                counts["bitmap_row_sets"] += 1
                lost = sorted(set(jf.get("matching_positions", [])) - set(oi["rows"]))
                if lost:
                    counts["bitmap_rows_lost"] += 1
                    problems.append(f"{name}: our bitmap result drops matching positions {lost[:10]}")
                oi = "REMAIN" if oi["rows"] else "SKIP"
            if oi == "SKIP" and match:
                counts["files_skipped_by_us_holding_rows"] += 1
                problems.append(f"{name}: we skip by file index but {match} of its rows match")
            if ji is None:
                if f.get("index_types"):
                    counts["index_presence_mismatch"] += 1
                    problems.append(f"{name}: Java sees no file index, we see {f.get('index_types')}")
                continue
            counts["file_index_decisions"] += 1
            if ji == "SKIP" and match:
                counts["java_unsafe_skips"] += 1
                self.notes.append(f"Java unsafe: FileIndexPredicate skips {name} ({f.get('index_types')}) "
                                  f"though {match} of its rows match {to_sql(pred, self.types)}; we say {oi}")
                if oi != "REMAIN":
                    problems.append(f"{name}: Java unsafe skip ({match} rows match) and we say {oi}")
                continue
            if ji != oi:
                counts["file_index_mismatch"] += 1
                if oi == "SKIP":  # Java's FileIndexPredicate keeps a file our index stage skips
                    counts["files_index_skipped_by_us_java_keeps"] += 1
                # (the file's bitmap is named by the table's options: our explain lists no kinds for a
                # file it does not consult, e.g. an older schema's file that no conjunct reaches)
                bitmap = "bitmap" in str(f.get("index_types")) or self.spec["options"].get("file-index.bitmap.columns")
                if ji == "SKIP" and oi == "REMAIN" and has_or(pred) and bitmap:
                    # BitmapIndexResult.or before apache/paimon#5324 drops the other side's REMAIN:
                    # Java's skip is right here only because no row happens to match
                    counts["file_index_mismatch_java_bitmap_or"] += 1
                problems.append(f"{name}: file index Java {ji}, indexcore {oi} (rows matching: {match})")
        our_plan = {n for n, f in mine.items() if f.get("skipped_by") in (None, "index")
                    and not (f.get("skipped_by") == "index" and f.get("index_location") in ("EMBEDDED", "embedded"))}
        jp = set(j.get("plan_files", []))
        counts["plan_we_skip_java_keeps"] += len(jp - our_plan)
        counts["plan_java_skips_we_keep"] += len(our_plan - jp)
        for name in sorted(jp ^ our_plan):
            f = mine[name]
            if name not in jp and j["files"][name]["matching_raw_rows"]:
                counts["plan_java_unsafe_skips"] += 1  # Java's plan drops a file whose rows match
            self.notes.append(f"plan: {name} {'kept by Java only' if name in jp else 'kept by us only'} for "
                              f"{to_sql(pred, self.types)} (ours skipped_by={f.get('skipped_by')}, "
                              f"stats={f.get('stats_decision')}, index={f.get('index_decision')} "
                              f"at {f.get('index_location')}, level {f.get('level')})")
        if self.rust is not None:
            rsql = to_sql(pred, self.types)
            rr = self.rust.ask({"op": "rows", "warehouse": self.wh, "table": self.table, "where": rsql})
            if rr.get("crashed"):
                counts["rust_crashes"] += 1
                problems.append(f"rust: the process died on SELECT ... WHERE {rsql} (paimon-rust 0.4.0)")
            elif not rr.get("ok"):
                counts["rust_row_errors"] += 1
                counts[f"rust rows error (paimon-rust 0.4.0): {rr['error'][:120]}"] += 1
            elif self.rows_key(rr["rows"]) != self.rows_key(j["rows"]):
                counts["rust_wrong_row_sets"] += 1
                problems.append(f"rust rows: {len(rr['rows'])} rows, Java {len(j['rows'])} (paimon-rust 0.4.0)")
            rp = rust_predicate(nnf(pred), self.types)
            if rp is not None:
                rplan = self.rust.ask({"op": "plan", "warehouse": self.wh, "table": self.table, "predicate": rp})
                if rplan.get("ok"):
                    counts["rust_plans"] += 1
                    rs = set(rplan["plan_files"])
                    counts["rust_plan_skips_java_keeps"] += len(jp - rs)
                    for name in sorted(jp - rs):
                        rows = j["files"][name]["matching_raw_rows"]
                        self.notes.append(f"rust plan (paimon-rust 0.4.0) drops {name}, kept by Java and us, "
                                          f"{rows} rows matching, for {json.dumps(rp)}")
                    counts["rust_plan_keeps_java_skips"] += len(rs - jp)
                    counts["plan_we_skip_rust_keeps"] += len(rs - our_plan)
                else:
                    counts["rust_plan_errors"] += 1
                    counts[f"rust plan error (paimon-rust 0.4.0): {rplan.get('error', 'crashed')[:120]}"] += 1
        return problems

    def check_table(self, j_files: dict, counts: collections.Counter) -> list[str]:
        problems = []
        files = indexcore_cli("files", self.wh, self.table)
        if "error" in files:
            return [f"files: indexcore error {files['error']}"]
        mine = {file_name(f["path"]): (f.get("deletion_vector") or {}).get("cardinality", 0) for f in files["files"]}
        theirs = {n: f["dv_cardinality"] for n, f in j_files.items()}
        counts["dv_files_compared"] += sum(1 for v in theirs.values() if v)
        if mine != theirs:
            counts["files_or_dv_mismatch"] += 1
            problems.append(f"files/DV: indexcore {mine} != Java {theirs}")
        jh = self.java.ask({"op": "hash", "warehouse": self.wh, "table": self.table})
        ti = indexcore_cli("show", self.wh, f"{self.table}$table_indexes")
        jidx = sorted((e["index_type"], e["file_name"], e["bucket"], e["row_count"]) for e in jh.get("index_files", []))
        oidx = sorted((r["index_type"], r["file_name"], r["bucket"], r["row_count"]) for r in ti.get("rows", []))
        counts["index_files_compared"] += len(jidx)
        if jidx != oidx:
            counts["table_indexes_mismatch"] += 1
            problems.append(f"$table_indexes {oidx} != Java's index manifest {jidx}")
        if self.spec["options"].get("bucket") == "-1" and self.spec.get("primary_keys"):
            ours = indexcore_cli("bucket-index", self.wh, self.table)
            counts["hash_tables"] += 1
            def part(values):
                return "{" + ", ".join(str(v) for v in values) + "}"
            jset = sorted((part(b["partition"]), b["bucket"], b["hashes"]) for b in jh.get("buckets", []))
            oset = sorted((b.get("partition"), b.get("bucket"), b.get("hashes")) for b in ours.get("buckets", []))
            counts["hash_buckets_compared"] += len(jset)
            if jset != oset:
                counts["hash_index_mismatch"] += 1
                problems.append(f"hash index: indexcore {oset} != Java {jset}")
        return problems


def minimise(case: Case, pred: dict) -> dict:
    """The smallest predicate (by leaves) that still disagrees."""
    best, changed = pred, True
    while changed:
        changed = False
        for s in shrinks(best):
            if leaves(s) < leaves(best) and pushable(s) and case.check(s, collections.Counter()):
                best, changed = s, True
                break
    return best


def smaller_specs(spec: dict):
    """Specs with a commit less, half a commit's rows less, or one row less (small commits)."""
    commits = spec["commits"]
    for i in range(1, len(commits)):
        if "add_column" not in commits[i]:
            yield {**spec, "commits": commits[:i] + commits[i + 1:]}
    for i, c in enumerate(commits):
        rows = c["rows"]
        if len(rows) > 1:
            half = len(rows) // 2
            for keep in (rows[half:], rows[:half]):
                yield {**spec, "commits": commits[:i] + [{**c, "rows": keep}] + commits[i + 1:]}
        if 1 < len(rows) <= 6:
            for j in range(len(rows)):
                yield {**spec, "commits": commits[:i] + [{**c, "rows": rows[:j] + rows[j + 1:]}] + commits[i + 1:]}


def minimise_table(case: Case, pred: dict, root: str, label: str, budget: int = 30) -> Case:
    """A smaller table (rewritten by Java) on which the predicate still disagrees; ``budget`` writes."""
    best, tries, changed = case, 0, True
    while changed and tries < budget:
        changed = False
        for spec in smaller_specs(best.spec):
            if tries >= budget:
                break
            tries += 1
            wh = f"{root}/{label}-min{tries}"
            if not case.java.ask({"op": "write", "warehouse": wh, "table": case.table, "spec": spec}).get("ok"):
                continue
            smaller = Case(case.java, case.rust, wh, case.table, spec)
            if smaller.check(pred, collections.Counter()):
                best, changed = smaller, True
                break
    return best


def run(cases: int, seed: int, queries: int, keep: str | None, use_rust: bool, out=sys.stdout,
        first: int = 0) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    root = keep or tempfile.mkdtemp(prefix="differential-")
    rust = RustOracle() if use_rust and rust_skip_reason() is None else None
    t0 = time.time()
    with JavaOracle() as java:
        for n in range(first, first + cases):
            rng = random.Random(f"{seed}/{n}")
            spec = random_spec(rng)
            wh, table = f"{root}/wh{n}", "db.t"
            w = java.ask({"op": "write", "warehouse": wh, "table": table, "spec": spec})
            if not w.get("ok"):
                counts["specs_rejected_by_java"] += 1
                reason = w["error"].splitlines()[0][:200]
                counts[f"java rejects: {reason}"] += 1
                continue
            counts["tables"] += 1
            case = Case(java, rust, wh, table, spec)
            full = java.ask({"op": "query", "warehouse": wh, "table": table})
            problems = case.check_table(full.get("files", {}), counts)
            for p in problems:
                print(f"case {n} (seed {seed}) table: {p}\n  spec: {json.dumps(spec)}", file=out)
            for _ in range(queries):
                case.notes.clear()
                pred = random_predicate(rng, spec)
                found = case.check(pred, counts)
                for note in case.notes:
                    print(f"case {n} (seed {seed}) note: {note}\n  warehouse: {wh}", file=out)
                if found:
                    small = minimise(case, pred)
                    ours_too = any(not p.startswith("rust") for p in found)  # rust-only: its table is small enough
                    tiny = minimise_table(case, small, root, f"wh{n}") if ours_too else case
                    again = tiny.check(small, collections.Counter())
                    counts["disagreements"] += 1
                    print(f"case {n} (seed {seed}): {to_sql(small, case.types)}\n  " + "\n  ".join(again or found)
                          + f"\n  predicate: {json.dumps(small)}\n  warehouse: {tiny.wh}\n  spec: {json.dumps(tiny.spec)}",
                          file=out)
    if rust is not None:
        rust.close()
    counts["seconds"] = round(time.time() - t0)
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first", type=int, default=0,
                    help="first case number: --first 1000 --cases 1000 runs the second half of --cases 2000")
    ap.add_argument("--queries", type=int, default=4, help="predicates per table")
    ap.add_argument("--keep", help="write the warehouses here (default: a temp dir)")
    ap.add_argument("--no-rust", action="store_true")
    args = ap.parse_args(argv)
    reason = java_skip_reason()
    if reason:
        print(f"differential: {reason}", file=sys.stderr)
        return 2
    counts = run(args.cases, args.seed, args.queries, args.keep, not args.no_rust, first=args.first)
    print(json.dumps(dict(sorted(counts.items())), indent=1))
    explained = counts["file_index_mismatch_java_bitmap_or"]
    unexplained = counts["file_index_mismatch"] - explained
    print(f"{counts['tables']} tables, {counts['predicates']} predicates, {counts['files_compared']} files compared: "
          f"{counts['wrong_row_sets']} wrong row sets, "
          f"{counts['files_skipped_by_us_holding_rows']} files we skip that hold matching rows, "
          f"{counts['files_index_skipped_by_us_java_keeps']} files skipped by us that Java keeps, "
          f"{counts['java_unsafe_skips']} Java unsafe skips (files holding matching rows; we keep them), "
          f"{explained} file-index differences explained (Java's BitmapIndexResult.or before "
          f"apache/paimon#5324), {unexplained} unexplained")
    bad = (counts["wrong_row_sets"] + counts["files_skipped_by_us_holding_rows"]
           + counts["files_index_skipped_by_us_java_keeps"] + unexplained)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
