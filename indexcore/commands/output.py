"""Printing command results: JSON for machines, aligned tables for people, a progress bar."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


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


def emit(result: Any, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        json.dump(result, out, default=_default)
        out.write("\n")
        return
    out.write(render_table(result))


def _cell(value: Any, limit: int | None = 80) -> str:
    if isinstance(value, dict | list):
        text = json.dumps(value, default=_default)
    else:
        text = "" if value is None else str(value)
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


def render_table(result: Any, indent: str = "") -> str:
    """Lists of dicts become aligned tables; scalars become ``key: value`` lines."""
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


def _table(rows: list[dict], indent: str) -> str:
    cols: list[str] = []
    for row in rows:
        cols.extend(c for c in row if c not in cols)
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
