"""The workload reader tokenizes each statement once: the tokens its bounds check makes are the
ones sqlglot parses (before, ``sqlglot.parse_one`` tokenized the text again). The trees are
sqlglot's own for the text (truth: ``sqlglot.parse_one`` in the same dialect), and every read's
predicate is what explain parses of its condition (``parse_where``)."""

from __future__ import annotations

import sqlglot
from sqlglot.dialects.dialect import Dialect

from indexcore.analysis import workload
from indexcore.analysis.workload import Query, parse_workload, scans
from indexcore.expr import parse_where
from indexcore.types import parse_type

ROW_TYPE = {"id": parse_type("STRING"), "n": parse_type("INT"), "s": parse_type("STRING")}
TEXTS = ["SELECT * FROM db.t WHERE id = 'a' AND n > 3",
         "SELECT id FROM db.t t JOIN db.u u ON t.id = u.id WHERE t.n BETWEEN 1 AND 9 AND u.x = 2",
         "WITH q AS (SELECT * FROM db.t WHERE s IN ('x', 'y') OR n IS NULL) SELECT * FROM q",
         "SELECT * FROM db.t WHERE NOT (n <> 4) AND s LIKE 'ab%'",
         "n >= 10 AND s IS NOT NULL",
         "SELECT count(*) FROM db.t WHERE id = \"dq\""]


def test_each_statement_is_tokenized_once_and_parsed_as_sqlglot_parses_it(monkeypatch):
    seen: list[str] = []
    tokenize = Dialect.tokenize

    def recording(self, sql, *args, **kwargs):
        seen.append(sql)
        return tokenize(self, sql, *args, **kwargs)

    monkeypatch.setattr(Dialect, "tokenize", recording)
    found, skipped = scans([Query(f"q{i}", t) for i, t in enumerate(TEXTS)], "db.t", ROW_TYPE)
    assert not skipped and len(found) == len(TEXTS)
    for text in TEXTS:  # a bare condition is parsed as explain parses it, then by Spark's dialect for its filters
        assert seen.count(text) == (2 if text == TEXTS[4] else 1), text
    monkeypatch.setattr(Dialect, "tokenize", tokenize)
    for text in TEXTS[:4] + TEXTS[5:]:
        assert workload._parse(text) == sqlglot.parse_one(text, read="spark")
    for scan in found:
        assert scan.predicate == parse_where(scan.where, ROW_TYPE), scan.where


def test_statements_one_dialect_refuses_are_parsed_in_the_next():
    """A statement Spark's dialect cannot parse goes to the next (as before); one none parses is a skip."""
    found, skipped = scans(parse_workload("SELECT * FROM db.t WHERE n = 1 LIMIT 5 OFFSET\n"
                                          "SELECT * FROM db.t WHERE (n = 1\n"), "db.t", ROW_TYPE)
    assert sorted([s.query.name for s in found] + [s["query"] for s in skipped]) == ["q1", "q2"]
    assert any("cannot parse" in s["reason"] for s in skipped)


def test_each_conjunct_is_parsed_as_explain_parses_it_once(monkeypatch):
    """A log repeats its conditions in other shapes (``SELECT *``, ``count(*)``, an alias): each
    conjunct's text is parsed once and shared; one that cannot be parsed is noted the same way in
    every query (truth: ``parse_where`` of each read's condition, and its message)."""
    calls: list[str] = []
    real = workload.parse_where

    def counting(text, row_type):
        calls.append(text)
        return real(text, row_type)

    monkeypatch.setattr(workload, "parse_where", counting)
    shapes = ("SELECT * FROM db.t WHERE {}", "SELECT count(*) FROM db.t WHERE {}", "SELECT id FROM db.t t WHERE {}")
    conditions = ("n > 3 AND s = 'x'", "id = 'a'", "n = 'not a number' AND id = 'b'")
    queries = [Query(f"q{i}", shape.format(c)) for i, (shape, c) in
               enumerate((s, c) for c in conditions for s in shapes)]
    found, skipped = scans(queries, "db.t", ROW_TYPE)
    assert not skipped and len(found) == 9
    assert sorted(calls) == sorted(["n > 3", "s = 'x'", "id = 'a'", "n = 'not a number'", "id = 'b'"])
    monkeypatch.setattr(workload, "parse_where", real)
    for scan in found:
        assert scan.predicate == parse_where(scan.where, ROW_TYPE), scan.where
    bad = [s for s in found if "id = 'b'" in s.where]
    assert len(bad) == 3 and len({s.notes for s in bad}) == 1 and "not pushed down: n = 'not a number'" in bad[0].notes[0]


def _copied(node, columns):
    """The conjunct always copied, then unqualified and respelled (the rule before the shortcut)."""
    node = node.copy()
    for col in node.find_all(workload.exp.Column):
        for part in ("table", "db", "catalog"):
            col.set(part, None)
        name = columns.resolve(col.name)
        if name is not None and name != col.name:
            col.set("this", workload.exp.to_identifier(name, quoted=not name.isidentifier()))
    return node


def test_conjuncts_left_as_they_are_read_as_their_copies(monkeypatch):
    """A conjunct with nothing to unqualify or respell is not copied; every read (condition text,
    filters, notes, predicate) is the one made from a copy, on qualified, aliased, respelled, NOT,
    CAST, IN, BETWEEN, IS NULL and LIKE conjuncts."""
    texts = ["SELECT * FROM db.t WHERE id = 'a' AND NOT (n <> 4) AND CAST(n AS STRING) = '3'",
             "SELECT * FROM db.t t WHERE t.n BETWEEN 1 AND 9 AND t.s IN ('x', 'y') AND s IS NULL",
             "SELECT * FROM db.t WHERE ID = 'b' AND (N > 1 OR s LIKE 'ab%') AND NOT s IS NOT NULL",
             "SELECT * FROM db.t AS q WHERE q.ID = 'c' AND db.t.n < 0 AND n = 'not a number'",
             "n >= 10 AND NOT (s = 'z')"]
    queries = [Query(f"q{i}", t) for i, t in enumerate(texts)]
    got = scans(queries, "db.t", ROW_TYPE)
    monkeypatch.setattr(workload, "_strip_qualifiers", _copied)
    want = scans(queries, "db.t", ROW_TYPE)
    assert got[1] == want[1]
    assert [(s.where, s.filters, s.notes, s.predicate) for s in got[0]] == \
        [(s.where, s.filters, s.notes, s.predicate) for s in want[0]]
    assert got[0][0].where == "(id = 'a') AND (NOT (n <> 4))" and len(got[0][0].notes) == 1  # CAST: not pushed down
