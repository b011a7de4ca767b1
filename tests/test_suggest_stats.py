"""The predicate suggestion's statistics of its sampled files, decoded from the columnar plan a
column at a time (``suggestion._latest_stats`` / ``plan_stages.plan_value_stats``), are those the
per-file path reads from each live file's manifest record (``pruning.file_stats``, LazyStats): on
every table of the conformance warehouses and the sample warehouse (schema evolution, every column
type, NaN, truncated strings, dense stats columns)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from indexcore import open_warehouse
from indexcore.errors import IndexCoreError
from indexcore.frames import suggestion
from indexcore.frames.pruning import file_stats

ROOT = Path(__file__).resolve().parent.parent


def _same(table) -> int:
    schema = table.schema()
    try:
        files, _total = suggestion.suggestion_sample(table)
    except IndexCoreError:
        return 0
    latest = [lf for lf in files if lf.file.schema_id == schema.id]
    got = suggestion._latest_stats(table, None, schema, latest)
    want = {lf.path: file_stats(table, lf) for lf in latest}
    assert list(got) == list(want)
    for path, cells in want.items():
        assert list(got[path]) == list(cells), path
        assert repr(got[path]) == repr(cells), path  # repr: a NaN equals itself
    return len(latest)


@pytest.mark.parametrize("folder", ["warehouses/parquet", "warehouses/orc"])
def test_plan_stats_equal_each_files_own_on_the_conformance_warehouses(conformance: Path, folder: str):
    wh = open_warehouse(str(conformance / folder))
    checked = sum(_same(wh.table(name)) for name in wh.tables())
    assert checked > 50


def test_plan_stats_equal_each_files_own_on_the_sample_warehouse():
    wh = open_warehouse(str(ROOT / "sample_warehouse"))
    assert sum(_same(wh.table(name)) for name in wh.tables()) > 0


def test_files_not_in_the_plan_are_read_file_by_file():
    wh = open_warehouse(str(ROOT / "sample_warehouse"))
    table = next(t for t in map(wh.table, wh.tables()) if suggestion.suggestion_sample(t)[0])
    lf = suggestion.suggestion_sample(table)[0][0]
    moved = dataclasses.replace(lf, path=lf.path + ".elsewhere")
    assert suggestion._latest_stats(table, None, table.schema(), [moved]) == {moved.path: file_stats(table, moved)}
