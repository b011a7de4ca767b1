"""The workload splitter copies runs of plain text and closed quotes in one match (``_RUN``); the
statements, directives, first lines and the ``;`` flag are the token loop's alone (the same function
with runs switched off), on random texts over the characters the splitter acts on (quotes of three
kinds, doubled and backslash-escaped quotes, unclosed quotes, ``--`` comments and directives,
``/* */`` comments and ``/*+`` hints, ``;``, newlines, tabs) and on a log of known statements."""

from __future__ import annotations

import random
import re

import pytest

from indexcore.analysis import workload
from indexcore.analysis.workload import parse_workload

PIECES = ["a", "b", " ", "\t", "\n", "\r\n", ";", "'", "''", '"', '""', "`", "``", "\\", "\\'", "-", "--", "/",
          "/*", "*/", "/*+", "*", "-- weight: 3\n", "-- name: x1\n", "SELECT 1", "x = 'q;\n'", "é", "5\t"]


def _both(monkeypatch, text: str, on_newline: bool):
    fast = workload._segments(text, on_newline)
    with monkeypatch.context() as m:
        m.setattr(workload, "_RUN", re.compile(r"(?!)"))  # never matches: the token loop alone
        slow = workload._segments(text, on_newline)
    return fast, slow


@pytest.mark.parametrize("seed", range(40))
def test_runs_split_as_the_token_loop(monkeypatch, seed):
    r = random.Random(seed)
    for _ in range(60):
        text = "".join(r.choice(PIECES) for _ in range(r.randrange(0, 40)))
        for on_newline in (False, True):
            fast, slow = _both(monkeypatch, text, on_newline)
            assert fast == slow, (text, on_newline)


def test_a_log_splits_into_its_statements(monkeypatch):
    """Truth by construction: each line ``count<TAB>query`` is one query with that weight, its text
    as written (quotes holding ``;``, ``--`` and newline-free escapes included)."""
    r = random.Random(1)
    lines = [(r.randrange(1, 50), f"SELECT * FROM t WHERE s = 'a''b;--{i}' AND u = \"x\\\"y\" AND n - 1 > {i} / 2")
             for i in range(500)]
    text = "".join(f"{c}\t{q}\n" for c, q in lines)
    got = parse_workload(text)
    assert [(q.weight, q.text, q.line) for q in got] == [(float(c), q, i + 1) for i, (c, q) in enumerate(lines)]
    fast, slow = _both(monkeypatch, text, True)
    assert fast == slow


TAB_WEIGHT = re.compile(r"^\s*(\d+(?:\.\d+)?)\t(.*)$", re.DOTALL)  # the count prefix as a regular expression


@pytest.mark.parametrize("seed", range(10))
def test_counts_and_queries_are_read_as_written(seed):
    """Each line's count (digits, a decimal point, Unicode digits, none, a tab inside the query) and
    its text, against the count prefix read by one regular expression over the stripped line."""
    r = random.Random(seed)
    heads = ["5", "12", "0.5", "3.", ".5", "x", "", "٣", "1e3", "7 ", " 8"]
    bodies, tails = ["SELECT 1", "a = 1", "b\t= 2 "], ["", "\tc"]
    lines = [r.choice(heads) + "\t" + r.choice(bodies) + r.choice(tails) for _ in range(50)]
    lines = [ln for ln in lines if ln.strip()]
    got = parse_workload("\n".join(lines))
    assert len(got) == len(lines)
    for q, ln in zip(got, lines, strict=True):
        stmt = ln.strip()
        m = TAB_WEIGHT.match(stmt)
        assert (q.weight, q.text) == ((float(m.group(1)), m.group(2).strip()) if m else (1.0, stmt)), ln
        assert q == workload.Query(q.name, q.text, q.weight, q.line) and hash(q) == hash(
            workload.Query(q.name, q.text, q.weight, q.line))


@pytest.mark.parametrize("seed", range(8))
def test_repeated_lines_split_as_the_token_loop(monkeypatch, seed):
    """A log repeats its lines: each line one run copies whole is matched once and reused. Lines
    repeated among ones the token loop must take (comments, directives, a quote open over lines,
    hints, blank and white-space lines, CRLF), against the token loop alone."""
    r = random.Random(seed)
    pool = ["5\tSELECT * FROM t WHERE a = 'x'", "SELECT 1", "   ", "", "\r", "7\tb = \"q\" AND c = `d`",
            "-- weight: 4", "-- name: n{}", "x = 'open", "still open'", "a = 1 -- trailing", "/* c */ a = 2",
            "/*+ hint */ a = 3", "a = 'x'; b = 2", "a - 1 / 2 > 0", "s = 'it''s' AND t = 'a\\'b'", "-", "/"]
    for _ in range(20):
        lines = [r.choice(pool).format(r.randrange(10**6)) for _ in range(r.randrange(1, 80))]
        text = "\n".join(lines) + r.choice(["", "\n"])
        fast, slow = _both(monkeypatch, text, True)
        assert fast == slow, text
