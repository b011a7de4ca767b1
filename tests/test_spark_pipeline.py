"""The Spark pipeline: tasks write data files and indexes, the driver commits; same bytes every run."""

from __future__ import annotations

import hashlib
import os

import pytest

import indexcore
from indexcore.expr import Leaf
from indexcore.formats.container import read_container
from indexcore.io import BytesSource, open_file
from indexcore.types import parse_type
from indexcore.warehouse.data import read_table
from indexcore.write import TableWriter, make_schema

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from indexcore.spark import get_session

    try:
        session = get_session("local[2]", app_name="indexcore-tests", shuffle_partitions=2)
    except Exception as exc:  # no Java: nothing to test here
        pytest.skip(f"no local Spark session: {exc}")
    yield session
    session.stop()


def _frame(spark, n: int, seed: int):
    from pyspark.sql import functions as F

    h = F.xxhash64(F.col("id"), F.lit(seed))
    return spark.range(0, n, numPartitions=3).select(
        F.format_string("id-%06d", F.col("id")).alias("id"),
        F.element_at(F.array(F.lit("a"), F.lit("b"), F.lit("c")), (F.pmod(h, F.lit(3)) + 1).cast("int")).alias("c"),
        F.pmod(h, F.lit(1000)).cast("int").alias("n"),
        F.when(F.col("id") % 2 == 0, F.lit("d0")).otherwise(F.lit("d1")).alias("dt"))


def _build(spark, root: str) -> TableWriter:
    from indexcore.spark.pipeline import write_dataframe

    schema = make_schema([("id", "STRING"), ("c", "STRING"), ("n", "INT"), ("dt", "STRING")], partition_keys=["dt"],
                         options={"bucket": "-1", "file-index.bitmap.columns": "c", "file-index.bsi.columns": "n"})
    writer = TableWriter.create(root, "db.events", schema, seed=11)
    write_dataframe(writer, _frame(spark, 600, 11))
    pk = make_schema([("k", "BIGINT"), ("v", "STRING")], primary_keys=["k"],
                     options={"bucket": "2", "deletion-vectors.enabled": "true"})
    orders = TableWriter.create(root, "db.orders", pk, seed=11)
    base = spark.range(0, 200).selectExpr("id as k", "cast(id as string) as v")
    write_dataframe(orders, base)
    write_dataframe(orders, base.where("k < 20").selectExpr("k", "'new' as v"), deletes=base.where("k >= 190"))
    return writer


def _digest(root: str) -> dict[str, str]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("pipeline") / "wh")
    _build(spark, root)
    return root


def test_pipeline_writes_readable_indexed_tables(spark, built):
    root = built
    wh = indexcore.open_warehouse(root)
    events = wh.table("db.events")
    expected = sorted(tuple(r) for r in _frame(spark, 600, 11).collect())
    got = sorted(tuple(r.values()) for r in read_table(events).to_pylist())
    assert got == expected
    plan = events.plan()
    assert len(plan.files) >= 2 and not plan.problems
    for lf in plan.files:
        source = BytesSource(lf.file.embedded_index) if lf.file.embedded_index else open_file(lf.index_path)
        container = read_container(source)
        reader = container.reader(container.entry("c", "bitmap"), parse_type("STRING"))
        import pyarrow.parquet as pq

        values = pq.read_table(lf.path, columns=["c"]).column("c").to_pylist()
        assert sorted(reader.visit(Leaf("equal", "c", ("b",))).bitmap) == [i for i, v in enumerate(values) if v == "b"]
    orders = {r["k"]: r["v"] for r in read_table(wh.table("db.orders")).to_pylist()}
    assert len(orders) == 190 and all(orders[k] == "new" for k in range(20)) and orders[50] == "50"


def test_pipeline_is_deterministic(spark, built, tmp_path):
    _build(spark, str(tmp_path / "again"))
    one, two = _digest(built), _digest(str(tmp_path / "again"))
    assert one == two and len(one) > 10


def test_new_sample_tables_rebuild_identically_and_read_back(spark, tmp_path):
    """The sample's DATE-partitioned and tagged/branched tables: same bytes every build, readable."""
    from indexcore.spark.sample import DEFAULT_SEED, build_daily_events, build_releases

    roots = [str(tmp_path / "one"), str(tmp_path / "two")]
    for root in roots:
        build_daily_events(spark, root, DEFAULT_SEED)
        build_releases(spark, root, DEFAULT_SEED)
    one, two = (_digest(r) for r in roots)
    assert one == two and any(k.startswith(os.path.join("demo.db", "releases", "branch")) for k in one)

    wh = indexcore.open_warehouse(roots[0])
    daily = wh.table("demo.daily_events")
    assert [f.type.root for f in daily.schema().partition_fields] == ["DATE"]
    problems: list = []
    assert read_table(daily, problems=problems).num_rows == 900 and problems == []
    assert all(lf.has_file_index for lf in daily.plan().files)
    releases = wh.table("demo.releases")
    assert list(releases.tags()) == ["v1", "v2"] and releases.branches() == ["dev"]
    dev = releases.branch("dev")
    assert "note" in dev.schema().field_names and "note" not in releases.schema().field_names
    assert read_table(dev).num_rows == 190 and read_table(releases).num_rows == 180
