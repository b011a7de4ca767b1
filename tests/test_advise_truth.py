"""The advisor against answers known by construction (issue 27): tables written by our writer
from a generator that knows, for every file, which values it holds.

File ``k`` (``k = commit * PARTS + partition``, one file per partition per commit) holds ``ROWS``
rows:

* ``uuid``: ``<i % 97 + 1>-<k>-<i>``, distinct in the whole table, min/max prune nothing;
* ``user_id``: ``(k * 7919 + i * 104729) % 1_000_003``, spread so min/max prune nothing;
* ``country``: three of ten values, ``C<k % 10>``, ``C<(k + 3) % 10>``, ``C<(k + 7) % 10>``;
* ``device``: ``ios`` / ``android`` / ``web`` in every file;
* ``amount``: ``k * 1000 + i``, so min/max statistics prune every range to a file or two.

The truth each test asserts (files holding a value, files a query reaches after statistics)
comes from these formulas, never from our explain. Bloom filters may answer "maybe" for a file
lacking the key (fpp 1%): their bounds allow :data:`FP` false positives.
"""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

import indexcore.analysis.advise_profile as advise_profile
from indexcore.analysis.advise import advise
from indexcore.analysis.bloom_sizing import SKEW, census_sizing, column_sizing, table_sizing
from indexcore.analysis.workload import parse_workload
from indexcore.cli import main
from indexcore.errors import PredicateError
from indexcore.views import view
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema
from indexcore.write.layout import schema_json

COLUMNS = [("uuid", "STRING"), ("user_id", "INT"), ("country", "STRING"), ("device", "STRING"),
           ("amount", "INT"), ("p", "STRING")]
BASE = {"bucket": "-1", "file.format": "parquet", "manifest.format": "avro"}
FP = 6  # false positives allowed of ~600 bloom answers at fpp 1% (P(more) < 1e-3)


def uuid(k: int, i: int) -> str:
    return f"{i % 97 + 1:02d}-{k:04d}-{i:04d}"


def user_id(k: int, i: int) -> int:
    return (k * 7919 + i * 104729) % 1_000_003


def countries(k: int) -> set[str]:
    return {f"C{k % 10}", f"C{(k + 3) % 10}", f"C{(k + 7) % 10}"}


def _file(k: int, p: int, rows: int) -> dict[str, list]:
    cs = sorted(countries(k))
    return {"uuid": [uuid(k, i) for i in range(rows)],
            "user_id": [user_id(k, i) for i in range(rows)],
            "country": [cs[i % 3] for i in range(rows)],
            "device": [("ios", "android", "web")[i % 3] for i in range(rows)],
            "amount": [k * 1000 + i for i in range(rows)],
            "p": [f"p{p:02d}"] * rows}


def write(root: str, options: dict[str, str], commits) -> str:
    """A table ``db.t`` with ``options`` over :data:`BASE`, one commit per column dict of
    ``commits`` (the one block every table of these tests is built with)."""
    writer = TableWriter.create(root, "db.t", make_schema(COLUMNS, partition_keys=["p"],
                                                          options={**BASE, **options}), seed=3)
    for cols in commits:
        writer.write(pa.table({**cols, "user_id": pa.array(cols["user_id"], pa.int32()),
                               "amount": pa.array(cols["amount"], pa.int32())}))
    return root


def build(root: str, options: dict[str, str], parts: int, commits: int, rows: int) -> str:
    """``commits`` commits of one file per partition (file ``k = commit * parts + partition``)."""
    def commit(c: int) -> dict[str, list]:
        cols: dict[str, list] = {name: [] for name, _ in COLUMNS}
        for p in range(parts):
            for name, values in _file(c * parts + p, p, rows).items():
                cols[name].extend(values)
        return cols

    return write(root, options, (commit(c) for c in range(commits)))


# 600 files of 300 rows (20 partitions x 30 commits), no index: the sampling table
BIG = (20, 30, 300)
# 60 files of 300 rows (6 partitions x 10 commits) with indexes whose verdicts are known
SMALL = (6, 10, 300)
SMALL_OPTIONS = {"file-index.bitmap.columns": "uuid,device", "file-index.range-bitmap.columns": "amount"}


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    return build(str(tmp_path_factory.mktemp("big") / "wh"), {}, *BIG)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    return build(str(tmp_path_factory.mktemp("small") / "wh"), SMALL_OPTIONS, *SMALL)


def _files(shape) -> int:
    return shape[0] * shape[1]


def _holding(shape, column: str, value) -> set[int]:
    """Files (by k) holding ``value`` in ``column``, from the generator's formulas."""
    n, rows = _files(shape), shape[2]
    if column == "user_id":
        return {k for k in range(n) if any(user_id(k, i) == value for i in range(rows))}
    if column == "country":
        return {k for k in range(n) if value in countries(k)}
    raise AssertionError(column)


# --- 1. sampling that cannot overclaim ----------------------------------------------------------

def test_sampled_claims_stay_within_what_the_query_reads_and_intervals_hold_the_truth(big):
    """``user_id = v AND amount < 150000``: statistics keep the 150 files k < 150; a bloom filter
    on user_id would skip those of them not holding v. Sampled on 20 files per query, with ten
    seeds: the claim never exceeds the 150 files read today and the interval holds the truth."""
    v = user_id(42, 7)
    reached = 150
    holding = {k for k in _holding(BIG, "user_id", v) if k < reached}
    truth_hi = reached - len(holding)
    truth = range(truth_hi - FP, truth_hi + 1)
    table = Warehouse(big).table("db.t")
    workload = f"user_id = {v} AND amount < {reached * 1000}"
    covered = 0
    for seed in range(10):
        advice = advise(table, workload, sample=20, seed=seed)
        (cand,) = [c for c in advice.candidates if c.column == "user_id"]
        files = cand.extra.files
        assert files.population == reached and files.sample == 20 and not files.exact
        assert files.low <= files.value <= files.high <= reached  # capped by what the query reads
        covered += files.low <= truth_hi and files.high >= truth.start
        # rows and bytes likewise: never above what the query reads today
        (run,) = advice.runs
        assert cand.extra.rows.high <= run.funnel["read"]["rows"]
        assert cand.extra.bytes.high <= run.funnel["read"]["bytes"] if "bytes" in run.funnel["read"] else True
    assert covered >= 9
    exact = advise(table, workload, sample=0)
    (cand,) = [c for c in exact.candidates if c.column == "user_id"]
    assert cand.extra.exact and round(cand.extra.files.value) in truth
    assert cand.built_files == reached  # built on the files the query reaches only


def test_default_is_exact_below_the_threshold_and_samples_carry_their_size(big, tmp_path, capsys):
    wl = tmp_path / "w.sql"
    wl.write_text("country = 'C4' AND amount < 100000;\n")
    # 100 files reached (k < 100): under EXACT_FILES, so exact by default
    assert main(["advise", big, "db.t", "--workload", str(wl), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (cand,) = [c for c in out["candidates"] if c["column"] == "country"]
    without = 100 - len({k for k in _holding(BIG, "country", "C4") if k < 100})
    assert cand["exact"] and cand["extra_skipped"]["files"] == {"value": without, "sample_files": 100,
                                                                "of_files": 100}
    assert main(["advise", big, "db.t", "--workload", str(wl), "--sample", "10"]) == 0
    text = capsys.readouterr().out
    assert "(10 of 100 files)" in text  # the interval and sample beside the figure in the text output
    with pytest.raises(SystemExit) as refused:  # argparse refuses a negative count: a usage error
        main(["advise", big, "db.t", "--workload", str(wl), "--sample", "-5"])
    assert refused.value.code == 2
    assert "--sample" in capsys.readouterr().err


# --- 2. like with like ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_advice(small):
    v = user_id(13, 5)
    workload = (f"uuid = '{uuid(7, 1)}';\nuuid = '{uuid(31, 100)}';\namount BETWEEN 7000 AND 7100;\n"
                f"country = 'C4';\ncountry = 'C4' OR user_id = {v};\n")
    return advise(Warehouse(small).table("db.t"), workload, sample=0), v


def _by(items, column, index_type):
    (found,) = [x for x in items if x.column == column and x.index_type == index_type]
    return found


def test_a_bitmap_on_an_all_distinct_column_is_replaced_by_a_bloom_filter(small_advice):
    advice, _ = small_advice
    n = _files(SMALL)
    bitmap = _by(advice.existing, "uuid", "bitmap")
    assert bitmap.skipped.files == 2 * (n - 1)  # exact: each uuid lives in one file
    assert bitmap.verdict == "replace"
    bloom = _by(advice.candidates, "uuid", "bloom-filter")
    assert bloom.replaces == [("uuid", "bitmap")] and bloom.recommended
    assert 2 * (n - 1) - FP <= bloom.alone.files.value <= 2 * (n - 1)
    assert bloom.estimated_bytes < bitmap.bytes and bloom.score_alone > bitmap.score
    ddl = advice.statements[0]
    bloom_columns = ddl.split("'file-index.bloom-filter.columns' = '")[1].split("'")[0].split(",")
    bitmap_columns = ddl.split("'file-index.bitmap.columns' = '")[1].split("'")[0].split(",")
    assert "uuid" in bloom_columns and "uuid" not in bitmap_columns and "device" in bitmap_columns


def test_statistics_already_prune_is_a_verdict_of_its_own(small_advice):
    advice, _ = small_advice
    rb = _by(advice.existing, "amount", "range-bitmap")
    assert rb.verdict == "statistics already prune" and rb.skipped.files == 0
    bsi = _by(advice.candidates, "amount", "bsi")
    assert bsi.verdict == "statistics already prune" and not bsi.recommended
    assert "UNSET TBLPROPERTIES ('file-index.range-bitmap.columns')" in " ".join(advice.statements)


def test_indexes_the_workload_does_not_mention_are_kept_unless_asked(small, small_advice):
    advice, _ = small_advice
    device = _by(advice.existing, "device", "bitmap")
    assert device.verdict == "not in workload"
    assert "device" in advice.statements[0]  # still listed in file-index.bitmap.columns
    dropped = advise(Warehouse(small).table("db.t"), f"uuid = '{uuid(7, 1)}'", sample=0, drop_unused=True)
    assert "'file-index.bitmap.columns'" in " ".join(s for s in dropped.statements if "UNSET" in s)


def test_equality_on_a_three_of_ten_column_gets_a_bitmap_with_exact_figures(small_advice):
    advice, _ = small_advice
    bitmap = _by(advice.candidates, "country", "bitmap")
    without = _files(SMALL) - len(_holding(SMALL, "country", "C4"))
    (q,) = [q for q in bitmap.queries if q["query"] == "q4"]
    assert q["extra_files_skipped"]["value"] == without and bitmap.recommended


def test_or_queries_are_measured_with_pairs(small_advice):
    """``country = 'C4' OR user_id = v``: one index alone cannot skip a file the other side may
    match; both together skip the files holding neither."""
    advice, v = small_advice
    n = _files(SMALL)
    neither = n - len(_holding(SMALL, "country", "C4") | _holding(SMALL, "user_id", v))
    for cand in advice.candidates:
        for q in cand.queries:
            if q["query"] == "q5" and "+" not in cand.column:
                assert q["extra_files_skipped"]["value"] == 0, cand
    pair = _by(advice.candidates, "country+user_id", "bitmap+bloom-filter")
    (q,) = [q for q in pair.queries if q["query"] == "q5"]
    assert neither - FP <= q["extra_files_skipped"]["value"] <= neither and neither > 0
    assert pair.recommended


def test_a_column_is_read_only_as_far_as_its_candidates_depend_on_it(tmp_path, monkeypatch):
    """Beside the bloom filter it has, an equality column gets a candidate (a bitmap) only when it
    is of low cardinality: ``uuid`` (all distinct) is settled by the first file read, ``country``
    (3 values per file) by all of them; ``device`` carries both kinds and is not read at all. The
    candidates are those the generator's values ask for (24 files of 60 rows)."""
    root = build(str(tmp_path / "wh"), {"file-index.bloom-filter.columns": "uuid,country,device",
                                        "file-index.bitmap.columns": "device"}, 6, 4, 60)
    reads: dict[str, int] = {}
    real = advise_profile.read_data_file

    def counted(storage, lf, file_schema, schema, columns=None, **kw):
        for c in columns or ():
            reads[c] = reads.get(c, 0) + 1
        return real(storage, lf, file_schema, schema, columns=columns, **kw)

    monkeypatch.setattr(advise_profile, "read_data_file", counted)
    advice = advise(Warehouse(root).table("db.t"), f"uuid = '{uuid(3, 1)}';\ncountry = 'C3';\ndevice = 'ios';")
    assert all(r.ok for r in advice.runs) and [len(r.reached) for r in advice.runs] == [24, 24, 24]
    assert reads == {"uuid": 1, "country": 24}
    assert [(c.column, c.index_type) for c in advice.candidates] == [("country", "bitmap")]
    assert "at most 3 distinct values in a file of up to 60 rows" in advice.candidates[0].reason


def test_stale_index_that_still_skips_is_added_back(tmp_path):
    root = build(str(tmp_path / "wh"), {"file-index.bitmap.columns": "country"}, 2, 5, 100)
    schema = make_schema(COLUMNS, partition_keys=["p"], options=BASE, schema_id=1)
    with open(os.path.join(root, "db.db", "t", "schema", "schema-1"), "w") as fh:
        fh.write(schema_json(schema))
    advice = advise(Warehouse(root).table("db.t"), "country = 'C4'", sample=0)
    g = _by(advice.existing, "country", "bitmap")
    assert g.verdict == "stale" and g.skipped.files == 10 - len(_holding((2, 5, 100), "country", "C4"))
    assert advice.statements == ["ALTER TABLE db.t SET TBLPROPERTIES ('file-index.bitmap.columns' = 'country')",
                                 "CALL sys.rewrite_file_index('db.t')"]


def test_nothing_below_the_threshold_is_recommended(small):
    advice = advise(Warehouse(small).table("db.t"), "country = 'C4'", sample=0, min_score=1e9)
    assert not any(c.recommended for c in advice.candidates)
    assert {c.verdict for c in advice.candidates if c.column == "country"} == {"below threshold"}
    with pytest.raises(PredicateError):
        advise(Warehouse(small).table("db.t"), "country = 'C4'", min_score=float("nan"))


def test_prefix_and_pattern_filters_get_no_index_candidate_and_say_what_statistics_skip(small, tmp_path, capsys):
    """``country LIKE 'C0%'``: a prefix prunes by min/max only (every Paimon file index answers
    REMAIN to startsWith), so no kind is a candidate for it; statistics skip the files whose
    three countries all sort above 'C0' (from the generator: those without C0). ``device LIKE
    '%os'``: a pattern nothing prunes."""
    advice = advise(Warehouse(small).table("db.t"), "country LIKE 'C0%';\ndevice LIKE '%os';\n", sample=0)
    assert not [c for c in advice.candidates if c.column in ("country", "device")]
    n = _files(SMALL)
    outside = sum(1 for k in range(n) if min(countries(k)) > "C0")
    assert outside == n - len(_holding(SMALL, "country", "C0")) > 0
    (run_c,) = [r for r in advice.runs if "country" in r.scan.where]
    assert run_c.funnel["read"]["files"] == n - outside  # explain agrees with the generator
    notes = {(x["column"], x["filter"]): x for x in advice.column_notes}
    assert set(notes) == {("country", "prefix"), ("device", "pattern")}
    country = notes[("country", "prefix")]
    assert (country["stats_skipped_files"], country["stats_tested_files"]) == (outside, n)
    assert "order_by => 'country'" in country["message"] and "REMAIN" in country["message"]
    assert notes[("device", "pattern")]["stats_skipped_files"] == 0
    assert advice.to_json()["column_notes"] == advice.column_notes
    wl = tmp_path / "w.sql"
    wl.write_text("SELECT * FROM db.t WHERE country LIKE 'C0%';\n")
    assert main(["advise", small, "db.t", "--workload", str(wl)]) == 0
    assert f"({outside:,} of {n:,} files those queries test)" in capsys.readouterr().out  # in the text output too


# --- 3. bloom sizing from the NDV distribution -------------------------------------------------

def _sized_table(root: str, items: int, big_files: int) -> str:
    """40 files: ``big_files`` of 1,000 distinct uuids, the others of 100; bloom items=``items``."""
    return write(root, {"file-index.bloom-filter.columns": "uuid", "file-index.bloom-filter.uuid.items": str(items)},
                 (_file(k, 0, 1000 if k < big_files else 100) for k in range(40)))


def test_over_fpp_from_a_few_large_files_is_file_size_skew_not_items(tmp_path, open_page, monkeypatch):
    root = _sized_table(str(tmp_path / "wh"), items=200, big_files=2)
    (b,) = table_sizing(Warehouse(root).table("db.t"))
    assert b.verdict == "over fpp" and b.over_fpp_files == 2 and b.cause == SKEW
    assert b.recommended_items >= 200  # never smaller than today's for filters over fpp
    advice = advise(Warehouse(root).table("db.t"), f"uuid = '{uuid(3, 1)}'", sample=0)
    g = _by(advice.existing, "uuid", "bloom-filter")
    assert g.suggested_options == {} and "compaction" in g.findings[-1]["message"]
    assert advice.statements[-1] == "CALL sys.compact(table => 'db.t')"
    assert not any("items" in s for s in advice.statements)
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(tmp_path))
    at = open_page("bloom", "db.t", warehouse=root)  # the verdict shows on the Bloom page too
    assert any("file size skew" in w.value or "File-size skew" in w.value for w in at.warning)


def test_undersized_items_recommends_what_keeps_95_percent_under_fpp(tmp_path):
    root = _sized_table(str(tmp_path / "wh"), items=50, big_files=0)
    (b,) = table_sizing(Warehouse(root).table("db.t"))
    assert b.verdict == "over fpp" and b.cause == "items" and b.over_fpp_files == 40
    assert b.recommended_items == 100  # every file holds 100 distinct uuids


def test_census_sizing_reads_only_the_filters_over_items_and_agrees_with_the_objects(tmp_path):
    """The sizing is judged on the census's columns: only the 2 files with more rows (1,000) than
    items (200) have their filter's bits read (as bytes: no live file; through readers: a live file
    each); the verdict is the one column_sizing gives over every planned live file object."""
    root = _sized_table(str(tmp_path / "wh"), items=200, big_files=2)
    table = Warehouse(root).table("db.t")
    plan = table.plan_columns()
    by_path = plan.by_path(table)
    asked: list[str] = []

    class Recording(type(by_path)):
        def many(self, paths):
            asked.extend(paths)
            return super().many(paths)

        def at_rows(self, rows):  # a census of the plan names its files by plan row
            made = super().at_rows(rows)
            asked.extend(lf.path for lf in made)
            return made

    census = view(table, "file_indexes", plan.snapshot.id)
    (b,) = census_sizing(table, census, Recording(plan, table))
    assert asked == []  # the 2 filters' bits read as bytes from the census rows: no live file made
    # without the columns that locate a blob, through a reader per filter: live files of those 2 only
    (alone,) = census_sizing(table, census.drop_columns(["index_offset"]), Recording(plan, table))
    assert alone == b and len(asked) == 2 and {by_path[p].file.row_count for p in asked} == {1000}
    files = Warehouse(root).table("db.t").plan().files
    assert b == column_sizing(table, "uuid", ((lf, "uuid", int(size)) for lf, size in zip(
        sorted(files, key=lambda lf: lf.path), _bloom_sizes(census, sorted(lf.path for lf in files)), strict=True)))
    assert b.over_fpp_files == 2 and b.files == 40


def test_advise_sizes_blooms_on_the_census_columns_as_table_sizing_does(tmp_path):
    """advise judges a bloom filter's sizing on the census's columns (a blob made only for the
    files whose bits are read): the finding is table_sizing's, whose truth is by construction
    (40 files of 100 distinct uuids under items=50: every one over fpp, 100 keeps them under;
    two files of 1,000 under items=200: file-size skew)."""
    for items, big, files, cause, suggested in ((50, 0, 40, "items", {"items": "100"}), (200, 2, 2, SKEW, {})):
        root = _sized_table(str(tmp_path / f"wh{items}"), items=items, big_files=big)
        (b,) = table_sizing(Warehouse(root).table("db.t"))
        advice = advise(Warehouse(root).table("db.t"), f"uuid = '{uuid(3, 1)}'", sample=0)
        g = _by(advice.existing, "uuid", "bloom-filter")
        (finding,) = [f for f in g.findings if f["verdict"] == "over fpp"]
        assert finding == {"verdict": "over fpp", "message": b.message(), "files": files, "cause": cause}
        assert b.over_fpp_files == files and g.suggested_options == suggested


def _bloom_sizes(census, paths: list[str]) -> list[int]:
    sizes = dict(zip(census["file_path"].to_pylist(), census["index_size_in_bytes"].to_pylist(), strict=True))
    return [sizes[p] for p in paths]


# --- 4. inputs with one rule --------------------------------------------------------------------

@pytest.mark.parametrize("text, reason", [
    ("", "no query"),
    ("-- only a comment\n/* and another */\n", "no query"),
    ("INSERT INTO db.t VALUES ('a', 1, 'C1', 'ios', 2, 'p00');", "INSERT is not a query"),
    ("DROP TABLE db.t;", "DROP is not a query"),
    ("UPDATE db.t SET amount = 1 WHERE country = 'C1';", "UPDATE is not a query"),
    ("country = = 'C1'", "cannot parse"),
    ("SELECT * FROM db.t WHERE nosuch = 1", "without a filter"),
    ("nosuch = 1", "unknown column"),
    ("-- weight: nan\ncountry = 'C1'", "finite"),
    ("-- weight: inf\ncountry = 'C1'", "finite"),
])
def test_a_workload_without_a_usable_query_is_exit_2_with_the_reason(small, tmp_path, capsys, text, reason):
    wl = tmp_path / "w.sql"
    wl.write_text(text)
    assert main(["advise", small, "db.t", "--workload", str(wl)]) == 2
    assert reason in capsys.readouterr().err


def test_per_query_problems_are_listed_and_columns_resolve_as_explain(small, tmp_path, capsys):
    wl = tmp_path / "w.sql"
    wl.write_text("COUNTRY = 'C4';\nSELECT * FROM db.t WHERE Country = 'C4' AND upper(device) = 'X';\n"
                  "nosuch = 1;\nDELETE FROM db.t WHERE amount = 1;\n")
    assert main(["advise", small, "db.t", "--workload", str(wl)]) == 0
    text = capsys.readouterr().out
    assert "unknown column 'nosuch'" in text and "DELETE is not a query" in text
    assert "not pushed down: UPPER(device) = 'X'" in text
    advice = advise(Warehouse(small).table("db.t"), wl.read_text(), sample=0)
    assert [r.scan.filters for r in advice.runs] == [{"country": frozenset({"equality"})}] * 2
    assert _by(advice.candidates, "country", "bitmap").recommended


def test_identical_conditions_are_merged_and_json_lists_no_paths_without_details(small, tmp_path, capsys):
    advice = advise(Warehouse(small).table("db.t"),
                    "-- weight: 2\ncountry = 'C4';\ncountry = 'C4';\nSELECT 1 FROM db.t WHERE country = 'C4'", sample=0)
    (run,) = advice.runs
    assert run.names == ["q1", "q2", "q3"] and run.weight == 4
    wl = tmp_path / "w.sql"
    wl.write_text(f"uuid = '{uuid(7, 1)}';\ncountry = 'C4';\n")
    assert main(["advise", small, "db.t", "--workload", str(wl), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert ".parquet" not in out  # no file path without --details
    assert main(["advise", small, "db.t", "--workload", str(wl), "--format", "json", "--details"]) == 0
    assert ".parquet" in capsys.readouterr().out


def test_a_refused_spark_master_is_an_error(small, tmp_path, capsys):
    wl = tmp_path / "w.sql"
    wl.write_text("country = 'C4';\n")
    assert main(["advise", small, "db.t", "--workload", str(wl), "--master", "spark://nowhere.invalid:7077"]) == 2
    assert "not allowed" in capsys.readouterr().err


def test_the_splitter_is_linear():
    """A 400 KB statement (the quadratic splitter took 26 s for 38 KB) splits in well under a second."""
    text = "SELECT * FROM db.t WHERE country IN (" + ", ".join(f"'C{i:06d}'" for i in range(40_000)) + ");\n"
    start = time.perf_counter()
    (q,) = parse_workload(text * 1)
    assert time.perf_counter() - start < 5 and len(q.text) > 400_000


@pytest.mark.parametrize("rules, reason", [
    ("", "no rule"),
    ("# only a comment\n", "no rule"),
    ("dv-density", "needs max"),
    ("dv-density max=nan", "finite"),
    ("bloom-fpp max=inf", "finite"),
    ("pruning snapshot=1 where=\"country = = 1\"", "cannot parse"),
    ("pruning snapshot=999 where=\"country = 'C1'\"", "999"),
    ("pruning where=\"country = 'C1'\"", "needs snapshot"),
])
def test_check_exits_2_on_bad_rules(small, tmp_path, capsys, rules, reason):
    path = tmp_path / "rules.txt"
    path.write_text(rules)
    assert main(["check", small, "db.t", "--rules", str(path)]) == 2
    captured = capsys.readouterr()
    assert reason in captured.err + captured.out
