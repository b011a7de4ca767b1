"""The one output layer of the CLI: JSON for machines, CSV, aligned tables for people; a progress bar.

Commands return data (a JSON-able dict) and never look at ``--format``. A command may name a
``brief(result)`` in its parser defaults: the columns people read in the table and CSV output
(JSON always carries the whole result).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

FORMATS = ("table", "json", "csv")


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


def emit(result: Any, fmt: str, out: TextIO, brief: Callable[[Any], Any] | None = None) -> None:
    """Write ``result`` as ``fmt`` (json, csv or table) to ``out``."""
    if fmt == "json":
        json.dump(result, out, default=_default)
        out.write("\n")
        return
    shown = brief(result) if brief is not None else result
    if fmt == "csv":
        write_csv(shown, out)
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


def write_csv(result: Any, out: TextIO) -> None:
    columns, rows = records(result)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c), None) for c in columns])


def _cell(value: Any, limit: int | None = 80) -> str:
    if isinstance(value, dict | list):
        text = json.dumps(value, default=_default)
    else:
        text = "" if value is None else str(value)
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


def render_table(result: Any, indent: str = "") -> str:
    """Lists of dicts become aligned tables; scalars become ``key: value`` lines."""
    if isinstance(result, dict) and isinstance(result.get("columns"), list) and isinstance(result.get("rows"), list):
        return (_table(result["rows"], indent, result["columns"]) if result["rows"]
                else indent + "(no rows) columns: " + ", ".join(result["columns"])) + "\n"
    lines: list[str] = []
    if isinstance(result, dict):
        for key, value in result.items():
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
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    head = indent + "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
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
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message[:40]}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
