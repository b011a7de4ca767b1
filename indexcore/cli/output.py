"""The one output layer of the CLI: JSON for machines, CSV, aligned tables for people; a progress bar.

Commands return data (a JSON-able dict) and never look at ``--format``. A command may name a
``brief(result)`` in its parser defaults: the columns people read in the table and CSV output
(JSON always carries the whole result).

Values come from warehouses that anyone may have written, so no output passes their text through
as something else: a CSV text cell that a spreadsheet would run as a formula (starting with
``= + - @``, a tab or a carriage return; OWASP's rule) is prefixed with ``'`` unless ``--csv-raw``
asks for the bytes as they are, and the table format (a terminal) shows control characters
(C0, DEL, C1: ESC, BEL...) and bidirectional overrides and isolates (U+202A-U+202E,
U+2066-U+2069, and the marks U+200E, U+200F, U+061C) escaped, ``\x1b``, ``\u202e``, in values,
headers and keys. JSON escapes them itself.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

FORMATS = ("table", "json", "csv")

# OWASP CSV injection: a text cell starting with one of these runs as a formula in a spreadsheet
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # a plain number in text: no formula
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# what a terminal would act on rather than show: C0, DEL, C1, bidi overrides/isolates and marks
TERMINAL_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))},
    **{c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)},
    **{ord(k): v for k, v in _NAMED.items()},
}


def terminal_text(text: str) -> str:
    """``text`` with what a terminal would act on (ESC sequences, BEL, bidi overrides) escaped."""
    return text.translate(TERMINAL_ESCAPES)


def csv_text(value: Any, raw: bool = False) -> str:
    """A CSV cell: a text value that would start a formula gets a leading ``'`` (numbers, and text
    that is a plain number such as ``-1``, stay as they are); ``raw``: never."""
    text = _text(value)
    if raw or not isinstance(value, str) or not text.startswith(FORMULA_START) or _NUMBER.fullmatch(text):
        return text
    return "'" + text


def _default(obj: Any) -> Any:
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.hex()
    return str(obj)


def short_result(value: Any) -> str:
    """A file-index result for a table cell: ``SKIP``, ``REMAIN``, ``N rows`` or ``-``."""
    if value is None:
        return "-"
    if isinstance(value, dict) and "rows" in value:
        return f"{len(value['rows'])} rows"
    return str(value)


def emit(result: Any, fmt: str, out: TextIO, brief: Callable[[Any], Any] | None = None,
         csv_raw: bool = False) -> None:
    """Write ``result`` as ``fmt`` (json, csv or table) to ``out`` (``csv_raw``: CSV cells that
    start like a formula are written as they are, not neutralised)."""
    if fmt == "json":
        json.dump(result, out, default=_default)
        out.write("\n")
        return
    shown = brief(result) if brief is not None else result
    if fmt == "csv":
        write_csv(shown, out, raw=csv_raw)
    else:
        out.write(render_table(shown))


def records(result: Any) -> tuple[list[str], list[dict]]:
    """The main table of a result: ``{"columns", "rows"}``, a list of dicts, or the first list of
    dicts (or dict of dicts) among its values; scalars alone become one row."""
    if isinstance(result, dict) and isinstance(result.get("columns"), list) and isinstance(result.get("rows"), list):
        return list(result["columns"]), result["rows"]
    if isinstance(result, list) and all(isinstance(v, dict) for v in result):
        return _columns(result), result
    if isinstance(result, dict):
        for value in result.values():
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                return _columns(value), value
            if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
                rows = [{"name": k, **v} for k, v in value.items()]
                return _columns(rows), rows
        scalars = {k: v for k, v in result.items() if not isinstance(v, dict | list)}
        return list(scalars), [scalars]
    return ["value"], [{"value": result}]


def _columns(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for row in rows:
        cols.extend(c for c in row if c not in cols)
    return cols


def write_csv(result: Any, out: TextIO, raw: bool = False) -> None:
    """The main table of ``result`` as CSV; formula-like text cells and headers neutralised unless ``raw``."""
    columns, rows = records(result)
    writer = csv.writer(out, lineterminator="\n")
    # Python's csv quotes a field for the line terminator's characters only: a bare CR would end the
    # row for a reader, so a row holding one is written with every field quoted
    quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    for cells in ([str(c) for c in columns], *([row.get(c) for c in columns] for row in rows)):
        texts = [csv_text(v, raw) for v in cells]
        (quoted if any("\r" in t for t in texts) else writer).writerow(texts)


def _text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, default=_default)
    return "" if value is None else str(value)


def _cell(value: Any, limit: int | None = 80) -> str:
    """A table cell: its text with terminal controls escaped, cut at ``limit`` characters."""
    text = terminal_text(_text(value))
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


def render_table(result: Any, indent: str = "") -> str:
    """Lists of dicts become aligned tables; scalars become ``key: value`` lines."""
    if isinstance(result, dict) and isinstance(result.get("columns"), list) and isinstance(result.get("rows"), list):
        return (_table(result["rows"], indent, result["columns"]) if result["rows"]
                else indent + "(no rows) columns: " + ", ".join(map(_cell, result["columns"]))) + "\n"
    lines: list[str] = []
    if isinstance(result, dict):
        for raw_key, value in result.items():
            key = _cell(raw_key, None)
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                lines.append(f"{indent}{key}:")
                lines.append(_table(value, indent + "  "))
            elif isinstance(value, list) and value and len(json.dumps(value, default=_default)) > 60 \
                    and not any(isinstance(v, dict | list) for v in value):
                lines.append(f"{indent}{key}:")
                lines.extend(f"{indent}  {_cell(v, None)}" for v in value)
            elif isinstance(value, dict) and value and len(json.dumps(value, default=_default)) > 60:
                lines.append(f"{indent}{key}:")
                lines.append(render_table(value, indent + "  ").rstrip("\n"))
            else:
                lines.append(f"{indent}{key}: {_cell(value)}")
    elif isinstance(result, list) and result and all(isinstance(v, dict) for v in result):
        lines.append(_table(result, indent))
    else:
        lines.append(f"{indent}{_cell(result)}")
    return "\n".join(lines) + "\n"


def _table(rows: list[dict], indent: str, cols: list[str] | None = None) -> str:
    cols = cols or _columns(rows)
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    names = [_cell(c, None) for c in cols]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(names)]
    head = indent + "  ".join(c.ljust(w) for c, w in zip(names, widths, strict=True))
    body = [indent + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join([head, indent + "  ".join("-" * w for w in widths), *body])


class ProgressBar:
    """A text progress bar on stderr, for long CLI work; silent when stderr is not a TTY."""

    def __init__(self, label: str, stream: TextIO | None = None, force: bool = False):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()

    def __call__(self, done: int, total: int, message: str = "") -> None:
        if not self.enabled or total <= 0:
            return
        width = 30
        filled = int(width * min(done, total) / total)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                          f"{terminal_text(message[:40])}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
