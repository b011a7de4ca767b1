"""A query workload: the SELECTs (or bare WHERE conditions) a team runs, with weights.

File format (text, parsed with sqlglot, never evaluated):

* Statements are separated by ``;`` when the file holds a ``;`` outside quotes and comments
  (a statement may then span lines); otherwise every non-empty line is one statement.
* A statement is a full ``SELECT`` / ``WITH`` query in Spark or Flink SQL, or a bare condition
  (``country = 'NZ' AND amount > 10``, optionally starting with ``WHERE``) that reads the
  table being advised.
* Weight (how often the query runs, default 1): a comment line ``-- weight: 5`` (or
  ``-- count: 5``) before the statement, or a ``5<TAB>`` prefix (the shape of a
  count-then-query log export). ``-- name: daily_nz`` names it (default ``q1``, ``q2``...).

:func:`scans` turns queries into the reads of one table they make: for every ``SELECT`` whose
``FROM`` / ``JOIN`` names the table, the ``WHERE`` conjuncts over that table alone, as SQL text
for :func:`indexcore.scan.explainer.explain`, plus how each column is filtered (equality,
range, null test, other) so an advisor knows which index kinds could answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from indexcore.errors import PredicateError
from indexcore.expr import Predicate, and_all, parse_where
from indexcore.expr.functions import EQUAL, STARTS_WITH
from indexcore.expr.sql import check_sql_bounds, like_function, like_parts
from indexcore.types import DataType
from indexcore.warehouse.table_manifests import gc_paused

EQUALITY, RANGE, NULL_TEST, OTHER = "equality", "range", "null", "other"
#: ``LIKE 'x%'`` / ``startswith`` (a prefix: a range of strings) and ``LIKE '%x'`` / ``'%x%'`` /
#: ``endswith`` / ``contains`` (a pattern no statistic bounds)
PREFIX, PATTERN = "prefix", "pattern"
_DIRECTIVE = re.compile(r"^\s*(weight|count|name)\s*[:=]\s*(\S+)\s*$", re.IGNORECASE)
_COUNT = re.compile(r"\d+(?:\.\d+)?")  # a ``5<TAB>query`` statement's count: all that precedes its first tab
_DIALECTS = ("spark", None, "hive")
# the dialects as sqlglot objects, made once (a name is looked up and a Dialect made per call)
_READERS = tuple(Dialect.get_or_raise(d) for d in _DIALECTS)
_SPARK = _READERS[0]


@dataclass(frozen=True)
class Query:
    """One statement of a workload file: its text, weight, name and first line (1-based)."""

    name: str
    text: str
    weight: float = 1.0
    line: int = 1

    def to_json(self) -> dict:
        return {"name": self.name, "text": self.text, "weight": self.weight, "line": self.line}


@dataclass(frozen=True)
class Scan:
    """One read of the advised table by a query: the condition pushed to it (None: no filter)
    and, per filtered column, how it is filtered."""

    query: Query
    where: str | None
    filters: dict[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)
    notes: tuple[str, ...] = ()
    # the condition parsed as explain parses it (when the table's row type was given), so it is not parsed twice
    predicate: Any = field(default=None, hash=False, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.query.name


_SPECIAL = re.compile(r"['\"`]|--|/\*|;|\n")  # what the splitter acts on; the text between is copied as is
_QUOTED = {q: re.compile(pattern, re.DOTALL) for q, pattern in (
    ("'", r"'(?:[^'\\]+|\\.|'')*'?"), ('"', r'"(?:[^"\\]+|\\.|"")*"?'), ("`", r"`(?:[^`]+|``)*`?"))}
# a run of text the splitter copies as is: plain text (no newline, ``;`` or comment start) and
# quoted strings closed in it (each as _QUOTED takes it: its repetition possessive, so a quote is
# never cut shorter than _QUOTED cuts it); one match where the loop would take several tokens
_RUN = re.compile(r"(?:[^'\"`\n;/-]+|-(?!-)|/(?!\*)|'(?:[^'\\]+|\\.|'')*+'|\"(?:[^\"\\]+|\\.|\"\")*+\""
                  r"|`(?:[^`]+|``)*+`)+", re.DOTALL)


def _segments(text: str, on_newline: bool) -> tuple[list[tuple[str, dict, int]], bool]:
    """Split into (statement, directives, first line); also whether a top-level ``;`` was seen.
    Linear in the text: a regular expression finds the next quote, comment, ``;`` or newline
    (the loop is written out flat: a 10 MB log is a million tokens)."""
    out: list[tuple[str, dict, int]] = []
    buf: list[str] = []
    pending: dict[str, str] = {}
    start_line = line = 1
    saw_semicolon = False
    started = False  # the buffer holds more than white space
    i, n = 0, len(text)
    search, quoted, directive, run = _SPECIAL.search, _QUOTED, _DIRECTIVE.match, _RUN.match
    # one statement a line: a line that one run copies whole (no comment, ``;`` or open quote) is
    # its statement as the loop would take it; a log repeats its lines, so each is matched once
    whole: dict[str, str | None] = {}  # line -> its statement ("": blank), None: the token loop's
    at_line_start = on_newline
    lines = text.split("\n") if on_newline else []  # at a line's start, ``line`` is its number
    while i < n:
        if at_line_start:
            ln = lines[line - 1]
            k = i + len(ln)
            stmt = whole.get(ln, whole)
            if stmt is whole:
                r = run(ln)
                stmt = whole[ln] = ln.strip() if r is not None and r.end() == len(ln) else None
            if stmt is not None:
                if stmt:
                    out.append((stmt, pending, line))
                    pending = {}
                i, line = k + 1, line + 1
                continue
            at_line_start = False  # the token loop up to the line's end
        r = run(text, i)
        if r is not None:  # plain text and closed quotes (newlines only inside the quotes)
            chunk = r.group()
            if not started and not chunk.isspace():
                started, start_line = True, line
            buf.append(chunk)
            line += chunk.count("\n")
            i = r.end()
            if i >= n:
                break
        m = search(text, i)
        j = m.start() if m else n
        if j > i:
            chunk = text[i:j]
            if not started and not chunk.isspace():
                started, start_line = True, line
            buf.append(chunk)
        if m is None:
            break
        token = m.group()
        end_statement = False
        if token in quoted:
            chunk = quoted[token].match(text, j).group()
            if not started:
                started, start_line = True, line
            buf.append(chunk)
            line += chunk.count("\n")
            i = j + len(chunk)
        elif token == "--":
            k = text.find("\n", j)
            k = n if k < 0 else k
            d = directive(text[j + 2:k])
            if d:
                pending[d.group(1).lower()] = d.group(2)
            i = k
        elif token == "/*":
            if text.startswith("/*+", j):  # a hint belongs to the statement
                if not started:
                    started, start_line = True, line
                buf.append("/*+")
                i = j + 3
            else:
                k = text.find("*/", j + 2)
                k = n if k < 0 else k + 2
                line += text.count("\n", j, k)
                buf.append(" ")
                i = k
        elif token == ";":
            saw_semicolon = end_statement = True
            i = j + 1
        else:  # newline
            line += 1
            if on_newline:
                end_statement = at_line_start = True
            else:
                buf.append("\n")
            i = j + 1
        if end_statement:
            if started:
                out.append(("".join(buf).strip(), pending, start_line))
                pending = {}
            buf = []
            started = False
    if started:
        out.append(("".join(buf).strip(), pending, start_line))
    return out, saw_semicolon


def _number(value: str, what: str, line: int) -> float:
    try:
        weight = float(value)
    except ValueError as exc:
        raise PredicateError(f"workload line {line}: {what} {value!r} is not a number") from exc
    if not math.isfinite(weight):
        raise PredicateError(f"workload line {line}: {what} must be a finite number, got {value}")
    if weight < 0:
        raise PredicateError(f"workload line {line}: {what} must not be negative, got {value}")
    return weight


def parse_workload(text: str) -> list[Query]:
    """The queries of a workload file's text (see the module docstring for the format)."""
    with gc_paused():  # a log is 100,000s of statements, tuples and queries, none of them cyclic
        return _parse_workload(text)


def _parse_workload(text: str) -> list[Query]:
    """:func:`parse_workload`, the collector paused."""
    saw = False
    if ";" in text:  # a log without any ';' is one statement a line: one pass
        segments, saw = _segments(text, on_newline=False)
    if not saw:
        segments, _ = _segments(text, on_newline=True)
    out: list[Query] = []
    names: set[str] = set()
    counts: dict[str, float] = {}  # a log's counts repeat: each text read as a number once
    read: dict[str, tuple[float, str]] = {}  # and so do its lines: each statement's count split off once
    for stmt, directives, line in segments:
        got = read.get(stmt)
        if got is None:
            got = read[stmt] = _counted(stmt, line, counts)
        weight, stmt = got
        if directives:
            for key in ("weight", "count"):
                if key in directives:
                    weight = _number(directives[key], key, line)
        name = directives.get("name") or f"q{len(out) + 1}"
        if name in names:
            raise PredicateError(f"workload line {line}: query name {name!r} is used twice")
        names.add(name)
        out.append(Query(name, stmt, weight, line))
    return out


def _counted(stmt: str, line: int, counts: dict[str, float]) -> tuple[float, str]:
    """(weight, query) of a statement: ``5<TAB>query`` (the statement is stripped: its count is all
    before the tab), else weight 1. ``counts``: the counts read so far, by their text."""
    if "\t" in stmt:
        head, _, rest = stmt.partition("\t")
        weight = counts.get(head)
        if weight is None and _COUNT.fullmatch(head):
            weight = counts[head] = _number(head, "count", line)
        if weight is not None:
            return weight, rest.strip()
    return 1.0, stmt


def read_workload(path: str) -> list[Query]:
    """:func:`parse_workload` of a local file; an unreadable file is a :class:`PredicateError`."""
    try:
        with open(path, encoding="utf-8") as fh:
            return parse_workload(fh.read())
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise PredicateError(f"cannot read workload file {path!r}: {exc}") from exc


def is_select(text: str) -> bool:
    head = text.lstrip("( \t\r\n").split(None, 1)
    return bool(head) and head[0].upper() in ("SELECT", "WITH", "FROM")


def _parse(text: str, into: type[exp.Expression] | None = None) -> exp.Expression:
    """The statement's tree, in the first dialect that parses it; bounded first in that dialect
    (length, nesting), as WHERE conditions are, so a query nested 300 deep is a PredicateError,
    not a RecursionError."""
    last: Exception | None = None
    for dialect in _READERS:
        try:
            toks = check_sql_bounds(text, "workload query", dialect=dialect)
        except PredicateError as exc:
            if not isinstance(exc.__cause__, sqlglot.errors.TokenError):
                raise  # too long or too deep: the same in every dialect
            last = exc.__cause__
            continue
        try:  # the bounds' tokens parsed (sqlglot.parse_one would tokenize the text again)
            found = dialect.parser().parse_into(into, toks, text) if into else dialect.parser().parse(toks, text)
            if not found or found[0] is None:
                raise sqlglot.errors.ParseError(f"No expression was parsed from '{text}'")
            tree = exp.Block(expressions=found) if len(found) > 1 else found[0]
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError) as exc:
            last = exc
            continue
        if tree is not None:
            return tree
    first = str(last).splitlines()[0] if last and str(last) else "no statement"
    raise PredicateError(f"cannot parse {text[:80]!r}: {first}")


def _split_and(node: exp.Expression) -> list[exp.Expression]:
    """The conjuncts of an AND chain, in order, without recursing down sqlglot's left-deep tree
    (a chain of thousands of ANDs is one level per AND)."""
    out, todo = [], [node]
    while todo:
        node = todo.pop()
        node = node.unnest() if isinstance(node, exp.Paren) else node
        if isinstance(node, exp.And):
            todo.extend((node.right, node.left))
        else:
            out.append(node)
    return out


def _matches(table: exp.Table, database: str, name: str) -> bool:
    if table.name.lower() != name.lower():
        return False
    return not table.db or table.db.lower() == database.lower()


def _kind(node: exp.Expression) -> str:
    if isinstance(node, exp.EQ | exp.In | exp.NullSafeEQ):
        return EQUALITY
    if isinstance(node, exp.LT | exp.LTE | exp.GT | exp.GTE | exp.Between):
        return RANGE
    if isinstance(node, exp.Is):
        return NULL_TEST
    if isinstance(node, exp.StartsWith):
        return PREFIX
    if isinstance(node, exp.EndsWith | exp.Contains):
        return PATTERN
    if type(node) is exp.Like and isinstance(node.expression, exp.Literal) and node.expression.is_string:
        return _like_kind(node.expression.this)
    return OTHER


def _like_kind(pattern: str) -> str:
    """How ``LIKE pattern`` is pushed down (:func:`indexcore.expr.sql.like_function`): a prefix
    (``'x%'``, and ``'x%y'`` whose ``startsWith`` half prunes as a prefix), a pattern, or equality."""
    if like_parts(pattern) is not None:
        return PREFIX
    try:
        function, _ = like_function(pattern)
    except PredicateError:
        return OTHER
    return {STARTS_WITH.name: PREFIX, EQUAL.name: EQUALITY}.get(function.name, PATTERN)


class _Columns:
    """The table's columns, resolved as explain resolves them (:func:`indexcore.expr.sql.parse_where`):
    the exact spelling first, else a unique case-insensitive match."""

    def __init__(self, columns: Iterable[str] | Mapping[str, DataType]):
        self.row_type = columns if isinstance(columns, Mapping) else None
        self.names = set(columns)
        self.lower: dict[str, list[str]] = {}
        for c in self.names:
            self.lower.setdefault(c.lower(), []).append(c)
        # each conjunct's text parsed once (a log's queries repeat their conditions in other
        # shapes): its predicate (frozen: shared), or the message of why it cannot be
        self.checked: dict[str, Predicate | str] = {}

    def resolve(self, name: str) -> str | None:
        if name in self.names:
            return name
        found = self.lower.get(name.lower(), [])
        return found[0] if len(found) == 1 else None

    def check(self, text: str) -> Predicate | None:
        """``text`` parsed as explain parses it (None without a row type); PredicateError when it cannot be."""
        if self.row_type is None:
            return None
        got = self.checked.get(text)
        if got is None:
            try:
                got = parse_where(text, self.row_type)
            except PredicateError as exc:
                got = exc.message
            self.checked[text] = got
        if isinstance(got, str):
            raise PredicateError(got)
        return got


def filters_of(condition: exp.Expression, columns: _Columns | None = None) -> dict[str, frozenset[str]]:
    """Column -> how it is filtered (equality / range / null / other) in a condition."""
    out: dict[str, set[str]] = {}
    for col in condition.find_all(exp.Column):
        parent = col.parent
        while isinstance(parent, exp.Paren | exp.Cast | exp.Not) and parent.parent is not None:
            parent = parent.parent
        name = (columns.resolve(col.name) if columns is not None else None) or col.name
        out.setdefault(name, set()).add(_kind(parent) if parent is not None else OTHER)
    return {k: frozenset(v) for k, v in out.items()}


def _strip_qualifiers(node: exp.Expression, columns: _Columns) -> exp.Expression:
    """The conjunct with its columns unqualified and spelled as the table spells them (a copy;
    the conjunct itself when that changes nothing: a copy of a tree is a deep copy)."""
    if all(not any(col.args.get(part) for part in ("table", "db", "catalog"))
           and columns.resolve(col.name) in (None, col.name) for col in node.find_all(exp.Column)):
        return node
    node = node.copy()
    for col in node.find_all(exp.Column):
        for part in ("table", "db", "catalog"):
            col.set(part, None)
        name = columns.resolve(col.name)
        if name is not None and name != col.name:
            col.set("this", exp.to_identifier(name, quoted=not name.isidentifier()))
    return node


def _sources(select: exp.Select) -> list[exp.Expression]:
    out = []
    src = select.args.get("from_", select.args.get("from"))
    if src is not None:
        out.append(src.this)
    out.extend(j.this for j in select.args.get("joins") or [])
    return out


def _scans_of_select(query: Query, tree: exp.Expression, database: str, name: str,
                     columns: _Columns) -> list[Scan]:
    out: list[Scan] = []
    for select in tree.find_all(exp.Select):
        sources = _sources(select)
        ours = [s for s in sources if isinstance(s, exp.Table) and _matches(s, database, name)]
        if not ours:
            continue
        aliases = {s.alias_or_name.lower() for s in ours}
        alone = len(sources) == 1
        kept, notes, preds = [], [], []
        where = select.args.get("where")
        for conj in _split_and(where.this) if where is not None else []:
            cols = list(conj.find_all(exp.Column))
            if not cols or conj.find(exp.Select) is not None:
                notes.append(f"not pushed down: {conj.sql(dialect=_SPARK)}")
                continue
            mine = all((c.table.lower() in aliases) if c.table else
                       (alone or columns.resolve(c.name) is not None) for c in cols)
            if mine and all(columns.resolve(c.name) is not None for c in cols):
                conj = _strip_qualifiers(conj, columns)
                sql = conj.sql(dialect=_SPARK)
                try:
                    preds.append(columns.check(sql))
                except PredicateError as exc:  # Paimon is not handed what it cannot push down either
                    notes.append(f"not pushed down: {sql} ({exc.message})")
                    continue
                kept.append((conj, sql))
            elif mine:
                notes.append(f"unknown column in {conj.sql(dialect=_SPARK)}")
        predicate = and_all(preds) if preds and all(p is not None for p in preds) else None
        for _ in ours:
            out.append(_scan(query, kept, notes, columns, predicate))
    return out


def _scan(query: Query, conjuncts: Sequence[tuple[exp.Expression, str]], notes: Iterable[str], columns: _Columns,
          predicate: Predicate | None = None) -> Scan:
    """The read of ``conjuncts`` (each with its Spark SQL text)."""
    if not conjuncts:
        return Scan(query, None, {}, tuple(notes))
    text = " AND ".join(f"({sql})" if len(conjuncts) > 1 else sql for _, sql in conjuncts)
    filters: dict[str, set[str]] = {}
    for c, _ in conjuncts:
        for col, kinds in filters_of(c, columns).items():
            filters.setdefault(col, set()).update(kinds)
    return Scan(query, text, {k: frozenset(v) for k, v in filters.items()}, tuple(notes), predicate)


#: First words of statements that are not reads: skipped with a reason (an INSERT ... SELECT or a
#: CREATE ... AS SELECT is kept for the SELECT inside it).
NOT_QUERIES = frozenset({"INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER", "MERGE", "TRUNCATE", "CALL",
                         "SET", "RESET", "USE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "REPLACE", "GRANT",
                         "REVOKE", "REFRESH", "CACHE", "UNCACHE", "ANALYZE", "MSCK", "LOAD", "ADD", "VALUES"})


def _first_word(text: str) -> str:
    head = text.lstrip("( \t\r\n").split(None, 1)
    return head[0].upper().rstrip("(;") if head else ""


def scans(queries: Sequence[Query], table_name: str,
          columns: Iterable[str] | Mapping[str, DataType]) -> tuple[list[Scan], list[dict]]:
    """The reads of ``db.table`` the queries make, and the queries that make none (with why).

    ``columns``: the table's column names, or its row type (name -> type): then every condition
    is parsed as explain parses it, and one it cannot parse is skipped with the parser's reason
    (a bare condition) or not pushed down (a conjunct of a SELECT), as Paimon is not handed it.
    Column names resolve as explain resolves them (exact, else a unique case-insensitive match).
    """
    database, _, name = table_name.rpartition(".")
    cols = _Columns(columns)
    out: list[Scan] = []
    skipped: list[dict] = []
    seen: dict[str, tuple[list[Scan], str | None]] = {}  # a log repeats its statements: each text read once
    for q in queries:
        if q.text in seen:
            found, reason = seen[q.text]
            out.extend(Scan(q, f.where, f.filters, f.notes, f.predicate) for f in found)
            if reason is not None:
                skipped.append({"query": q.name, "reason": reason})
            continue
        before_out, before_skipped = len(out), len(skipped)
        _scans_of_query(q, database, name, table_name, cols, out, skipped)
        seen[q.text] = (out[before_out:], skipped[before_skipped]["reason"] if len(skipped) > before_skipped else None)
    return out, skipped


def _scans_of_query(q: Query, database: str, name: str, table_name: str, cols: _Columns, out: list[Scan],
                    skipped: list[dict]) -> None:
    """:func:`scans` of one query, appended to ``out`` / ``skipped``."""
    try:
        word = _first_word(q.text)
        if is_select(q.text) or word in NOT_QUERIES:
            found = _scans_of_select(q, _parse(q.text), database, name, cols)
            if not found:
                reason = f"does not read {table_name}" if word not in NOT_QUERIES else \
                    f"{word} is not a query: the advisor replays reads (SELECT or a WHERE condition)"
                skipped.append({"query": q.name, "reason": reason})
            out.extend(found)
        else:
            text = q.text.strip()
            if text[:6].upper() == "WHERE " or text.upper() == "WHERE":
                text = text[5:].strip()
            if not text:
                raise PredicateError("empty WHERE condition")
            predicate = cols.check(text)
            try:
                filters = filters_of(_parse(text, into=exp.Condition), cols)
            except PredicateError:
                filters = {}
            out.append(Scan(q, text, filters, (), predicate))
    except PredicateError as exc:
        skipped.append({"query": q.name, "reason": exc.message})
