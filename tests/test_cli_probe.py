"""``python -m indexcore probe`` on golden blobs and containers, with SQL equivalent to Paimon's predicates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from indexcore.cli import main
from indexcore.expr import Leaf, predicate_from_json, predicate_to_sql
from indexcore.types import parse_type

ROOT = Path(__file__).resolve().parent.parent

# a few vectors of each index type, over different column types and datasets
VECTORS = [
    "bitmap_v1__string__edge", "bitmap_v2__date__edge", "bitmap_v2_blk256__double__edge", "bitmap_v1__ts9__unique",
    "range_bitmap__bigint__highcard", "range_bitmap_chunk64__ts6__edge", "range_bitmap__dec10_2__somenull",
    "bsi__int__somenull", "bsi__ltz6__unique", "bsi__dec20_4__unique",
    "bloom_i100_f001__string__lowcard", "bloom_i5000_f005__float__edge",
]


def probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "indexcore", "probe", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def expected(result: object) -> object:
    """Paimon's golden result in probe's JSON encoding."""
    return {"rows": result} if isinstance(result, list) else result


def semantic(result: object) -> object:
    """SKIP and an empty bitmap mean the same (Paimon's HashSet order picks one for multi-index columns)."""
    return "SKIP" if result == {"rows": []} else result


@pytest.mark.parametrize("vid", VECTORS)
def test_probe_single_blob_matches_paimon(golden: Path, vid: str) -> None:
    meta = json.loads((golden / "single" / f"{vid}.json").read_text(encoding="utf-8"))
    column_type = meta["column"]["type"]
    schema = {"c": parse_type(column_type)}
    cases = []
    for case in meta["predicates"]:
        sql = predicate_to_sql(predicate_from_json(case["predicate"], schema), schema)
        if "\x00" not in sql:  # a NUL cannot travel in a command-line argument
            cases.append((case, sql))
    assert len(cases) > 10
    args = [str(golden / "single" / meta["bin_file"]), "--index-type", meta["index_type"],
            "--column-type", column_type, "--format", "json"]
    for key, value in meta["options"].items():
        args += ["--option", f"{key}={value}"]
    for _, sql in cases:
        args += ["--where", sql]
    done = probe(*args)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert len(results) == len(cases)
    wrong = [(case["id"], sql) for (case, sql), got in zip(cases, results, strict=True)
             if got != expected(case["result"])]
    assert not wrong, f"{vid}: probe differs from Paimon on {wrong}"


def test_probe_handwritten_sql(golden: Path) -> None:
    """Plain SQL a person would type, checked against the golden predicate with the same meaning."""
    meta = json.loads((golden / "single" / "bitmap_v2__int__lowcard.json").read_text(encoding="utf-8"))
    by_id = {p["id"]: p for p in meta["predicates"]}
    mid = by_id["eq_mid"]["predicate"]["literals"][0]
    lo, hi = by_id["between_lo_hi"]["predicate"]["literals"] if "between_lo_hi" in by_id else (mid, mid)
    wheres = {
        "eq_mid": f"c = {mid}",
        "neq_mid": f"NOT (c = {mid})",
        "is_null": "c IS NULL",
        "is_not_null": "NOT c IS NULL",
    }
    wheres = {k: v for k, v in wheres.items() if k in by_id}
    args = [str(golden / "single" / meta["bin_file"]), "--index-type", "bitmap", "--column-type", "INT",
            "--format", "json"]
    for sql in wheres.values():
        args += ["--where", sql]
    args += ["--where", f"{mid} = c", "--where", f"c BETWEEN {lo} AND {hi}"]
    done = probe(*args)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    for (pid, _), got in zip(wheres.items(), results, strict=False):
        assert got == expected(by_id[pid]["result"]), pid
    assert results[len(wheres)] == expected(by_id["eq_mid"]["result"])
    assert results[len(wheres) + 1] == "REMAIN"  # bitmap cannot answer ranges


def test_probe_named_column(golden: Path) -> None:
    blob = golden / "single" / "range_bitmap__bigint__unique.bin"
    meta = json.loads((golden / "single" / "range_bitmap__bigint__unique.json").read_text(encoding="utf-8"))
    case = next(p for p in meta["predicates"] if p["id"] == "eq_mid")
    literal = case["predicate"]["literals"][0]
    done = probe(str(blob), "--index-type", "range-bitmap", "--column-type", "BIGINT", "--column", "amount",
                 "--where", f"AMOUNT = {literal}", "--where", f"amount = {literal} OR amount IS NULL",
                 "--format", "json")
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)["results"]
    assert first == expected(case["result"])
    is_null = next(p for p in meta["predicates"] if p["id"] == "is_null")["result"]
    assert second == {"rows": sorted(set(case["result"]) | set(is_null))}


def _container_schema(meta: dict) -> str:
    return ", ".join(f"{f['name']} {f['type']}" for f in meta["row_type"])


def test_probe_container_matches_paimon(golden: Path) -> None:
    meta = json.loads((golden / "container" / "container_a.json").read_text(encoding="utf-8"))
    schema = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    args = [str(golden / "container" / meta["file"]), "--schema", _container_schema(meta), "--format", "json"]
    for case in meta["predicates"]:
        args += ["--where", predicate_to_sql(predicate_from_json(case["predicate"], schema), schema)]
    done = probe(*args)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert len(results) == len(meta["predicates"]) == 27
    for case, got in zip(meta["predicates"], results, strict=True):
        assert semantic(got) == semantic(expected(case["result"])), case["id"]


def test_probe_container_handwritten(golden: Path) -> None:
    meta = json.loads((golden / "container" / "container_a.json").read_text(encoding="utf-8"))
    by_id = {p["id"]: p["result"] for p in meta["predicates"]}
    done = probe(str(golden / "container" / meta["file"]), "--schema", _container_schema(meta),
                 "--where", "name = 'user_7'",
                 "--where", "category = 'banana' AND flag = TRUE",
                 "--where", "ts >= TIMESTAMP '2024-05-01 16:13:20' AND d = DATE '2024-04-17'",
                 "--where", "price BETWEEN 0 AND 5000 AND score < -5",
                 "--where", "unindexed = 5 OR category = 'apple'",
                 "--where", "empty_idx = 5",
                 "--format", "json")
    assert done.returncode == 0, done.stderr
    got = [semantic(r) for r in json.loads(done.stdout)["results"]]
    want = [semantic(expected(by_id[k])) for k in ("name_eq_present", "cat_and_flag", "ts_ge_and_d_eq",
                                                     "price_between_and_score", "unindexed_or_cat", "empty_idx_eq")]
    assert got == want


def test_probe_table_output(golden: Path) -> None:
    done = probe(str(golden / "single" / "bitmap_v1__bigint__unique.bin"), "--index-type", "bitmap",
                 "--column-type", "BIGINT", "--where", "c IS NULL", "--where", "c = 12345")
    assert done.returncode == 0, done.stderr
    assert "c IS NULL" in done.stdout and "1 row" in done.stdout
    assert "0 rows (skip)" in done.stdout or "SKIP" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--index-type", "bitmap", "--column-type", "INT", "--where", "c = = 1"], "cannot parse"),
    (["--index-type", "bitmap", "--column-type", "INT", "--where", "nope = 1"], "unknown column 'nope'"),
    (["--index-type", "bitmap", "--column-type", "INT", "--where", "c = 'x'"], "INT"),
    (["--index-type", "bitmap", "--where", "c = 1"], "--column-type"),
    (["--where", "c = 1"], "--schema"),
    (["--schema", "c INT", "--index-type", "bitmap", "--column-type", "INT", "--where", "c = 1"], "either"),
    (["--schema", "c NOTATYPE", "--where", "c = 1"], "NOTATYPE"),
    (["--index-type", "bitmap", "--column-type", "INT", "--option", "novalue", "--where", "c = 1"], "KEY=VALUE"),
])
def test_probe_errors_exit_2(golden: Path, capsys: pytest.CaptureFixture, args: list[str], message: str) -> None:
    """Clean errors, exit code 2 (in-process through the same ``main`` as ``python -m indexcore``)."""
    code = main(["probe", str(golden / "single" / "bitmap_v1__int__lowcard.bin"), *args, "--format", "json"])
    captured = capsys.readouterr()
    assert code == 2
    assert message in captured.err
    assert captured.out == ""


def test_probe_corrupt_file_exit_2(golden: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.index"
    bad.write_bytes((golden / "container" / "container_a.index").read_bytes()[:100])
    done = probe(str(bad), "--schema", "id BIGINT", "--where", "id = 1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    done = probe(str(tmp_path / "missing.bin"), "--index-type", "bitmap", "--column-type", "INT", "--where", "c = 1")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_parse_schema_keeps_commas_in_types() -> None:
    from indexcore.cli.commands.probe import parse_schema

    schema = parse_schema("k INT, `odd name` DECIMAL(10, 2), m MAP<STRING, INT>, t TIMESTAMP(3) WITH LOCAL TIME ZONE")
    assert list(schema) == ["k", "odd name", "m", "t"]
    assert schema["odd name"].scale == 2 and schema["t"].is_ltz
    assert str(Leaf("equal", "odd name", (1,))) == "`odd name` = 1"
