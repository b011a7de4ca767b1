"""The sample's DATE-partitioned and tagged/branched tables: same bytes on every build, readable."""

from __future__ import annotations

import hashlib
import os

import pytest

import indexcore
from indexcore.sample import DEFAULT_SEED, build_daily_events, build_releases
from indexcore.warehouse.data import read_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from indexcore.spark import get_session

    try:
        session = get_session("local[2]", app_name="indexcore-tests", shuffle_partitions=2)
    except Exception as exc:  # no Java: nothing to test here
        pytest.skip(f"no local Spark session: {exc}")
    yield session
    session.stop()


def _digest(root: str) -> dict[str, str]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as fh:
                out[os.path.relpath(os.path.join(folder, name), root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_new_sample_tables_rebuild_identically_and_read_back(spark, tmp_path):
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
