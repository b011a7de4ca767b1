"""The vectorized row evaluator against the per-row oracle (``tests/row_oracle.py``: each leaf
function's ``LeafFunction.test`` on one value at a time).

Random tables of every scalar type (nulls, NaN, -0.0, +-inf, empty and non-ASCII strings,
timestamp precisions 3/6/9, decimals, dates, booleans) and random and/or trees of every leaf
function: the vectorized mask must equal the oracle over the same rows read back as internal
values, and it must not take the per-value path for these types.
"""

from __future__ import annotations

import decimal
import functools
import math
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from row_oracle import predicate_on_row, row_test

from indexcore.errors import PredicateError
from indexcore.expr import LEAF_FUNCTIONS, Compound, Leaf, StringPattern, java_compare, negate
from indexcore.expr import leaves as all_leaves
from indexcore.expr import rows as data
from indexcore.expr.rows import filter_table, mask, row_matches, rows_matching
from indexcore.scan.stats import test_predicate_on_stats as stats_may_match
from indexcore.types import DataField, Timestamp, parse_type
from indexcore.types.values import from_internal, to_internal
from indexcore.warehouse.model import TableSchema

TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BYTES", "BOOLEAN",
         "DATE", "TIME", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)",
         "TIMESTAMP(6) WITH LOCAL TIME ZONE", "DECIMAL(10, 2)", "DECIMAL(18, 0)", "DECIMAL(38, 4)")
SPECIAL_FLOATS = (math.nan, -math.nan, -0.0, 0.0, math.inf, -math.inf, 1.0, -1.0)
TEXT = st.sampled_from(["", "a", "b", "ab", "é", "ß", "中", "😀", "\x00", "\uffff", "Z"])
MILLIS = 10 ** 12


def _int_values(bits: int) -> st.SearchStrategy:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1, 1])


def _timestamps(precision: int, wide: bool = False) -> st.SearchStrategy:
    step = 10 ** (9 - precision)
    bound = MILLIS * 100 if wide else MILLIS
    return st.builds(lambda ms, ns: Timestamp(ms, ns // step * step),
                     st.integers(-bound, bound) | st.integers(-3, 3), st.integers(0, 999_999))


def _decimals(precision: int, scale: int, places: int | None = None) -> st.SearchStrategy:
    limit = decimal.Decimal("9" * (precision - scale) + "." + "9" * scale)
    places = scale if places is None else places
    # hypothesis rounds its bounds to 28 digits; keep only values that fit DECIMAL(p, s)
    return st.decimals(-limit, limit, allow_nan=False, allow_infinity=False, places=places).filter(
        lambda v: abs(v) <= limit)


def values(dtype) -> st.SearchStrategy:
    """Internal values of ``dtype`` (what a column of that type can hold)."""
    r = dtype.root
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return _int_values({"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[r])
    if r == "FLOAT":
        return st.floats(width=32) | st.sampled_from(SPECIAL_FLOATS)
    if r == "DOUBLE":
        return st.floats() | st.sampled_from(SPECIAL_FLOATS)
    if r == "VARCHAR":
        return st.lists(TEXT, max_size=3).map("".join) | st.text(max_size=4).filter(_utf8)
    if r == "VARBINARY":
        return st.binary(max_size=3) | st.sampled_from([b"", b"\x00", b"\xff", b"\x7f\x80"])
    if r == "BOOLEAN":
        return st.booleans()
    if r == "DATE":
        return st.integers(-700_000, 2_900_000) | st.integers(-3, 3)
    if r == "TIME":
        return st.integers(0, 86_399_999)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamps(dtype.precision)
    return _decimals(dtype.precision, dtype.scale)


def literals(dtype) -> st.SearchStrategy:
    """Literals for ``dtype`` columns, including ones finer or wider than the column holds."""
    r = dtype.root
    base = values(dtype)
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return base | st.integers(-(1 << 70), 1 << 70)
    if r in ("FLOAT", "DOUBLE"):
        return base | st.floats() | st.integers(-(1 << 60), 1 << 60)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return base | _timestamps(9) | _timestamps(9, wide=True)
    if r == "DECIMAL":
        edges = [10 ** (dtype.precision - dtype.scale), 10 ** 38, 10 ** 39]
        return (base | _decimals(dtype.precision + 3, dtype.scale + 2, dtype.scale + 2)
                | st.integers(-(10 ** 40), 10 ** 40) | st.sampled_from(edges + [-e for e in edges])
                | st.decimals(allow_nan=False, allow_infinity=False))
    return base


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _near(dtype, v) -> list:
    """Literals just beside a column value (the ones that catch off-by-one bounds)."""
    r = dtype.root
    if isinstance(v, bool):
        return [not v]
    if r in ("FLOAT", "DOUBLE"):
        return [math.nextafter(v, math.inf), math.nextafter(v, -math.inf), -v]
    if isinstance(v, int):
        return [v - 1, v + 1]
    if isinstance(v, Timestamp):
        return [Timestamp.from_nanos(v.to_nanos() + d) for d in (-1, 1, -1000, 1000)]
    if isinstance(v, decimal.Decimal):
        tiny = decimal.Decimal(1).scaleb(-(dtype.scale + 1))
        return [v + tiny, v - tiny, v + tiny * 10]
    if isinstance(v, str):
        return [v + "\x00", v[:-1], v + "\U0010ffff"]
    return [v + b"\x00", v[:-1], v + b"\xff"]


@st.composite
def tables(draw, first: str):
    """Column ``c0`` of type ``first`` plus up to two random scalar columns, all with nulls."""
    names = [f"c{i}" for i in range(draw(st.integers(1, 3)))]
    types = {n: parse_type(first if n == "c0" else draw(st.sampled_from(TYPES))) for n in names}
    n = draw(st.integers(0, 40))
    columns = {}
    for name in names:
        value = values(types[name])
        column = draw(st.lists(st.one_of(value, value, value, st.none()), min_size=n + 1, max_size=n + 1))
        columns[name] = from_internal(column, types[name])
    table = pa.table(columns)
    # drop a leading row so arrays start at an offset, and sometimes split them into chunks
    table = table.slice(1)
    if n > 2 and draw(st.booleans()):
        cut = draw(st.integers(1, n - 1))
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    schema = TableSchema(0, tuple(DataField(i, nm, types[nm]) for i, nm in enumerate(names)))
    return table, schema


@st.composite
def leaves(draw, table: pa.Table, schema: TableSchema):
    name = draw(st.sampled_from(["c0", "c0", "c0", *schema.field_names]))
    dtype = schema.field(name).type
    present = [v for v in to_internal(table.column(name), dtype) if v is not None]
    literal = literals(dtype)
    if present:
        literal = st.one_of(literal, st.sampled_from(present),
                            st.sampled_from(present).flatmap(lambda v: st.sampled_from(_near(dtype, v))))
    # startsWith / endsWith / contains test strings only (Paimon casts to BinaryString); pieces of
    # the column's values are the literals that match
    functions = [f for f in LEAF_FUNCTIONS.values() if dtype.is_string or not isinstance(f, StringPattern)]
    function = draw(st.sampled_from(functions))
    if isinstance(function, StringPattern) and present:
        literal = st.one_of(literal, st.sampled_from(present).flatmap(
            lambda v: st.tuples(st.integers(0, len(v)), st.integers(0, len(v))).map(lambda ij: v[min(ij):max(ij)])))
    maybe_null = st.one_of(literal, literal, literal, literal, literal, st.none())
    arity = function.arity
    lits = tuple(draw(st.lists(maybe_null, min_size=1, max_size=7) if arity is None else
                      st.lists(maybe_null, min_size=arity, max_size=arity)))
    return Leaf(function, name, lits)


@st.composite
def predicates(draw, table: pa.Table, schema: TableSchema, depth: int = 2):
    if depth == 0 or draw(st.booleans()):
        return draw(leaves(table, schema))
    children = draw(st.lists(predicates(table, schema, depth - 1), min_size=1, max_size=3))
    return Compound(draw(st.sampled_from(("and", "or"))), tuple(children))


def predicate_mask(table: pa.Table, pred, schema: TableSchema) -> list[bool]:
    return mask(table, pred, schema).tolist()


def _rows(table: pa.Table, schema: TableSchema) -> list[dict]:
    cols = {f.name: to_internal(table.column(f.name), f.type) for f in schema.fields}
    return [{n: cols[n][i] for n in cols} for i in range(table.num_rows)]


def _no_fallback(*_args, **_kwargs):
    raise AssertionError("scalar column fell back to the per-value path")


@pytest.mark.parametrize("first", TYPES)
@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_strategy=st.data())
def test_vectorized_mask_matches_row_test(first, data_strategy):
    table, schema = data_strategy.draw(tables(first))
    pred = data_strategy.draw(predicates(table, schema))
    expected = [predicate_on_row(pred, row) for row in _rows(table, schema)]
    with mock.patch.object(data._Columns, "per_value", _no_fallback):
        got = predicate_mask(table, pred, schema)
        kept = filter_table(table, pred, schema)
    assert got == expected, pred
    assert kept.num_rows == sum(expected)
    wanted = [r for r, ok in zip(_rows(table, schema), expected, strict=True) if ok]
    assert repr(_rows(kept, schema)) == repr(wanted)  # repr: NaN equals itself, -0.0 differs


def _table(type_text: str, column: list):
    dtype = parse_type(type_text)
    schema = TableSchema(0, (DataField(0, "c", dtype),))
    return pa.table({"c": from_internal(column, dtype)}), schema


@pytest.mark.parametrize(("type_text", "column", "leaf"), [
    # an int column against a float literal compares as doubles, like Java
    ("BIGINT", [1, 2, 3, None, (1 << 53) + 1], Leaf("lessThan", "c", (2.5,))),
    ("BIGINT", [1, 2, (1 << 53) + 1, None], Leaf("equal", "c", (float(1 << 53),))),
    ("BOOLEAN", [True, False, None], Leaf("equal", "c", (1,))),
    ("STRING", ["a", "\ud7ff", "\U00010000", "", None], Leaf("lessThan", "c", ("\udc00",))),
    ("TIMESTAMP(3)", [Timestamp(0, 0), Timestamp(1, 0), Timestamp(2, 0)],
     Leaf("greaterThan", "c", (Timestamp(0, 2_000_000),))),
    ("ARRAY<INT>", [[1, 2], [3], None, []], Leaf("equal", "c", ([3],))),
])
def test_fallback_matches_row_test(type_text, column, leaf):
    """Cases with no key form, answered per value by the function's test, match the oracle."""
    table, schema = _table(type_text, column)
    expected = [row_test(leaf, v) for v in to_internal(table.column("c"), schema.field("c").type)]
    assert predicate_mask(table, leaf, schema) == expected


def test_vectorized_edges():
    """Java ordering of floats, and literals finer than the column, without the fallback."""
    with mock.patch.object(data._Columns, "per_value", _no_fallback):
        table, schema = _table("DOUBLE", [math.nan, -0.0, 0.0, math.inf, -math.inf, None, 1.0])
        assert predicate_mask(table, Leaf("equal", "c", (math.nan,)), schema) == \
            [True, False, False, False, False, False, False]
        assert predicate_mask(table, Leaf("lessThan", "c", (0.0,)), schema) == \
            [False, True, False, False, True, False, False]
        assert predicate_mask(table, Leaf("greaterThan", "c", (math.inf,)), schema) == \
            [True, False, False, False, False, False, False]
        assert predicate_mask(table, Leaf("notIn", "c", (1.0, None)), schema) == [False] * 7
        table, schema = _table("TIMESTAMP(3)", [Timestamp(5, 0), Timestamp(6, 0), None])
        finer = Timestamp(5, 1)
        assert predicate_mask(table, Leaf("equal", "c", (finer,)), schema) == [False, False, False]
        assert predicate_mask(table, Leaf("greaterThan", "c", (finer,)), schema) == [False, True, False]
        assert predicate_mask(table, Leaf("lessOrEqual", "c", (finer,)), schema) == [True, False, False]
        table, schema = _table("DECIMAL(10, 2)", [decimal.Decimal("1.50"), decimal.Decimal("-0.01"), None])
        assert predicate_mask(table, Leaf("between", "c", (decimal.Decimal("-0.005"), 2)), schema) == \
            [True, False, False]
        assert predicate_mask(table, Leaf("in", "c", (decimal.Decimal("1.5"),)), schema) == \
            [True, False, False]


def _stats(table: pa.Table, schema: TableSchema) -> dict:
    """Per column: min and max under Java's ``compareTo`` and the null count (a file's stats)."""
    out = {}
    for f in schema.fields:
        present = [v for v in to_internal(table.column(f.name), f.type) if v is not None]
        ordered = sorted(present, key=functools.cmp_to_key(java_compare))
        out[f.name] = (ordered[0] if ordered else None, ordered[-1] if ordered else None,
                       table.num_rows - len(present))
    return out


def _has_null_literal(pred) -> bool:
    return any(None in leaf.literals for leaf in all_leaves(pred))


@pytest.mark.parametrize("first", TYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data_strategy=st.data())
def test_stats_function_types_agree_with_rows(first, data_strategy):
    """Each function's statistics test never prunes a file holding a matching row; one row
    rows of internal values (``rows_matching``, ``row_matches``) answer like the oracle; ``negate()`` is the complement
    on rows without NULLs when no literal is NULL."""
    table, schema = data_strategy.draw(tables(first))
    pred = data_strategy.draw(predicates(table, schema))
    rows = _rows(table, schema)
    answers = [predicate_on_row(pred, row) for row in rows]
    if any(answers):
        assert stats_may_match(pred, table.num_rows, _stats(table, schema)), pred
    assert rows_matching(pred, rows, schema).tolist() == answers, pred
    if rows:
        assert row_matches(pred, rows[0], schema) == answers[0], (pred, rows[0])
    if any(leaf.function.negate() is None for leaf in all_leaves(pred)):
        with pytest.raises(PredicateError, match="has no negation"):
            negate(pred)  # Paimon's Optional.empty(): NOT LIKE is not pushed down
    elif not _has_null_literal(pred):
        flipped = negate(pred)
        for row, answer in zip(rows, answers, strict=True):
            if all(row[name] is not None for name in pred.fields()):
                assert predicate_on_row(flipped, row) is not answer, (pred, row)
