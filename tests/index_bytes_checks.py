"""Shared by the tests of answers on an index blob's bytes (bitmap, range-bitmap, BSI): every byte
of a blob flipped in turn; explain with the index stage on the bytes and through a reader per file;
the conformance tables with range-bitmap or BSI indexes, and the bounds of a table's indexed
columns from its files' own statistics (what predicates over them are made of)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from indexcore.expr import literal_to_sql, quote_name
from indexcore.scan import index_bytes
from indexcore.scan.explainer import explain
from indexcore.scan.stats import file_stats_frame
from indexcore.types import DataType, from_text_or_python

RANGE_TABLES = [  # (folder under ../shared/conformance, table)
    ("external/paimon-cpp/orc", "append_with_rangebitmap.append_with_rangebitmap"),
    ("external/paimon-cpp/parquet", "append_with_rangebitmap.append_with_rangebitmap"),
    ("external/paimon-cpp/orc", "append_with_rangebitmap_multi_chunk.append_with_rangebitmap_multi_chunk"),
    ("external/paimon-cpp/parquet", "append_with_rangebitmap_multi_chunk.append_with_rangebitmap_multi_chunk"),
    ("warehouses/orc", "append_with_bsi.append_with_bsi"),
    ("warehouses/parquet", "append_with_bsi.append_with_bsi"),
    ("warehouses/orc", "append_with_bsi_bitmap_bloomfilter.append_with_bsi_bitmap_bloomfilter"),
    ("warehouses/parquet", "append_with_bsi_bitmap_bloomfilter.append_with_bsi_bitmap_bloomfilter"),
    ("warehouses/orc", "timestamp_index.timestamp_index"),
]


def flipped(blob: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(offset, xor mask, damaged bytes): every byte of ``blob`` with each of three bit flips."""
    for at in range(len(blob)):
        for flip in (0x01, 0x80, 0xFF):
            damaged = bytearray(blob)
            damaged[at] ^= flip
            yield at, flip, bytes(damaged)


def explain_both(table_of: Callable[[], Any], sql: str, monkeypatch, **options) -> tuple[dict, dict, list[bool]]:
    """explain's JSON of ``sql`` with the index stage on the bytes and through a reader per file
    (each on a fresh ``table_of()``), and for each blob the bytes were asked about whether they
    answered. The stage is patched for these two calls only (the next call counts the real one)."""
    calls = []
    evaluate = index_bytes.BytesPlans.evaluate

    def counted(self, *args):
        out = evaluate(self, *args)
        calls.append(out is not None)
        return out

    with monkeypatch.context() as patch:
        patch.setattr(index_bytes.BytesPlans, "evaluate", counted)
        fast = explain(table_of(), sql, **options).to_json()
        patch.setattr(index_bytes.BytesPlans, "evaluate", lambda self, *args: None)
        slow = explain(table_of(), sql, **options).to_json()
    return fast, slow, calls


def sql_literal(dtype: DataType, value: Any) -> str:
    """A statistics value (as the stats frame shows it) as a SQL literal of its column's type."""
    return literal_to_sql(from_text_or_python(dtype, value), dtype)


def indexed_bounds(table, kinds: Iterable[str]) -> list[tuple[str, DataType, str, tuple | None]]:
    """(column, type, quoted name, (lowest min, median min, highest max) or None where no file has
    statistics) of each column indexed by one of ``kinds``, in name order."""
    schema = table.schema()
    indexed = sorted({c.strip() for kind in kinds
                      for c in schema.options.get(f"file-index.{kind}.columns", "").split(",") if c.strip()})
    stats = file_stats_frame(table)
    out = []
    for column in indexed:
        mine = stats[(stats["column"] == column) & stats["min"].notna()]
        bounds = None
        if not mine.empty:
            lows, highs = sorted(mine["min"]), sorted(mine["max"])
            bounds = (lows[0], lows[len(lows) // 2], highs[-1])
        out.append((column, schema.field(column).type, quote_name(column), bounds))
    return out
