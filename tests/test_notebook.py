"""``notebooks/explore.ipynb`` runs top to bottom (nbclient) and shows the warehouse's real numbers.

Every number the notebook prints is recomputed here by another path: container heads read
directly, the Parquet data read with pyarrow, deletion vectors decoded one by one.
"""

from __future__ import annotations

import ast
import collections
import os
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import indexcore
from indexcore.formats.container import read_container

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "explore.ipynb"
SAMPLE = ROOT / "sample_warehouse"


@pytest.fixture(scope="module")
def cells():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    old = dict(os.environ)
    os.environ.update(env)  # the kernel imports this checkout's indexcore
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            (tag,) = cell.metadata["tags"]
            out[tag] = cell.outputs
    return out


def _text(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


def _data(outputs, mime: str):
    found = [o["data"][mime] for o in outputs if "data" in o and mime in o["data"]]
    assert found, f"no {mime} output"
    return found[-1]


def _find(pattern: str, text: str) -> re.Match:
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return m


@pytest.fixture(scope="module")
def wh():
    return indexcore.open_warehouse(str(SAMPLE))


def _container_entries(table):
    for lf in table.plan().files:
        if lf.has_file_index:
            yield lf, read_container(table.file_index_source(lf)).head.entries


def test_every_cell_ran_without_error(cells):
    for tag, outputs in cells.items():
        assert not [o for o in outputs if o.output_type == "error"], tag
        assert outputs or tag == "setup", f"cell {tag} shows nothing"


def test_warehouse_and_table_render_as_html(cells, wh):
    page = _data(cells["warehouse"], "text/html")
    assert "Paimon warehouse" in page and all(name in page for name in wh.tables())
    table = _data(cells["table"], "text/html")
    assert "demo.events" in table and all(f.name in table for f in wh.table("demo.events").schema().fields)
    assert "files read" in _data(cells["explain"], "text/html")


def test_views_numbers(cells, wh):
    events = wh.table("demo.events")
    assert int(_find(r"snapshots: (\d+)", _text(cells["snapshots"])).group(1)) == len(events.snapshot_ids())
    printed = ast.literal_eval(_find(r"file indexes: (\{.*\})", _text(cells["file_indexes"])).group(1))
    counts = collections.Counter(f"{e.column}:{e.index_type}" for _, entries in _container_entries(events)
                                 for e in entries)
    assert printed == dict(counts)


def test_explain_funnel(cells, wh):
    from indexcore.expr import parse_where
    from indexcore.warehouse.data import read_table

    events = wh.table("demo.events")
    text = _text(cells["explain"])
    sql = _find(r"where: (.*)", text).group(1)
    m = _find(r"files read: (\d+) of (\d+); matching rows: (\d+)", text)
    assert int(m.group(2)) == len(events.plan().files) and 1 <= int(m.group(1)) < int(m.group(2))
    predicate = parse_where(sql, events.schema().row_type())
    assert int(m.group(3)) == read_table(events, predicate=predicate).num_rows
    fig = _data(cells["funnel"], "application/vnd.plotly.v1+json")
    assert sql in fig["layout"]["title"]["text"]


def test_bitmap_values_match_data(cells, wh):
    events = wh.table("demo.events")
    printed = ast.literal_eval(_find(r"top countries: (\{.*\})", _text(cells["bitmap"])).group(1))
    counts = collections.Counter()
    for lf in events.plan().files:
        counts.update(pq.read_table(lf.path, columns=["country"]).column("country").to_pylist())
    assert len(printed) == 5 and all(counts[v] == n for v, n in printed.items())
    assert min(printed.values()) >= sorted(counts.values(), reverse=True)[4]
    assert _data(cells["bitmap"], "application/vnd.plotly.v1+json")["layout"]["title"]["text"]


def test_bloom_and_dv_numbers(cells, wh):
    events, orders = wh.table("demo.events"), wh.table("demo.orders")
    m = _find(r"bloom filters: (\d+); median fill: ([\d.]+)", _text(cells["bloom"]))
    blooms = sum(1 for _, entries in _container_entries(events) for e in entries if e.index_type == "bloom-filter")
    assert int(m.group(1)) == blooms and 0 < float(m.group(2)) < 1
    m = _find(r"deleted rows: (\d+) in (\d+) files", _text(cells["dv"]))
    decoded = [orders.deletion_vector(lf) for lf in orders.plan().files]
    assert int(m.group(1)) == sum(dv.cardinality for dv in decoded if dv is not None) > 0
    assert int(m.group(2)) == sum(1 for dv in decoded if dv is not None)
    heatmap = _data(cells["dv"], "application/vnd.plotly.v1+json")
    assert heatmap["data"][0]["type"] == "heatmap"


def test_what_if_keeps_every_file_holding_the_user(cells, wh):
    events = wh.table("demo.events")
    text = _text(cells["whatif"])
    user = int(_find(r"user_id: (\d+)", text).group(1))
    m = _find(r"files kept: existing (\d+), hypothetical (\d+), combined (\d+) of (\d+)", text)
    existing, hypothetical, combined, total = map(int, m.groups())
    holding = sum(1 for lf in events.plan().files
                  if user in pq.read_table(lf.path, columns=["user_id"]).column("user_id").to_pylist())
    assert total == len(events.plan().files)
    assert holding >= 1 and holding <= hypothetical < total and combined <= existing
    assert _find(r"violations: (\d+)", text).group(1) == "0"


def test_advisor_figures_trace_to_explain(cells, wh):
    """The skipped files the notebook's advisor prints for each index equal what explain says of
    the workload's queries (files the index pruned after partition and stats), weights aside."""
    from indexcore.scan import explain

    text = _text(cells["advise"])
    verdicts = ast.literal_eval(_find(r"verdicts: (\{.*\})", text).group(1))
    skipped = ast.literal_eval(_find(r"files skipped: (\{.*\})", text).group(1))
    events = wh.table("demo.events")
    sql = _find(r"where: (.*)", _text(cells["explain"])).group(1).strip()
    user = _find(r"user_id: (-?\d+)", _text(cells["whatif"])).group(1)
    pruned = collections.Counter()
    for where in (sql, f"user_id = {user}"):
        ex = explain(events, where)
        for f in ex.files:
            if f.skipped_by == "index":
                for leaf_col in ex.predicate.fields():
                    pruned[leaf_col] += 1
    column = sql.split()[0]
    key = next(k for k in skipped if k.startswith(column + ":"))
    assert skipped[key] == pruned[column] > 0
    # it prunes, so it is kept as it is or swapped for a kind that does nearly as much for fewer
    # bytes (the advisor weighs an existing index against the other kinds on its column)
    assert verdicts[key] in ("earns its keep", "replace"), verdicts[key]
    # an index no query of the workload filters on is kept, unless asked (--drop-unused), and says so
    assert any(v in ("never prunes", "not in workload") for k, v in verdicts.items()
               if not k.startswith((column + ":", "user_id:")))
    assert "ALTER TABLE demo.events" in text
