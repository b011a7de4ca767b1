"""Bloom sizing reads the bit sets of the filters it must count as bytes, each container once, and
counts their bits for all of them in one numpy pass (:func:`.bloom_sizing._blob_keys`), instead of a
reader per filter. Same numbers as the reader path (:func:`.bloom_sizing._distinct_keys`, the
reader's ``summary()``): the census without its ``index_offset`` column takes that path.

Truth by construction: files written with a known number of distinct keys (in ``.index`` files and
embedded in the manifest), and filters patched on disk to a saturated bit set (every bit set:
unbounded estimate, so its rows) and to an impossible hash count (refused by the reader:
``min(rows, items)``, never over fpp)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from indexcore.analysis import health as H
from indexcore.analysis.bloom_sizing import _blob_keys, census_sizing, census_tallies
from indexcore.formats.bloom import HEADER_SIZE
from indexcore.views import view
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema

ITEMS = 20
# (rows, distinct keys) per file: under items (not read), over items with few keys (read, fits),
# over items with as many keys as rows (read, over fpp)
FILES = [(15, 15), (300, 5), (300, 300), (500, 12), (800, 800), (400, 400)]
ROOT = Path(__file__).resolve().parent.parent


def _write(root: Path, name: str, threshold: str) -> None:
    schema = make_schema([("id", "BIGINT"), ("name", "STRING")], options={
        "bucket": "-1", "file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": str(ITEMS),
        "file-index.bloom-filter.name.fpp": "0.05", "file-index.in-manifest-threshold": threshold})
    w = TableWriter.create(str(root), name, schema, seed=name)
    for f, (rows, keys) in enumerate(FILES):
        w.write(pa.table({"id": pa.array(range(rows), pa.int64()),
                          "name": [f"f{f}-{j % keys}" for j in range(rows)]}))


def _both(table):
    """(batched tally, reader-path tally) of the table's latest census."""
    census = view(table, "file_indexes")
    plan = table.plan_columns()
    batched = census_tallies(table, census, plan.by_path(table))  # opens no reader: the next opens its own
    alone = census_tallies(table, census.drop_columns(["index_offset"]), plan.by_path(table))
    return batched, alone


@pytest.mark.parametrize("threshold", ["1B", "64kb"], ids=["index-files", "embedded"])
def test_batched_counts_equal_the_reader_path_and_the_keys_written(tmp_path, threshold):
    _write(tmp_path, "db.t", threshold)
    table = Warehouse(str(tmp_path)).table("db.t")
    census = view(table, "file_indexes")
    storage = set(census["storage_type"].to_pylist())
    assert storage == ({"FILE"} if threshold == "1B" else {"EMBEDDED"})
    batched, alone = _both(table)
    assert batched == alone
    t = batched["name"]
    by_rows = sorted(zip(t["rows"], t["ndv"], strict=True))
    for (rows, keys), (r, ndv) in zip(sorted(FILES), by_rows, strict=True):
        assert r == rows
        if rows <= ITEMS:
            assert ndv == rows  # not read: bounded by rows
        else:  # the estimate of a filter holding `keys` distinct keys (fpp 0.05 sized for 20)
            assert abs(ndv - min(keys, rows)) <= max(3, 0.25 * keys), (rows, keys, ndv)
    assert t["over"] == sum(keys > ITEMS for _rows, keys in FILES)
    assert sorted(t["over_rows"]) == sorted(rows for rows, keys in FILES if keys > ITEMS)


def _patch(table, census, row: int, blob: bytes) -> None:
    path = census["index_file_path"][row].as_py()
    offset = census["index_offset"][row].as_py()
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(blob)


def test_saturated_and_refused_filters_count_as_the_reader_does(tmp_path):
    _write(tmp_path, "db.t", "1B")
    table = Warehouse(str(tmp_path)).table("db.t")
    census = view(table, "file_indexes")
    rows = census["record_count"].to_pylist()
    sizes = census["index_size_in_bytes"].to_pylist()
    few = rows.index(300)  # 300 rows, 5 keys: fits before the patch
    many = rows.index(500)  # 500 rows, 12 keys: fits before the patch
    assert census["file_path"][few].as_py() != census["file_path"][many].as_py()
    k = 3  # saturated: every bit of the bit set is set
    _patch(table, census, few, k.to_bytes(4, "big") + b"\xff" * (sizes[few] - HEADER_SIZE))
    _patch(table, census, many, (0).to_bytes(4, "big"))  # no hash function: the reader refuses it
    table = Warehouse(str(tmp_path)).table("db.t")
    batched, alone = _both(table)
    assert batched == alone
    t = batched["name"]
    ndv = dict(zip(t["rows"], t["ndv"], strict=True))
    assert ndv[300] == 300  # unbounded estimate: its rows stand in
    assert ndv[500] == ITEMS  # unreadable: items, not over
    assert t["over"] == sum(keys > ITEMS for _rows, keys in FILES) + 1  # the saturated one is over now
    (sizing,) = census_sizing(table, view(table, "file_indexes"), table.plan_columns().by_path(table))
    assert sizing == next(b for b in H.table_health(table).blooms if b.column == "name")


def test_blob_keys_on_bytes_made_by_hand():
    """Bits counted together match a count per blob; a blob without a bit set, a None and an
    impossible hash count each answer alone."""
    rng = np.random.default_rng(7)
    blobs, rows, items, want = [], [], [], []
    for size in (5, 8, 64, 1000, 4096 + 9):
        bits = rng.integers(0, 256, size - HEADER_SIZE, dtype=np.uint8).tobytes()
        k = int(rng.integers(1, 9))
        blobs.append(k.to_bytes(4, "big") + bits)
        m, x = len(bits) * 8, int.from_bytes(bits, "little").bit_count()
        est = -m / k * np.log(1.0 - x / m) if x < m else float("inf")
        rows.append(10**6)
        items.append(1)
        want.append(int(np.ceil(est)) if np.isfinite(est) else 10**6)
    blobs += [b"\x00\x00\x00\x02", None, (-1).to_bytes(4, "big", signed=True) + b"\x01"]
    rows += [50, 50, 50]
    items += [7, 7, 7]
    want += [7, -1, 7]
    got = _blob_keys(blobs, np.array(rows), np.array(items))
    assert got.tolist() == want


def test_bench_table_same_tally_as_the_reader_path():
    """The 10,000-file bench table (when built; 128 of its 9,104 filters over fpp there): the same both ways."""
    root = Path("/tmp/indexcore-bench/large-10000")
    if not (root / "large.db").is_dir():
        pytest.skip("the 10,000-file bench warehouse is not built")
    table = Warehouse(str(root)).table("large.events")
    batched, alone = _both(table)
    assert batched == alone and pc.sum(pa.array([t["over"] for t in batched.values()])).as_py() > 0


@pytest.mark.parametrize("threshold", ["1B", "64kb"], ids=["index-files", "embedded"])
def test_health_in_parts_reads_the_same_bits(tmp_path, threshold):
    """Health measured in parts (a Spark task's share of the plan: its embedded filters cut from its
    own plan) gives the one-process verdict, with filters over fpp among them."""
    from test_health_parts import _merged

    _write(tmp_path, "db.t", threshold)
    want = H.table_health(Warehouse(str(tmp_path)).table("db.t"))
    assert want.blooms[0].over_fpp_files == sum(keys > ITEMS for _rows, keys in FILES)
    for how in ("bucket", "file"):
        assert _merged(Warehouse(str(tmp_path)).table("db.t"), how) == want


def test_quantile_and_covering_by_partial_sort_match_their_definition_on_sorted_lists():
    """The 95% rows and NDV figures (a partial sort in numpy) against their definitions on a sorted
    Python list, over random lists with ties, zeros and sizes around the quantile's cut."""
    import math
    import random

    from indexcore.analysis.bloom_sizing import _quantile, covering

    def quantile(values, q):
        s = sorted(values)
        pos = (len(s) - 1) * q
        lo = math.floor(pos)
        hi = min(lo + 1, len(s) - 1)
        return max(1, math.ceil(s[lo] + (s[hi] - s[lo]) * (pos - lo)))

    def cover(values, share):
        s = sorted(values)
        return max(1, s[max(math.ceil(share * len(s)) - 1, 0)]) if s else 1

    rng = random.Random(3)
    for _ in range(2000):
        values = [rng.choice([0, 1, rng.randrange(10**6)]) for _ in range(rng.choice([1, 2, 3, 19, 20, 21, 101]))]
        for q in (0.0, 0.5, 0.95, 0.999, 1.0):
            assert _quantile(values, q) == quantile(values, q) and covering(values, q) == cover(values, q)
    assert covering([], 0.95) == 1
