"""The decode sample: which files a per-file analysis decodes on a large snapshot, and the pages
that say how large it is and decode every file on request."""

from __future__ import annotations

from pathlib import Path

import pytest

import indexcore
from indexcore.frames import pruning as pruning_frames
from indexcore.frames import range as range_frames
from indexcore.views import view
from indexcore.warehouse.file_sample import decode_sample, sample_files
from pages import common, rows

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"


@pytest.fixture(scope="module")
def events():
    if not (SAMPLE / "demo.db" / "events").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    return indexcore.open_warehouse(str(SAMPLE)).table("demo.events")


def test_sample_is_fixed_sorted_and_whole_buckets_when_asked(events):
    files = events.plan().files
    assert len(files) > 4
    picked = sample_files(files, 4)
    assert len(picked) == 4 and picked == sample_files(files, 4)
    assert [lf.path for lf in picked] == sorted(lf.path for lf in picked)
    assert {lf.path for lf in picked} <= {lf.path for lf in files}
    assert sample_files(files, None) == list(files) == sample_files(files, len(files))
    buckets = sample_files(files, 2, whole_buckets=True)
    for lf in buckets:  # every file of each bucket it touches
        assert {f.path for f in files if (f.partition, f.bucket) == (lf.partition, lf.bucket)} <= \
               {f.path for f in buckets}


@pytest.mark.parametrize("name", ["demo.events", "demo.orders", "demo.users"])
def test_suggestion_sample_on_columns_is_the_draw_over_the_plans_objects(name, monkeypatch):
    """The predicate suggestion draws its files on the columnar plan (objects made for those only):
    the same live files sample_files draws over the object plan's, whole buckets on primary-key
    tables, at a size that takes a sample and at one that takes every file."""
    from indexcore.frames import suggestion

    table = indexcore.open_warehouse(str(SAMPLE)).table(name)
    files = indexcore.open_warehouse(str(SAMPLE)).table(name).plan().files
    pk = bool(table.schema().primary_keys)
    for n in (2, len(files) - 1, len(files)):
        monkeypatch.setattr(suggestion, "SUGGEST_MAX_FILES", n)
        picked, total = suggestion.suggestion_sample(table)
        assert total == len(files) and picked == sample_files(files, n, pk, seed=0)
    assert table.caches.plans.get(table.snapshot().id) is None  # no object plan was built for it


def test_views_and_metrics_decode_only_the_sampled_files(events):
    picked = {lf.file.file_name for lf in sample_files([lf for lf in events.plan().files if lf.has_file_index], 3)}
    assert len(picked) == 3
    assert set(view(events, "bloom_filters", sample=3).column("file_name").to_pylist()) <= picked
    every = set(view(events, "bloom_filters").column("file_name").to_pylist())
    assert len(every) > 3
    assert set(range_frames.range_frame(events, sample=3)["file_name"]) <= picked
    assert set(pruning_frames.prune_by_sql(events, "user_id > 10", sample=3)["file_name"]) == picked
    assert len(pruning_frames.prune_by_sql(events, "user_id > 10")) == len(events.plan().files)


def test_a_decode_sample_over_all_files_is_the_index_views_sample(events):
    """Per-file analyses over every live file (range pruning) sample the files the index views
    decode, and take every file, with or without an index, when the sample covers the indexed."""
    plain = indexcore.open_warehouse(str(SAMPLE)).table("demo.releases").plan().files
    indexed = events.plan().files
    assert plain and not any(lf.has_file_index for lf in plain) and all(lf.has_file_index for lf in indexed)
    mixed = list(plain) + list(indexed)
    assert decode_sample(mixed, 3) == sample_files(list(indexed), 3)
    assert decode_sample(mixed, len(indexed)) == mixed == decode_sample(mixed, None)
    assert decode_sample(mixed, len(indexed) - 1) == sample_files(list(indexed), len(indexed) - 1)


def test_bloom_page_samples_past_the_limit_and_decodes_all_on_request(open_page, monkeypatch, events):
    monkeypatch.setenv("INDEXCORE_DECODE_SAMPLE", "3")
    at = open_page("bloom", table="demo.events")
    shown = next(d.value for d in at.dataframe if "fill_ratio" in d.value)
    assert shown["file_name"].nunique() <= 3
    assert any("fixed random sample of 3" in c.value for c in at.caption)
    census = view(events, "file_indexes").to_pandas()
    blooms = census[(census["index_type"] == "bloom-filter") & census["error"].isna()]
    assert at.metric[0].value == str(len(blooms))  # counts cover every file, not the sample
    at.toggle(key="bloom_every").set_value(True).run()
    assert not at.exception
    shown = next(d.value for d in at.dataframe if "fill_ratio" in d.value)
    assert shown["file_name"].nunique() == blooms["file_path"].nunique()
    assert not any("fixed random sample" in c.value for c in at.caption)


def test_table_statistics_page_through_files_and_the_file_picker_filters(open_page, monkeypatch, events):
    """Past a page of files the statistics tab pages through every file's statistics (sorted and
    filtered before paging); past the choice limit the file picker is narrowed by a filter instead
    of sending every name."""
    monkeypatch.setattr(rows, "PAGE_SIZE", 4)
    monkeypatch.setattr(common, "MAX_CHOICES", 3)
    files = [lf.file.file_name for lf in events.plan().files]
    column = events.schema().field_names[1]
    at = open_page("table", table="demo.events", tab="Column statistics")
    at.selectbox(key="stats_column").select(column).run()
    shown = next(d.value for d in at.dataframe if {"column", "min", "max", "null_count"} <= set(d.value.columns))
    assert list(shown["file_name"]) == files[:4]
    at.number_input(key="file_stats_page").set_value(2).run()
    shown = next(d.value for d in at.dataframe if {"column", "min", "max", "null_count"} <= set(d.value.columns))
    assert list(shown["file_name"]) == files[4:8]
    picker = at.selectbox(key="stats_file")
    assert picker.options == ["(every file)", *files[:3]]
    at.text_input(key="stats_file_filter").set_value(files[-1][-20:]).run()
    assert at.selectbox(key="stats_file").options == ["(every file)", files[-1]]
    at.selectbox(key="stats_file").select(files[-1]).run()
    assert not at.exception
    one = next(d.value for d in at.dataframe if {"column", "min", "max", "null_count"} <= set(d.value.columns))
    assert set(one["file_name"]) == {files[-1]}


def test_bitmap_page_names_the_sample_in_its_figures(open_page, monkeypatch, events):
    import json

    census = view(events, "file_indexes").to_pandas()
    bitmaps = census[census["index_type"] == "bitmap"]
    if bitmaps.empty:
        pytest.skip("demo.events has no bitmap index")
    monkeypatch.setenv("INDEXCORE_DECODE_SAMPLE", "3")
    at = open_page("bitmap", table="demo.events")
    column = at.selectbox(key="bitmap_column").value
    carrying = bitmaps.loc[bitmaps["column_name"] == column, "file_path"].nunique()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(f"of {carrying:,} files, sampled" in t for t in titles), titles
    assert at.metric[0].value == str(carrying)
    at.toggle(key="bitmap_every").set_value(True).run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any("(all files)" in t for t in titles), titles


def test_pruning_stats_decode_only_the_predicates_fields_and_decide_as_all_fields(events):
    """The Range page's stats column decodes just the predicate's fields of each file's stats row;
    its decision is the one the whole row's stats give (each file, several predicates)."""
    from indexcore.expr import parse_where
    from indexcore.scan.stats import column_stats, test_predicate_on_stats

    schema = events.schema()
    files = events.plan().files
    for sql in ("user_id > 10", "user_id < 3 OR country = 'NZ'", "country IS NULL", "user_id BETWEEN 5 AND 7"):
        pred = parse_where(sql, schema.row_type())
        truth = ["may match" if test_predicate_on_stats(pred, lf.file.row_count,
                                                        column_stats(lf, schema, events.file_schema(lf)))
                 else "SKIP" for lf in files]
        assert pruning_frames.prune_by_sql(events, sql)["stats"].tolist() == truth, sql
        assert set(pruning_frames.file_stats(events, files[0], pred.fields())) == pred.fields()
