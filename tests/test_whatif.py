"""What-if indexes built in memory: byte-identical to Paimon's, and pruning as expected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from indexcore.analysis.whatif import build_hypothetical_index, evaluate_hypothetical
from indexcore.errors import IndexCoreError
from indexcore.formats.base import REMAIN, SKIP, BitmapResult
from indexcore.formats.container import read_container
from indexcore.paimon.options import CoreOptions
from indexcore.warehouse import Warehouse


def readme_rows(conformance: Path, name: str) -> list[list]:
    """The first 8 rows an index table's README lists (= positions in its single data file)."""
    text = (conformance / "warehouses" / "parquet" / f"{name}.db" / name / "README").read_text()
    rows = []
    for line in text.splitlines():
        if line.startswith("Add: ") and len(rows) < 8:
            cells = [c.strip() for c in line[5:].split(",")]
            rows.append([None if c == "null" else int(c) if c.lstrip("-").isdigit() else
                         float(c) if c.replace(".", "", 1).isdigit() else c for c in cells])
    return rows


@pytest.fixture(scope="module")
def warehouse(conformance: Path) -> Warehouse:
    return Warehouse(str(conformance / "warehouses" / "parquet"))


def _table(wh: Warehouse, name: str):
    return wh.table(f"{name}.{name}")


@pytest.mark.parametrize("name, column, index_type", [
    ("append_with_bitmap", "f1", "bitmap"),
    ("append_with_bitmap_v1", "f0", "bitmap"),
    ("append_with_bitmap_no_embedding", "f0", "bitmap"),
    ("append_with_bsi", "f1", "bsi"),
    ("append_with_bsi", "f4", "bsi"),
    ("append_with_bsi_bitmap_bloomfilter", "f4", "bitmap"),
    ("append_with_bsi_bitmap_bloomfilter", "f2", "bloom-filter"),
    ("pk_with_bitmap_dv", "f0", "bitmap"),
])
def test_built_in_memory_equals_paimons_blob(warehouse, name, column, index_type):
    table = _table(warehouse, name)
    options = table.core_options.file_index_options(column, index_type)
    hyp = build_hypothetical_index(table, column, index_type, options)
    assert hyp.problems == []
    (lf,) = table.plan().files
    container = read_container(table.file_index_source(lf))
    written = container.blob(container.entry(column, index_type)).read_all()
    (built,) = hyp.files
    assert built.path == lf.path and built.row_count == lf.file.row_count
    assert built.blob == written
    assert hyp.total_size == len(written)


def test_file_index_options():
    opts = {"file-index.bitmap.columns": "a,b", "file-index.bitmap.version": "2",
            "file-index.bitmap.a.version": "1", "file-index.bloom-filter.a.fpp": "0.01"}
    core = CoreOptions.parse(opts)
    assert core.file_index_options("a", "bitmap") == {"version": "1"}
    assert core.file_index_options("b", "bitmap") == {"version": "2"}
    assert core.file_index_options("a", "bloom-filter") == {"fpp": "0.01"}


def test_hypothetical_bitmap_prunes_to_the_matching_rows(warehouse, conformance):
    rows = readme_rows(conformance, "append_with_bitmap")
    table = _table(warehouse, "append_with_bitmap")
    hyp = build_hypothetical_index(table, "f3", "bitmap", {})  # f3 has no index today
    for value in sorted({r[3] for r in rows}):
        result = evaluate_hypothetical(hyp, f"f3 = {value}", verify=True)
        (f,) = result.files
        expected = [i for i, r in enumerate(rows) if r[3] == value]
        assert f.existing.index_decision is REMAIN
        assert isinstance(f.hypothetical_decision, BitmapResult)
        assert list(f.hypothetical_decision.bitmap) == expected
        assert f.combined_decision == f.hypothetical_decision
        assert f.rows_existing == 8 and f.rows_hypothetical == len(expected)
        assert result.violations == []
        totals = result.totals
        size = f.existing.file_size
        assert size == Path(f.path).stat().st_size
        assert totals["hypothetical"] == {"files": 1, "rows": len(expected), "bytes": size, "files_skipped": 0,
                                          "rows_skipped": 8 - len(expected), "bytes_skipped": 0,
                                          "index_bytes": f.index_size}
        assert totals["existing"] == {"files": 1, "rows": 8, "bytes": size, "files_skipped": 0, "rows_skipped": 0,
                                      "bytes_skipped": 0, "index_bytes": f.existing.bytes_read}
        assert totals["combined"]["index_bytes"] == f.existing.bytes_read + f.index_size


def test_hypothetical_bloom_filter_skips_absent_values(warehouse, conformance):
    rows = readme_rows(conformance, "append_with_bsi")
    table = _table(warehouse, "append_with_bsi")  # no index on f0 today
    hyp = build_hypothetical_index(table, "f0", "bloom-filter", {"items": "1000", "fpp": "0.001"})
    present = sorted({r[0] for r in rows})
    for value in present:
        result = evaluate_hypothetical(hyp, f"f0 = '{value}'", verify=True)
        (f,) = result.files
        assert f.hypothetical_decision is REMAIN and f.rows_hypothetical == 8
        assert result.violations == []
    skipped = 0
    for value in ("Carl", "Dora", "Frank", "Mia", "Pete"):  # inside the stats range, not written
        result = evaluate_hypothetical(hyp, f"f0 = '{value}'", verify=True)
        (f,) = result.files
        assert f.existing.stats_decision == "REMAIN" and f.existing.read
        skipped += f.hypothetical_decision is SKIP
        assert result.violations == []
    assert skipped >= 4
    combined = evaluate_hypothetical(hyp, "f0 = 'Carl' AND f1 = 100")
    (f,) = combined.files
    # the existing bsi on f1 answers rows; added to the bloom filter's SKIP the file is skipped
    assert isinstance(f.existing.index_decision, BitmapResult)
    assert f.combined_decision is SKIP and f.rows_combined == 0


def test_before_and_after_bytes_and_rows_skipped(warehouse):
    """A bloom filter on f0 skips the file for an absent name: before, every byte and row is read;
    after, the file's bytes and rows are skipped, at the cost of reading the bloom filter."""
    table = _table(warehouse, "append_with_bsi")
    hyp = build_hypothetical_index(table, "f0", "bloom-filter", {"items": "100", "fpp": "0.001"})
    result = evaluate_hypothetical(hyp, "f0 = 'Dora'")
    (f,) = result.files
    assert f.hypothetical_decision is SKIP
    before, after = result.totals["existing"], result.totals["hypothetical"]
    size = Path(f.path).stat().st_size
    assert (before["bytes"], before["bytes_skipped"], before["rows"], before["rows_skipped"]) == (size, 0, 8, 0)
    assert (after["bytes"], after["bytes_skipped"], after["rows"], after["rows_skipped"]) == (0, size, 0, 8)
    assert after["index_bytes"] == hyp.total_size > 0
    row = result.to_json()["files"][0]
    assert row["file_size"] == size and row["index_bytes_hypothetical"] == hyp.total_size


def test_hypothetical_index_with_deletion_vectors_and_levels(warehouse):
    table = _table(warehouse, "pk_table_scan_and_read_dv")
    hyp = build_hypothetical_index(table, "f0", "bitmap", {})
    assert len(hyp.files) == len(table.plan().files)
    result = evaluate_hypothetical(hyp, "f0 = 'Alex'", verify=True)
    assert result.violations == []
    by_level = {f.path: f for f in result.files}
    for f in by_level.values():
        if f.existing.level == 0:
            assert f.rows_hypothetical == 0  # level 0 is not read whatever the index says
        if f.existing.read and f.existing.matching_rows:
            assert isinstance(f.hypothetical_decision, BitmapResult)
            assert len(f.hypothetical_decision.bitmap) == f.existing.matching_rows


def test_merge_read_tables_do_not_use_a_hypothetical_index(warehouse):
    table = _table(warehouse, "pk_table_scan_and_read_mor")
    hyp = build_hypothetical_index(table, "f0", "bitmap", {})
    result = evaluate_hypothetical(hyp, "f0 = 'Alex'")
    assert all(f.hypothetical_decision is None and f.hypothetical_raw is not None for f in result.files)
    assert result.totals["hypothetical"] == result.totals["existing"]


def test_bad_requests_raise(warehouse):
    table = _table(warehouse, "append_with_bitmap")
    with pytest.raises(IndexCoreError):
        build_hypothetical_index(table, "nope", "bitmap", {})
    with pytest.raises(IndexCoreError):
        build_hypothetical_index(table, "f0", "no-such-index", {})


@pytest.mark.parametrize(("index_type", "options", "message"), [
    # Paimon's BloomFilterFileIndex: items a positive Java int, fpp strictly between 0 and 1
    ("bloom-filter", {"items": "0"}, "items=0 must be a positive 32-bit integer"),
    ("bloom-filter", {"items": "3000000000"}, "must be a positive 32-bit integer"),
    ("bloom-filter", {"items": "1.5"}, "is not an integer"),
    ("bloom-filter", {"fpp": "1"}, "must be between 0 and 1"),
    ("bloom-filter", {"fpp": "0"}, "must be between 0 and 1"),
    ("bloom-filter", {"fpp": "often"}, "is not a number"),
    # BitmapFileIndex: version 1 or 2; index-block-size a MemorySize (digits, then a unit)
    ("bitmap", {"version": "3"}, "invalid bitmap index version: 3"),
    ("bitmap", {"version": "two"}, "bitmap options"),
    ("bitmap", {"index-block-size": "1.5kb"}, "cannot parse memory size"),
    ("bitmap", {"index-block-size": "16 parsecs"}, "cannot parse memory size"),
    ("bitmap", {"index-block-size": "99999999999t"}, "overflows 64 bits"),
    ("bitmap", {"enable-next-offset-to-size": "maybe"}, "must be true or false"),
    # RangeBitmapFileIndex: chunk-size a MemorySize Paimon casts to a Java int
    ("range-bitmap", {"chunk-size": "2gb"}, "must be below 2 GiB"),
    ("range-bitmap", {"chunk-size": "-1kb"}, "cannot parse memory size"),
    ("bsi", {"chunk-size": "4kb"}, "bsi does not take chunk-size; it takes no options"),
])
def test_option_values_paimon_refuses_are_refused(warehouse, index_type, options, message):
    from indexcore.formats.registry import check_writer_options
    from indexcore.types import parse_type

    with pytest.raises(IndexCoreError, match=re.escape(message)):
        check_writer_options(index_type, options, parse_type("INT"))
    table = _table(warehouse, "append_with_bitmap")
    with pytest.raises(IndexCoreError, match=re.escape(message)):
        build_hypothetical_index(table, "f1", index_type, options)


@pytest.mark.parametrize(("index_type", "options"), [
    ("bloom-filter", {"items": "2147483647", "fpp": "0.5"}),
    ("bloom-filter", {"items": "10", "fpp": "1e-3"}),
    ("bitmap", {"version": "1"}),
    ("bitmap", {"version": "2", "index-block-size": "64 KB"}),
    ("bitmap", {"enable-next-offset-to-size": "FALSE", "enable-buffered-input": "true"}),
    ("range-bitmap", {"chunk-size": "1kibibytes"}),
    ("range-bitmap", {"chunk-size": "0"}),
    ("bsi", {}),
])
def test_option_values_paimon_accepts_are_accepted(index_type, options):
    from indexcore.formats.registry import check_writer_options
    from indexcore.types import parse_type

    check_writer_options(index_type, options, parse_type("INT"))


def test_reader_options_do_not_change_the_bytes(warehouse):
    table = _table(warehouse, "append_with_bitmap")
    plain = build_hypothetical_index(table, "f1", "bitmap", {})
    tuned = build_hypothetical_index(table, "f1", "bitmap", {"enable-next-offset-to-size": "false"})
    assert [f.blob for f in tuned.files] == [f.blob for f in plain.files]
    assert evaluate_hypothetical(tuned, "f1 = 20").totals == evaluate_hypothetical(plain, "f1 = 20").totals
