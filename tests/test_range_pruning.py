"""The Range page's pruning table worked out column-wise (``prune_by_index``: the plan's rows, the
census's entries, the table's kept readers) answers as the per-file path over live file objects
(``prune_live_files``) does, on every conformance table with range-bitmap or BSI indexes and on the
sample warehouse: comparisons, ranges, IN, nulls, NaN, strings, OR over an unindexed column."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from index_bytes_checks import RANGE_TABLES, indexed_bounds, sql_literal

from indexcore import open_warehouse
from indexcore.expr import parse_where, quote_name
from indexcore.frames import pruning
from indexcore.frames import range as range_frames
from indexcore.warehouse.file_sample import decode_sample_rows

ROOT = Path(__file__).resolve().parent.parent


def _predicates(table) -> list[str]:
    """Predicates over each indexed column from its files' own statistics (values inside, at and
    outside the files' ranges), nulls, and ORs / ANDs with every other column."""
    schema = table.schema()
    out = []
    for column, dtype, name, bounds in indexed_bounds(table, range_frames.RANGE_TYPES):
        out += [f"{name} IS NULL", f"{name} IS NOT NULL"]
        if bounds is None:
            continue
        low, middle, high = (sql_literal(dtype, v) for v in bounds)
        out += [f"{name} = {middle}", f"{name} < {middle}", f"{name} >= {middle}", f"{name} > {high}",
                f"{name} <= {low}", f"{name} BETWEEN {low} AND {middle}", f"{name} IN ({low}, {high})",
                f"{name} <> {middle}"]
        for other in schema.fields:
            if other.name != column:
                out.append(f"({name} >= {middle} OR {quote_name(other.name)} IS NULL)")
                out.append(f"{name} <= {middle} AND {quote_name(other.name)} IS NOT NULL")
    for f in schema.fields:  # statistics of every kind of column: strings, doubles (NaN)
        if f.type.root in ("VARCHAR", "CHAR"):
            out += [f"{quote_name(f.name)} = 'a'", f"{quote_name(f.name)} >= 'm'"]
        if f.type.root in ("DOUBLE", "FLOAT"):
            out += [f"{quote_name(f.name)} > 0.5", f"{quote_name(f.name)} = CAST('NaN' AS DOUBLE)"]
    return out


def _live_files(table, sample):
    plan = table.plan_columns()
    paths = plan.files["path"].to_pylist()
    indexed = [a is not None or b is not None for a, b in zip(plan.files["_EMBEDDED_FILE_INDEX"].to_pylist(),
                                                              plan.files["index_path"].to_pylist(), strict=True)]
    return table.live_files_by_path().many([paths[i] for i in decode_sample_rows(paths, indexed, sample)])


def _compare(table, sqls, sample=None) -> set:
    """The answers both paths gave alike (predicates the parser refuses are left out)."""
    range_frames.range_frame(table, sample=sample)  # the page's summaries first: their kept readers
    row_type, seen = table.schema().row_type(), set()
    for sql in sqls:
        try:
            predicate = parse_where(sql, row_type)
        except Exception:  # a literal the parser does not take (e.g. NaN): not a case of this table
            continue
        columns = pruning.prune_by_index(table, predicate, range_frames.RANGE_TYPES, sample=sample)
        reference = pruning.prune_live_files(table, predicate, range_frames.RANGE_TYPES, _live_files(table, sample))
        pd.testing.assert_frame_equal(columns, reference, obj=sql)
        seen |= {("stats", v) for v in columns["stats"]}
        for kind in range_frames.RANGE_TYPES:
            if kind in columns:
                seen |= {(kind, "rows" if v.endswith(" rows") else v.split(":")[0]) for v in columns[kind]}
        seen |= {("error", "container")} if "error" in columns and columns["error"].notna().any() else set()
    return seen


@pytest.mark.parametrize("folder,name", RANGE_TABLES,
                         ids=[f"{f.split('/')[-1]}:{n.split('.')[0]}" for f, n in RANGE_TABLES])
def test_columnwise_pruning_answers_as_the_per_file_path(conformance, folder, name):
    table = open_warehouse(str(conformance / folder)).table(name)
    sqls = _predicates(table)
    seen = _compare(table, sqls)
    assert len(sqls) > 10
    if "timestamp_index" in name:  # its .index file is gone: each file's error, through its live file
        assert ("error", "container") in seen
    else:  # the predicates reach both statistics outcomes and an index answer of rows and a SKIP
        assert {("stats", "SKIP"), ("stats", "may match")} <= seen
        assert any(k[1] == "rows" for k in seen) and any(k[1].startswith("SKIP") for k in seen if k[0] != "stats")


def test_columnwise_pruning_on_the_sample_warehouse_and_a_sample_of_it():
    wh = open_warehouse(str(ROOT / "sample_warehouse"))
    for name in ("demo.events", "demo.orders"):
        table = wh.table(name)
        sqls = _predicates(table)
        assert ("stats", "SKIP") in _compare(table, sqls)
        assert _compare(wh.table(name), sqls, sample=3)  # a sample of the files: the same files


def test_columnwise_pruning_makes_no_live_file():
    """The table's map of live files stays empty: statistics, entries and readers come from columns."""
    table = open_warehouse(str(ROOT / "sample_warehouse")).table("demo.events")
    range_frames.range_frame(table)
    made = table.live_files_by_path()._made
    before = len(made)
    pruned = pruning.prune_by_sql(table, "event_time >= TIMESTAMP '2024-06-02 12:00:00'", range_frames.RANGE_TYPES)
    assert len(pruned) == 11 and len(made) == before  # (the summaries made a few for blobs read through readers)

