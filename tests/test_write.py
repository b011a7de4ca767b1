"""The table writer: bytes that match Paimon's, and tables our reader reads back exactly."""

from __future__ import annotations

import glob
import io
import json
import os

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import indexcore
from indexcore.errors import ReadOnlyError
from indexcore.expr import Leaf
from indexcore.formats.binary_row import key_hash
from indexcore.formats.container import read_container
from indexcore.formats.deletion_vector import read_deletion_vector
from indexcore.formats.hash_index import read_hash_index
from indexcore.io import BytesSource, open_file
from indexcore.types import parse_type
from indexcore.warehouse.data import read_table
from indexcore.write import (
    READ_ONLY_MARKER,
    TableWriter,
    build_file_index,
    make_schema,
    schema_json,
)
from indexcore.write.avro import MANIFEST_SCHEMA

PARQUET = "warehouses/parquet"


def _bytes(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def test_build_file_index_matches_golden(golden):
    """In-memory index bytes equal Paimon's own writer output for the same values."""
    from indexcore.types import from_json

    matched = 0
    for name in ("bitmap_v2__int__lowcard", "bitmap_v1__string__somenull", "bsi__bigint__highcard",
                 "range_bitmap__int__lowcard", "bloom_i100_f001__string__highcard"):
        meta_path = golden / "single" / f"{name}.json"
        if not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_bytes())
        dtype = parse_type(meta["column"]["type"])
        values = [None if v is None else from_json(dtype, v) for v in meta["values"]]
        blob = build_file_index(values, dtype, meta["index_type"], meta["options"])
        assert blob == (golden / "single" / meta["bin_file"]).read_bytes(), name
        matched += 1
    assert matched >= 3


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


def _events(n: int, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table({
        "id": [f"id-{i:06d}" for i in ids],
        "country": [("US", "DE", "FR", "JP")[i * 7 % 4] for i in ids],
        "amount": pa.array([None if i % 11 == 0 else i * 37 % 1000 for i in ids], pa.int32()),
        "dt": [("d1", "d2")[i % 2] for i in ids],
    })


def test_append_table_round_trip(warehouse):
    schema = make_schema([("id", "STRING"), ("country", "STRING"), ("amount", "INT"), ("dt", "STRING")],
                         partition_keys=["dt"],
                         options={"bucket": "-1", "file-index.bloom-filter.columns": "id",
                                  "file-index.bloom-filter.id.items": "300",
                                  "file-index.bitmap.columns": "country", "file-index.bsi.columns": "amount",
                                  "file-index.in-manifest-threshold": "1kb"})
    writer = TableWriter.create(warehouse, "db.events", schema, seed=3)
    writer.write(_events(400))
    writer.write(_events(20, offset=400))
    assert _bytes(os.path.join(writer.table_path, "schema", "schema-0")).decode() == schema_json(writer.schema)
    table = indexcore.open_warehouse(warehouse).table("db.events")
    plan = table.plan()
    assert not plan.problems
    got = sorted(read_table(table).to_pylist(), key=lambda r: r["id"])
    want = sorted(pa.concat_tables([_events(400), _events(20, 400)]).to_pylist(), key=lambda r: r["id"])
    assert got == want
    kinds = {"embedded": 0, "file": 0}
    for lf in plan.files:
        if lf.file.embedded_index is not None:
            source, kinds["embedded"] = BytesSource(lf.file.embedded_index), kinds["embedded"] + 1
        else:
            source, kinds["file"] = open_file(lf.index_path), kinds["file"] + 1
        container = read_container(source)
        entry = container.entry("country", "bitmap")
        reader = container.reader(entry, parse_type("STRING"))
        data = pq.read_table(lf.path).to_pylist()
        for value in ("US", "JP"):
            result = reader.visit(Leaf("equal", "country", (value,)))
            assert sorted(result.bitmap) == [i for i, r in enumerate(data) if r["country"] == value]
        bsi = container.reader(container.entry("amount", "bsi"), parse_type("INT"))
        hit = bsi.visit(Leaf("greaterThan", "amount", (900,)))
        assert sorted(hit.bitmap) == [i for i, r in enumerate(data) if r["amount"] is not None and r["amount"] > 900]
        bloom = container.reader(container.entry("id", "bloom-filter"), parse_type("STRING"))
        assert all(bloom.visit(Leaf("equal", "id", (r["id"],))).remain() for r in data)
    assert kinds["embedded"] and kinds["file"]


def test_manifest_uses_paimon_writer_schema(warehouse):
    schema = make_schema([("k", "INT")], options={"bucket": "-1"})
    writer = TableWriter.create(warehouse, "db.t", schema)
    writer.write(pa.table({"k": pa.array([1, 2, 3], pa.int32())}))
    path = glob.glob(os.path.join(writer.table_path, "manifest", "manifest-[0-9a-f]*"))[0]
    from indexcore.warehouse.manifest import read_records  # noqa: F401  (installs the zstd reader)

    reader = fastavro.reader(io.BytesIO(_bytes(path)))
    assert reader.codec == "zstandard"
    assert [f["name"] for f in reader.writer_schema["fields"]] == [f["name"] for f in MANIFEST_SCHEMA["fields"]]


def _orders(keys, tag: str) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{tag}{k}" for k in keys],
                     "s": [("a", "b", "c")[k % 3] for k in keys]})


@pytest.mark.parametrize("bitmap64", [False, True])
def test_primary_key_deletion_vectors(warehouse, bitmap64):
    schema = make_schema([("k", "BIGINT"), ("v", "STRING"), ("s", "STRING")], primary_keys=["k"],
                         options={"bucket": "3", "deletion-vectors.enabled": "true",
                                  "deletion-vectors.bitmap64": str(bitmap64).lower(),
                                  "file-index.bitmap.columns": "s"})
    writer = TableWriter.create(warehouse, "db.orders", schema, seed=5)
    assert writer.write(_orders(range(300), "a")) == [1, 2]
    writer.write(_orders(range(0, 60, 3), "b"), deletes=_orders(range(100, 140), "x"))
    writer.write(_orders([], "c"), deletes=_orders(range(200, 205), "x"))
    table = indexcore.open_warehouse(warehouse).table("db.orders")
    plan = table.plan()
    assert not plan.problems and all(lf.file.level > 0 for lf in plan.files)
    expected = {k: f"a{k}" for k in range(300)}
    expected.update({k: f"b{k}" for k in range(0, 60, 3)})
    for k in list(range(100, 140)) + list(range(200, 205)):
        del expected[k]
    got = {r["k"]: r["v"] for r in read_table(table).to_pylist()}
    assert got == expected
    committed = writer.deletion_vectors_of()
    seen = {}
    for lf in plan.files:
        if lf.deletion_vector is not None:
            dv = read_deletion_vector(open_file(lf.dv_file_path), lf.deletion_vector.offset,
                                      lf.deletion_vector.length, bitmap64=bitmap64)
            seen[lf.file.file_name] = dv.to_list()
            keys = pq.read_table(lf.path, columns=["k"]).column("k").to_pylist()
            assert all(keys[p] in range(300) and (keys[p] not in expected or expected[keys[p]][0] == "b")
                       for p in dv.to_list())
    assert seen == committed and sum(map(len, seen.values())) == 20 + 40 + 5


def test_dynamic_bucket_hash_index(warehouse):
    schema = make_schema([("r", "STRING"), ("k", "BIGINT"), ("v", "STRING")], partition_keys=["r"],
                         primary_keys=["r", "k"], options={"bucket": "-1", "dynamic-bucket.target-row-num": "40"})
    writer = TableWriter.create(warehouse, "db.users", schema, seed=9)
    first = pa.table({"r": ["eu"] * 100 + ["us"] * 30, "k": pa.array(list(range(100)) + list(range(30)), pa.int64()),
                      "v": ["1"] * 130})
    writer.write(first)
    writer.write(pa.table({"r": ["eu"] * 10, "k": pa.array(range(95, 105), pa.int64()), "v": ["2"] * 10}))
    table = indexcore.open_warehouse(warehouse).table("db.users")
    plan = table.plan()
    rows = read_table(table).to_pylist()
    assert len(rows) == 135 and sum(r["v"] == "2" for r in rows) == 10
    ktype = [parse_type("BIGINT")]
    by_bucket: dict = {}
    for lf in plan.files:
        keys = pq.read_table(lf.path, columns=["k"]).column("k").to_pylist()
        by_bucket.setdefault((lf.partition, lf.bucket), set()).update(key_hash([k], ktype) for k in keys)
    hash_entries = [e for e in plan.index_entries if e.index_file.index_type == "HASH"]
    index_dir = os.path.join(writer.table_path, "index")
    found = {}
    for name in os.listdir(index_dir):
        found[name] = set(read_hash_index(_bytes(os.path.join(index_dir, name))).hashes.tolist())
    live = {(p, b): s for (p, b), s in by_bucket.items()}
    assert sorted(len(s) for s in live.values()) == sorted([40, 40, 25, 30])
    for hashes in live.values():
        assert hashes in found.values()
    assert len(hash_entries) == len(live)


def test_refuses_to_write_where_it_must_not(tmp_path, conformance):
    wh = indexcore.open_warehouse(str(conformance / PARQUET))
    schema = make_schema([("k", "INT")])
    with pytest.raises(ReadOnlyError):
        TableWriter.create(wh, "db.t", schema)
    flagged = tmp_path / "flagged"
    flagged.mkdir()
    (flagged / READ_ONLY_MARKER).write_text("")
    with pytest.raises(ReadOnlyError):
        TableWriter.create(str(flagged), "db.t", schema)
    foreign = tmp_path / "foreign"
    src = conformance / PARQUET / "append_with_bitmap.db"
    import shutil

    shutil.copytree(src, foreign / "db.db")
    with pytest.raises(ReadOnlyError):
        TableWriter.create(str(foreign), "db.append_with_bitmap", schema, overwrite=True)
    assert (foreign / "db.db/append_with_bitmap/snapshot/snapshot-1").exists()
    mine = TableWriter.create(str(tmp_path / "mine"), "db.t", schema)
    mine.write(pa.table({"k": pa.array([1], pa.int32())}))
    with pytest.raises(ReadOnlyError):
        TableWriter.create(str(tmp_path / "mine"), "db.t", schema)
    TableWriter.create(str(tmp_path / "mine"), "db.t", schema, overwrite=True)


def test_tags_and_branches_follow_paimons_layout(tmp_path):
    """``tag/tag-NAME`` pins a snapshot; ``branch/branch-NAME`` has its own schemas and snapshots
    and shares the table's data and manifests; a tag, the branch and main each read their rows."""
    from indexcore.errors import UnsupportedError

    schema = make_schema([("id", "BIGINT"), ("s", "STRING")], options={"bucket": "-1"})
    writer = TableWriter.create(str(tmp_path), "d.t", schema, seed=5)

    def rows(lo, hi, extra=False):
        cols = {"id": pa.array(range(lo, hi), pa.int64()), "s": pa.array([f"s{i}" for i in range(lo, hi)])}
        if extra:
            cols["note"] = pa.array([f"n{i}" for i in range(lo, hi)])
        return pa.table(cols)

    writer.write(rows(0, 10))
    writer.create_tag("v1")
    with pytest.raises(ReadOnlyError):
        writer.create_tag("v1")
    dev = writer.create_branch("dev", tag="v1")
    dev.alter_schema(make_schema([("id", "BIGINT"), ("s", "STRING"), ("note", "STRING")],
                                 options={"bucket": "-1"}))
    dev.write(rows(100, 105, extra=True))
    writer.write(rows(10, 13))
    with pytest.raises(UnsupportedError):
        writer.create_branch("late", tag="v1")  # v1 is no longer the latest snapshot
    base = tmp_path / "d.db" / "t"
    assert sorted(os.listdir(base / "tag")) == ["tag-v1"]
    assert sorted(os.listdir(base / "branch" / "branch-dev" / "schema")) == ["schema-0", "schema-1"]
    assert sorted(os.listdir(base / "branch" / "branch-dev" / "snapshot")) == \
        ["EARLIEST", "LATEST", "snapshot-1", "snapshot-2"]
    assert sorted(os.listdir(base / "branch" / "branch-dev" / "tag")) == ["tag-v1"]
    assert not (base / "branch" / "branch-dev" / "manifest").exists()

    table = indexcore.open_warehouse(str(tmp_path)).table("d.t")
    assert table.branches() == ["dev"] and list(table.tags()) == ["v1"]
    assert sorted(read_table(table).column("id").to_pylist()) == list(range(13))
    assert sorted(read_table(table, table.tag("v1").id).column("id").to_pylist()) == list(range(10))
    branch = table.branch("dev")
    got = read_table(branch)
    assert branch.schema().id == 1 and table.schema().id == 0
    assert sorted(got.column("id").to_pylist()) == list(range(10)) + list(range(100, 105))
    notes = dict(zip(got.column("id").to_pylist(), got.column("note").to_pylist(), strict=True))
    assert notes[0] is None and notes[104] == "n104"
