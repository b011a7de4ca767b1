"""Paimon's string patterns (``startsWith`` / ``endsWith`` / ``contains``, Spark's ``LIKE 'x%'``,
``'%x'``, ``'%x%'``): their row test, their statistics test, the file-index readers' answers
and the workload's push-down. Truth by construction: hand-written expected rows, statistics
built from the rows, and Paimon 1.0's readers (only ``EmptyFileIndexReader`` overrides the three
visits, with SKIP; bloom, bitmap, BSI and range-bitmap inherit REMAIN)."""

from __future__ import annotations

import functools

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexcore.analysis.workload import Query, scans
from indexcore.errors import PredicateError
from indexcore.expr import CONTAINS, ENDS_WITH, STARTS_WITH, Leaf, java_compare, negate, parse_where
from indexcore.expr.rows import mask
from indexcore.formats.base import REMAIN, SKIP
from indexcore.formats.container import EmptyFileIndexReader
from indexcore.formats.registry import new_writer, open_reader
from indexcore.io import BytesSource
from indexcore.scan.stats import test_predicate_on_stats as stats_may_match
from indexcore.types import parse_type

STRING = parse_type("STRING")
ROWS = ["abc", "xab", "ab", None, "é日ab", "", "a%b", "b", "ABC"]


def _mask(sql: str) -> list[bool]:
    table = pa.table({"s": pa.array(ROWS, pa.string())})
    return mask(table, parse_where(sql, {"s": STRING}), {"s": STRING}).tolist()


def test_rows_match_by_construction() -> None:
    assert _mask("s LIKE 'ab%'") == [True, False, True, False, False, False, False, False, False]
    assert _mask("s LIKE '%ab'") == [False, True, True, False, True, False, False, False, False]
    assert _mask("s LIKE '%ab%'") == [True, True, True, False, True, False, False, False, False]
    assert _mask("s LIKE '%日%'") == [False, False, False, False, True, False, False, False, False]
    # the literal is not a pattern: '%' inside it is an ordinary character, '' matches every non-NULL
    assert _mask("startswith(s, 'a%')") == [False, False, False, False, False, False, True, False, False]
    assert _mask("contains(s, '')") == [True, True, True, False, True, True, True, True, True]
    # case-sensitive, NULL never matches, a NULL literal matches nothing (null-false functions)
    assert _mask("s LIKE 'abc%'") == [True] + [False] * 8
    assert _mask("endswith(s, NULL)") == [False] * 9
    assert _mask("s LIKE '%b' OR s IS NULL") == [False, True, True, True, True, False, True, True, False]


def test_row_test_on_one_value() -> None:
    assert STARTS_WITH.test("abc", ("ab",)) and not STARTS_WITH.test("xab", ("ab",))
    assert ENDS_WITH.test("xab", ("ab",)) and not ENDS_WITH.test("abx", ("ab",))
    assert CONTAINS.test("xaby", ("ab",)) and not CONTAINS.test("a b", ("ab",))
    assert not STARTS_WITH.test(None, ("",)) and not CONTAINS.test("a", (None,))
    assert STARTS_WITH.test(b"\x00\x01", (b"\x00",))  # BYTES values compare as bytes
    with pytest.raises(PredicateError, match="tests strings"):
        STARTS_WITH.test(5, ("5",))


@pytest.mark.parametrize(("lo", "hi", "prefix", "may_match"), [
    ("b", "c", "a", False),  # every value sorts after any 'a...' value
    ("a", "az", "b", False),  # every value sorts before 'b'
    ("ac", "b", "ab", False),  # min 'ac' is past every 'ab...' value
    ("aa", "c", "ab", True),
    ("abc", "abd", "ab", True),  # min and max both start with the prefix
    ("a", "ab", "ab", True),  # max equals the prefix
    ("ab", "ab", "ab", True),
    ("", "\uffff", "中", True),
])
def test_starts_with_prunes_by_min_max(lo, hi, prefix, may_match) -> None:
    assert STARTS_WITH.test_stats(10, lo, hi, 0, (prefix,)) is may_match


def test_ends_with_and_contains_never_prune_by_min_max() -> None:
    for fn in (ENDS_WITH, CONTAINS):
        assert fn.test_stats(10, "b", "c", 0, ("zzz",)) is True
        assert fn.test_stats(10, "b", "c", None, ("zzz",)) is True
        assert fn.test_stats(10, None, None, 10, ("a",)) is False  # only NULLs
        assert fn.test_stats(10, "b", "c", 3, (None,)) is False  # NULL literal, null count known
        assert fn.test_stats(10, "b", "c", None, (None,)) is True  # Paimon keeps it without a null count
    assert STARTS_WITH.test_stats(10, None, None, 10, ("a",)) is False
    assert STARTS_WITH.test_stats(10, None, "c", 2, ("z",)) is True  # unknown statistics keep the file


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9\u4e2d", max_size=4), min_size=1, max_size=6),
       st.text(alphabet="ab\u00e9\u4e2d", max_size=3), st.sampled_from(["startsWith", "endsWith", "contains"]))
def test_stats_never_prune_a_file_holding_a_match(values, literal, op) -> None:
    """Statistics computed from the rows themselves: a file holding a match is always kept."""
    ordered = sorted(values, key=functools.cmp_to_key(java_compare))
    leaf = Leaf(op, "s", (literal,))
    matching = any(leaf.function.test(v, leaf.literals) for v in values)
    kept = stats_may_match(leaf, len(values), {"s": (ordered[0], ordered[-1], 0)})
    if matching:
        assert kept
    if op != "startsWith":
        assert kept
    elif not kept:  # the prefix sorts outside [min, max] and neither end starts with it
        assert not ordered[0].startswith(literal) and not ordered[-1].startswith(literal)


def _reader(index_type: str, type_text: str, values: list):
    dtype = parse_type(type_text)
    writer = new_writer(index_type, dtype, {})
    for v in values:
        writer.write(v)
    return open_reader(index_type, dtype, BytesSource(writer.serialized_bytes(), f"{index_type}.index"), {})


@pytest.mark.parametrize(("index_type", "type_text", "values"), [
    ("bloom-filter", "STRING", ["abc", "x", None]),
    ("bitmap", "STRING", ["abc", "x", None]),
    ("range-bitmap", "STRING", ["abc", "x", None]),
    ("bsi", "BIGINT", [1, 2, None]),
])
def test_file_indexes_answer_remain(index_type, type_text, values) -> None:
    """Paimon 1.0's bloom, bitmap, BSI and range-bitmap readers inherit REMAIN for the three."""
    reader = _reader(index_type, type_text, values)
    for fn in (STARTS_WITH, ENDS_WITH, CONTAINS):
        for literal in ("zzz", "a"):
            assert reader.visit(Leaf(fn, "c", (literal,))) is REMAIN, (index_type, fn)


def test_empty_index_skips_the_patterns() -> None:
    reader = EmptyFileIndexReader()
    for fn in (STARTS_WITH, ENDS_WITH, CONTAINS):
        assert reader.visit(Leaf(fn, "c", ("a",))) is SKIP


def test_no_negation_as_in_paimon() -> None:
    """``Optional.empty()`` from Paimon's negate: NOT over a pattern cannot be pushed down."""
    schema = {"s": STRING, "i": parse_type("INT")}
    pred = parse_where("s LIKE 'a%' AND i = 1", schema)
    with pytest.raises(PredicateError, match="startsWith has no negation"):
        negate(pred)
    with pytest.raises(PredicateError, match="is not pushed down by Paimon"):
        parse_where("NOT (s LIKE 'a%' AND i = 1)", schema)
    assert negate(parse_where("NOT s LIKE 'a'", schema)) == Leaf("equal", "s", ("a",))


def test_workload_pushes_prefix_like_down() -> None:
    """A LIKE Spark hands Paimon is part of the scan's predicate; one it keeps to itself is a note."""
    columns = {"s": STRING, "i": parse_type("INT")}
    found, skipped = scans([Query("q", "SELECT * FROM db.t WHERE s LIKE 'ab%' AND s LIKE 'a_c' AND i = 1")],
                           "db.t", columns)
    assert len(found) == 1 and not skipped
    scan = found[0]
    assert str(scan.predicate) == "s LIKE 'ab%' AND i = 1"
    assert any("a_c" in note and "not pushed down" in note for note in scan.notes)
    assert not any("ab%" in note for note in scan.notes)


def test_starts_and_ends_with_pattern_splits_as_spark_pushes_it() -> None:
    """``LIKE 'a%b'``: Spark hands Paimon ``startsWith('a')`` and ``endsWith('b')`` as conjuncts and
    keeps its length test (tests/test_spark_like.py checks this against Spark); inside an OR or
    negated nothing of it is pushed."""
    columns = {"s": STRING, "i": parse_type("INT")}
    pred = parse_where("s LIKE 'a%b' AND i = 1", columns)
    assert str(pred) == "s LIKE 'a%' AND s LIKE '%b' AND i = 1"
    # the pushed conjuncts keep every row LIKE 'a%b' matches (hand-written: 'a%b' of ROWS)
    assert _mask("s LIKE 'a%b'") == [False, False, True, False, False, False, True, False, False]
    assert _mask("startswith(s, 'a') AND endswith(s, 'b')") == _mask("s LIKE 'a%b'")
    found, _ = scans([Query("q", "SELECT * FROM db.t WHERE s LIKE 'ab%yz' AND i = 1"),
                      Query("r", "SELECT * FROM db.t WHERE s LIKE 'a%b' OR i = 1")], "db.t", columns)
    assert str(found[0].predicate) == "(s LIKE 'ab%' AND s LIKE '%yz') AND i = 1" and not found[0].notes
    assert found[1].predicate is None and any("inside OR is not pushed down" in n for n in found[1].notes)
    for refused in ("s NOT LIKE 'a%b'", "NOT (s LIKE 'a%b' AND i = 1)", "s LIKE 'a%%b'", "s LIKE 'a_%b'",
                    "s LIKE 'a\\\\%b'"):
        with pytest.raises(PredicateError, match="not pushed down"):
            parse_where(refused, columns)
