"""AppTest of the Global indexes page on a Paimon-written table with BTree global indexes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_app import _metric, _no_failure

from indexcore.analysis import coverage as gi
from indexcore.frames import global_indexes as global_indexes_frames
from indexcore.io import Storage
from indexcore.warehouse.table import Table

TABLE = "append_with_btree_with_partition.append_with_btree_with_partition"


@pytest.fixture(scope="module")
def orc_warehouse(conformance: Path):
    path = conformance / "external" / "paimon-cpp" / "orc"
    if not (path / "append_with_btree_with_partition.db").is_dir():
        pytest.skip("external paimon-cpp tables not found")
    mp = pytest.MonkeyPatch()
    mp.setenv("INDEXCORE_WAREHOUSE", str(path))
    mp.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    yield path
    mp.undo()


def test_global_indexes_page(orc_warehouse, open_page):
    root = orc_warehouse / "append_with_btree_with_partition.db" / "append_with_btree_with_partition"
    storage = Storage(str(root))
    table = Table(storage, storage.root, TABLE)
    files = gi.global_index_rows(table)

    at = open_page("global_indexes", TABLE)
    _no_failure(at)
    assert _metric(at, "Index files") == str(len(files)) == "32"
    assert _metric(at, "Indexed fields") == "8" and _metric(at, "Gaps") == "0"
    assert _metric(at, "Table rows (row ids)") == "40"

    col_int = next(f["file"] for f in files if f["field"] == "col_int")
    at.selectbox(key="global_index_file").select(col_int).run()
    _no_failure(at)
    keys = global_indexes_frames.cardinality_frame(table, col_int)
    assert _metric(at, "Distinct keys") == str(len(keys)) and _metric(at, "Rows") == str(int(keys["rows"].sum()))

    at.text_input(key="global_index_where").set_value("col_int > 30").run()
    _no_failure(at)
    assert _metric(at, "Rows kept") == "18 of 40"  # paimon-cpp global_index_test: 9 per partition
    assert _metric(at, "Files kept") == "2 of 2"
    at.text_input(key="global_index_where").set_value("col_int = 100").run()
    _no_failure(at)
    assert _metric(at, "Rows kept") == "0 of 40" and _metric(at, "Files kept") == "0 of 2"
    at.text_input(key="global_index_where").set_value("no_such_column = 1").run()
    assert not at.exception and at.error  # our error, shown; the page keeps working


def test_page_without_global_indexes(orc_warehouse, open_page):
    at = open_page("global_indexes", "pk_btree_source_meta.pk_btree_source_meta")
    _no_failure(at)
    assert at.title[0].value == "Global indexes"
