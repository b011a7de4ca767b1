"""Bloom sizing over a column renamed between schemas: its files' filters carry two names (the one
their schema gave it). The tally of census rows (:func:`rows_tally`, what advise judges on) and of
live-file objects (:func:`column_sizing`) count each file's filter under its own schema's options.
Truth by construction: 4 files of schema 0 (``uuid``, items=50) hold 100 distinct keys each, so
their filters are over fpp; 4 files of schema 1 (renamed ``uid``, items=500) hold 100 and are not."""

from __future__ import annotations

import dataclasses
import os

import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise import advise
from indexcore.analysis.bloom_sizing import column_sizing, rows_tally, sizing_of
from indexcore.views import view
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema, schema_json
from indexcore.write.layout import write_text

BASE = {"bucket": "-1", "file.format": "parquet", "manifest.format": "avro"}


def _renamed(root: str) -> str:
    w = TableWriter.create(root, "db.t", make_schema([("uuid", "STRING"), ("n", "INT")], options={
        **BASE, "file-index.bloom-filter.columns": "uuid", "file-index.bloom-filter.uuid.items": "50"}), seed=2)
    for k in range(8):
        if k == 4:  # rename uuid -> uid (same field id), bloom items 500 under the new name
            renamed = make_schema([("uid", "STRING"), ("n", "INT")], schema_id=1, options={
                **BASE, "file-index.bloom-filter.columns": "uid", "file-index.bloom-filter.uid.items": "500"})
            write_text(os.path.join(root, "db.db", "t", "schema", "schema-1"), schema_json(renamed))
            w.schema = dataclasses.replace(renamed, time_millis=w.schema.time_millis)
        name = "uuid" if k < 4 else "uid"
        w.write(pa.table({name: [f"k{k}-{i:03d}" for i in range(100)], "n": pa.array(range(100), pa.int32())}))
    return root


def test_renamed_bloom_column_is_tallied_under_each_files_own_name_and_options(tmp_path):
    root = _renamed(str(tmp_path / "wh"))
    table = Warehouse(root).table("db.t")
    census = view(table, "file_indexes")
    assert sorted(census["column_name"].to_pylist()) == ["uid"] * 4 + ["uuid"] * 4
    files = {lf.path: lf for lf in table.plan().files}
    rows = census.select(["file_path", "schema_id", "record_count", "column_name", "index_size_in_bytes"])
    by_rows = sizing_of("uid", rows_tally(table, rows, lambda paths: [files[p] for p in paths]))
    assert by_rows.files == 8 and by_rows.over_fpp_files == 4
    assert by_rows.bytes == pc.sum(census["index_size_in_bytes"]).as_py()
    assert by_rows.configured_items == 500  # the largest items configured over the files
    plain = rows.set_column(0, "file_path", rows["file_path"].cast(pa.string()))
    assert sizing_of("uid", rows_tally(table, plain, lambda paths: [files[p] for p in paths])) == by_rows
    objects = column_sizing(table, "uid", ((files[p], name, size) for p, name, size in zip(
        *(rows[c].to_pylist() for c in ("file_path", "column_name", "index_size_in_bytes")), strict=True)))
    assert objects == by_rows
    advice = advise(Warehouse(root).table("db.t"), "uid = 'k5-001'", sample=0)
    (g,) = [g for g in advice.existing if g.column == "uid" and g.index_type == "bloom-filter"]
    (finding,) = [f for f in g.findings if f["verdict"] == "over fpp"]
    assert finding["files"] == 4 and finding["message"] == by_rows.message()
