"""Health at a glance (:mod:`indexcore.analysis.health`), its ``$health`` view, the ``health`` CLI and
the Warehouse page: on the sample warehouse, on Paimon-written conformance warehouses and on a
52-table warehouse written by our own writer (with a missing DV file, a missing and a corrupt
``.index`` file)."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import indexcore
from indexcore.analysis import health as H
from indexcore.cli import main
from indexcore.formats.bloom import DEFAULT_FPP, DEFAULT_ITEMS, items_for_fpp, optimal_bits
from indexcore.views import view
from indexcore.write import TableWriter, make_schema

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "warehouses"


def _sample():
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is absent")
    return indexcore.open_warehouse(str(SAMPLE))


def _index_files_on_disk(table_dir: Path) -> int:
    return sum(p.stat().st_size for p in table_dir.rglob("*.index") if p.parent.name.startswith("bucket-"))


# ---------------------------------------------------------------------------------------
# The sample warehouse


def test_faulty_table_lists_its_unusable_files():
    h = H.table_health(_sample().table("demo.faulty"))
    bad = h.unusable_frame
    assert sorted(bad["why"]) == ["missing .index file", "unreadable index"]
    assert bad["file_name"].nunique() == 2
    errors = [i for i in h.items if i.severity == H.ERROR]
    assert {i.kind for i in errors} == {"unusable-files"} and sum(i.files for i in errors) == 2
    assert all(i.page in H.KIND_PAGE.values() or i.page == H.PAGE_TABLE for i in h.items)
    # the two unusable files are not also counted as lacking a configured index
    assert {(c.column, c.index_type): c.lacking for c in h.coverage} == {("event_id", "bloom-filter"): 0,
                                                                        ("country", "bitmap"): 0}
    assert h.score == 100 - sum(H._capped(h.items).values()) and h.score < 100


def test_index_bytes_against_data_bytes_match_the_files_on_disk():
    wh = _sample()
    h = H.table_health(wh.table("demo.events"))
    plan = wh.table("demo.events").plan()
    assert h.data_bytes == sum(os.path.getsize(lf.path) for lf in plan.files)
    on_disk = sum(b.bytes for b in h.index_bytes if b.storage == "FILE")
    assert on_disk == sum(os.path.getsize(lf.index_path) for lf in plan.files
                          if lf.index_path and lf.file.embedded_index is None)
    embedded = sum(b.bytes for b in h.index_bytes if b.storage == "EMBEDDED")
    assert embedded == sum(len(lf.file.embedded_index) for lf in plan.files if lf.file.embedded_index)
    assert h.total_index_bytes / h.data_bytes > 1.5  # the sample's index-heavy table (152%)
    kinds = {b.index_type for b in h.index_bytes}
    assert {"bitmap", "bloom-filter", "range-bitmap", "bsi", H.CONTAINER_HEAD} <= kinds
    heavy = [i for i in h.items if i.kind == "index-overhead"]
    assert heavy and heavy[0].severity == H.WARNING and heavy[0].deduction > 0


def test_dv_density_from_the_decoded_deletion_vectors():
    table = _sample().table("demo.orders")
    h = H.table_health(table)
    files = table.plan().files
    decoded = sum(table.deletion_vector(lf).cardinality for lf in files if lf.deletion_vector)
    assert decoded > 0 and h.deleted_rows == decoded
    assert h.dv_density == pytest.approx(decoded / sum(lf.file.row_count for lf in files))
    worst = max(
        (sum(table.deletion_vector(lf).cardinality for lf in files if lf.bucket == b and lf.deletion_vector)
         / sum(lf.file.row_count for lf in files if lf.bucket == b)) for b in {lf.bucket for lf in files})
    assert h.worst_bucket_density == pytest.approx(worst)
    assert any(i.kind == "dv-density" and i.page == H.PAGE_DV for i in h.items)
    assert any(b.index_type == "DELETION_VECTORS" and b.storage == "INDEX MANIFEST" for b in h.index_bytes)


def test_health_view_and_warehouse_score():
    wh = _sample()
    h = H.warehouse_health(wh)
    assert [t.table for t in h.tables] == wh.tables()
    weights = [max(1, t.files) for t in h.tables]
    assert h.score == round(sum(t.score * w for t, w in zip(h.tables, weights, strict=True)) / sum(weights))
    frame = view(wh.table("demo.faulty"), "health").to_pandas()
    assert set(frame["score"]) == {H.table_health(wh.table("demo.faulty")).score}
    assert "unusable-files" in set(frame["kind"])
    healthy = [t for t in h.tables if not t.items]
    for t in healthy:
        rows = view(wh.table(t.table), "$health").to_pandas()
        assert rows["kind"].tolist() == ["healthy"] and rows["score"].tolist() == [100]


def test_cli_health_json_csv_and_table(capsys):
    _sample()
    assert main(["health", str(SAMPLE), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["table"] for t in out["tables"]] == indexcore.open_warehouse(str(SAMPLE)).tables()
    faulty = next(t for t in out["tables"] if t["table"] == "demo.faulty")
    assert faulty["unusable_files"] == 2
    assert main(["health", str(SAMPLE), "demo.orders", "--format", "json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["table"] == "demo.orders" and {i["kind"] for i in one["items"]} >= {"dv-density"}
    assert main(["health", str(SAMPLE), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("table,score,")
    assert main(["health", str(SAMPLE), "demo.nope"]) == 2
    assert "demo.nope" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# Bloom sizing


def _bloom_table(root: Path, name: str, options: dict, rows: int, batches: int = 2) -> None:
    schema = make_schema([("id", "BIGINT"), ("name", "STRING")],
                         options={"bucket": "-1", "file-index.bloom-filter.columns": "name",
                                  "file-index.in-manifest-threshold": "1B", **options})
    w = TableWriter.create(str(root), name, schema, seed=name)
    for b in range(batches):
        w.write(pa.table({"id": pa.array(range(b * rows, (b + 1) * rows), pa.int64()),
                          "name": [f"n{b}-{j}" for j in range(rows)]}))


def test_bloom_sized_by_default_items_is_oversized(tmp_path):
    _bloom_table(tmp_path, "db.t", {}, rows=8)
    table = indexcore.open_warehouse(str(tmp_path)).table("db.t")
    (b,) = H.table_health(table).blooms
    per_file = optimal_bits(DEFAULT_ITEMS, DEFAULT_FPP) // 8 + 4
    assert b.verdict == "oversized" and b.configured_items == DEFAULT_ITEMS and b.files == 2
    assert b.bytes == 2 * per_file  # megabytes-class filters for 8-row files
    assert b.recommended_items == 8
    assert b.saved_bytes == 2 * per_file - 2 * items_for_fpp(8, DEFAULT_FPP)["bytes"]
    item = next(i for i in H.table_health(table).items if i.kind == "bloom-oversized")
    assert "'file-index.bloom-filter.name.items' = '8'" in item.recommendation and item.page == H.PAGE_BLOOM


def test_bloom_with_more_distinct_keys_than_items_is_over_fpp(tmp_path):
    _bloom_table(tmp_path, "db.t", {"file-index.bloom-filter.name.items": "10"}, rows=300)
    table = indexcore.open_warehouse(str(tmp_path)).table("db.t")
    (b,) = H.table_health(table).blooms
    assert b.verdict == "over fpp" and b.over_fpp_files == 2 and b.configured_items == 10
    rows = pd.Series([lf.file.row_count for lf in table.plan().files])
    assert b.recommended_items == math.ceil(rows.quantile(0.95))
    assert b.saved_bytes < 0  # meeting the fpp costs bytes
    assert any(i.kind == "bloom-over-fpp" and i.files == 2 for i in H.table_health(table).items)


def test_advisor_judges_blooms_by_the_same_rule(tmp_path):
    """One rule: the advisor's verdict and suggested ``items`` are table health's for the column."""
    from indexcore.analysis.advise import advise

    _bloom_table(tmp_path, "db.big", {}, rows=8)
    _bloom_table(tmp_path, "db.few", {"file-index.bloom-filter.name.items": "10"}, rows=300)
    _bloom_table(tmp_path, "db.fit", {"file-index.bloom-filter.name.items": "300"}, rows=300)
    wh = indexcore.open_warehouse(str(tmp_path))
    verdicts = {}
    for name in ("db.big", "db.few", "db.fit"):
        (b,) = H.table_health(wh.table(name)).blooms
        (g,) = [g for g in advise(wh.table(name), "name = 'x'", sample=0).existing if g.index_type == "bloom-filter"]
        verdicts[name] = b.verdict
        sizing = [f["verdict"] for f in g.findings if f["verdict"] in ("oversized", "over fpp")]
        assert sizing == ([b.verdict] if b.verdict != "ok" else [])
        assert g.suggested_options == ({"items": str(b.recommended_items)} if b.verdict != "ok" else {})
    assert verdicts == {"db.big": "oversized", "db.few": "over fpp", "db.fit": "ok"}


def _stale_table(root: Path) -> None:
    """Two files with a bloom filter on ``name``, then the option dropped and a third file written."""
    columns = [("id", "BIGINT"), ("name", "STRING")]
    base = {"bucket": "-1", "file-index.in-manifest-threshold": "1B", "file-index.bloom-filter.name.items": "300"}
    w = TableWriter.create(str(root), "db.stale", make_schema(
        columns, options={**base, "file-index.bloom-filter.columns": "name"}), seed=3)
    for b in range(2):
        w.write(pa.table({"id": pa.array(range(b * 300, (b + 1) * 300), pa.int64()),
                          "name": [f"n{b}-{j}" for j in range(300)]}))
    w.alter_schema(make_schema(columns, options=base))
    w.write(pa.table({"id": pa.array(range(600, 900), pa.int64()), "name": [f"n2-{j}" for j in range(300)]}))


def test_index_no_longer_configured_is_a_stale_item(tmp_path):
    _stale_table(tmp_path)
    table = indexcore.open_warehouse(str(tmp_path)).table("db.stale")
    h = H.table_health(table)
    carrying = sum(1 for lf in table.plan().files if lf.index_path or lf.file.embedded_index)
    assert carrying == 2 and h.files == 3
    (c,) = h.coverage
    assert (c.column, c.index_type, c.configured, c.carrying, c.lacking, c.stale) == ("name", "bloom-filter", False,
                                                                                     2, 0, True)
    (item,) = [i for i in h.items if i.kind == "stale-index"]
    assert item.severity == H.WARNING and item.files == 2 and item.page == H.PAGE_BLOOM
    assert item.deduction == round(H.CAPS["stale-index"] * 2 / 3)
    assert h.score == 100 - sum(H._capped(h.items).values())


def test_conformance_dropped_column_index_is_stale():
    """Paimon's own alter-table case: f2 dropped, one old file still carries its bitmap."""
    root = CONFORMANCE / "parquet"
    if not root.is_dir():
        pytest.skip(f"{root} is absent")
    name = "append_with_bitmap_alter_table.append_with_bitmap_alter_table"
    h = H.table_health(indexcore.open_warehouse(str(root)).table(name))
    (item,) = [i for i in h.items if i.column == "f2"]
    assert item.kind == "stale-index" and item.files == 1 and "no longer a table column" in item.message
    assert item.page == H.PAGE_BITMAP
    assert {c.column for c in h.coverage if c.configured} == {"f1", "f4", "f5"}


def test_small_file_threshold_follows_target_file_size(tmp_path):
    _bloom_table(tmp_path, "db.small", {"file-index.bloom-filter.name.items": "500"}, rows=50, batches=3)
    _bloom_table(tmp_path, "db.tiny_target", {"file-index.bloom-filter.name.items": "500",
                                              "target-file-size": "1kb"}, rows=50, batches=3)
    wh = indexcore.open_warehouse(str(tmp_path))
    small, tiny = H.table_health(wh.table("db.small")), H.table_health(wh.table("db.tiny_target"))
    assert small.small_file_threshold == 64 << 20  # a quarter of Paimon's 256 MB append-table default
    assert small.small_files == 3 and any(i.kind == "small-files" for i in small.items)
    assert tiny.small_file_threshold == 256
    assert tiny.small_files == sum(lf.file.file_size < 256 for lf in wh.table("db.tiny_target").plan().files) == 0


# ---------------------------------------------------------------------------------------
# Paimon-written warehouses


@pytest.mark.parametrize("name", ["parquet", "orc", "mixed"])
def test_conformance_warehouses(name):
    root = CONFORMANCE / name
    if not root.is_dir():
        pytest.skip(f"{root} is absent")
    wh = indexcore.open_warehouse(str(root))
    h = H.warehouse_health(wh)
    assert len(h.tables) == len(wh.tables()) and 0 <= h.score <= 100
    for t in h.tables:
        assert t.error is None, t.error
        assert 0 <= t.score <= 100
        assert t.files == len(wh.table(t.table).plan().files)
        assert all(i.page in H.KIND_PAGE.values() or i.page in (H.PAGE_TABLE, H.PAGE_WHATIF) for i in t.items)
    frames = H.health_frames(h)
    assert frames["tables"]["table"].tolist() == wh.tables()
    blooms = frames["blooms"]
    if name != "mixed":
        # Paimon's own bloom test tables keep the default items (1,000,000) for 8-row files
        default = blooms[blooms["table"].str.startswith("append_with_bloomfilter.")]
        assert not default.empty and set(default["verdict"]) == {"oversized"}
        assert (default["configured_items"] == DEFAULT_ITEMS).all() and (default["recommended_items"] == 8).all()


def test_missing_dv_file_is_flagged(tmp_path):
    source = CONFORMANCE / "parquet" / "pk_table_with_dv_cardinality.db" / "pk_table_with_dv_cardinality"
    if not source.is_dir():
        pytest.skip("../shared/conformance is absent")
    shutil.copytree(source, tmp_path / "db.db" / "t")
    table = indexcore.open_warehouse(str(tmp_path)).table("db.t")
    assert H.table_health(table).unusable_frame.empty
    with_dv = sorted(lf.file.file_name for lf in table.plan().files if lf.deletion_vector)
    for dv in (tmp_path / "db.db" / "t" / "index").iterdir():
        dv.unlink()
    h = H.table_health(indexcore.open_warehouse(str(tmp_path)).table("db.t"))
    bad = h.unusable_frame
    assert sorted(bad["file_name"]) == with_dv and set(bad["why"]) == {"missing DV file"}
    item = next(i for i in h.items if i.kind == "unusable-files")
    assert item.severity == H.ERROR and item.page == H.PAGE_DV and item.files == len(with_dv)
    assert H.tables_frame([h])["missing_dv_files"].tolist() == [len(with_dv)]


# ---------------------------------------------------------------------------------------
# The Warehouse page at 52 tables


N_TABLES = 52


@pytest.fixture(scope="module")
def big_warehouse(tmp_path_factory):
    """52 small tables: appends with bloom and bitmap indexes, primary-key tables with DVs; one
    loses a DV file, one a ``.index`` file, one gets a corrupt ``.index`` file."""
    root = tmp_path_factory.mktemp("wh52")
    for i in range(N_TABLES):
        pk = i % 4 == 3
        options = {"bucket": "1" if pk else "-1", "file-index.in-manifest-threshold": "1B",
                   "file-index.bitmap.columns": "kind", "file-index.bloom-filter.columns": "name",
                   "file-index.bloom-filter.name.items": "64"}
        if pk:
            options["deletion-vectors.enabled"] = "true"
        schema = make_schema([("id", "BIGINT"), ("name", "STRING"), ("kind", "STRING")],
                             primary_keys=("id",) if pk else (), options=options)
        w = TableWriter.create(str(root), f"db{i // 26}.t{i:02d}", schema, seed=i)
        n = 10 + i
        w.write(pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"n{j}" for j in range(n)],
                          "kind": [f"k{j % 3}" for j in range(n)]}))
        if pk:
            w.write(pa.table({"id": pa.array(range(4), pa.int64()), "name": ["x"] * 4, "kind": ["k9"] * 4}))
        else:
            w.write(pa.table({"id": pa.array([n], pa.int64()), "name": ["last"], "kind": ["k0"]}))
    wh = indexcore.open_warehouse(str(root))
    dv_table = wh.table("db0.t03")
    dv_files = sorted({lf.dv_file_path for lf in dv_table.plan().files if lf.dv_file_path})
    lost_dv = sorted(lf.file.file_name for lf in dv_table.plan().files if lf.deletion_vector)
    for p in dv_files:
        os.remove(p)
    index_paths = sorted(lf.index_path for lf in wh.table("db0.t04").plan().files if lf.index_path)
    os.remove(index_paths[0])
    corrupt = sorted(lf.index_path for lf in wh.table("db1.t30").plan().files if lf.index_path)[0]
    Path(corrupt).write_bytes(b"\0" * 64)
    expected = {"db0.t03": len(lost_dv), "db0.t04": 1, "db1.t30": 1}
    return root, expected


def test_health_of_52_tables(big_warehouse):
    root, expected = big_warehouse
    h = H.warehouse_health(indexcore.open_warehouse(str(root)))
    tables = H.tables_frame(h).set_index("table")
    assert len(tables) == N_TABLES
    assert tables.loc[tables["unusable_files"] > 0, "unusable_files"].to_dict() == expected
    assert tables.loc[tables["missing_dv_files"] > 0, "missing_dv_files"].to_dict() == {"db0.t03": expected["db0.t03"]}
    assert (tables.loc[list(expected), "score"] < tables.drop(index=list(expected))["score"].min()).all()


def test_warehouse_page_at_52_tables(big_warehouse, open_page, monkeypatch):
    root, expected = big_warehouse
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(root))
    at = open_page("warehouse", warehouse=root, timeout=180)
    assert not [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tables"] == str(N_TABLES)
    overview = at.dataframe[0].value.set_index("table")
    assert sorted(overview.index) == indexcore.open_warehouse(str(root)).tables()
    assert overview.loc[overview["unusable_files"] > 0, "unusable_files"].to_dict() == expected
    warnings = [w.value for w in at.warning]
    assert any(w.startswith("Deletion vectors missing: db0.t03") for w in warnings), warnings
    assert any("3 table(s) have files that cannot be used" in w for w in warnings), warnings
    links = [el for el in at.main if type(el).__name__ == "PageLink"]
    assert links, "every health item names the page that explains it"
    assert all(el.proto.page_script_hash for el in links), "each link resolves to a page app.py registers"
    assert "deletion_vectors" in {el.proto.page for el in links}


def test_page_links_name_pages_app_registers():
    """Health items name page keys; each is one of the pages app.py registers (pages.common.PAGES),
    with its script and title."""
    from pages.common import PAGE_FILES, PAGE_TITLES, PAGES

    keys = {H.PAGE_TABLE, H.PAGE_BITMAP, H.PAGE_BLOOM, H.PAGE_RANGE, H.PAGE_DV, H.PAGE_HASH, H.PAGE_GLOBAL,
            H.PAGE_WHATIF}
    assert keys <= set(PAGE_FILES) == set(PAGE_TITLES) == {key for key, _title, _icon in PAGES}
    assert all((ROOT / PAGE_FILES[k]).is_file() for k in PAGE_FILES)


def test_table_page_has_one_health_section(open_page, monkeypatch, tmp_path):
    """The Table page's one health section: table_health's score and metrics, each item linked
    to the page explaining it, stale indexes included; no second summary further down."""
    _sample()
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    at = open_page("table", "demo.orders")
    h = H.table_health(_sample().table("demo.orders"))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Health"] == f"{h.score}/100"
    assert metrics[f"Small files (of {h.files:,})"] == f"{h.small_files:,}"
    assert metrics["Densest bucket (DV)"] == f"{h.worst_bucket_density:.1%}"
    assert metrics["Index / data bytes"] == f"{h.total_index_bytes / h.data_bytes:.0%}"
    assert any("**warning**" in m.value and "deleted" in m.value for m in at.markdown)
    assert "deletion_vectors" in {el.proto.page for el in at.main if type(el).__name__ == "PageLink"}
    assert not [e for e in at.expander if "Health" in e.label]

    _stale_table(tmp_path)
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(tmp_path))
    at = open_page("table", "db.stale", warehouse=tmp_path)
    h = H.table_health(indexcore.open_warehouse(str(tmp_path)).table("db.stale"))
    assert {m.label: m.value for m in at.metric}["Health"] == f"{h.score}/100" and h.score < 100
    stale = [m.value for m in at.markdown if "no longer lists it" in m.value]
    assert len(stale) == 1 and "2 of 3 live files carry a bloom-filter index on name" in stale[0]
    assert "bloom" in {el.proto.page for el in at.main if type(el).__name__ == "PageLink"}


def test_bloom_over_fpp_by_skew_says_its_finding_once() -> None:
    """Health's item for filters over fpp because of file-size skew: the finding in its message,
    the cause and fix in its recommendation, not the finding again (the Table page shows both)."""
    from indexcore.analysis.bloom_sizing import OVER_FPP, SKEW, BloomSizing

    b = BloomSizing(column="event_id", files=966_800, bytes=305_508_800, needed_bytes=300_000_000,
                    configured_items=400, configured_fpp=0.05, rows_p95=355, over_fpp_files=19_446,
                    verdict=OVER_FPP, cause=SKEW, ndv_share=355, over_fpp_rows_min=401)
    assert b.message().startswith("19,446 of 966,800 filters hold more distinct keys than items=400")
    assert "19,446" not in b.cause_text() and b.cause_text().startswith("95% of the files hold at most 355 keys")
    assert b.message() == "19,446 of 966,800 filters hold more distinct keys than items=400: more false " \
                          "positives than fpp 0.05; " + b.cause_text()
