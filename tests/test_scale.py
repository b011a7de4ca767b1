"""Scale work keeps its answers: the incremental DV trend equals re-planning every snapshot,
reads each manifest once; bounded frames and figures say how much they show."""

from __future__ import annotations

import collections
import itertools
import posixpath
from pathlib import Path

import pandas as pd
import pytest

import indexcore
from indexcore.frames import bitmap as bitmap_frames
from indexcore.frames import deletion_vectors as deletion_vectors_frames
from indexcore.frames import range as range_frames
from indexcore.frames import range_figures
from indexcore.frames import suggestion as suggestion_frames
from indexcore.frames import table as table_frames
from indexcore.views import census as census_module
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
    got = deletion_vectors_frames.dv_trend(indexcore.open_warehouse(str(SAMPLE)).table("demo.orders"))
    assert expected["deleted"].max() > 0, "the sample's orders table has deleted rows"
    pd.testing.assert_frame_equal(got, expected)


def test_dv_trend_equals_replanning_on_conformance(conformance):
    tables = _dv_tables(conformance)
    assert len(tables) >= 5, tables
    with_deletes = 0
    for wh_path, name in tables:
        expected = dv_trend_from_scratch(indexcore.open_warehouse(wh_path).table(name))
        got = deletion_vectors_frames.dv_trend(indexcore.open_warehouse(wh_path).table(name))
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
    got = deletion_vectors_frames.dv_trend(table, max_snapshots=100)
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
    from indexcore.scan import explain, explain_files

    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ not built")
    table = indexcore.open_warehouse(str(SAMPLE)).table("demo.events")
    total = len(table.plan().files)
    full = suggestion_frames.suggest_predicate(table)
    assert full["sample_files"] == full["total_files"] == total == full["files"]
    monkeypatch.setattr(suggestion_frames, "SUGGEST_MAX_FILES", max(2, total // 2))
    files, n = suggestion_frames.suggestion_sample(table)
    assert n == total and len(files) == max(2, total // 2) < total
    s = suggestion_frames.suggest_predicate(table)
    assert s["sample_files"] == len(files) and s["total_files"] == total
    if s["prunes"]:
        ex = explain_files(table, s["sql"], files)
        assert s["files_read"] == sum(1 for f in ex.files if f.skipped_by is None) and s["files"] == len(files)
        whole = explain(table, s["sql"], verify=True)
        assert not whole.violations and sum(f.matching_rows or 0 for f in whole.files) > 0


def _sample_wh():
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ not built")
    return indexcore.open_warehouse(str(SAMPLE))


def test_figures_draw_at_most_the_cap_and_say_how_many_of_how_many(monkeypatch):
    """Per-file and per-group charts draw their top (or a sample) past the cap, and the title says
    "N of M"; below the cap they draw everything and say nothing."""
    from indexcore.frames import figures

    wh = _sample_wh()
    events, orders, users = wh.table("demo.events"), wh.table("demo.orders"), wh.table("demo.users")
    blooms = view(events, "bloom_filters").to_pandas()
    groups = table_frames.size_skew(events)[0]
    hashes = view(users, "hash_buckets").to_pandas()
    ranges = range_frames.range_frame(events)
    numeric = ranges[ranges["min"].map(pd.api.types.is_number)]
    ranges = ranges[ranges["column"] == numeric["column"].iloc[0]]
    values = view(events, "bitmap_values", column="country").to_pandas()
    top = bitmap_frames.top_values(values, 3)["value"].tolist()
    uncapped = figures.size_skew(groups)
    assert len(uncapped.data[0].x) == len(groups) and " of " not in uncapped.layout.title.text
    monkeypatch.setattr(figures, "MAX_BARS", 2)
    monkeypatch.setattr(figures, "MAX_POINTS", 3)
    fig = figures.size_skew(groups)
    assert len(fig.data[0].x) == 2 and f"2 of {len(groups)} partition / buckets" in fig.layout.title.text
    assert sorted(fig.data[0].y, reverse=True) == sorted(groups["file_size_in_bytes"], reverse=True)[:2]
    assert fig.layout.shapes[0].y0 == pytest.approx(groups["file_size_in_bytes"].mean())  # mean of all
    fig = figures.bloom_fpp(blooms)
    assert sum(len(t.x) for t in fig.data) == 2 and f"of {len(blooms)} filters" in fig.layout.title.text
    fig = figures.bloom_items(blooms)
    drawn = sum(len(t.x) for t in fig.data if t.mode == "markers")
    assert drawn == 3 and f"a sample of 3 of {len(blooms)} filters" in fig.layout.title.text
    fig = figures.hash_buckets(hashes, 10)
    assert sum(len(t.x) for t in fig.data if t.type == "bar") == 2 and f"of {len(hashes)} buckets" in fig.layout.title.text
    fig = range_figures.value_ranges(ranges)
    assert len(fig.data) == 1 and len(fig.data[0].x) == 2 * 3 - 1 and f"of {len(ranges)} indexes" in fig.layout.title.text
    fig = figures.values_per_file(values, top)
    assert len({x for t in fig.data for x in t.x}) == 2 and f"of {values['file_name'].nunique()} files" \
        in fig.layout.title.text
    dvs = deletion_vectors_frames.dv_by_bucket(view(orders, "deletion_vectors").to_pandas())
    fig = figures.dv_heatmap(dvs)
    assert len(fig.data[0].y) == min(2, dvs["partition"].nunique())


def test_capped_sample_keeps_both_ends():
    from indexcore.frames.figures import capped

    frame = pd.DataFrame({"v": range(1000)})
    out, note = capped(frame, 7)
    assert len(out) == 7 and out["v"].iloc[0] == 0 and out["v"].iloc[-1] == 999
    assert note == " (a sample of 7 of 1,000 files)"
    same, none = capped(frame, 1000)
    assert same is frame and none == ""


def test_bitmap_layout_compare_honours_max_files():
    events = _sample_wh().table("demo.events")
    whole = bitmap_frames.bitmap_layout_compare(events, "country", max_files=None)
    two = bitmap_frames.bitmap_layout_compare(events, "country", max_files=2)
    assert whole["file_name"].nunique() > 2 and two["file_name"].nunique() == 2 and len(two) == 4
    pd.testing.assert_frame_equal(two, whole.head(4))


def test_plans_and_manifests_are_bounded_per_table(monkeypatch):
    """Time travel over every snapshot keeps at most ``plan_cache`` plans, and a plan evicted and made
    again is the same."""

    monkeypatch.setenv("INDEXCORE_PLAN_CACHE", "2")
    monkeypatch.setenv("INDEXCORE_MANIFEST_CACHE_ENTRIES", "5")
    orders = indexcore.open_warehouse(str(_sample_wh().url)).table("demo.orders")
    ids = orders.snapshot_ids()
    assert len(ids) > 2
    first = sorted(lf.path for lf in orders.plan(ids[0]).files)
    for sid in ids:
        orders.plan(sid)
    assert len(orders.caches.plans) == 2 and orders.caches.manifests.weight <= max(5, max(
        len(orders.manifest_entries(mf.file_name)) for mf in orders.plan(ids[-1]).manifests))
    assert sorted(lf.path for lf in orders.plan(ids[0]).files) == first


def test_show_frame_pages_rows_and_says_how_many():
    from streamlit.testing.v1 import AppTest

    def page():
        import pandas as pd

        from pages.rows import show_frame

        show_frame(pd.DataFrame({"n": range(450)}), "big", page_size=200)

    import sys

    sys.path.insert(0, str(ROOT))
    at = AppTest.from_function(page, default_timeout=90).run()  # importing pages.common cold under load
    assert not at.exception
    box = at.number_input(key="big_page")
    assert box.label == "Page (of 3, 450 rows)"
    assert len(at.dataframe[0].value) == 200
    box.set_value(3).run()
    assert at.dataframe[0].value["n"].tolist() == list(range(400, 450))


def _files_from_views(table, snapshot_id=None) -> list[dict]:
    """``files`` as the CLI built it before: the ``$files`` view with ``$file_indexes`` folded in."""
    indexes: dict[str, dict] = {}
    for r in view(table, "file_indexes", snapshot_id).to_pylist():
        info = indexes.setdefault(r["file_path"], {"columns": {}, "embedded": r["storage_type"] == "EMBEDDED",
                                                   "path": r["index_file_path"]})
        if r["error"]:
            info["error"] = r["error"]
        elif r["column_name"] is not None:
            info["columns"].setdefault(r["column_name"], []).append(r["index_type"])
    return [{"path": r["file_path"], "partition": r["partition"], "bucket": r["bucket"], "level": r["level"],
             "row_count": r["record_count"], "file_size": r["file_size_in_bytes"], "schema_id": r["schema_id"],
             "index": indexes.get(r["file_path"]),
             "deletion_vector": None if r["deletion_vector_cardinality"] is None
             else {"cardinality": r["deletion_vector_cardinality"]}}
            for r in view(table, "files", snapshot_id).to_pylist()]


def test_cli_files_equals_the_view_based_listing(conformance, capsys):
    """``files`` reads container heads file by file; its answer is the one the views gave, on the
    sample (a corrupt and a missing ``.index`` file) and every Paimon-written table."""
    import json

    from indexcore.cli import main

    roots = [SAMPLE] if SAMPLE.is_dir() else []
    roots += sorted(p for p in (conformance / "warehouses").iterdir() if p.is_dir())
    checked = errors = 0
    for root in roots:
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            assert main(["files", str(root), name, "--format", "json"]) == 0
            got = json.loads(capsys.readouterr().out)["files"]
            want = json.loads(json.dumps(_files_from_views(wh.table(name))))
            assert got == want, (str(root), name)
            checked += len(got)
            errors += sum(1 for f in got if f["index"] and "error" in f["index"])
    assert checked > 100 and (errors >= 2 or not SAMPLE.is_dir())


def test_table_overview_counts_heads_as_the_blobs_did(conformance):
    """The overview's index kinds and problem counts, from container heads only, equal the
    counts over every decoded blob."""
    from indexcore.views.census_blobs import iter_file_indexes

    roots = [SAMPLE] if SAMPLE.is_dir() else []
    roots += sorted(p for p in (conformance / "warehouses").iterdir() if p.is_dir())
    for root in roots:
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            got = table_frames.table_overview(table)
            blobs = list(iter_file_indexes(table))
            kinds = {b.index_type for b in blobs if b.index_type} | {
                e.index_file.index_type for e in table.plan().index_entries}
            assert got["index_kinds"] == ", ".join(sorted(kinds)), name
            plan = table.plan()
            listed = len({(p.path, p.structure, p.reason) for p in plan.problems + table.problems})
            assert got["problems"] == listed + sum(1 for b in blobs if b.error), (str(root), name)


def test_problems_frame_from_heads_equals_the_blob_listing(conformance):
    """``problems_frame`` judges file indexes from container heads; on the sample (corrupt and
    missing ``.index`` files) and every Paimon-written table it lists what opening every blob did."""
    from indexcore.views.census_blobs import iter_file_indexes

    roots = [SAMPLE] if SAMPLE.is_dir() else []
    roots += sorted(p for p in (conformance / "warehouses").iterdir() if p.is_dir())
    listed = 0
    for root in roots:
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            got = table_frames.problems_frame(table)
            got = got[got["structure"] == "file index"]
            want = [(b.file.index_path or f"{b.file.path} (embedded file index)", b.error)
                    for b in iter_file_indexes(table) if b.error]
            assert list(zip(got["path"], got["reason"], strict=True)) == want, (str(root), name)
            listed += len(want)
    assert listed >= 2 or not SAMPLE.is_dir()


def test_unreadable_frame_opens_no_file_index(conformance, monkeypatch, tmp_path):
    """``unreadable_frame`` (what every page names as hiding files) is ``problems_frame`` without
    its file-index rows, and reads no container head: a page that lists unusable files from its
    own census does not pay for a second one. Checked on two damaged copies (a truncated manifest,
    a corrupt ``.index`` file) and every warehouse as written."""
    import shutil

    from indexcore.warehouse.table import Table

    src = conformance / "warehouses" / "parquet" / "pk_with_bitmap_dv.db"
    for db in ("manifest", "index"):
        shutil.copytree(src, tmp_path / f"{db}.db")
    for manifest in (tmp_path / "manifest.db" / "pk_with_bitmap_dv" / "manifest").glob("manifest-*"):
        if "manifest-list" not in manifest.name:
            manifest.write_bytes(manifest.read_bytes()[:40])
    damaged = indexcore.open_warehouse(str(tmp_path)).table("index.pk_with_bitmap_dv")
    Path(damaged.plan().files[0].index_path).write_bytes(b"not a file index" * 8)

    heads = []
    real = Table._head_hit  # every container head the census gets, read or cut from the manifest
    monkeypatch.setattr(Table, "_head_hit", lambda self, path, *rest: heads.append(path) or real(self, path, *rest))
    kinds = collections.Counter()
    for root in [tmp_path, *_roots(conformance)]:
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            got = table_frames.unreadable_frame(table)
            assert heads == [], (str(root), name)
            full = table_frames.problems_frame(table)
            rest = full[full["structure"] != "file index"].reset_index(drop=True)
            pd.testing.assert_frame_equal(got, rest)
            kinds.update(full["structure"])
            heads.clear()
    assert kinds["file index"] >= 1 and sum(kinds.values()) > kinds["file index"], kinds


def _roots(conformance: Path) -> list[Path]:
    roots = [SAMPLE] if SAMPLE.is_dir() else []
    return roots + sorted(p for p in (conformance / "warehouses").iterdir() if p.is_dir())


def file_indexes_opening_every_reader(table) -> list[dict]:
    """``$file_indexes`` as it was built before heads were cached: every container read and every
    blob's reader opened, an opening error being the row's error."""
    from indexcore.errors import IndexCoreError
    from indexcore.formats.container import read_container

    rows = []
    for lf in [lf for lf in table.plan().files if lf.has_file_index]:
        embedded = lf.file.embedded_index is not None
        base = {"file_path": lf.path, "storage_type": "EMBEDDED" if embedded else "FILE"}
        try:
            source = table.file_index_source(lf)
            container = read_container(source)
        except IndexCoreError as exc:
            rows.append({**base, "column_name": None, "index_type": None, "index_size_in_bytes": 0,
                         "index_container_size_in_bytes": None, "is_empty": None, "index_offset": None,
                         "error": str(exc)})
            continue
        schema = table.file_schema(lf)
        for e in container.head.entries:
            error = None
            if e.column not in schema.field_names:
                error = f"column {e.column!r} is not in schema {schema.id}"
            else:
                try:
                    container.reader(e, schema.field(e.column).type, schema.file_index_options(e.column, e.index_type))
                except IndexCoreError as exc:
                    error = str(exc)
            rows.append({**base, "column_name": e.column, "index_type": e.index_type,
                         "index_size_in_bytes": 0 if e.empty else e.length,
                         "index_container_size_in_bytes": source.size, "is_empty": e.empty,
                         "index_offset": e.offset, "error": error})
    return rows


def test_file_indexes_from_heads_equal_opening_every_reader(conformance):
    """The head-only ``$file_indexes`` (readers never opened) lists, on the sample (corrupt and
    missing ``.index`` files) and every Paimon-written table, what opening every reader did."""
    keys = ["file_path", "storage_type", "column_name", "index_type", "index_size_in_bytes",
            "index_container_size_in_bytes", "is_empty", "index_offset", "error"]
    rows = errors = 0
    for root in _roots(conformance):
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            got = [{k: r[k] for k in keys} for r in view(table, "file_indexes").to_pylist()]
            assert got == file_indexes_opening_every_reader(table), (str(root), name)
            rows += len(got)
            errors += sum(1 for r in got if r["error"])
    assert rows > 100 and (errors >= 2 or not SAMPLE.is_dir())


def test_blob_readers_open_lazily_and_say_why_they_cannot(tmp_path):
    """A census of blobs opens no reader. A BSI body made unreadable behind a valid head (a
    version from the future) leaves ``$file_indexes`` (heads only) unchanged; the blob yields no
    reader and its reason, and the kind frame (``range_frame``) shows that reason."""
    import shutil

    from indexcore.formats.container import read_head
    from indexcore.views.census_blobs import iter_file_indexes

    if not SAMPLE.is_dir():
        pytest.skip("sample warehouse not built")
    root = tmp_path / "wh"
    shutil.copytree(SAMPLE, root)
    table = indexcore.open_warehouse(str(root)).table("demo.events")
    blobs = [b for b in iter_file_indexes(table) if not b.empty]
    assert blobs and all("_opened" not in vars(b) for b in blobs)
    target = next(b for b in blobs if b.index_type == "bsi" and not b.embedded)
    before = view(table, "file_indexes").to_pylist()
    assert range_frame_error(table, target) is None

    head = read_head(table.file_index_source(target.file))
    data = bytearray(Path(target.file.index_path).read_bytes())
    data[target.offset] = 0x7F
    Path(target.file.index_path).write_bytes(bytes(data))
    table = indexcore.open_warehouse(str(root)).table("demo.events")
    assert read_head(table.file_index_source(target.file)) == head
    assert view(table, "file_indexes").to_pylist() == before
    blob = next(b for b in iter_file_indexes(table, index_types=["bsi"], column=target.column)
                if b.file.path == target.file.path)
    assert blob.error is None and blob.reader is None and "bsi version 127" in blob.reader_error
    assert "bsi version 127" in range_frame_error(table, target)


def range_frame_error(table, blob) -> str | None:
    frame = range_frames.range_frame(table)
    hit = frame[(frame["file_name"] == blob.file.file.file_name) & (frame["column"] == blob.column)
                & (frame["index_type"] == blob.index_type)]
    assert len(hit) == 1
    return hit["error"].iloc[0]


def test_each_container_head_is_read_once_for_a_pages_worth_of_views(conformance, monkeypatch):
    """``$file_indexes``, table health, the index inventory, the problems frame and the overview
    of one snapshot read each container head once; a second round reads no head again and the
    head-only views issue no storage request."""
    from indexcore.analysis import advise, health
    from indexcore.warehouse.table import Table

    reads = collections.Counter()
    real = Table._head_hit  # every container head the census gets, read or cut from the manifest

    def counted(self, path, *rest):
        reads[path] += 1
        return real(self, path, *rest)

    monkeypatch.setattr(Table, "_head_hit", counted)
    real_read, serial = census_module.read_heads, itertools.count()

    def counted_read(storage, index_paths, embedded, *rest):  # the C walk's heads (its faults go to _head_hit)
        got = real_read(storage, index_paths, embedded, *rest)
        faulted = {i for i, _kind, _detail in got.faults}
        for i, path in enumerate(index_paths):
            if i not in faulted:  # an embedded head has no path: each read counts apart, in the sum
                reads[path if path is not None else ("embedded", next(serial))] += 1
        return got

    monkeypatch.setattr(census_module, "read_heads", counted_read)
    checked = 0
    for root in _roots(conformance):
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            files = [lf for lf in table.plan().files if lf.has_file_index]
            reads.clear()

            def census(table=table):
                view(table, "file_indexes")
                advise.index_inventory(table)
                table_frames.problems_frame(table)
                table_frames.table_overview(table)

            census()
            health.table_health(table)
            assert sum(reads.values()) == len(files) and set(reads.values()) <= {1}, (str(root), name)
            before, heads = table.storage.stats.requests, sum(reads.values())
            view(table, "file_indexes")
            advise.index_inventory(table)
            table_frames.problems_frame(table)
            assert table.storage.stats.requests == before, (str(root), name)
            census()  # the overview may decode a deletion vector, never a head again
            assert sum(reads.values()) == heads, (str(root), name)
            checked += len(files)
    assert checked > 50


def test_a_pages_bitmap_views_open_each_reader_once_within_the_tables_budget(conformance, monkeypatch):
    """The Bitmap page's views and lookup (summaries, values, a point lookup) over the same files
    open and decode each bitmap once, from the table's reader cache, whose readers keep no file
    descriptor; a budget below one blob keeps only the last reader, and the answers stay the same."""
    from indexcore.formats.container import FileIndexContainer
    from indexcore.warehouse import table as table_module

    opened = collections.Counter()
    real = FileIndexContainer.reader

    def counted(self, entry, *args, **kwargs):
        opened[(self.source.name, entry.column, entry.offset)] += 1
        return real(self, entry, *args, **kwargs)

    monkeypatch.setattr(FileIndexContainer, "reader", counted)

    def bitmap_page(table) -> tuple:
        columns = sorted(set(view(table, "file_indexes").to_pandas().query("index_type == 'bitmap'")["column_name"]))
        out = [view(table, "bitmap_indexes").to_pylist()]
        for column in columns:
            values = view(table, "bitmap_values", column=column).to_pylist()
            value = next((v["value"] for v in values if v["value"] != "NULL"), None)
            literal = "NULL" if value is None else value if value.lstrip("-").isdigit() \
                else "'" + value.replace("'", "''") + "'"
            out += [values, bitmap_frames.bitmap_lookup(table, column, literal).to_dict("records")]
        return tuple(map(str, out))

    checked = 0
    for root in _roots(conformance):
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            table = wh.table(name)
            opened.clear()
            held = table.storage.descriptors.held
            first = bitmap_page(table)
            if not opened:
                continue
            assert set(opened.values()) == {1}, (str(root), name)
            # the kept readers hold none of the storage's capped descriptors
            assert table.storage.descriptors.held <= held and len(table.caches.readers) >= len(opened), (str(root), name)
            assert bitmap_page(table) == first and set(opened.values()) == {1}, (str(root), name)
            checked += len(opened)
            with monkeypatch.context() as budget:  # a table made under a budget smaller than any blob
                budget.setenv("INDEXCORE_READER_CACHE_BYTES", "1")
                small = table_module.Table(table.storage, table.path, table.name)
            assert bitmap_page(small) == first and len(small.caches.readers) == 1
    assert checked > 5
