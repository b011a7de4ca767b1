"""SQL WHERE text and golden JSON trees into Paimon predicates, and back to SQL."""

from __future__ import annotations

import datetime as dt
import json
import math
import pickle
import struct
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr import (
    Compound,
    Leaf,
    negate,
    parse_where,
    predicate_from_json,
    predicate_to_sql,
)
from indexcore.types import Timestamp, parse_type

SCHEMA = {name: parse_type(text) for name, text in {
    "i": "INT", "big": "BIGINT", "tiny": "TINYINT", "Name": "STRING", "ch": "CHAR(10)", "d": "DATE",
    "t": "TIME(3)", "ts": "TIMESTAMP(9)", "ts3": "TIMESTAMP(3)", "ltz": "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    "p": "DECIMAL(10, 2)", "f": "FLOAT", "dbl": "DOUBLE", "flag": "BOOLEAN", "bin": "BYTES",
    "a b": "INT", "Mixed": "INT", "mixed": "INT",
}.items()}


def leaf(op: str, field: str, *literals: object) -> Leaf:
    return Leaf(op, field, tuple(literals))


def days(text: str) -> int:
    return (dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days


@pytest.mark.parametrize(("sql", "expected"), [
    ("i = 5", leaf("equal", "i", 5)),
    ("i == 5", leaf("equal", "i", 5)),
    ("i <> 5", leaf("notEqual", "i", 5)),
    ("i != 5", leaf("notEqual", "i", 5)),
    ("i < -5", leaf("lessThan", "i", -5)),
    ("i <= 5", leaf("lessOrEqual", "i", 5)),
    ("i > 5", leaf("greaterThan", "i", 5)),
    ("i >= 5", leaf("greaterOrEqual", "i", 5)),
    ("WHERE i = 5", leaf("equal", "i", 5)),
    # a literal on the left flips the comparison
    ("5 < i", leaf("greaterThan", "i", 5)),
    ("5 >= i", leaf("lessOrEqual", "i", 5)),
    ("5 = i", leaf("equal", "i", 5)),
    ("i IN (1, 2, 3)", leaf("in", "i", 1, 2, 3)),
    ("i NOT IN (1, 2)", leaf("notIn", "i", 1, 2)),
    ("i IS NULL", leaf("isNull", "i")),
    ("i IS NOT NULL", leaf("isNotNull", "i")),
    ("i BETWEEN 1 AND 10", leaf("between", "i", 1, 10)),
    ("i NOT BETWEEN -1 AND 10", leaf("notBetween", "i", -1, 10)),
    ("((i = 1))", leaf("equal", "i", 1)),
    ("big = -9223372036854775808", leaf("equal", "big", -(1 << 63))),
    ("i = 1e3", leaf("equal", "i", 1000)),
    ("i = '7'", leaf("equal", "i", 7)),
    ("i = CAST('7' AS INT)", leaf("equal", "i", 7)),
    ("Name = 'it''s'", leaf("equal", "Name", "it's")),
    ("Name = CAST(12 AS STRING)", leaf("equal", "Name", "12")),
    ("ch = 'ab'", leaf("equal", "ch", "ab")),
    ("flag", leaf("equal", "flag", True)),
    ("NOT flag", leaf("notEqual", "flag", True)),
    ("flag = FALSE", leaf("equal", "flag", False)),
    ("bin = X'00ff'", leaf("equal", "bin", b"\x00\xff")),
    ("p = 1.5", leaf("equal", "p", Decimal("1.50"))),
    ("p > -2", leaf("greaterThan", "p", Decimal("-2.00"))),
    ("p = '3.25'", leaf("equal", "p", Decimal("3.25"))),
    ("p = CAST(1.5 AS DECIMAL(5, 1))", leaf("equal", "p", Decimal("1.50"))),
    ("dbl = 0.1", leaf("equal", "dbl", 0.1)),
    ("f = 0.1", leaf("equal", "f", struct.unpack(">f", struct.pack(">f", 0.1))[0])),
    ("dbl < CAST('Infinity' AS DOUBLE)", leaf("lessThan", "dbl", math.inf)),
    ("dbl > CAST('-Infinity' AS DOUBLE)", leaf("greaterThan", "dbl", -math.inf)),
    ("dbl = 5", leaf("equal", "dbl", 5.0)),
    # LIKE as Spark hands it to Paimon (LikeSimplification): prefix, suffix, infix, no wildcard
    ("Name LIKE 'ab%'", leaf("startsWith", "Name", "ab")),
    ("Name like '%ab'", leaf("endsWith", "Name", "ab")),
    ("Name LIKE '%a''b%'", leaf("contains", "Name", "a'b")),
    ("Name LIKE 'ab'", leaf("equal", "Name", "ab")),
    ("Name NOT LIKE 'ab'", leaf("notEqual", "Name", "ab")),
    ("ch LIKE 'x%'", leaf("startsWith", "ch", "x")),
    ("Name LIKE '%中%'", leaf("contains", "Name", "中")),
    ("startswith(Name, 'a%_')", leaf("startsWith", "Name", "a%_")),
    ("endswith(Name, '')", leaf("endsWith", "Name", "")),
    ("contains(Name, 'x')", leaf("contains", "Name", "x")),
    ("NOT NOT Name LIKE 'ab%'", leaf("startsWith", "Name", "ab")),
])
def test_parse_where(sql: str, expected: Leaf) -> None:
    got = parse_where(sql, SCHEMA)
    assert got == expected
    assert all(type(a) is type(b) for a, b in zip(got.literals, expected.literals, strict=True))


def test_typed_literals() -> None:
    assert parse_where("d = DATE '2024-04-17'", SCHEMA) == leaf("equal", "d", days("2024-04-17"))
    assert parse_where("d >= '2024-04-17'", SCHEMA) == leaf("greaterOrEqual", "d", days("2024-04-17"))
    assert parse_where("d = CAST('0001-01-01' AS DATE)", SCHEMA) == leaf("equal", "d", days("0001-01-01"))
    assert parse_where("t = TIME '10:00:01.250'", SCHEMA) == leaf("equal", "t", 36_001_250)
    assert parse_where("t < '00:00:01'", SCHEMA) == leaf("lessThan", "t", 1000)
    # TIMESTAMP(9) keeps nanoseconds below the microsecond
    got = parse_where("ts = TIMESTAMP '2024-01-01 00:00:00.123456789'", SCHEMA)
    assert got == leaf("equal", "ts", Timestamp(1_704_067_200_123, 456_789))
    assert parse_where("ts = '2024-01-01T00:00:00.123456789'", SCHEMA) == got
    # pre-1970 instants
    assert parse_where("ts3 = TIMESTAMP '1969-12-31 23:59:59.999'", SCHEMA) == leaf("equal", "ts3", Timestamp(-1, 0))
    # a DATE literal against a TIMESTAMP column is midnight
    assert parse_where("ts3 >= DATE '2024-01-01'", SCHEMA) == leaf("greaterOrEqual", "ts3", Timestamp(1_704_067_200_000))
    nan = parse_where("dbl = CAST('NaN' AS DOUBLE)", SCHEMA).literals[0]
    assert math.isnan(nan)
    assert math.isnan(parse_where("f <> CAST('NaN' AS FLOAT)", SCHEMA).literals[0])
    neg_zero = parse_where("dbl = -0.0", SCHEMA).literals[0]
    assert neg_zero == 0.0 and math.copysign(1, neg_zero) < 0
    assert math.copysign(1, parse_where("dbl = -0", SCHEMA).literals[0]) < 0


def test_local_time_zone_literals() -> None:
    utc = Timestamp(1_704_067_200_000)
    # no offset: the text is UTC for a TIMESTAMP WITH LOCAL TIME ZONE column
    assert parse_where("ltz = '2024-01-01 00:00:00'", SCHEMA).literals == (utc,)
    assert parse_where("ltz = TIMESTAMP '2024-01-01 00:00:00'", SCHEMA).literals == (utc,)
    assert parse_where("ltz = '2024-01-01T00:00:00Z'", SCHEMA).literals == (utc,)
    assert parse_where("ltz = '2024-01-01 02:00:00+02:00'", SCHEMA).literals == (utc,)
    assert parse_where("ltz = TIMESTAMP '2023-12-31 19:00:00-05:00'", SCHEMA).literals == (utc,)
    assert parse_where("ltz = TIMESTAMP_LTZ '2024-01-01 00:00:00'", SCHEMA).literals == (utc,)
    assert parse_where("ltz = CAST('2024-01-01 01:00:00+01:00' AS TIMESTAMP(3) WITH LOCAL TIME ZONE)",
                       SCHEMA).literals == (utc,)


def test_not_is_pushed_down_like_paimon_negate() -> None:
    assert parse_where("NOT i = 1", SCHEMA) == leaf("notEqual", "i", 1)
    assert parse_where("NOT i <> 1", SCHEMA) == leaf("equal", "i", 1)
    assert parse_where("NOT i < 1", SCHEMA) == leaf("greaterOrEqual", "i", 1)
    assert parse_where("NOT i >= 1", SCHEMA) == leaf("lessThan", "i", 1)
    assert parse_where("NOT i <= 1", SCHEMA) == leaf("greaterThan", "i", 1)
    assert parse_where("NOT i > 1", SCHEMA) == leaf("lessOrEqual", "i", 1)
    assert parse_where("NOT i IN (1, 2)", SCHEMA) == leaf("notIn", "i", 1, 2)
    assert parse_where("NOT i NOT IN (1, 2)", SCHEMA) == leaf("in", "i", 1, 2)
    assert parse_where("NOT i IS NULL", SCHEMA) == leaf("isNotNull", "i")
    assert parse_where("NOT (i IS NOT NULL)", SCHEMA) == leaf("isNull", "i")
    assert parse_where("NOT i BETWEEN 1 AND 2", SCHEMA) == leaf("notBetween", "i", 1, 2)
    assert parse_where("NOT NOT i = 1", SCHEMA) == leaf("equal", "i", 1)
    got = parse_where("NOT (i = 1 AND (Name = 'x' OR d IS NULL))", SCHEMA)
    assert got == Compound("or", (leaf("notEqual", "i", 1),
                                  Compound("and", (leaf("notEqual", "Name", "x"), leaf("isNotNull", "d")))))
    # negate() is its own inverse and matches the parser's push-down
    assert negate(got) == parse_where("i = 1 AND (Name = 'x' OR d IS NULL)", SCHEMA)
    assert negate(negate(got)) == got


def test_and_or_are_flattened_n_ary() -> None:
    got = parse_where("i = 1 AND i = 2 AND (i = 3 AND i = 4) OR i = 5", SCHEMA)
    assert got == Compound("or", (
        Compound("and", tuple(leaf("equal", "i", v) for v in (1, 2, 3, 4))), leaf("equal", "i", 5)))
    assert got.fields() == {"i"}
    assert parse_where("i = 1 OR Name = 'a' OR d IS NULL", SCHEMA).fields() == {"i", "Name", "d"}


def test_null_literals_follow_sql() -> None:
    # a comparison with NULL is never true: the NULL stays, and the leaf is null-false
    for sql in ("i = NULL", "i <> NULL", "i < NULL", "NOT i = NULL", "i BETWEEN NULL AND 3",
                "i NOT IN (1, NULL)", "NOT i IN (1, NULL)", "i IN (NULL)"):
        got = parse_where(sql, SCHEMA)
        assert isinstance(got, Leaf) and got.null_false(), sql
    # a NULL next to other IN literals stays in the list, as Paimon's `in` keeps it (it matches no
    # row, but Paimon's file indexes see it: a bloom filter keeps the file for it)
    assert parse_where("i IN (1, NULL, 2)", SCHEMA) == leaf("in", "i", 1, None, 2)
    assert not leaf("in", "i", 1, None).null_false()
    assert not leaf("isNull", "i").null_false()
    assert leaf("in", "i", None).null_false()


def test_column_names() -> None:
    assert parse_where("NAME = 'x'", SCHEMA) == leaf("equal", "Name", "x")
    assert parse_where('"name" = \'x\'', SCHEMA) == leaf("equal", "Name", "x")
    assert parse_where("`a b` = 1", SCHEMA) == leaf("equal", "a b", 1)
    assert parse_where("Mixed = 1", SCHEMA) == leaf("equal", "Mixed", 1)
    assert parse_where("`mixed` = 1", SCHEMA) == leaf("equal", "mixed", 1)
    with pytest.raises(PredicateError, match="ambiguous"):
        parse_where("MIXED = 1", SCHEMA)


@pytest.mark.parametrize(("sql", "message"), [
    ("", "empty"),
    ("i = ", "cannot parse"),
    ("i = = 1", "cannot parse"),
    ("i = 'unterminated", "cannot parse"),
    ("i = 1; i = 2", "one condition"),
    ("nope = 1", "unknown column 'nope'"),
    ("t.i = 1", "qualified"),
    ("i = Name", "two columns"),
    ("1 = 2", "column with a literal"),
    ("i + 1 = 2", "column with a literal"),
    ("i = 1.5", "not an integer"),
    ("tiny = 300", "TINYINT"),
    ("i = 'abc'", "INT"),
    ("Name = 5", "quote it"),
    ("p = 1.234", "decimal places"),
    ("d = '2024-13-01'", "DATE"),
    ("d = 5", "DATE"),
    ("flag = 1.5", "BOOLEAN"),
    ("i = TRUE", "INT"),
    ("i LIKE 'a%'", "only for CHAR / VARCHAR / STRING"),
    ("Name LIKE 'a_'", "not pushed down by Paimon"),
    ("Name LIKE 'a%b%'", "not pushed down by Paimon"),
    ("Name LIKE '%'", "not pushed down by Paimon"),
    ("Name LIKE 'a\\%'", "escape character"),
    ("Name LIKE 'a%' ESCAPE '!'", "ESCAPE clause is not pushed down"),
    ("Name ILIKE 'a%'", "ILIKE is not pushed down"),
    ("Name NOT LIKE 'a%'", "has no negation"),
    ("NOT (Name LIKE '%a' OR i = 1)", "has no negation"),
    ("NOT contains(Name, 'a')", "has no negation"),
    ("Name LIKE 5", "string literal"),
    ("Name LIKE i", "string literal"),
    ("bin LIKE 'a%'", "BYTES"),
    ("i IN (SELECT 1)", "IN needs"),
    ("i IS TRUE", "IS [NOT] NULL"),
    ("i", "not BOOLEAN"),
    ("TRUE", "unsupported construct"),
    ("i = CAST(1 AS ARRAY<INT>)", "CAST"),
    ("i = abs(1)", "literal"),
])
def test_errors(sql: str, message: str) -> None:
    with pytest.raises(PredicateError, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
        parse_where(sql, SCHEMA)
    assert isinstance(info.value, IndexCoreError)


def test_to_sql_round_trips() -> None:
    cases = [
        "i = 5", "i IN (1, 2)", "i NOT BETWEEN -1 AND 3", "Name = 'it''s'", "d = DATE '2024-04-17'",
        "t = TIME '10:00:01.250'", "ts = TIMESTAMP '1969-12-31 23:59:59.999999999'",
        "ltz >= TIMESTAMP '2024-01-01 02:00:00+02:00'", "p BETWEEN 0 AND 5000.5", "flag",
        "bin = X'00ff'", "dbl = CAST('NaN' AS DOUBLE)", "f < 0.1", "dbl = -0.0",
        "NOT (i = 1 OR (Name IS NULL AND d IS NOT NULL))", "`a b` = 1", "i = NULL",
        "Name LIKE 'it''s%'", "Name LIKE '%x' OR ch LIKE '%y%'", "startswith(Name, 'a_b')",
        "contains(Name, '')", "endswith(Name, 'a\\%')", "Name LIKE NULL",
    ]
    for sql in cases:
        pred = parse_where(sql, SCHEMA)
        text = predicate_to_sql(pred, SCHEMA)
        assert _key(parse_where(text, SCHEMA)) == _key(pred), (sql, text)
    assert str(leaf("equal", "i", 5)) == "i = 5"
    # a literal LIKE can spell prints as LIKE; one with a wildcard, empty or NULL as Spark's function
    assert str(leaf("startsWith", "Name", "a")) == "Name LIKE 'a%'"
    assert str(leaf("endsWith", "Name", "it's")) == "Name LIKE '%it''s'"
    assert str(leaf("contains", "Name", "a")) == "Name LIKE '%a%'"
    assert str(leaf("contains", "Name", "a_")) == "contains(Name, 'a_')"
    assert str(leaf("startsWith", "Name", "")) == "startswith(Name, '')"
    assert str(leaf("endsWith", "Name", None)) == "endswith(Name, NULL)"
    assert str(parse_where("i = 1 AND (i = 2 OR i IS NULL)", SCHEMA)) == "i = 1 AND (i = 2 OR i IS NULL)"


def _key(pred: object) -> object:
    """Structural key in which NaN equals NaN and -0.0 differs from 0.0 (as the indexes see them)."""
    if isinstance(pred, Compound):
        return (pred.function, tuple(_key(c) for c in pred.children))
    lits = tuple(("f", struct.pack(">d", v)) if isinstance(v, float) else (type(v).__name__, v)
                 for v in pred.literals)
    return (pred.function, pred.field, lits)


def test_predicate_from_json_container_forms(golden: Path) -> None:
    meta = json.loads((golden / "container" / "container_a.json").read_text(encoding="utf-8"))
    schema = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    by_id = {p["id"]: predicate_from_json(p["predicate"], schema) for p in meta["predicates"]}
    assert by_id["id_eq_present"] == leaf("equal", "id", 1000000974037)
    assert by_id["ts_eq_present"] == leaf("equal", "ts", Timestamp(1714535200397, 0))
    # DATE literals_raw written in display form are read from the display text
    d_leaf = by_id["ts_ge_and_d_eq"].children[1]
    assert d_leaf == leaf("equal", "d", days("2024-04-17"))
    price = by_id["cat_or_price"].children[1]
    assert price == leaf("greaterThan", "price", Decimal("18500.00"))
    assert by_id["price_between_and_score"].children[1] == leaf("lessThan", "score", -5.0)
    with pytest.raises(PredicateError):
        predicate_from_json({"op": "like", "field": "id", "literals": [1]}, schema)
    with pytest.raises(PredicateError):
        predicate_from_json({"op": "between", "field": "id", "literals": [1]}, schema)
    with pytest.raises(PredicateError, match="unknown column"):
        predicate_from_json({"op": "equal", "field": "zz", "literals": [1]}, schema)


def test_every_golden_predicate_round_trips_through_sql(golden: Path) -> None:
    """Each golden JSON tree, printed as SQL and parsed back, is the same predicate."""
    manifest = json.loads((golden / "single_manifest.json").read_text(encoding="utf-8"))
    count = 0
    for vector in manifest["vectors"]:
        meta = json.loads((golden / "single" / f"{vector['id']}.json").read_text(encoding="utf-8"))
        schema = {"c": parse_type(meta["column"]["type"])}
        for case in meta["predicates"]:
            pred = predicate_from_json(case["predicate"], schema)
            text = predicate_to_sql(pred, schema)
            assert _key(parse_where(text, schema)) == _key(pred), (vector["id"], case["id"], text)
            count += 1
    assert count > 20000


@pytest.mark.parametrize(("sql", "message"), [
    # each of these escaped as RecursionError / ValueError, or burned a minute of CPU, before
    ("(" * 3000 + "i = 1" + ")" * 3000, "nests 3000 levels"),
    ("NOT " * 3000 + "i = 1", "nests 3000 levels"),
    ("(NOT " * 20 + "i = 1" + ")" * 20, "nests 40 levels"),
    ("i = " + "- " * 200 + "1", "signs in a row"),
    ("i = 1e9999", "out of range"),
    ("i = 1e999999", "out of range"),
    ("dbl = 1e9999", "out of range"),
    ("p = 1e9999", "out of range"),
    ("i = 1e-9999", "out of range"),
    ("i = 1e400", "INT: out of range"),
    ("i = 1" + "0" * 200, "longer than"),
    ("i > CAST('NaN' AS DOUBLE)", "INT has no NaN value"),
    ("big < CAST('Infinity' AS DOUBLE)", "BIGINT has no Infinity value"),
    ("p = CAST('-Infinity' AS DOUBLE)", "has no -Infinity value"),
    ("i = CAST(2.5 AS DOUBLE)", "not an integer"),
    ("dbl = '1e999999'", "out of range for DOUBLE"),
    ("f = 1e39", "FLOAT"),
    ("i IN (" + ", ".join(["1"] * 40_000) + ")", "longer than"),
], ids=lambda v: v[:40])
def test_bounded_sql_and_literal_conversions(sql: str, message: str) -> None:
    """Hostile WHERE text ends in our PredicateError, never in Python's own errors."""
    with pytest.raises(PredicateError, match=message):
        parse_where(sql, SCHEMA)


def test_bounds_leave_ordinary_conditions_alone() -> None:
    assert parse_where("(" * 20 + "i = 1" + ")" * 20, SCHEMA) == leaf("equal", "i", 1)
    # a long flat AND chain is built without recursing down sqlglot's left-deep tree
    got = parse_where(" AND ".join(f"i <> {n}" for n in range(3000)), SCHEMA)
    assert len(got.children) == 3000 and got.children[-1] == leaf("notEqual", "i", 2999)
    assert parse_where("dbl < 1e300", SCHEMA) == leaf("lessThan", "dbl", 1e300)
    assert parse_where("dbl = CAST('-Infinity' AS DOUBLE)", SCHEMA) == leaf("equal", "dbl", -math.inf)
    assert parse_where("p = CAST(0.1 AS DOUBLE)", SCHEMA) == leaf("equal", "p", Decimal("0.10"))
    # NaN compares like Java's Double.compare on DOUBLE columns: above every other value
    nan = parse_where("dbl > CAST('NaN' AS DOUBLE)", SCHEMA)
    assert nan.function.name == "greaterThan" and math.isnan(nan.literals[0])


def test_functions_are_types() -> None:
    """Negation, arity, null semantics and SQL belong to the function; names are only for JSON."""
    from indexcore.expr import EQUAL, IN, LEAF_FUNCTIONS, LESS_THAN, NOT_IN, Equal, leaf_function

    for name, fn in LEAF_FUNCTIONS.items():
        if name in ("startsWith", "endsWith", "contains"):
            assert fn.negate() is None  # Paimon's Optional.empty(): NOT LIKE is not pushed down
        else:
            assert fn.negate().negate() is fn and fn.negate() is not fn
        assert leaf_function(name) is fn
        assert pickle.loads(pickle.dumps(fn)) is fn
    assert isinstance(leaf("equal", "i", 1).function, Equal) and leaf("equal", "i", 1).function is EQUAL
    assert IN.negate() is NOT_IN and LESS_THAN.reverse().name == "greaterThan"
    assert pickle.loads(pickle.dumps(parse_where("i = 1 OR i IN (2, 3)", SCHEMA))) == \
        parse_where("i = 1 OR i IN (2, 3)", SCHEMA)
    for bad in (lambda: Leaf("between", "i", (1,)), lambda: Leaf("in", "i", ()),
                lambda: Leaf("isNull", "i", (1,)), lambda: Leaf("like", "i", ("a",)),
                lambda: Compound("xor", ())):
        with pytest.raises(PredicateError):
            bad()


@pytest.mark.parametrize("obj", [
    {"op": ["and"]}, {"op": "and", "children": 5}, {"op": "equal", "field": 3, "literals": [1]},
    {"op": "equal"}, {"op": "equal", "field": "i", "literals": 5}, {"op": {}},
    {"op": "equal", "field": "i", "literals": [1], "literals_raw": [1, 2]},
])
def test_predicate_from_json_rejects_malformed_trees(obj) -> None:
    with pytest.raises(PredicateError):
        predicate_from_json(obj, SCHEMA)


def test_nesting_counts_what_nests() -> None:
    """Many NOT IN / IS NOT NULL / NOT leaves side by side do not nest; stacked NOTs do."""
    flat = " AND ".join(f"i NOT IN ({n}) AND Name IS NOT NULL AND NOT i = {n}" for n in range(40))
    assert len(parse_where(flat, SCHEMA).children) == 120
    with pytest.raises(PredicateError, match="nests 25 levels"):
        parse_where("i = 1 AND " + "NOT " * 25 + "i = 2", SCHEMA)


_TOKENS = ["i", "big", "tiny", "Name", "d", "ts", "ltz", "p", "f", "dbl", "flag", "bin", "`a b`", "(", ")", "(",
           ")", "NOT", "AND", "OR", "=", "<>", "<", ">=", "IN", "BETWEEN", "IS", "NULL", "TRUE", ",", "-", "1",
           "-0", "2.5", "1e308", "1e309", "1e-400", "9223372036854775808", "1e999999", "'x'", "'2024-02-30'",
           "'NaN'", "X'0'", "X'00'", "DATE '2024-01-01'", "TIMESTAMP '9999-12-31 23:59:59'", "CAST(",
           " AS INT)", " AS DOUBLE)", " AS DECIMAL(38, 38))", " AS TIMESTAMP(9))", " AS TINYINT)",
           "CAST('NaN' AS DOUBLE)", "CAST('Infinity' AS FLOAT)", "LIKE", "'x%'", "'%x'", "ESCAPE", "ILIKE",
           "startswith(", "contains(", ";", "'", "`", "*", "abs("]


_COLUMNS = ["i", "big", "tiny", "Name", "ch", "d", "t", "ts", "ltz", "p", "f", "dbl", "flag", "bin", "`a b`"]
_LITERALS = ["1", "-1", "-0", "2.5", "300", "1e308", "1e309", "1e-400", "-9223372036854775808", "'x'", "'7'",
             "'2024-02-29'", "'10:00:01'", "'NaN'", "X'00ff'", "TRUE", "NULL", "DATE '2024-01-01'",
             "TIME '10:00:01.250'", "TIMESTAMP '1969-12-31 23:59:59.999999999'", "CAST('NaN' AS DOUBLE)",
             "CAST('-Infinity' AS FLOAT)", "CAST(1.5 AS DECIMAL(5, 1))", "CAST('12' AS INT)", "CAST(2.5 AS DOUBLE)"]
_PATTERNS = ["'x%'", "'%x'", "'%x%'", "'x%y'", "'x'", "'%'", "''", "'x_'", "'%x%y'", "'it''s%'", "'\\%'"]
_LEAVES = st.one_of(
    st.tuples(st.sampled_from(_COLUMNS), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]),
              st.sampled_from(_LITERALS)).map(" ".join),
    st.tuples(st.sampled_from(_COLUMNS), st.sampled_from(["IN", "NOT IN"]),
              st.lists(st.sampled_from(_LITERALS), min_size=1, max_size=3).map(", ".join)).map(
        lambda t: f"{t[0]} {t[1]} ({t[2]})"),
    st.tuples(st.sampled_from(_COLUMNS), st.sampled_from(["BETWEEN", "NOT BETWEEN"]),
              st.sampled_from(_LITERALS), st.sampled_from(_LITERALS)).map(lambda t: f"{t[0]} {t[1]} {t[2]} AND {t[3]}"),
    st.tuples(st.sampled_from(_COLUMNS), st.sampled_from(["IS NULL", "IS NOT NULL"])).map(" ".join),
    st.sampled_from(["flag", "NOT flag"]),
    st.tuples(st.sampled_from(_COLUMNS), st.sampled_from(["LIKE", "NOT LIKE"]),
              st.sampled_from(_PATTERNS + _LITERALS)).map(" ".join),
    st.tuples(st.sampled_from(["startswith", "endswith", "contains"]), st.sampled_from(_COLUMNS),
              st.sampled_from(_PATTERNS + _LITERALS)).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
)
_CONDITIONS = st.recursive(_LEAVES, lambda inner: st.one_of(
    inner.map(lambda c: f"NOT ({c})"),
    st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})")),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_CONDITIONS, st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=40).map(" ".join)))
def test_any_text_ends_in_a_predicate_or_predicate_error(sql) -> None:
    """Any text is a predicate (which prints as SQL that parses back to it) or a PredicateError."""
    try:
        pred = parse_where(sql, SCHEMA)
    except PredicateError:
        return
    assert _key(parse_where(predicate_to_sql(pred, SCHEMA), SCHEMA)) == _key(pred), sql
