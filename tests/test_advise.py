"""The index advisor on a table whose truth is known by construction (written by our writer).

Eight files of 200 rows, one per commit, every column spread so statistics prune nothing:

* ``id`` is unique and interleaved across files; a bloom filter with Paimon's default
  ``items`` (1,000,000) indexes it: it prunes point lookups but is far too large;
* ``device`` (three values, all in every file) carries a bitmap the workload never prunes with;
* ``country`` holds ``AA`` and ``ZZ`` everywhere plus one middle value per file: equality on a
  middle value is answered by no index today, and a bitmap would skip most files;
* ``amount`` holds 0 and 1000 everywhere plus a band of 50 values per file: ranges inside one
  band need range-bitmap or BSI.
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path

import pyarrow as pa
import pytest

from indexcore.analysis.advise import advise, index_inventory
from indexcore.analysis.advise_existing import _census
from indexcore.analysis.workload import parse_workload, scans
from indexcore.cli import main
from indexcore.errors import PredicateError
from indexcore.scan import explain
from indexcore.views import view
from indexcore.warehouse import Warehouse
from indexcore.warehouse.data_file import read_raw
from indexcore.warehouse.plan_columns import _MANIFEST_KEY
from indexcore.write import TableWriter, make_schema

FILES, ROWS = 8, 200
MIDDLE = ("CC", "DD", "EE", "FF")
COLUMNS = [("id", "STRING"), ("device", "STRING"), ("country", "STRING"), ("amount", "INT")]
BASE_OPTIONS = {"bucket": "-1", "file.format": "parquet", "manifest.format": "avro",
                "file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "device"}

WORKLOAD = """\
-- name: lookup
-- weight: 3
SELECT * FROM db.t WHERE id = 'id-000123';
-- name: devices
SELECT count(*) FROM db.t WHERE device <> 'tv';
-- name: country
-- weight: 5
SELECT t.amount FROM db.t t JOIN db.other o ON t.id = o.id WHERE t.country = 'DD' AND o.x = 1;
-- name: band
SELECT * FROM db.t WHERE amount BETWEEN 310 AND 340;
-- name: other_table
SELECT * FROM db.other WHERE x = 1;
-- name: both
country = 'EE' AND amount > 420
"""


def _rows(k: int) -> pa.Table:
    ids = [k + FILES * i for i in range(ROWS)]
    return pa.table({
        "id": [f"id-{i:06d}" for i in ids],
        "device": [("ios", "android", "web")[i % 3] for i in range(ROWS)],
        "country": ["AA" if i % 3 == 0 else "ZZ" if i % 3 == 1 else MIDDLE[k % 4] for i in range(ROWS)],
        "amount": pa.array([0 if i % 4 == 0 else 1000 if i % 4 == 1 else k * 100 + i % 50
                            for i in range(ROWS)], pa.int32()),
    })


def _build(root: str, options: dict[str, str]) -> str:
    writer = TableWriter.create(root, "db.t", make_schema(COLUMNS, options=options), seed=7)
    for k in range(FILES):
        writer.write(_rows(k))
    return root


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> str:
    return _build(str(tmp_path_factory.mktemp("advise") / "wh"), BASE_OPTIONS)


@pytest.fixture(scope="module")
def advice(warehouse):
    return advise(Warehouse(warehouse).table("db.t"), WORKLOAD, sample=0, details=True)


def _by(items, column, index_type):
    (found,) = [x for x in items if x.column == column and x.index_type == index_type]
    return found


def test_workload_format():
    qs = parse_workload("-- weight: 2\nSELECT 1 FROM a.b WHERE x = 'a;b';\n3\tx > 1;\n-- name: z\nWHERE y = 2")
    assert [(q.name, q.weight) for q in qs] == [("q1", 2.0), ("q2", 3.0), ("z", 1.0)]
    assert qs[0].text == "SELECT 1 FROM a.b WHERE x = 'a;b'"
    lines = parse_workload("x = 1\n\ny = 'it''s'\n")
    assert [q.text for q in lines] == ["x = 1", "y = 'it''s'"] and lines[1].line == 3
    found, skipped = scans(parse_workload(WORKLOAD), "db.t", [c for c, _ in COLUMNS])
    assert [s.name for s in found] == ["lookup", "devices", "country", "band", "both"]
    assert skipped == [{"query": "other_table", "reason": "does not read db.t"}]
    country = found[2]
    assert country.where == "country = 'DD'"  # the join's other side is not pushed to db.t
    assert country.filters == {"country": frozenset({"equality"})}
    assert found[3].filters == {"amount": frozenset({"range"})}
    with pytest.raises(PredicateError):
        parse_workload("-- weight: lots\nx = 1")


def test_flags_the_index_that_never_prunes_and_the_oversized_bloom(advice):
    device = _by(advice.existing, "device", "bitmap")
    assert device.verdict == "never prunes"
    assert device.filtered_by == ["devices"] and device.skipped.files == 0
    bloom = _by(advice.existing, "id", "bloom-filter")
    assert bloom.verdict == "oversized"
    assert bloom.skipped.files == FILES - 1  # the lookup reads only the file holding the id
    items = int(bloom.suggested_options["items"])
    assert ROWS <= items < 2 * ROWS
    assert bloom.bytes > 100 * items  # default items=1,000,000: megabytes for 200-row files
    assert not any(f["verdict"] in ("missing", "stale", "wrong column") for g in advice.existing
                   for f in g.findings)


def test_bloom_with_too_few_items_is_over_fpp_and_resized(tmp_path):
    """``items`` far below the distinct keys per file: finding ``over fpp`` (the name table health
    uses) with ``items`` = the rows of the files."""
    root = _build(str(tmp_path / "wh"), {**BASE_OPTIONS, "file-index.bloom-filter.id.items": "20"})
    advice = advise(Warehouse(root).table("db.t"), "id = 'id-000123'", sample=None)
    bloom = _by(advice.existing, "id", "bloom-filter")
    (finding,) = [f for f in bloom.findings if f["verdict"] in ("oversized", "over fpp")]
    assert finding["files"] == FILES and bloom.suggested_options == {"items": str(ROWS)}
    # 200 keys in filters sized for 20 answer "maybe" for every id: it prunes nothing *because* it is
    # undersized, so the verdict is to resize it (over fpp ranks first), never to drop it
    assert bloom.skipped.files == 0 and bloom.verdict == "over fpp"
    (entry,) = [e for e in advice.to_json()["existing"] if e["column"] == "id"]
    assert [f["verdict"] for f in entry["findings"]] == ["never prunes", "over fpp"]
    assert advice.statements[0] == ("ALTER TABLE db.t SET TBLPROPERTIES "
                                    f"('file-index.bloom-filter.id.items' = '{ROWS}')")
    assert not any("UNSET" in s for s in advice.statements)


def test_recommends_bitmap_for_low_cardinality_equality_and_a_range_index_for_ranges(advice):
    recommended = {c.column: c for c in advice.candidates if c.recommended}
    assert set(recommended) == {"country", "amount"}
    assert recommended["country"].index_type == "bitmap"
    assert recommended["amount"].index_type in ("range-bitmap", "bsi")
    assert all(c.built_files == c.total_files == FILES and c.extra.exact for c in advice.candidates)
    country = recommended["country"]
    # 'DD' lives in files 1 and 5 only, 'EE' in 2 and 6: the bitmap skips the other six
    assert [q["extra_files_skipped"]["value"] for q in country.queries] == [FILES - 2, FILES - 2]
    ranks = [c.rank for c in advice.candidates]
    assert ranks == sorted(ranks) and advice.candidates[0].recommended
    spark_sql = " ".join(advice.statements)
    assert "'file-index.bitmap.columns' = 'country'" in spark_sql  # device dropped, country added
    assert "'file-index.bloom-filter.id.items' = " in spark_sql
    assert advice.statements[-1] == "CALL sys.rewrite_file_index('db.t')"


def test_every_candidate_claim_matches_explain_once_really_built(advice, tmp_path):
    """Build each candidate for real with our writer (same rows, same file names) and explain."""
    runs = {r.name: r for r in advice.runs}
    for cand in advice.candidates:
        options = dict(BASE_OPTIONS)
        key = f"file-index.{cand.index_type}.columns"
        options[key] = ",".join(filter(None, [options.get(key), cand.column]))
        options.update({f"file-index.{cand.index_type}.{cand.column}.{k}": v for k, v in cand.options.items()})
        root = _build(str(tmp_path / f"{cand.column}-{cand.index_type}"), options)
        table = Warehouse(root).table("db.t")
        assert cand.queries, cand
        for q in cand.queries:
            ex = explain(table, runs[q["query"]].scan.where)
            skipped = sorted(posixpath.basename(f.path) for f in ex.files if f.skipped_by == "index")
            assert skipped == sorted(posixpath.basename(p) for p in q["index_skipped_files"]), (cand, q["query"])
            assert ex.funnel["read"]["rows"] == q["rows_read"], (cand, q["query"])


def test_existing_claims_match_explain(advice, warehouse):
    """An index alone skipping a file implies explain skips it by index too (one index per column here)."""
    table = Warehouse(warehouse).table("db.t")
    for g in advice.existing:
        for q in g.queries:
            run = next(r for r in advice.runs if r.name == q["query"])
            ex = explain(table, run.scan.where)
            by_index = {f.path for f in ex.files if f.skipped_by == "index"}
            assert set(q["skipped_files"]) <= by_index


def test_inventory_flags_missing_and_stale(tmp_path):
    root = str(tmp_path / "wh")
    writer = TableWriter.create(root, "db.t", make_schema(COLUMNS, options=BASE_OPTIONS), seed=7)
    writer.write(_rows(0))
    table = Warehouse(root).table("db.t")
    inventory, problems = index_inventory(table)
    assert problems == [] and all(not g.missing for g in inventory)
    # a later schema asks for a bitmap on country: the existing file lacks it; device is no longer asked for
    schema = make_schema(COLUMNS, options={**BASE_OPTIONS, "file-index.bitmap.columns": "country"}, schema_id=1)
    from indexcore.write.layout import schema_json

    with open(os.path.join(root, "db.db", "t", "schema", "schema-1"), "w") as fh:
        fh.write(schema_json(schema))
    table = Warehouse(root).table("db.t")
    advice = advise(table, "country = 'CC'\ndevice = 'web'", sample=None)
    assert _by(advice.existing, "country", "bitmap").verdict == "missing"
    device = _by(advice.existing, "device", "bitmap")
    assert "stale" in {f["verdict"] for f in device.findings}
    assert "CALL sys.rewrite_file_index('db.t')" in advice.statements


def test_cli_json_and_details(warehouse, tmp_path, capsys):
    wl = tmp_path / "w.sql"
    wl.write_text(WORKLOAD)
    assert main(["advise", warehouse, "db.t", "--workload", str(wl), "--sample", "3", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"existing", "candidates", "statements"}
    # 3 files per query, drawn from the files it reaches: figures carry their sample and interval
    assert all(3 <= c["measured_on"]["files"] < FILES and c["measured_on"]["of"] == FILES and not c["exact"]
               for c in out["candidates"])
    sampled = [q for c in out["candidates"] for q in c["queries"]]
    assert sampled and all(q["extra_files_skipped"]["sample_files"] == 3 and
                           q["extra_files_skipped"]["of_files"] == FILES and
                           "interval_95" in q["extra_files_skipped"] for q in sampled)
    assert not any("index_skipped_files" in q for q in sampled)  # no per-file lists without --details
    assert "explain" not in out["queries"][0]
    assert main(["advise", warehouse, "db.t", "--workload", str(wl), "--sample", "0", "--details",
                 "--dialect", "flink", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["queries"][0]["explain"]["files"]
    assert any(s.startswith("ALTER TABLE db.t SET (") for s in out["statements"])
    assert main(["advise", warehouse, "db.t", "--workload", str(wl)]) == 0
    assert "candidates:" in capsys.readouterr().out
    assert main(["advise", warehouse, "db.t", "--workload", str(tmp_path / "absent.sql")]) == 2
    assert "cannot read workload" in capsys.readouterr().err


def test_advisor_page_and_table_health(monkeypatch, open_page):
    """The Advisor page replays a pasted workload with progress; the Table page shows health."""
    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(sample))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    at = open_page("table", "demo.faulty")
    from indexcore.analysis.health import table_health

    h = table_health(Warehouse(str(sample)).table("demo.faulty"))
    labels = {m.label: m.value for m in at.metric}
    # the two files whose index cannot be used are unusable files, not files lacking the index
    assert labels["Health"] == f"{h.score}/100" and labels["Index coverage"] == "100%"
    assert sum("**error**" in m.value and "cannot be used" in m.value for m in at.markdown) == 2
    at.switch_page("pages/advisor.py").run()
    assert not at.exception and at.title[0].value == "Advisor"
    at.text_area(key="advisor_workload").set_value("country = 'NZ';\nevent_id = 'nope';\nuser_id > 10").run()
    at.button(key="advisor_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    labels = {m.label: m.value for m in at.metric}
    assert labels["Queries replayed"] == "3"
    assert any("rewrite_file_index('demo.faulty')" in c.value for c in at.code)


def test_spark_measure_agrees_with_the_local_exact_measure(warehouse, advice):
    """``--master``: every candidate built and measured on Spark (every file) makes the same claims
    and the same statements as the local exact measure."""
    from indexcore.spark.jobs.what_if import what_if_measure

    spark = advise(Warehouse(warehouse).table("db.t"), WORKLOAD,
                   measure=what_if_measure(warehouse, "db.t", "local[1]"))

    def claims(a):
        return sorted((c.column, c.index_type, c.extra.files.value, c.extra.rows.value, c.estimated_bytes,
                       c.verdict) for c in a.candidates)

    assert claims(spark) == claims(advice) and spark.statements == advice.statements
    assert all(c.extra.exact for c in spark.candidates)


OR_WORKLOAD = "country = 'DD' OR amount BETWEEN 310 AND 340;\ncountry = 'CC';\n"


def test_spark_measures_or_pairs_as_the_local_exact_measure_does(warehouse):
    """``--master``: the pairs tried for an OR query are built and measured on Spark (both parts
    in one job, answering together) and claim what the local exact measure claims. By
    construction 'DD' is in files 1 and 5 and amounts 310-340 only in file 3: together a bitmap
    and a range index skip the other 5 files, which neither skips alone."""
    from indexcore.spark.jobs.what_if import what_if_measure

    table = Warehouse(warehouse).table("db.t")
    local = advise(table, OR_WORKLOAD, sample=0)
    spark = advise(table, OR_WORKLOAD, measure=what_if_measure(warehouse, "db.t", "local[2]"))

    def claims(a):
        return sorted((c.column, c.index_type, c.extra.files.value, c.extra.rows.value, c.alone.files.value,
                       c.estimated_bytes, c.verdict, c.extra.exact) for c in a.candidates)

    pairs = [c for c in spark.candidates if "+" in c.column]
    assert pairs and claims(spark) == claims(local) and spark.statements == local.statements
    for pair in pairs:
        (q,) = [q for q in pair.queries if q["query"] == "q1"]
        assert q["extra_files_skipped"]["value"] == FILES - 3 and pair.recommended


def test_the_existing_census_is_walked_over_the_plan_advise_holds(warehouse):
    """advise takes its existing-index census from the live files it planned (the columnar plan,
    which reads every manifest again, is not built), with the rows of the columnar census; a
    census the table keeps already (a page built it) is reused as it is."""
    table = Warehouse(warehouse).table("db.t")
    advise(table, WORKLOAD, sample=0)
    sid = table.snapshot().id
    assert table.caches.plans.get((_MANIFEST_KEY, sid)) is None
    walked = _census(table, sid, list(table.plan().files))
    columnar = view(Warehouse(warehouse).table("db.t"), "file_indexes", sid)
    assert walked.num_rows > 0 and walked.equals(columnar)
    kept = view(table, "file_indexes", sid)
    assert _census(table, sid, list(table.plan().files)) is kept


def test_each_existing_index_skips_alone_what_construction_says(tmp_path):
    """Each index's own figures on a table whose truth is known: ``country`` carries a bitmap and a
    bloom filter (two indexes on one column: each is read alone), ``device`` a bitmap and ``id`` a
    bloom filter (the file's only index on the query's column: explain's answer is its own). For
    ``country = 'DD'`` (files 1 and 5 hold it, in 66 of their 200 rows) the bitmap skips exactly the
    six other files, their rows and bytes, and the rows of the two it keeps that are not 'DD'; the
    bloom filter skips only files without it; ``id = 'id-000123'`` (file 3) has its bloom filter skip
    the seven others; ``device = 'web'`` is in every file (66 rows each): no file skipped, the rest
    of the rows of all eight."""
    root = _build(str(tmp_path / "wh"), {**BASE_OPTIONS, "file-index.bitmap.columns": "device,country",
                                         "file-index.bloom-filter.columns": "id,country"})
    table = Warehouse(root).table("db.t")
    files = list(table.plan().files)
    assert len(files) == FILES
    # each file's number k by its rows (file k holds the ids k, k + 8, ...)
    number = {lf.path: int(read_raw(table.storage, lf.path).column("id")[0].as_py()[3:]) % FILES for lf in files}
    size = {lf.path: lf.file.file_size for lf in files}
    workload = "-- name: dd\ncountry = 'DD'\n-- name: one\nid = 'id-000123'\n-- name: both\ncountry = 'DD' AND device = 'web'\n"
    advice = advise(table, workload, sample=0, details=True)

    def figures(column, kind, query):
        (q,) = [q for q in _by(advice.existing, column, kind).queries if q["query"] == query]
        return q

    without_dd = {p for p, k in number.items() if MIDDLE[k % 4] != "DD"}
    assert len(without_dd) == 6
    kept_rows = ROWS - sum(1 for i in range(ROWS) if i % 3 == 2)  # rows of a kept file that are not 'DD'
    for query in ("dd", "both"):
        bitmap = figures("country", "bitmap", query)
        assert set(bitmap["skipped_files"]) == without_dd
        assert bitmap["files_skipped"] == 6 and bitmap["bytes_skipped"] == sum(size[p] for p in without_dd)
        assert bitmap["rows_skipped"] == 6 * ROWS + 2 * kept_rows
        bloom = figures("country", "bloom-filter", query)
        assert set(bloom["skipped_files"]) <= without_dd and bloom["rows_skipped"] == bloom["files_skipped"] * ROWS
    one = figures("id", "bloom-filter", "one")
    assert {number[p] for p in one["skipped_files"]} == set(range(FILES)) - {3}
    device = figures("device", "bitmap", "both")
    assert device["files_skipped"] == 0 and device["rows_skipped"] == FILES * kept_rows


def test_details_list_at_most_the_configured_files(warehouse, advice, monkeypatch):
    """``--details`` at INDEXCORE_DETAILS_FILES=2: each query's explain lists its first 2 files (in
    explain's order, truth: the uncapped run) and says how many there are; the per-file lists of
    existing indexes and candidates hold at most 2, each from the full lists."""
    monkeypatch.setenv("INDEXCORE_DETAILS_FILES", "2")
    capped = advise(Warehouse(warehouse).table("db.t"), WORKLOAD, sample=0, details=True).to_json(details=True)
    whole = advice.to_json(details=True)
    listed = 0
    for q, full in zip(capped["queries"], whole["queries"], strict=True):
        if "explain" not in full:
            continue
        files = full["explain"]["files"]
        assert len(files) == FILES > 2
        assert q["explain"]["files"] == files[:2] and q["explain"]["files_total"] == len(files)
        listed += 1
    assert listed
    lists = 0
    for kind in ("existing", "candidates"):
        for g, full in zip(capped[kind], whole[kind], strict=True):
            for q, fq in zip(g.get("queries", []), full.get("queries", []), strict=True):
                for key in ("skipped_files", "index_skipped_files"):
                    if key in fq:
                        assert q[key] == fq[key][:2]
                        lists += len(fq[key]) > 2
    assert lists  # some list was longer than the cap
