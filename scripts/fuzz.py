"""Structure-aware fuzzing of every input indexcore reads, each case in a capped child process.

Seeds are real files: index blobs and containers (golden vectors), deletion-vector files, hash
index files, and whole tables (the sample warehouse, Paimon-written conformance tables) whose
manifests, manifest lists, index manifests, snapshot and schema JSON and Parquet/ORC data files
are mutated one at a time: truncated, bit-flipped, bytes inserted, counts and lengths inflated
to 2^31-1 or made negative, offsets pointed past the end, magic and version changed; Avro
records and JSON documents are also mutated field by field (a field dropped or renamed, a value
of the wrong type, out of range, an unknown enum value, a decompression bomb). SQL text is fuzzed
too (kind ``sql``): ``--where`` conditions built from valid predicates over the sample tables'
columns and a few golden blobs' column, then nested, chained, spliced, given extreme or
wrong-typed literals, broken quotes, odd characters, unknown columns and functions, and run
through ``explain`` on a sample table and ``probe`` on a golden blob.

Each case runs in a forked child under an address-space cap (1 GiB above what the child had at
start) and a time limit, and is classified as one of five outcomes:

- ``clean error``: every failure was an IndexCoreError (the CLI exits 2 with a message);
- ``answer``: everything answered;
- ``traceback``: another exception escaped;
- ``hang``: the case did not finish within the time limit;
- ``blow-up``: the case ran out of its memory cap (or died of a signal).

``python scripts/fuzz.py --cases 5000`` prints the five counts (and each distinct traceback);
``tests/test_fuzz.py`` runs a bounded, seeded sample of the same cases.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONFORMANCE = ROOT.parent / "shared" / "conformance"
SAMPLE = ROOT / "sample_warehouse"
OUTCOMES = ("clean error", "answer", "traceback", "hang", "blow-up")
MEMORY_CAP = 1 << 30
INT_MAX = b"\x7f\xff\xff\xff"
SPECIAL_WORDS = [INT_MAX, b"\xff\xff\xff\x7f", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x80",
                 b"\x00\x00\x00\x00", b"\x00\x01\x00\x00"]


@dataclass(frozen=True)
class Seed:
    """One input to mutate: ``kind`` picks the mutations, ``run`` exercises the mutated copy."""

    kind: str           # blob, container, dv, hash, avro, json, data, sql
    name: str           # shown in reports
    path: Path          # the original file
    table: Path | None = None   # the table directory the file belongs to (warehouse files)
    extra: tuple = ()   # kind-specific: blob (index type, column type, predicates), table (where)


# ---------------------------------------------------------------------------------------------
# seeds


def _golden_blobs() -> list[Seed]:
    single = CONFORMANCE / "golden" / "single"
    manifest = CONFORMANCE / "golden" / "single_manifest.json"
    if not manifest.is_file():
        return []
    vectors = json.loads(manifest.read_text(encoding="utf-8"))["vectors"]
    seeds = []
    for config in sorted({v["config_id"] for v in vectors}):
        for dataset in ("unique", "edge", "somenull"):
            found = sorted(v["id"] for v in vectors if v["config_id"] == config and v["dataset"] == dataset
                           and v["bin_size"] <= 16_000)
            for vid in found[:2]:
                meta = json.loads((single / f"{vid}.json").read_text(encoding="utf-8"))
                seeds.append(Seed("blob", vid, single / meta["bin_file"], extra=(json.dumps(meta),)))
    return seeds


def _containers() -> list[Seed]:
    out = []
    folder = CONFORMANCE / "golden" / "container"
    for cid in ("container_a", "container_empty"):
        meta_path = folder / f"{cid}.json"
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            out.append(Seed("container", cid, folder / meta["file"], extra=(json.dumps(meta),)))
    return out


def _dv_files() -> list[Seed]:
    paths = [CONFORMANCE / "golden" / "dv" / "dv_bitmap32.index",
             *sorted((CONFORMANCE / "deletion_vectors").glob("dvindex-*"))]
    paths += sorted((SAMPLE / "demo.db" / "orders" / "index").glob("index-*"))[:2]
    return [Seed("dv", p.name, p) for p in paths if p.is_file()]


def _hash_files() -> list[Seed]:
    return [Seed("hash", p.name, p) for p in sorted((SAMPLE / "demo.db" / "users" / "index").glob("index-*"))[:3]]


# the tables whose files are mutated, with a condition that reaches their indexes
TABLES = [
    (SAMPLE / "demo.db" / "events", "country = 'NZ' OR amount > 50"),
    (SAMPLE / "demo.db" / "orders", "order_id > 10"),
    (SAMPLE / "demo.db" / "users", "user_id = 7"),
    (CONFORMANCE / "warehouses" / "parquet" / "append_with_bitmap.db" / "append_with_bitmap", None),
    (CONFORMANCE / "warehouses" / "parquet" / "pk_with_bitmap_dv.db" / "pk_with_bitmap_dv", None),
    (CONFORMANCE / "warehouses" / "orc" / "append_with_bsi.db" / "append_with_bsi", None),
    (CONFORMANCE / "warehouses" / "orc" / "pk_table_scan_and_read_dv.db" / "pk_table_scan_and_read_dv", None),
]


def _table_seeds() -> list[Seed]:
    seeds = []
    for table, where in TABLES:
        if not (table / "schema").is_dir():
            continue
        where = where or _default_where(table)
        for path in sorted(p for p in table.rglob("*") if p.is_file() and p.name != "README"):
            rel = path.relative_to(table)
            top = rel.parts[0]
            if top in ("schema", "snapshot"):
                kind = "json"
            elif top == "manifest":
                kind = "avro" if path.read_bytes()[:4] == b"Obj\x01" else "data"
            elif top == "index":
                kind = "dv-in-table"
            elif path.suffix in (".parquet", ".orc"):
                kind = "data"
            elif path.suffix == ".index":
                kind = "container-in-table"
            else:
                continue
            seeds.append(Seed(kind, f"{table.name}/{rel}", path, table=table, extra=(where,)))
    return seeds


def _default_where(table: Path) -> str:
    schemas = sorted((table / "schema").glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
    fields = json.loads(schemas[-1].read_text(encoding="utf-8"))["fields"]
    return f"{fields[0]['name']} IS NOT NULL"


# the tables and golden blobs whose columns the fuzzed ``--where`` text is written against
SQL_TABLES = ("events", "orders", "users", "daily_events")
SQL_BLOBS = ("bitmap_v1__bigint__unique", "bsi__dec10_2__unique", "range_bitmap__string__unique",
             "range_bitmap__ts3__unique", "bloom_i5000_f005__double__unique", "bitmap_v2__date__unique",
             "range_bitmap__boolean__unique")


def _sql_seeds() -> list[Seed]:
    """``explain`` on each sample table and ``probe`` on a few golden blobs (path: table or blob)."""
    seeds = []
    for name in SQL_TABLES:
        table = SAMPLE / "demo.db" / name
        schemas = sorted((table / "schema").glob("schema-*"), key=lambda p: int(p.name.split("-")[1]))
        if schemas:
            fields = json.loads(schemas[-1].read_text(encoding="utf-8"))["fields"]
            columns = [(f["name"], f["type"].replace(" NOT NULL", "")) for f in fields]
            seeds.append(Seed("sql", f"explain demo.{name}", table, extra=("explain", json.dumps(columns))))
    single = CONFORMANCE / "golden" / "single"
    for vid in SQL_BLOBS:
        meta_path = single / f"{vid}.json"
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            columns = [("c", meta["column"]["type"])]
            seeds.append(Seed("sql", f"probe {vid}", single / meta["bin_file"],
                              extra=("probe", json.dumps(columns), json.dumps(meta))))
    return seeds


def all_seeds() -> list[Seed]:
    return _golden_blobs() + _containers() + _dv_files() + _hash_files() + _table_seeds() + _sql_seeds()


# ---------------------------------------------------------------------------------------------
# mutations


def _binary(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """One structural damage of a binary file; positions favour headers and trailers."""
    out = bytearray(data)
    n = len(out)

    def position(width: int = 1) -> int:
        if n <= width:
            return 0
        head = rng.random() < 0.6
        hi = min(n - width, 96) if head else n - width
        if rng.random() < 0.2:  # a trailer (footers, CRCs)
            return max(0, n - width - rng.randrange(0, min(n, 24)))
        return rng.randrange(0, hi + 1)

    op = rng.choice(["truncate", "flip", "insert", "inflate", "negative", "past_eof", "magic", "version",
                     "inflate_le", "long"])
    if op == "truncate" or n < 8:
        cut = rng.choice([rng.randrange(0, n + 1), rng.randrange(0, min(n, 64) + 1), max(0, n - rng.randrange(1, 9))])
        return f"truncate@{cut}", bytes(out[:cut])
    if op == "flip":
        spots = [position() for _ in range(rng.randint(1, 4))]
        for at in spots:
            out[at] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        return f"flip@{spots}", bytes(out)
    if op == "insert":
        at = position()
        blob = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        return f"insert@{at}", bytes(out[:at] + blob + out[at:])
    if op in ("inflate", "negative", "inflate_le"):
        at = position(4)
        word = INT_MAX if op == "inflate" else (b"\xff\xff\xff\x7f" if op == "inflate_le" else rng.choice(
            [b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\xfe"]))
        out[at:at + 4] = word
        return f"{op}@{at}", bytes(out)
    if op == "long":
        at = position(8)
        out[at:at + 8] = rng.choice([b"\x7f\xff\xff\xff\xff\xff\xff\xff", b"\xff" * 8, (n + 5).to_bytes(8, "big")])
        return f"long@{at}", bytes(out)
    if op == "past_eof":
        at = position(4)
        value = n + rng.choice([1, 7, 4096, 1 << 20])
        out[at:at + 4] = value.to_bytes(4, rng.choice(["big", "little"]))
        return f"past_eof@{at}", bytes(out)
    if op == "magic":
        width = min(n, rng.randint(1, 8))
        out[:width] = bytes(rng.randrange(256) for _ in range(width))
        return "magic", bytes(out)
    at = rng.randrange(0, min(n, 12))
    out[at] = rng.choice([0, 2, 3, 9, 127, 255])
    return f"version@{at}", bytes(out)


_JSON_VALUES = [None, "", "x", -1, 0, 1e29, 2**63, -(2**63) - 1, [], {}, True, "1e9999", 3.5, "TIMESTAMP(12)"]


def _json(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    try:
        doc = json.loads(data)
    except ValueError:
        return _binary(rng, data)
    if rng.random() < 0.25 or not isinstance(doc, dict):
        return _binary(rng, data)
    paths = list(_json_paths(doc))
    path = rng.choice(paths)
    parent, key = _json_parent(doc, path)
    op = rng.choice(["drop", "value", "value", "type"])
    if op == "drop" and isinstance(parent, dict):
        del parent[key]
    elif op == "type" and isinstance(parent[key], str) and "(" in parent[key] or key == "type":
        parent[key] = rng.choice(["TIMESTAMP(12)", "DECIMAL(38, 38)", "DECIMAL(99, 2)", "VARCHAR(-1)", "CHAR(0)",
                                  "NOPE", "ROW<", "ARRAY<INT", "MAP<INT>", {"type": "ROW"}, "BINARY(2147483648)"])
    else:
        parent[key] = rng.choice(_JSON_VALUES + ["missing-column", "snapshot-9", "../../etc/passwd"])
    return f"json {op} {'/'.join(map(str, path))}", json.dumps(doc).encode()


def _json_paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _json_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i)
            yield from _json_paths(v, (*prefix, i))


def _json_parent(doc, path):
    node = doc
    for part in path[:-1]:
        node = node[part]
    return node, path[-1]


def _avro(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """Records re-encoded with one field changed, renamed or dropped, or a decompression bomb."""
    import fastavro

    if rng.random() < 0.35:
        return _binary(rng, data)
    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema = reader.writer_schema
        codec = reader.codec
        records = list(reader)
    except Exception:
        return _binary(rng, data)
    if not records:
        return _binary(rng, data)
    op = rng.choice(["value", "value", "rename", "drop", "bomb", "kind"])
    fields = schema["fields"]
    rec = rng.choice(records)
    if op == "bomb":
        field = next((f for f in fields if _is_bytes(f["type"])), None)
        if field is not None:
            rec[field["name"]] = b"\x00" * (64 << 20)
            return f"avro bomb {field['name']}", _write_avro(schema, records, "zstandard")
        op = "value"
    if op == "kind" and "_KIND" in rec:
        rec["_KIND"] = rng.choice([2, 5, -1, 127])
        return f"avro _KIND={rec['_KIND']}", _write_avro(schema, records, codec)
    field = rng.choice(fields)
    name = field["name"]
    if op in ("rename", "drop"):
        new_name = "_X" + name[2:] if op == "rename" else None
        new_fields = [dict(f, name=new_name) if f["name"] == name else f for f in fields if
                      new_name is not None or f["name"] != name]
        schema = dict(schema, fields=new_fields)
        for r in records:
            value = r.pop(name, None)
            if new_name:
                r[new_name] = value
        return f"avro {op} {name}", _write_avro(schema, records, codec)
    rec[name] = _avro_value(rng, field["type"], rec.get(name))
    try:
        return f"avro value {name}", _write_avro(schema, records, codec)
    except Exception:
        return _binary(rng, data)


def _is_bytes(avro_type) -> bool:
    if isinstance(avro_type, list):
        return any(_is_bytes(t) for t in avro_type)
    return avro_type == "bytes"


def _avro_value(rng: random.Random, avro_type, current):
    types = avro_type if isinstance(avro_type, list) else [avro_type]
    if "null" in types and rng.random() < 0.3:
        return None
    if "int" in types:
        return rng.choice([2**31 - 1, -(2**31), -1, 0, 7])
    if "long" in types:
        return rng.choice([2**63 - 1, -(2**63), -1, 0, 10**15])
    if "bytes" in types:
        raw = current if isinstance(current, bytes) else b""
        choice = rng.randrange(4)
        if choice == 0:
            return raw[:rng.randrange(0, len(raw) + 1)]
        if choice == 1:
            return INT_MAX + raw[4:]
        if choice == 2:
            return bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        out = bytearray(raw)
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if "string" in types:
        return rng.choice(["", "../x", "missing-file", "\x00", "a" * 300])
    if isinstance(current, dict):
        return current
    return current


def _write_avro(schema: dict, records: list, codec: str) -> bytes:
    import fastavro

    import indexcore.write.avro  # noqa: F401 - installs the zstd block writer

    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, validator=False)
    return buf.getvalue()


MUTATORS: dict[str, Callable[[random.Random, bytes], tuple[str, bytes]]] = {
    "json": _json, "avro": _avro,
}

_HUGE_NUMBERS = ["1e999999", "1e9999", "-1e309", "1e-999999", "0." + "0" * 5000 + "1", "9" * 5000, "-" + "9" * 400,
                 "1e", ".e5", "5.", ".5", "0x7fffffff", "2147483648", "-2147483649", "9223372036854775808",
                 "-9223372036854775809", "1e18", "1.7976931348623157e309", "4.9e-325", "00000000000007", "1_000",
                 "１２３", "٣", "NaN", "Infinity", "-0"]
_CAST_VALUES = ["NaN", "Infinity", "-Infinity", "+inf", "nan", "", " ", "x", "1e999999", "9" * 400,
                "2020-13-45", "9999999-01-01", "00:00:61", "1.5", "-0"]
_CAST_TYPES = ["DOUBLE", "FLOAT", "INT", "BIGINT", "TINYINT", "DECIMAL(10, 2)", "DECIMAL(38, 38)", "DECIMAL(99, 2)",
               "DATE", "TIMESTAMP", "TIMESTAMP(3)", "TIMESTAMP(12)", "TIME", "STRING", "BOOLEAN", "NOPE", "VARCHAR(-1)"]
_ODD_CHARS = ["\x00", "\x01", "\x1b", "\x7f", "\n", "\r", "\t", "\u202e", "\u200b", "\ufeff", "\u00e9", "\U0001f600",
              "\uff08", "\uff09", "\u2019", "\u201c", "\\", "'", "\"", "`", ";", "--", "/*", "%", "_", "\udc80"]
_WRONG_LITERALS = ["'text'", "''", "'2020-01-01'", "'NaN'", "5", "-5", "3.25", "1e10", "TRUE", "FALSE", "NULL",
                   "DATE '2020-01-01'", "DATE '2020-02-30'", "DATE 'x'", "TIMESTAMP '2020-01-01 00:00:00'",
                   "TIMESTAMP '2020-01-01 25:61:00'", "X'00ff'", "X'0'", "CAST(1 AS STRING)", "INTERVAL '1' DAY",
                   "ARRAY[1]", "(1, 2)", "?", ":x", "$1"]


def _sample_literal(rng: random.Random, sql_type: str) -> str:
    """A literal a column of ``sql_type`` could hold."""
    t = sql_type.upper()
    if t.startswith(("STRING", "CHAR", "VARCHAR")):
        return rng.choice(["'NZ'", "'a'", "''", "'mobile'", "'x%'", "'it''s'"])
    if t.startswith("BOOLEAN"):
        return rng.choice(["TRUE", "FALSE"])
    if t.startswith("DATE"):
        return rng.choice(["DATE '2024-01-01'", "'2024-03-02'"])
    if t.startswith("TIMESTAMP"):
        return rng.choice(["TIMESTAMP '2024-01-01 00:00:00'", "'2024-01-01 12:30:00.123'"])
    if t.startswith("TIME"):
        return rng.choice(["TIME '12:00:00'", "'01:02:03'"])
    if t.startswith(("DOUBLE", "FLOAT", "DECIMAL")):
        return rng.choice(["1.5", "0", "-3.25", "100"])
    return str(rng.choice([0, 1, 7, 42, -1, 100]))


def _valid_predicate(rng: random.Random, columns: list[tuple[str, str]]) -> str:
    """One predicate from the corpus of valid conditions over ``columns``."""
    name, sql_type = rng.choice(columns)
    lit = _sample_literal(rng, sql_type)
    form = rng.randrange(9)
    if form == 0:
        return f"{name} IS NULL"
    if form == 1:
        return f"{name} IS NOT NULL"
    if form == 2:
        return f"{name} IN ({lit}, {_sample_literal(rng, sql_type)})"
    if form == 3:
        return f"{name} BETWEEN {lit} AND {_sample_literal(rng, sql_type)}"
    if form == 4 and sql_type.upper().startswith(("STRING", "CHAR", "VARCHAR")):
        pattern = rng.choice(["'N%'", "'%z'", "'a_c'", "'%'"])
        return f"{name} LIKE {pattern}"
    if form == 5:
        return f"NOT ({name} = {lit})"
    return f"{name} {rng.choice(['=', '<>', '!=', '<', '<=', '>', '>='])} {lit}"


def _sql(rng: random.Random, columns: list[tuple[str, str]]) -> tuple[str, str]:
    """One hostile ``--where`` text over ``columns``: (description, text)."""
    base = _valid_predicate(rng, columns)
    name, sql_type = rng.choice(columns)
    op = rng.choice(["valid", "nest", "not", "in_long", "chain", "number", "cast", "quote", "chars", "splice",
                     "unknown", "wrong_type", "empty"])
    if op == "valid":
        text = " AND ".join(_valid_predicate(rng, columns) for _ in range(rng.randint(1, 4)))
    elif op == "nest":
        depth = rng.choice([50, 200, 999, 3000, 100_000])
        text = "(" * depth + base + ")" * rng.choice([depth, depth - 1, depth + 1, 0])
    elif op == "not":
        depth = rng.choice([10, 500, 3000, 50_000])
        text = rng.choice(["NOT ", "NOT (", "NOT NOT "]) * depth + base
        text += ")" * text.count("(") if rng.random() < 0.7 else ""
    elif op == "in_long":
        n = rng.choice([100, 5000, 50_000, 200_000])
        text = f"{name} {rng.choice(['IN', 'NOT IN'])} ({', '.join(_sample_literal(rng, sql_type) for _ in range(n))})"
    elif op == "chain":
        n = rng.choice([100, 2000, 20_000])
        joiner = rng.choice([" AND ", " OR "])
        text = joiner.join(_valid_predicate(rng, columns) for _ in range(n))
    elif op == "number":
        text = f"{name} {rng.choice(['=', '>', '<=', 'IN ('])} {rng.choice(_HUGE_NUMBERS)}"
        text += ")" if "IN (" in text else ""
    elif op == "cast":
        value = rng.choice(_CAST_VALUES).replace("'", "''")
        text = f"{name} {rng.choice(['>', '=', '<'])} CAST('{value}' AS {rng.choice(_CAST_TYPES)})"
    elif op == "quote":
        cut = rng.choice(["'", '"', "`", "''", "\\'"])
        at = rng.randrange(len(base) + 1)
        text = rng.choice([base[:at] + cut + base[at:], base.replace("'", "", 1), base + " AND " + name + " = 'open",
                           f"`{name} = 1", f'"{name}" = 1', f"{name} = '{'x' * 10_000}"])
    elif op == "chars":
        chars = list(base)
        for _ in range(rng.randint(1, 6)):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(_ODD_CHARS))
        text = "".join(chars)
    elif op == "splice":
        tokens = [t for _ in range(6) for t in re.findall(r"'[^']*'|\w+|[^\w\s]+", _valid_predicate(rng, columns))]
        text = " ".join(rng.choice(tokens) for _ in range(rng.randint(1, 12)))
    elif op == "unknown":
        text = rng.choice(["nope_column = 1", f"frobnicate({name}) = 1", f"UPPER({name}, {name}) = 'A'",
                           f"{name}.x = 1", f"demo.{name} = 1", f"{name}({name}) > 1", "ABS() = 1",
                           f"{name} = other_column", f"{name} REGEXP 'x'", f"{name} = {name}",
                           f"COALESCE({name}) IS NULL", "\"nope\" = 1", f"{name}[0] = 1"])
    elif op == "wrong_type":
        text = f"{name} {rng.choice(['=', '<', '>=', '<>'])} {rng.choice(_WRONG_LITERALS)}"
        if rng.random() < 0.3:
            text = f"{name} BETWEEN {rng.choice(_WRONG_LITERALS)} AND {rng.choice(_WRONG_LITERALS)}"
    else:
        text = rng.choice(["", " ", ";", "1", "TRUE", "NULL", "AND", "()", "(", ")", "NOT", "-", "--x", "/*",
                           base + ";", base + " " + base, base + " -- c", "*", "SELECT 1"])
    return f"sql {op} ({len(text)} chars)", text


def mutate(seed: Seed, rng: random.Random) -> tuple[str, bytes]:
    if seed.kind == "sql":
        what, text = _sql(rng, [tuple(c) for c in json.loads(seed.extra[1])])
        return what, text.encode("utf-8", "surrogatepass")
    data = seed.path.read_bytes()
    return MUTATORS.get(seed.kind, _binary)(rng, data)


# ---------------------------------------------------------------------------------------------
# exercising one case (in the child)


def _cli(argv: list[str]) -> int:
    from indexcore.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        return main([*argv, "--format", "json"])


def single_exercise(meta: dict) -> Callable[[bytes], None]:
    """What probing a single index blob does: open, every predicate, summaries, top-N."""
    from indexcore.expr import predicate_from_json
    from indexcore.formats.base import REMAIN
    from indexcore.io import BytesSource
    from indexcore.scan import blob_predicate
    from indexcore.types import parse_type

    dtype = parse_type(meta["column"]["type"])
    predicates = [predicate_from_json(p["predicate"], {"c": dtype}) for p in meta["predicates"]]

    def run(data: bytes) -> None:
        evaluator = blob_predicate(meta["index_type"], dtype, BytesSource(data, name=meta["id"]), meta["options"])
        for pred in predicates:
            evaluator.evaluate(pred)
        for reader in evaluator.readers("c"):
            reader.summary()
        if meta["index_type"] == "range-bitmap":
            evaluator.evaluate_top_n("c", 5, True, False, True, REMAIN)
            evaluator.evaluate_top_n("c", 5, False, True, False, REMAIN)
    return run


def _exercise_blob(seed: Seed, path: Path) -> list[int]:
    from indexcore.errors import IndexCoreError

    try:
        single_exercise(json.loads(seed.extra[0]))(path.read_bytes())
    except IndexCoreError:
        return [2]
    return [0]


def _exercise_container(seed: Seed, path: Path) -> list[int]:
    meta = json.loads(seed.extra[0])
    schema = ", ".join(f"{f['name']} {f['type']}" for f in meta["row_type"])
    first = meta["row_type"][0]["name"]
    return [_cli(["inspect", str(path)] + [a for f in meta["row_type"] for a in ("--schema", f"{f['name']}:{f['type']}")]),
            _cli(["probe", str(path), "--schema", schema, "--where", f"{first} IS NOT NULL"])]


def _exercise_table(seed: Seed, path: Path, warehouse: Path) -> list[int]:
    """The commands that read the mutated file's kind (metadata, data, index, DV)."""
    name = f"{seed.table.parent.name[:-3]}.{seed.table.name}"
    wh, where = str(warehouse), seed.extra[0]
    commands = {
        "json": [["snapshots"], ["files"], ["rows", "--limit", "20"]],
        "avro": [["files"], ["rows", "--limit", "20"], ["explain", "--where", where]],
        "data": [["rows", "--limit", "20"], ["explain", "--where", where, "--verify"]],
        "container-in-table": [["files"], ["explain", "--where", where]],
        "dv-in-table": [["rows", "--limit", "20"], ["files"], ["bucket-index"]],
    }[seed.kind]
    codes = [_cli([argv[0], wh, name, *argv[1:]]) for argv in commands]
    if seed.kind in ("container-in-table", "dv-in-table"):
        codes.append(_cli(["inspect", str(path)]))
    return codes


def _exercise_sql(seed: Seed, text: str) -> list[int]:
    """The ``--where`` text through ``explain`` on a sample table or ``probe`` on a golden blob
    (both only read: the table is the sample warehouse itself)."""
    where = f"--where={text}"  # one argument even when the text starts with "-"
    if seed.extra[0] == "explain":
        return [_cli(["explain", str(SAMPLE), f"demo.{seed.path.name}", where])]
    meta = json.loads(seed.extra[2])
    options = [a for k, v in meta["options"].items() for a in ("--option", f"{k}={v}")]
    return [_cli(["probe", str(seed.path), "--index-type", meta["index_type"], "--column-type",
                  meta["column"]["type"], where, *options])]


def run_case(seed: Seed, data: bytes, scratch: Path) -> str:
    """Exercise one mutated input; returns ``clean error`` or ``answer`` (exceptions escape)."""
    if seed.kind == "sql":
        codes = _exercise_sql(seed, data.decode("utf-8", "surrogatepass"))
    elif seed.table is not None:
        warehouse = scratch / "wh"
        copy = warehouse / seed.table.parent.name / seed.table.name
        shutil.copytree(seed.table, copy)
        target = copy / seed.path.relative_to(seed.table)
        target.write_bytes(data)
        codes = _exercise_table(seed, target, warehouse)
    else:
        target = scratch / seed.path.name
        target.write_bytes(data)
        if seed.kind == "blob":
            codes = _exercise_blob(seed, target)
        elif seed.kind == "container":
            codes = _exercise_container(seed, target)
        elif seed.kind == "dv":
            codes = [_cli(["dv", str(target)]), _cli(["inspect", str(target)])]
        else:
            codes = [_cli(["inspect", str(target)])]
    return "answer" if all(c == 0 for c in codes) else "clean error"


def _address_space() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(seed: Seed, data: bytes, write_fd: int) -> None:
    """In the forked child: cap memory, run, report one JSON line, exit without cleanup."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    scratch = Path(tempfile.mkdtemp(prefix="indexcore-fuzz-"))
    result: dict = {}
    try:
        cap = _address_space() + MEMORY_CAP
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
        result = {"outcome": run_case(seed, data, scratch)}
    except MemoryError:
        result = {"outcome": "blow-up", "detail": "MemoryError"}
    except BaseException as exc:  # noqa: BLE001 - classifying is the point
        tb = traceback.extract_tb(exc.__traceback__)
        frame = next((f for f in reversed(tb) if "/indexcore/" in f.filename), tb[-1] if tb else None)
        where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
        blown = "MemoryError" in type(exc).__name__ or "bad_alloc" in str(exc) or "memory" in str(exc).lower()
        result = {"outcome": "blow-up" if blown else "traceback",
                  "detail": f"{type(exc).__name__} at {where}: {str(exc)[:160]}"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        os.write(write_fd, (json.dumps(result) + "\n").encode())
        os._exit(0)


def run_isolated(seed: Seed, data: bytes, timeout: float) -> dict:
    """Run one case in a forked child; hang and blow-up are decided here, from outside."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(seed, data, write_fd)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    outcome = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            outcome = {"outcome": "hang", "detail": f"over {timeout:.0f} s"}
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if ready:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if outcome is not None:
        return outcome
    text = b"".join(chunks).decode(errors="replace").strip()
    if not text:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        return {"outcome": "blow-up", "detail": f"child died (signal {sig}, status {status})"}
    return json.loads(text)


def cases(count: int, seed: int, kinds: set[str] | None = None):
    """``count`` (seed, description, mutated bytes) triples, the same for the same seed."""
    seeds = [s for s in all_seeds() if kinds is None or s.kind in kinds]
    if not seeds:
        return
    rng = random.Random(seed)
    rng.shuffle(seeds)  # the first cases visit every seed once, in a seeded order
    for i in range(count):
        s = seeds[i % len(seeds)] if i < len(seeds) else rng.choice(seeds)
        case_rng = random.Random(f"{seed}-{i}")
        what, data = mutate(s, case_rng)
        yield s, f"{s.name}: {what}", data


def preload() -> None:
    """Import what the cases use once, in the parent, so each forked child starts warm."""
    import fastavro  # noqa: F401
    import pyarrow.orc  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    import indexcore.cli
    import indexcore.formats  # noqa: F401
    import indexcore.scan  # noqa: F401

    indexcore.cli.build_parser()
    events = SAMPLE / "demo.db" / "events"
    if events.is_dir():  # first calls pay for lazy imports and caches: pay once, here
        for argv in (["rows", "--limit", "5"], ["explain", "--where", "amount > 5", "--verify"], ["files"]):
            with contextlib.redirect_stderr(io.StringIO()):
                _cli([argv[0], str(SAMPLE), "demo.events", *argv[1:]])


def fuzz(count: int, seed: int = 0, timeout: float = 30.0, kinds: set[str] | None = None,
         progress: Callable[[int, dict], None] | None = None,
         jobs: int = 1) -> tuple[Counter, list[tuple[str, dict]]]:
    """Run ``count`` cases (``jobs`` children at a time); the five counts and the non-clean
    cases (description, result)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    preload()
    counts: Counter = Counter({o: 0 for o in OUTCOMES})
    bad = []
    done = 0

    def record(what: str, result: dict) -> None:
        nonlocal done
        counts[result["outcome"]] += 1
        if result["outcome"] not in ("clean error", "answer"):
            bad.append((what, result))
        if progress:
            progress(done, result)
        done += 1

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        running: dict = {}
        for s, what, data in cases(count, seed, kinds):
            while len(running) >= max(1, jobs):
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    record(running.pop(f), f.result())
            running[pool.submit(run_isolated, s, data, timeout)] = what
        for f in list(running):
            record(running.pop(f), f.result())
    return counts, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case before it is a hang")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at the same time")
    parser.add_argument("--kinds", help="comma-separated seed kinds (blob, container, dv, hash, avro, json, "
                                        "data, dv-in-table, container-in-table, sql)")
    args = parser.parse_args(argv)
    kinds = set(args.kinds.split(",")) if args.kinds else None
    started = time.monotonic()

    running: Counter = Counter()

    def progress(i: int, result: dict) -> None:
        running[result["outcome"]] += 1
        if result["outcome"] not in ("clean error", "answer"):
            print(f"  {result['outcome']}: {result.get('detail', '')}", file=sys.stderr, flush=True)
        if (i + 1) % 100 == 0:
            so_far = ", ".join(f"{o} {running[o]}" for o in OUTCOMES)
            print(f"  {i + 1} cases, {time.monotonic() - started:.0f} s: {so_far}", file=sys.stderr, flush=True)

    counts, bad = fuzz(args.cases, args.seed, args.timeout, kinds, progress, args.jobs)
    for what, result in bad:
        print(f"{result['outcome']}: {what}: {result.get('detail', '')}")
    distinct = Counter(r.get("detail", "").split(":")[0] for _, r in bad if r["outcome"] == "traceback")
    print(f"\n{sum(counts.values())} cases in {time.monotonic() - started:.0f} s "
          f"({len(distinct)} distinct tracebacks)")
    for outcome in OUTCOMES:
        print(f"{outcome:>12}: {counts[outcome]}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
