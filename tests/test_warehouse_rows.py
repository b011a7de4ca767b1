"""``rows`` against the conformance warehouses: every table's README lists what was written.

Most READMEs are parsed mechanically: a ``Recall ... result:`` block when there is one, else
the ``Add``/``Delete``/``UpdateAfter`` lines replayed (keyed by the primary key when the table
has one). Values are positional in the table's field order and read through the table's real
types. READMEs that describe their data in prose are written out below, each with a comment
saying how the expectation follows from the README.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from indexcore.cli import main
from indexcore.errors import PredicateError
from indexcore.expr import parse_where
from indexcore.types import Timestamp, from_text_or_python, to_json_value
from indexcore.warehouse import Warehouse
from indexcore.warehouse.data import filter_table, read_table, table_rows

ROOTS = ("parquet", "mixed")


def _tables(conformance: Path) -> list[tuple[str, str]]:
    out = []
    for root in ROOTS:
        for db in sorted((conformance / "warehouses" / root).glob("*.db")):
            name = db.name[:-3]
            if (db / name / "README").is_file():
                out.append((root, name))
    return out


def _split_top(text: str) -> list[str]:
    """Split on commas outside quotes and brackets."""
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'" and not "".join(cur).strip():
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _fit(parts: list[str], fields) -> list[str]:
    """Unquoted strings may hold commas: glue the surplus back into the first string column."""
    extra = len(parts) - len(fields)
    if extra > 0:
        j = next((i for i, f in enumerate(fields) if f.type.is_string), 0)
        parts = parts[:j] + [", ".join(parts[j:j + extra + 1])] + parts[j + extra + 1:]
    return parts[:len(fields)]


def _value(field, text: str):
    text = text.strip()
    if text.lower() == "null":
        return None
    text = re.sub(r"^BinaryString\.fromString\((.*)\)$", r"\1", text)
    text = re.sub(r"^\((byte|short)\)", "", text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    dtype = field.type
    if dtype.root in ("BIGINT", "FLOAT", "DOUBLE") and re.fullmatch(r"-?[\d.]+[LlFfDd]", text):
        text = text[:-1]
    if dtype.is_timestamp and re.fullmatch(r"-?\d+", text):
        return Timestamp.from_nanos(int(text))
    if dtype.root == "DATE" and re.fullmatch(r"-?\d+", text):
        return int(text)
    value = from_text_or_python(dtype, text)
    if dtype.root == "DECIMAL" and value == 0:
        value = value.copy_abs()  # Java's BigDecimal has no negative zero
    return value


def _json_row(fields, values) -> str:
    return json.dumps({f.name: to_json_value(f.type, v) for f, v in zip(fields, values, strict=True)},
                      sort_keys=True)


def _recall(lines: list[str], fields) -> list[str] | None:
    for i, line in enumerate(lines):
        if line.startswith("Recall with") and line.rstrip().endswith("result:"):
            trailing = len(re.findall(r"_ROW_ID|_SEQUENCE_NUMBER", line))  # system columns, last
            rows = []
            for body in lines[i + 1:]:
                body = body.strip().rstrip(",")
                if not body:
                    break
                if body.startswith("[") and body.endswith("]"):
                    body = body[1:-1]
                parts = _split_top(body)
                parts = _fit(parts[:len(parts) - trailing], fields)
                rows.append(_json_row(fields, [_value(f, p) for f, p in zip(fields, parts, strict=True)]))
            return rows
    return None


_OP = re.compile(r"^(Add|INSERT|Delete|DELETE|UpdateAfter|UPDATE_AFTER|UPDATE_BEFORE)\s*[:(]\s*(.*?)\)?;?\s*$")


def _replay(lines: list[str], schema) -> list[str]:
    fields = schema.fields
    rows: dict = {}
    pk = [schema.field_names.index(k) for k in schema.primary_keys]
    for n, line in enumerate(lines):
        m = _OP.match(line.strip())
        if not m:
            continue
        op, body = m.groups()
        if body.startswith("[") and body.endswith("]"):
            body = body[1:-1]
        values = [_value(f, p) for f, p in zip(fields, _fit(_split_top(body), fields), strict=True)]
        key = tuple(values[i] for i in pk) if pk else n
        if op in ("Delete", "DELETE", "UPDATE_BEFORE"):
            rows.pop(key, None)
        else:
            rows[key] = values
    return [_json_row(fields, v) for v in rows.values()]


def _rows(root: Path, table: str, *extra: str) -> dict:
    import io
    import sys

    out = io.StringIO()
    old, sys.stdout = sys.stdout, out
    try:
        code = main(["rows", str(root), f"{table}.{table}", "--format", "json", *extra])
    finally:
        sys.stdout = old
    assert code == 0
    return json.loads(out.getvalue())


def _canon(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


# Tables whose README cannot be replayed mechanically: expected rows written from the README.
EXPLICIT: dict[str, list[dict]] = {
    # DV table: snapshots 5 and 6 are uncompacted level-0 files, which a DV batch read skips;
    # visible: snapshot 1 data after snapshot 3's DELETE Tony / UPDATE_AFTER Alice (compacted).
    "pk_table_scan_and_read_dv": [
        {"f0": "Two roads diverged in a wood, and I took the one less traveled by, And that has made all "
               "the difference.", "f1": 10, "f2": 1, "f3": 11.0},
        {"f0": "Alice", "f1": 10, "f2": 1, "f3": 19.1}, {"f0": "Bob", "f1": 10, "f2": 0, "f3": 12.1},
        {"f0": "Emily", "f1": 10, "f2": 0, "f3": 13.1}, {"f0": "Alex", "f1": 10, "f2": 0, "f3": 16.1},
        {"f0": "David", "f1": 10, "f2": 0, "f3": 17.1}, {"f0": "Lucy", "f1": 20, "f2": 1, "f3": 14.1},
        {"f0": "Paul", "f1": 20, "f2": 1, "f3": 18.1}],
    # first-row + ignore-delete: the first version of each key wins, DELETE is ignored, and the
    # level-0 files of snapshots 4 and 5 (not compacted) are skipped by the batch read.
    "pk_table_scan_and_read_first_row": [
        {"f0": "Two roads diverged in a wood, and I took the one less traveled by, And that has made all "
               "the difference.", "f1": 10, "f2": 1, "f3": 11.0},
        {"f0": "Alice", "f1": 10, "f2": 1, "f3": 11.1}, {"f0": "Bob", "f1": 10, "f2": 0, "f3": 12.1},
        {"f0": "Emily", "f1": 10, "f2": 0, "f3": 13.1}, {"f0": "Tony", "f1": 10, "f2": 0, "f3": 14.1},
        {"f0": "Alex", "f1": 10, "f2": 0, "f3": 16.1}, {"f0": "David", "f1": 10, "f2": 0, "f3": 17.1},
        {"f0": "Lucy", "f1": 20, "f2": 1, "f3": 14.1}, {"f0": "Paul", "f1": 20, "f2": 1, "f3": 18.1}],
    # snapshot-1 rows through the altered schema: f1 INT->BIGINT, f0 renamed f4, f2 dropped,
    # f5 added (null); then snapshot-2 rows as written.
    "append_with_bitmap_alter_table": [
        {"f1": 10, "f4": "Alice", "f3": 11.1, "f5": None}, {"f1": 10, "f4": "Bob", "f3": 12.1, "f5": None},
        {"f1": 10, "f4": "Emily", "f3": 13.1, "f5": None}, {"f1": 10, "f4": "Tony", "f3": 14.1, "f5": None},
        {"f1": 20, "f4": "Lucy", "f3": 15.1, "f5": None}, {"f1": 10, "f4": "Bob", "f3": 16.1, "f5": None},
        {"f1": 20, "f4": "Tony", "f3": 17.1, "f5": None}, {"f1": 20, "f4": "Alice", "f3": 18.1, "f5": None},
        {"f1": 30, "f4": "Alice", "f3": 21.1, "f5": 100}, {"f1": 20, "f4": "Emily", "f3": 22.1, "f5": 101},
        {"f1": 10, "f4": "Bob", "f3": 23.1, "f5": 100}, {"f1": 30, "f4": "David", "f3": 24.1, "f5": None}],
    # main branch has pt=1 (value2 added later, so the first row has null); pt=2 exists only in
    # the fallback branch "test" and is read from there.
    "append_table_with_append_pt_branch": [
        {"pt": 1, "value": 110, "value2": None}, {"pt": 1, "value": 120, "value2": 1200},
        {"pt": 2, "value": 210, "value2": None}, {"pt": 2, "value": 220, "value2": 2200}],
    # partition 20240725 is read from main; 20240726 only exists in the fallback branch "rt".
    "append_table_with_rt_branch": [
        {"dt": "20240725", "name": "apple", "amount": 5}, {"dt": "20240725", "name": "banana", "amount": 7},
        {"dt": "20240726", "name": "cherry", "amount": 3}, {"dt": "20240726", "name": "pear", "amount": 6}],
    # f0..f2 written first, then f2,f3 at first row id 0: the newer f2 wins.
    "data_evolution_with_dense_stats": [
        {"f0": "Lily", "f1": 2, "f2": 102, "f3": 2.1}, {"f0": "Alice", "f1": 4, "f2": 104, "f3": 3.1}],
    # as above for four rows; snapshot-3 writes f2,f3 as two new rows (no first row id given).
    "data_evolution_with_index": [
        {"f0": "Lily", "f1": 2, "f2": 102, "f3": 2.1}, {"f0": "Alice", "f1": 4, "f2": 104, "f3": 3.1},
        {"f0": "Bob", "f1": 6, "f2": 106, "f3": 4.1}, {"f0": "David", "f1": 8, "f2": 108, "f3": 5.1},
        {"f0": None, "f1": None, "f2": 202, "f3": 6.1}, {"f0": None, "f1": None, "f2": 204, "f3": 7.1}],
}


def _nested_expected() -> list[dict]:
    """pk_table_nested_type: shop 1000+N holds ("str-N", 100N, [N, null, N+1]) and
    [[N, N], [100+N, 100+N]] (the README's pattern; its lines for 1005-1007 repeat row 4 by
    copy-paste). Snapshot 2 deletes 1000 and 1002, updates 1001 unchanged, retracts 1003."""
    return [{"shopId": 1000 + n, "dt": "2025-04-14", "hr": 10, "col0": 10 * n,
             "col1": {"f0": f"str-{n}", "f1": 100 * n, "f2": [n, None, n + 1]},
             "col2": [[n, n], [100 + n, 100 + n]]} for n in (1, 4, 5, 6, 7)]


def _cast_timestamp_expected() -> list[dict]:
    """append_with_cast_timestamp: the README's three rows after its ALTER, cast as Paimon does
    (session zone UTC): TIMESTAMP->INT = epoch seconds, ->DATE = days, ->STRING formatted with
    the source precision, TIMESTAMP<->LTZ unchanged. Its two INT columns have no values in the
    README and are not compared."""
    rows = []
    for sec, ms, micro, nano, tz_sec, tz_ms, tz_micro, tz_nano in (
            (1, 1, 1, 1, 2, 2, 2, 2), (3, 3, None, 3, 4, 4, 4, 4), (5, 5, None, None, 6, None, 6, None)):
        rows.append({
            "ts_sec": sec, "ts_milli": "1970-01-01" if ms is not None else None,
            "ts_micro": None if micro is None else f"1970-01-01 00:00:00.{micro:06d}",
            "ts_nano": None if nano is None else f"1970-01-01T00:00:00.{nano:09d}Z",
            "ts_tz_sec": tz_sec, "ts_tz_milli": "1970-01-01" if tz_ms is not None else None,
            "ts_tz_micro": None if tz_micro is None else f"1970-01-01 00:00:00.{tz_micro:06d}",
            "ts_tz_nano": None if tz_nano is None else f"1970-01-01T00:00:00.{tz_nano:09d}"})
    return rows


def _expected(conformance: Path, root: str, name: str) -> tuple[list[str], set[str] | None]:
    """Canonical expected rows, and the columns to compare (None = all)."""
    if name in EXPLICIT:
        return _canon(EXPLICIT[name]), None
    if name == "pk_table_nested_type":
        return _canon(_nested_expected()), None
    if name == "append_with_cast_timestamp":
        rows = _cast_timestamp_expected()
        return _canon(rows), set(rows[0])
    warehouse = Warehouse(str(conformance / "warehouses" / root))
    schema = warehouse.table(f"{name}.{name}").schema()
    lines = (conformance / "warehouses" / root / f"{name}.db" / name / "README").read_text().splitlines()
    if name == "append_with_multiple_ts_precision_and_timezone":
        # the README's ISO rendering of the written rows, one comma-separated line per row
        iso = [line for line in lines if line.startswith("1970-")]
        return sorted(_json_row(schema.fields, [_value(f, p) for f, p in
                                                zip(schema.fields, line.split(","), strict=True)])
                      for line in iso), None
    if name == "parquet_append_table":
        # the map column f10 is compared by the nested-type tests; the rest by replay
        fields = [f for f in schema.fields if f.name != "f10"]
        rows = []
        for line in lines:
            m = _OP.match(line.strip())
            if m:
                parts = _split_top(m.group(2))
                del parts[9]
                rows.append(_json_row(fields, [_value(f, p) for f, p in zip(fields, parts, strict=True)]))
        return sorted(rows), {f.name for f in fields}
    recall = _recall(lines, schema.fields)
    return sorted(recall if recall is not None else _replay(lines, schema)), None


def test_rows_match_readme(conformance: Path):
    tables = _tables(conformance)
    assert len(tables) >= 38
    checked = 0
    for root, name in tables:
        expected, cols = _expected(conformance, root, name)
        if not expected:
            continue
        got = _rows(conformance / "warehouses" / root, name)["rows"]
        if cols is not None:
            got = [{k: v for k, v in r.items() if k in cols} for r in got]
        assert _canon(got) == expected, name
        checked += 1
    assert checked >= 38


def test_where_filters(conformance: Path):
    root = conformance / "warehouses" / "parquet"
    got = _rows(root, "append_with_bitmap", "--where", "f2 IS NULL OR f0 IN ('Bob', 'Lucy')")["rows"]
    assert sorted((r["f0"], r["f3"]) for r in got) == [("Alice", 18.1), ("Bob", 12.1), ("Bob", 16.1),
                                                        ("Lucy", 15.1)]
    # NULL never compares: f1 <> 100 drops the row whose f1 is null
    got = _rows(root, "append_with_bloomfilter", "--where", "f1 <> 100")["rows"]
    assert sorted(r["f0"] for r in got) == ["Alice", "Bob", "Emily", "Lucy", "Tony"]
    got = _rows(root, "append_with_bloomfilter", "--where", "f4 > TIMESTAMP '2025-04-25 01:00:02.000123'")
    assert sorted(r["f0"] for r in got["rows"]) == ["Bob", "Tony"]
    got = _rows(root, "append_complex_data", "--where", "f3 BETWEEN DATE '1966-01-01' AND DATE '1970-01-01'")
    assert sorted(r["f6"] for r in got["rows"]) == [b"bad".hex(), b"dad".hex(), b"get".hex()]
    # filters see merged rows of a primary-key table (Alice was updated to 19.1)
    got = _rows(root, "pk_table_scan_and_read_mor", "--where", "f3 > 19 AND f2 = 1", "--limit", "5")
    assert [r["f0"] for r in got["rows"]] == ["Alice"]
    got = _rows(root, "append_with_bitmap", "--limit", "3")["rows"]
    assert len(got) == 3


def test_where_agrees_with_python_filter(conformance: Path):
    """filter_table over the read rows equals filtering the rows one by one in Python."""
    table = Warehouse(str(conformance / "warehouses" / "parquet")).table("append_with_bsi.append_with_bsi")
    schema = table.schema()
    rows = table_rows(read_table(table), schema)
    for sql, keep in (("f1 >= 100 AND f2 < 0", lambda r: r["f1"] is not None and r["f2"] is not None
                       and r["f1"] >= 100 and r["f2"] < 0),
                      ("f1 NOT IN (100, 200)", lambda r: r["f1"] is not None and r["f1"] not in (100, 200)),
                      ("f1 NOT IN (100, NULL)", lambda r: False)):
        pred = parse_where(sql, schema.row_type())
        got = table_rows(filter_table(read_table(table), pred, schema), schema)
        assert got == [r for r in rows if keep(r)], sql


def test_time_travel_and_problems(conformance: Path, tmp_path: Path):
    root = conformance / "warehouses" / "parquet"
    # snapshot 1 of the merge-on-read table: before the delete and the update
    got = _rows(root, "pk_table_scan_and_read_mor", "--snapshot", "1")["rows"]
    assert {r["f0"]: r["f3"] for r in got}["Alice"] == 11.1
    assert "Tony" in {r["f0"] for r in got}
    with pytest.raises(PredicateError):
        parse_where("nope = 1", Warehouse(str(root)).table("append_09.append_09").schema().row_type())
    assert main(["rows", str(root), "append_09.append_09", "--where", "nope = 1"]) == 2


def test_matching_positions(conformance: Path):
    """Positions within one data file (before deletion vectors) where the predicate holds."""
    from indexcore.warehouse.data_file import matching_positions, read_data_file

    table = Warehouse(str(conformance / "warehouses" / "parquet")).table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    schema = table.schema()
    pred = parse_where("f0 = 'Alice' OR f3 > 17", schema.row_type())
    total = 0
    for lf in table.plan().files:
        file_schema = table.schema(lf.file.schema_id)
        positions = matching_positions(table.storage, lf, file_schema, schema, pred)
        rows = table_rows(read_data_file(table.storage, lf, file_schema, schema), schema)
        expected = [i for i, r in enumerate(rows)
                    if r["f0"] == "Alice" or (r["f3"] is not None and r["f3"] > 17)]
        assert list(positions) == expected
        total += len(expected)
    assert total >= 2  # Alice (key 0, key 7) and f3 > 17 (keys 6, 7) are in the live files
