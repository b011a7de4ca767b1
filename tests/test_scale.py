"""Scale work keeps its answers: the incremental DV trend equals re-planning every snapshot,
reads each manifest once; bounded frames and figures say how much they show."""

from __future__ import annotations

import collections
import posixpath
from pathlib import Path

import pandas as pd
import pytest

import indexcore
from indexcore.evaluate import metrics
from indexcore.views import view

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"


def dv_trend_from_scratch(table, max_snapshots: int = 50) -> pd.DataFrame:
    """The trend as it was computed before: the ``$deletion_vectors`` view of every snapshot."""
    rows = []
    for sid in table.snapshot_ids()[-max_snapshots:]:
        d = view(table, "deletion_vectors", sid).to_pandas()
        total, deleted = int(d["row_count"].sum()), int(d["deleted"].sum())
        rows.append({"snapshot_id": sid, "row_count": total, "deleted": deleted,
                     "density": deleted / total if total else 0.0, "dv_files": int(d["has_dv"].sum())})
    return pd.DataFrame(rows, columns=["snapshot_id", "row_count", "deleted", "density", "dv_files"])


def _dv_tables(conformance: Path) -> list[tuple[str, str]]:
    out = []
    for schema in sorted((conformance / "warehouses").glob("*/*.db/*/schema/schema-0")):
        if "deletion-vectors.enabled" in schema.read_text():
            table_dir = schema.parent.parent
            wh = table_dir.parent.parent
            out.append((str(wh), f"{table_dir.parent.name[:-3]}.{table_dir.name}"))
    return out


def test_dv_trend_equals_replanning_on_sample():
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ not built")
    wh = indexcore.open_warehouse(str(SAMPLE))
    expected = dv_trend_from_scratch(wh.table("demo.orders"))
    got = metrics.dv_trend(indexcore.open_warehouse(str(SAMPLE)).table("demo.orders"))
    assert expected["deleted"].max() > 0, "the sample's orders table has deleted rows"
    pd.testing.assert_frame_equal(got, expected)


def test_dv_trend_equals_replanning_on_conformance(conformance):
    tables = _dv_tables(conformance)
    assert len(tables) >= 5, tables
    with_deletes = 0
    for wh_path, name in tables:
        expected = dv_trend_from_scratch(indexcore.open_warehouse(wh_path).table(name))
        got = metrics.dv_trend(indexcore.open_warehouse(wh_path).table(name))
        pd.testing.assert_frame_equal(got, expected, obj=f"{wh_path} {name}")
        with_deletes += int(expected["deleted"].max() > 0)
    assert with_deletes >= 3


def test_dv_trend_reads_each_manifest_once(tmp_path):
    """A table of many commits: the walk decodes each manifest, list and index manifest once."""
    import pyarrow as pa

    from indexcore.write import TableWriter, make_schema

    schema = make_schema([("k", "BIGINT"), ("v", "STRING")], primary_keys=["k"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    writer = TableWriter.create(str(tmp_path), "db.t", schema, seed=4)
    for b in range(8):
        keys = list(range(b * 5, b * 5 + 20))
        writer.write(pa.table({"k": pa.array(keys, pa.int64()), "v": [f"{b}-{k}" for k in keys]}))
    table = indexcore.open_warehouse(str(tmp_path)).table("db.t")
    reads: collections.Counter = collections.Counter()
    read_bytes = table.storage.read_bytes

    def counting(path):
        reads[posixpath.basename(path)] += 1
        return read_bytes(path)

    table.storage.read_bytes = counting
    got = metrics.dv_trend(table, max_snapshots=100)
    table.storage.read_bytes = read_bytes
    manifests = {n: c for n, c in reads.items() if n.startswith(("manifest-", "index-manifest-"))}
    assert len(got) == len(table.snapshot_ids()) == 16
    assert manifests and max(manifests.values()) == 1, manifests
    # only the first snapshot's base list is read; every other snapshot reads its delta list
    lists = [n for n in manifests if n.startswith("manifest-list-")]
    assert len(lists) == 16 + 1
    fresh = indexcore.open_warehouse(str(tmp_path)).table("db.t")
    pd.testing.assert_frame_equal(got, dv_trend_from_scratch(fresh, 100))
    assert got["deleted"].iloc[-1] > 0


def _largest_table(root: Path):
    wh = indexcore.open_warehouse(str(root))
    return max((wh.table(n) for n in wh.tables()), key=lambda t: len(t.plan().files))


def test_suggestion_is_bounded_by_a_sample_and_says_so(monkeypatch):
    """Above ``SUGGEST_MAX_FILES`` live files the suggestion reads and explains a sample only,
    reports its size, and its numbers are explain's over exactly those files."""
    from indexcore.evaluate.explain import explain, explain_files

    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ not built")
    table = indexcore.open_warehouse(str(SAMPLE)).table("demo.events")
    total = len(table.plan().files)
    full = metrics.suggest_predicate(table)
    assert full["sample_files"] == full["total_files"] == total == full["files"]
    monkeypatch.setattr(metrics, "SUGGEST_MAX_FILES", max(2, total // 2))
    files, n = metrics.suggestion_sample(table)
    assert n == total and len(files) == max(2, total // 2) < total
    s = metrics.suggest_predicate(table)
    assert s["sample_files"] == len(files) and s["total_files"] == total
    if s["prunes"]:
        ex = explain_files(table, s["sql"], files)
        assert s["files_read"] == sum(1 for f in ex.files if f.skipped_by is None) and s["files"] == len(files)
        whole = explain(table, s["sql"], verify=True)
        assert not whole.violations and sum(f.matching_rows or 0 for f in whole.files) > 0
