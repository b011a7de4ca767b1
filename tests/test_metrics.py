"""The explorer's frames (indexcore.views and indexcore.frames) against Paimon-written warehouses.

Expected numbers come from an independent path: the Parquet data files read with pyarrow,
the deletion vectors decoded one by one, and the index blobs Paimon wrote.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import indexcore
from indexcore.formats import bloom
from indexcore.frames import bitmap as bitmap_frames
from indexcore.frames import deletion_vectors as deletion_vectors_frames
from indexcore.frames import hash_index as hash_index_frames
from indexcore.frames import pruning as pruning_frames
from indexcore.frames import range as range_frames
from indexcore.frames import range_figures
from indexcore.frames import suggestion as suggestion_frames
from indexcore.frames import table as table_frames
from indexcore.frames import views as views_frames
from indexcore.frames import warehouse as warehouse_frames
from indexcore.frames import what_if as what_if_frames
from indexcore.views import indexes as index_views
from indexcore.views import view


def frame(table, name, snapshot_id=None, **kwargs):
    return view(table, name, snapshot_id, **kwargs).to_pandas()

BLOOM = "append_with_bsi_bitmap_bloomfilter.append_with_bsi_bitmap_bloomfilter"
BITMAP_V1 = "append_with_bitmap_v1.append_with_bitmap_v1"
BITMAP_V2 = "append_with_bitmap.append_with_bitmap"
SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"
DV_TABLES = ["pk_table_scan_and_read_dv.pk_table_scan_and_read_dv", "pk_09.pk_09",
             "pk_table_with_dv_cardinality.pk_table_with_dv_cardinality",
             "pk_dv_index_in_data_with_external.pk_dv_index_in_data_with_external"]


@pytest.fixture(scope="module")
def warehouse(conformance):
    return indexcore.open_warehouse(str(conformance / "warehouses" / "parquet"))


def _column(table, live_file, column):
    return pq.read_table(live_file.path, columns=[column]).column(column)


def test_overview_matches_plans(warehouse):
    overview = warehouse_frames.warehouse_overview(warehouse).set_index("table")
    assert sorted(overview.index) == warehouse.tables()
    for name in (BLOOM, DV_TABLES[0]):
        plan = warehouse.table(name).plan()
        row = overview.loc[name]
        assert row["files"] == len(plan.files)
        assert row["rows"] == sum(lf.file.row_count for lf in plan.files)
    assert set(overview.loc[BLOOM, "index_kinds"].split(", ")) == {"bitmap", "bloom-filter", "bsi"}
    assert "DELETION_VECTORS" in overview.loc[DV_TABLES[0], "index_kinds"]


@pytest.mark.parametrize("name", DV_TABLES)
def test_dv_density_matches_decoded_vectors(warehouse, name):
    table = warehouse.table(name)
    dvs = frame(table, "deletion_vectors")
    decoded = {}
    for lf in table.plan().files:
        dv = table.deletion_vector(lf)
        decoded[lf.file.file_name] = dv.cardinality if dv is not None else 0
    assert dict(zip(dvs["file_name"], dvs["deleted"], strict=True)) == decoded
    assert decoded and sum(decoded.values()) > 0
    buckets = deletion_vectors_frames.dv_by_bucket(dvs)
    assert buckets["deleted"].sum() == sum(decoded.values())
    for _, b in buckets.iterrows():
        assert b["density"] == pytest.approx(b["deleted"] / b["row_count"])
    hot = deletion_vectors_frames.compaction_hint(buckets, threshold=float(buckets["density"].max()))
    assert len(hot) >= 1 and (hot["density"] >= buckets["density"].max()).all()
    # summed on the view's Arrow columns (table health): the same frame as pandas' group-by of the frame,
    # on every snapshot (DV-less ones too)
    for sid in table.snapshot_ids():
        arrow, pandas = view(table, "deletion_vectors", sid), frame(table, "deletion_vectors", sid)
        by_arrow, by_pandas = (deletion_vectors_frames.dv_by_bucket(d) for d in (arrow, pandas))
        assert by_arrow.equals(by_pandas) or (by_arrow.empty and by_pandas.empty), sid


def test_dv_trend_follows_snapshots(warehouse):
    table = warehouse.table(DV_TABLES[0])
    trend = deletion_vectors_frames.dv_trend(table)
    assert trend["snapshot_id"].tolist() == table.snapshot_ids()
    for _, row in trend.iterrows():
        dvs = frame(table, "deletion_vectors", int(row["snapshot_id"]))
        assert row["deleted"] == dvs["deleted"].sum()
        assert row["row_count"] == dvs["row_count"].sum()


@pytest.mark.parametrize("name", [BITMAP_V1, BITMAP_V2, BLOOM])
def test_bitmap_cardinalities_match_data(warehouse, name):
    table = warehouse.table(name)
    columns = sorted({c for c, t in table.schema().core_options.configured_indexes() if t == "bitmap"})
    assert columns
    for column in columns:
        values = frame(table, "bitmap_values", column=column)
        expected = collections.Counter()
        for lf in table.plan().files:
            for v in _column(table, lf, column).to_pylist():
                expected["NULL" if v is None else v] += 1
        got = dict(zip(values["value"], values["cardinality"], strict=True))
        assert sum(got.values()) == sum(expected.values())
        if pq.read_schema(table.plan().files[0].path).field(column).type in ("string", "large_string"):
            assert got == dict(expected)


@pytest.mark.parametrize("name,version", [(BITMAP_V1, 1), (BITMAP_V2, 2)])
def test_bitmap_layout_rebuild_has_paimon_size(warehouse, name, version):
    table = warehouse.table(name)
    bitmaps = frame(table, "bitmap_indexes")
    assert set(bitmaps["version"]) == {version}
    for column in bitmaps["column"].unique():
        layouts = bitmap_frames.bitmap_layout_compare(table, column)
        actual = layouts[layouts["actual"]]
        assert actual["layout"].tolist() == [f"V{version}"]
        assert actual["size"].tolist() == bitmaps[bitmaps["column"] == column]["size"].tolist()
        assert set(layouts["layout"]) == {"V1", "V2"}


def test_bitmap_lookup_rows_and_bytes(warehouse):
    table = warehouse.table(BITMAP_V2)
    lf = table.plan().files[0]
    names = _column(table, lf, "f0").to_pylist()
    value = collections.Counter(names).most_common(1)[0][0]
    lookup = bitmap_frames.bitmap_lookup(table, "f0", f"'{value}'")
    assert lookup["matching_rows"].tolist() == [names.count(value)]
    bitmaps = frame(table, "bitmap_indexes")
    size = int(bitmaps[bitmaps["column"] == "f0"]["size"].iloc[0])
    assert 0 < lookup["lookup_bytes"].iloc[0] < size


def test_bloom_estimates_distinct_items(warehouse):
    table = warehouse.table(BLOOM)
    blooms = frame(table, "bloom_filters")
    assert set(blooms["column"]) == {"f0", "f1", "f2", "f3", "f4"}
    lf = table.plan().files[0]
    for column in ("f0", "f1", "f2", "f3"):
        row = blooms[blooms["column"] == column].iloc[0]
        distinct = pc.count_distinct(_column(table, lf, column), mode="only_valid").as_py()
        assert row["estimated_items"] == pytest.approx(distinct, abs=0.5)
        assert row["configured_items"] == bloom.DEFAULT_ITEMS
        assert row["configured_fpp"] == bloom.DEFAULT_FPP
        assert row["fill_ratio"] == pytest.approx(row["bits_set"] / row["num_bits"])
        assert row["recommended_items"] >= distinct
    tighter = frame(table, "bloom_filters", target_fpp=0.001)
    assert (tighter["recommended_bytes"] >= blooms["recommended_bytes"]).all()


def test_range_frame_and_pruning_match_data(warehouse):
    table = warehouse.table(BLOOM)
    ranges = range_frames.range_frame(table)
    lf = table.plan().files[0]
    for column in ("f1", "f2"):
        data = _column(table, lf, column)
        row = ranges[(ranges["column"] == column) & (ranges["index_type"] == "bsi")].iloc[0]
        assert row["min"] == pc.min(data).as_py() and row["max"] == pc.max(data).as_py()
        assert row["null_count"] == data.null_count
    pruned = pruning_frames.prune_by_sql(table, "f1 > 100", ("bsi",))
    expected = sum(1 for v in _column(table, lf, "f1").to_pylist() if v is not None and v > 100)
    assert pruned["bsi rows_left"].tolist() == [expected]
    assert pruned["stats"].tolist() == ["may match"]
    none = pruning_frames.prune_by_sql(table, "f1 > 100000", ("bsi",))
    assert none["stats"].tolist() == ["SKIP"] and none["bsi"].tolist()[0].startswith("SKIP")


def test_files_view_and_skew(warehouse):
    table = warehouse.table(DV_TABLES[0])
    files = frame(table, "files")
    plan = table.plan()
    assert len(files) == len(plan.files)
    assert files["file_size_in_bytes"].sum() == sum(lf.file.file_size for lf in plan.files)
    groups, skew = table_frames.size_skew(table, by="bucket")
    assert groups["file_size_in_bytes"].sum() == files["file_size_in_bytes"].sum()
    assert skew["max_over_mean"] == pytest.approx(groups["file_size_in_bytes"].max()
                                                  / groups["file_size_in_bytes"].mean())
    parts, _ = table_frames.size_skew(table, by="partition")
    assert len(parts) == len({lf.partition for lf in plan.files})


def test_file_indexes_view_embedded_or_file(warehouse):
    embedded = frame(warehouse.table(BITMAP_V2), "file_indexes")
    assert (embedded["storage_type"] == "EMBEDDED").all() and embedded["index_file_path"].isna().all()
    separate = frame(warehouse.table(BLOOM), "file_indexes")
    assert (separate["storage_type"] == "FILE").all() and separate["index_file_path"].str.endswith(".index").all()
    for _, row in separate.iterrows():
        assert row["index_container_size_in_bytes"] == Path(row["index_file_path"]).stat().st_size


def test_schema_history_follows_field_ids(warehouse):
    table = warehouse.table("pk_table_with_alter_table.pk_table_with_alter_table")
    history = table_frames.schema_history(table)
    schemas = table.schemas()
    assert sorted(history["schema_id"].unique()) == [s.id for s in schemas]
    latest = history[(history["schema_id"] == schemas[-1].id) & (history["change"] != "dropped")]
    assert sorted(latest["field_id"]) == sorted(f.id for f in schemas[-1].fields)
    old = {f.id: f.name for f in schemas[-2].fields}
    for _, row in latest.iterrows():
        if row["field_id"] in old and old[row["field_id"]] != row["name"]:
            assert row["change"] == f"renamed from {old[row['field_id']]}"


def test_hash_buckets_view_counts_hashes(warehouse):
    tables = []
    for wh in (warehouse,):
        for name in wh.tables():
            if wh.table(name).plan().hash_indexes:
                tables.append(wh.table(name))
    if SAMPLE.is_dir():
        swh = indexcore.open_warehouse(str(SAMPLE))
        tables += [swh.table(n) for n in swh.tables() if swh.table(n).plan().hash_indexes]
    if not tables:
        pytest.skip("no table with a dynamic-bucket hash index available")
    for table in tables:
        keys = frame(table, "hash_buckets")
        balance = hash_index_frames.hash_balance(keys)
        for (_, bucket), entries in table.plan().hash_indexes.items():
            hashes = sum(table.hash_index(e).count for e in entries)
            assert hashes in keys[keys["bucket"] == bucket]["keys"].tolist()
        assert balance["groups"] == len(keys)
        assert balance["target"] == index_views.target_row_num(table)


def _all_tables(conformance):
    roots = [conformance / "warehouses" / "parquet", conformance / "warehouses" / "mixed"]
    if SAMPLE.is_dir():
        roots.append(SAMPLE)
    for root in roots:
        wh = indexcore.open_warehouse(str(root))
        for name in wh.tables():
            yield wh.table(name)


def test_suggested_predicate_prunes_and_matches(conformance):
    """The What-if default: where it claims to prune, explain agrees, and the data (read back
    by explain's verification) holds matching rows, so the value exists in the table."""
    from indexcore.scan import explain

    pruning = 0
    for table in _all_tables(conformance):
        s = suggestion_frames.suggest_predicate(table)
        ex = explain(table, s["sql"], verify=True)
        assert not ex.violations, (table.name, s["sql"], ex.violations)
        if not s["prunes"]:
            assert s["sql"].endswith("IS NOT NULL")
            continue
        pruning += 1
        read = [f for f in ex.files if f.skipped_by is None]
        assert len(read) == s["files_read"] >= 1, table.name
        rows = sum(f.row_count - (f.dv_cardinality or 0) for f in ex.files)
        assert len(read) < len(ex.files) or s["rows_selected"] < rows, (table.name, s)
        assert sum(f.matching_rows or 0 for f in read) > 0, (table.name, s["sql"])
    assert pruning >= 20


# the default; a probe the small tables exceed; and each candidate's expected files turned upside down
# (the likely largest explained first: the winner must not depend on the order)
def test_suggestion_counts_covering_ranges_as_one_by_one():
    """The stats-range candidates' counts by bisection equal counting range by range (random
    ranges of ints, floats with duplicates), and it declines (None) where the order does not hold:
    a range with lo > hi, a NaN, values that do not compare."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        ranges = []
        for _ in range(rng.randint(1, 40)):
            lo = rng.choice([rng.randint(-5, 5), rng.randint(-5, 5) / 2])
            ranges.append((lo, lo + rng.choice([0, 0.5, 1, 3])))
        values = [lo for lo, _ in ranges] + [rng.randint(-7, 7)]
        assert suggestion_frames._covering(ranges, values) == [
            sum(1 for lo, hi in ranges if lo <= v <= hi) for v in values]
    assert suggestion_frames._covering([(1, 3), (4, 2)], [1]) is None
    assert suggestion_frames._covering([(1.0, float("nan"))], [1.0]) is None
    assert suggestion_frames._covering([(1, 2), ("a", "b")], [1]) is None


def _recording(fn, note):
    """``fn`` noting its first argument (a path, or paths) with ``note`` before each call."""
    def called(first, *args, **kwargs):
        note(first)
        return fn(first, *args, **kwargs)
    return called


def test_suggestion_reads_each_index_file_once(conformance, monkeypatch):
    """The suggestion's bitmap dictionaries: each sampled ``.index`` file (at most 64 KiB) read in
    one request for its head and its bitmap blobs (no ``open`` per blob), and its head kept for the
    census that follows (which reads none of those files again)."""
    checked = 0  # tables with such files
    for table in _all_tables(conformance):
        files, _total = suggestion_frames.suggestion_sample(table)
        on_disk = {lf.index_path for lf in files if lf.has_file_index and lf.file.embedded_index is None
                   and lf.index_path and Path(lf.index_path).is_file()
                   and Path(lf.index_path).stat().st_size <= 64 << 10}
        if not on_disk:
            continue
        storage = table.storage
        opened, prefixes = [], []
        monkeypatch.setattr(storage, "open", _recording(storage.open, opened.append))
        monkeypatch.setattr(storage, "read_prefixes", _recording(storage.read_prefixes, prefixes.extend))
        latest = {f.name: f for f in table.schema().fields}
        seen, _other, _indexed = suggestion_frames._bitmap_dictionaries(table, files, latest)
        assert not on_disk & set(opened), table.name
        assert collections.Counter(p for p in prefixes if p in on_disk) == collections.Counter(on_disk), table.name
        prefixes.clear()
        view(table, "file_indexes")
        assert not on_disk & set(prefixes), table.name  # the census found the heads kept
        monkeypatch.undo()
        assert seen or not any(e.index_type == "bitmap" for _lf, h, _e in table.iter_index_heads(files) if h
                               for e in h.entries), table.name
        checked += 1
    assert checked >= 1


@pytest.mark.parametrize(("probe_files", "mislead"), [(None, False), (2, False), (2, True)])
def test_suggestion_is_the_best_candidate_and_stops_at_one_row_of_one_file(conformance, monkeypatch, probe_files,
                                                                             mislead):
    """Every candidate explained alone, the fewest files then rows that still select a row wins,
    as the suggestion says; and its search ends at a candidate reading one row of one file
    (nothing after it can do better), explaining no candidate past it in the list; one before it
    (explained after it: the likely smallest go first) only on the probe's files when those read
    more than one file already."""

    calls = []
    real = suggestion_frames.explain_files

    def counted(*args, **kwargs):
        calls.append(args[1])
        files_of[args[1]] = max(files_of.get(args[1], 0), len(args[2]))
        return real(*args, **kwargs)

    files_of: dict[str, int] = {}
    probed = 0
    if probe_files is not None:
        monkeypatch.setattr(suggestion_frames, "PROBE_FILES", probe_files)
    if mislead:
        ranked = suggestion_frames._candidates
        monkeypatch.setattr(suggestion_frames, "_candidates",
                            lambda *a: [(sql, why, 10_000 - n) for sql, why, n in ranked(*a)])

    stopped = 0
    for table in _all_tables(conformance):
        files, _total = suggestion_frames.suggestion_sample(table)
        best = None
        tried = suggestion_frames.predicate_candidates(table)[:suggestion_frames.SUGGEST_TRIES]
        for sql, _why in tried:
            ex = real(table, sql, files)
            read = [f for f in ex.files if f.skipped_by is None]
            selected = sum(f.rows_after_dv for f in read)
            rows = sum(f.row_count - (f.dv_cardinality or 0) for f in ex.files)
            if read and selected and (len(read) < len(ex.files) or selected < rows) and \
                    (best is None or (len(read), selected) < best[1:]):
                best = (sql, len(read), selected)
        calls.clear()
        files_of.clear()
        monkeypatch.setattr(suggestion_frames, "explain_files", counted)
        s = suggestion_frames.suggest_predicate(table)
        monkeypatch.setattr(suggestion_frames, "explain_files", real)
        assert (s["sql"], s["files_read"], s["rows_selected"]) == best if best else not s["prunes"], table.name
        if best and best[1:] == (1, 1):
            order = [sql for sql, _why in tried]
            at = order.index(best[0])
            assert best[0] in calls and all(order.index(sql) <= at for sql in calls), (table.name, calls)
            stopped += at < len(order) - 1
            # a candidate explained after the winner, before it in the list: in an append table of
            # more files than the probe, in full only when its probe reads no more than one file
            probe = files[:suggestion_frames.PROBE_FILES]
            for sql in calls[calls.index(best[0]) + 1:]:
                if len(files) <= len(probe) or table.schema().primary_keys:
                    continue
                reads = sum(1 for f in real(table, sql, probe).files if f.skipped_by is None)
                assert files_of[sql] == (len(probe) if reads > 1 else len(files)), (table.name, sql, reads)
                probed += reads > 1
    assert stopped >= 1  # some table's search ended before its last candidate
    assert probed >= 1 or probe_files is None or mislead  # and some candidate was explained on its probe only


def test_unpartitioned_tables_say_so(warehouse):
    table = warehouse.table(BITMAP_V2)
    assert not table.schema().partition_keys
    assert set(frame(table, "deletion_vectors")["partition"]) == {views_frames.UNPARTITIONED}
    assert set(frame(table, "files")["partition"]) == {"{}"}  # Paimon's own rendering in $files
    partitioned = warehouse.table(DV_TABLES[0])
    assert partitioned.schema().partition_keys
    assert views_frames.UNPARTITIONED not in set(frame(partitioned, "deletion_vectors")["partition"])


def test_supported_index_types_follow_writers(warehouse):
    from indexcore.formats.registry import new_writer

    table = warehouse.table("parquet_append_table.parquet_append_table")
    for field in table.schema().fields:
        got = what_if_frames.supported_index_types(field.type)
        for index_type in what_if_frames.FILE_INDEX_TYPES:
            try:
                new_writer(index_type, field.type, {})
                ok = True
            except indexcore.errors.IndexCoreError:
                ok = False
            assert (index_type in got) == ok, (field.name, index_type)
    kinds = {f.type.root: what_if_frames.supported_index_types(f.type) for f in table.schema().fields}
    assert kinds["MAP"] == [] and "bsi" not in kinds["VARCHAR"] and "bsi" in kinds["INT"]


def test_figures_dv_axis_and_hash_target():
    import pandas as pd

    from indexcore.frames import figures

    trend = pd.DataFrame({"snapshot_id": [1, 2, 3], "row_count": [10, 10, 8], "deleted": [0, 4, 2],
                          "density": [0.0, 0.4, 0.25], "dv_files": [0, 1, 1]})
    fig = figures.dv_trend(trend)
    assert tuple(fig.layout.yaxis2.range) == (0, 1) and fig.layout.yaxis2.tickformat == ".0%"
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    keys = pd.DataFrame({"partition": ["{a}", "{a}"], "bucket": [0, 1], "keys": [40, 7], "distinct": [40, 7],
                         "recorded_rows": [40, 7], "index_files": [1, 1], "fill": [0.8, 0.14]})
    fig = figures.hash_buckets(keys, 50)
    assert [s.y0 for s in fig.layout.shapes] == [50]
    assert fig.layout.yaxis.range[1] > 50
    assert any(t.name == "dynamic-bucket.target-row-num" for t in fig.data)


def test_every_figure_has_title_axes_and_hover():
    """Each chart the pages draw, from the sample warehouse's frames: a title, both axis titles
    and hover text that names the numbers (not plotly's raw column names)."""
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    from indexcore.frames import figures

    wh = indexcore.open_warehouse(str(SAMPLE))
    events, orders, users = (wh.table(f"demo.{n}") for n in ("events", "orders", "users"))
    values = frame(events, "bitmap_values", column="country")
    ranges = range_frames.range_frame(events)
    pruned = pruning_frames.prune_by_sql(events, "amount BETWEEN 10 AND 20", ["range-bitmap", "bsi"])
    explained = what_if_frames.explain_frames(events, suggestion_frames.suggest_predicate(events)["sql"])
    hashes = frame(users, "hash_buckets")
    balance = hash_index_frames.hash_balance(hashes)
    charts = {
        "warehouse_sizes": figures.warehouse_sizes(warehouse_frames.warehouse_overview(wh)),
        "snapshot_timeline": figures.snapshot_timeline(frame(events, "snapshots"), 1),
        "size_skew": figures.size_skew(table_frames.size_skew(events)[0]),
        "top_values": figures.top_values(bitmap_frames.top_values(values, 5)),
        "values_per_file": figures.values_per_file(values, ["US", "DE"]),
        "bitmap_lookup_bytes": figures.bitmap_lookup_bytes(bitmap_frames.bitmap_layout_compare(events, "country")),
        "bloom_fill": figures.bloom_fill(frame(events, "bloom_filters")),
        "bloom_items": figures.bloom_items(frame(events, "bloom_filters")),
        "bloom_fpp": figures.bloom_fpp(frame(events, "bloom_filters")),
        "value_ranges": range_figures.value_ranges(ranges[ranges["column"] == "amount"], 10, 20),
        "prune_counts": range_figures.prune_counts(pruned, ["range-bitmap", "bsi"]),
        "dv_heatmap": figures.dv_heatmap(deletion_vectors_frames.dv_by_bucket(frame(orders, "deletion_vectors"))),
        "dv_trend": figures.dv_trend(deletion_vectors_frames.dv_trend(orders)),
        "hash_buckets": figures.hash_buckets(hashes, balance["target"]),
        "funnel": figures.funnel(list(zip(explained["funnel"]["stage"], explained["funnel"]["files"],
                                          strict=True))),
    }
    for name, fig in charts.items():
        layout = fig.layout
        assert layout.title.text, name
        assert layout.xaxis.title.text and layout.yaxis.title.text, name
        traces = list(fig.data)
        assert traces, name
        for t in traces:
            if t.hoverinfo == "skip":
                continue
            labels = [seg.split("=", 1)[0] for seg in (t.hovertemplate or "").split("<extra>")[0].split("<br>")
                      if "=" in seg and not seg.startswith("%{")]
            assert not [lb for lb in labels if "_" in lb], (name, t.hovertemplate)


def test_cells_as_text_renders_nested_cells_and_leaves_its_input_alone():
    """Dict and list cells become text in the copy; the frame passed in keeps its objects."""
    import pandas as pd

    frame = pd.DataFrame({"n": [1, 2], "decision": [{"rows": [1, 2]}, {"a": 1}], "notes": [["x", "y"], []],
                          "text": ["a", None]})
    out = what_if_frames.cells_as_text(frame)
    assert out["decision"].tolist() == ["2 rows", "a=1"]
    assert out["notes"].tolist() == ["x, y", ""]
    assert out["n"].tolist() == [1, 2] and out["text"].tolist() == ["a", None]
    assert frame["decision"].tolist() == [{"rows": [1, 2]}, {"a": 1}]
    assert frame["notes"].tolist() == [["x", "y"], []]
