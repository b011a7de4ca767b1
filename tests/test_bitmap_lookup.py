"""Bitmap lookups on the bytes (formats/bitmap/lookup.py) and explain's index stage on them
(scan/index_bytes.py): the rows are those the blob was built from (and those Paimon's blobs hold),
the bytes counted are those BitmapReader reads, and any blob the quick parser does not take is
left to the reader (None), never answered differently from it."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from index_bytes_checks import explain_both, flipped

from indexcore import open_warehouse
from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf, parse_where
from indexcore.formats.base import BitmapResult
from indexcore.formats.bitmap import meta as bitmap_meta
from indexcore.formats.bitmap.keys import KeyCodec
from indexcore.formats.bitmap.lookup import BitmapLookup
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.formats.bitmap.writer import BitmapWriter
from indexcore.io import BytesSource
from indexcore.scan import index_bytes
from indexcore.scan.explainer import explain
from indexcore.types import parse_type
from indexcore.write import TableWriter, make_schema

COLUMNS = {
    "STRING": ["nz", "au", "", "a much longer value " * 3, "zz", "b"],
    "INT": [0, -7, 2**31 - 1, -(2**31), 42, 9],
    "BIGINT": [0, -1, 2**62, -(2**62), 5, 77],
    "DOUBLE": [0.0, -0.0, 1.5, -2.25, float("inf"), 1e300],
    "FLOAT": [0.0, 1.5, -2.25, 3.0, 0.125, -8.0],
    "DATE": [0, 19000, -1, 20000, 7, 8],
}


def _blob(dtype, values, version: int, block: str = "16kb") -> bytes:
    writer = BitmapWriter(dtype, {"version": str(version), "index-block-size": block})
    for v in values:
        writer.write(v)
    return writer.serialized_bytes()


def _reader_answer(dtype, blob: bytes, probes: list) -> tuple[list[int], int]:
    """BitmapReader's rows of ``probes`` (IN, nulls included) and the bytes it reads for them, as a
    fresh process's reader reads them (its memo of walked V1 dictionaries, found by their first
    bytes, reads as far as a remembered longer one before it compares them)."""
    bitmap_meta._STARTS.clear()
    source = BytesSource(blob, "blob")
    reader = BitmapReader(dtype, source, {})
    got = reader.visit_in(probes)
    return sorted(got.bitmap), source.stats.bytes_served


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("type_name", sorted(COLUMNS))
def test_rows_and_bytes_are_the_written_rows_and_the_readers_bytes(type_name: str, version: int):
    dtype = parse_type(type_name)
    rng = random.Random(f"{type_name}{version}")
    distinct = COLUMNS[type_name]
    # repeated values, single-row values, nulls; a small block size makes several V2 blocks
    values = [rng.choice(distinct[:4]) if rng.random() < 0.9 else None for _ in range(400)]
    values += distinct[4:5] + [None]  # one single-row value; distinct[5] is absent
    for block in ("16kb", "96b"):
        blob = _blob(dtype, values, version, block)
        codec = KeyCodec(dtype)
        probes = [[v] for v in distinct] + [[None], distinct[:3] + [None], [distinct[1], distinct[1]]]
        for probe in probes:
            truth = sorted(i for i, v in enumerate(values)
                           if any(v is None if p is None else (v is not None and codec.key(v) == codec.key(p))
                                  for p in probe))
            got = BitmapLookup(codec, probe).rows(blob, "blob")
            assert got is not None, (probe, block)
            row_count, rows, used = got
            assert row_count == len(values)
            assert sorted(rows) == truth, (probe, block)
            assert (truth, used) == _reader_answer(dtype, blob, probe), (probe, block)


@pytest.mark.parametrize("version", [1, 2])
def test_paimon_written_blobs(conformance: Path, version: int):
    """Blobs written by Paimon (100,000 strings): the rows Paimon's reader gives for each value."""
    dtype = parse_type("STRING")
    blob = (conformance / "file_index" / f"bitmap-index-v{version}").read_bytes()
    expected = json.loads((conformance / "file_index" / "expected.json").read_text())["equal"]
    codec = KeyCodec(dtype)
    for value, rows in expected.items():
        row_count, got, used = BitmapLookup(codec, [value]).rows(blob, "paimon")
        assert row_count == 100_000 and sorted(got) == rows
        assert used == _reader_answer(dtype, blob, [value])[1]
    assert sorted(BitmapLookup(codec, ["not a value in it"]).rows(blob, "paimon")[1]) == []


@pytest.mark.parametrize("version", [1, 2])
def test_damaged_blobs_are_left_to_the_reader_or_answered_as_it_does(version: int):
    """Every byte of a small blob flipped in turn: the lookup answers None (the reader then says
    what is wrong) or exactly the reader's rows and bytes; it never answers where the reader fails."""
    dtype = parse_type("STRING")
    values = ["a", "bb", None, "a", "ccc", "bb", "a", "d"] * 5 + ["single"]
    blob = _blob(dtype, values, version, "32b")
    codec = KeyCodec(dtype)
    answered = 0
    for at, flip, damaged in flipped(blob):
        for probe in (["a"], ["single"], [None], ["zzz"], ["bb", "d"]):
            got = BitmapLookup(codec, probe).rows(damaged, "damaged")
            try:
                want = _reader_answer(dtype, damaged, probe)
            except (IndexCoreError, ValueError, OverflowError, MemoryError):
                want = None
            if got is None:
                continue
            assert want is not None, (at, flip, probe)
            assert (sorted(got[1]), got[2]) == want, (at, flip, probe)
            answered += 1
    assert answered > 0


def test_boolean_keys_are_left_to_the_reader():
    with pytest.raises(ValueError):
        BitmapLookup(KeyCodec(parse_type("BOOLEAN")), [True])


# ------------------------------------------------------------------ explain's index stage


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory) -> Path:
    """A bucketed table with a bitmap on ``country`` and a bloom filter on ``id``, several commits."""
    root = tmp_path_factory.mktemp("bitmap_lookup")
    schema = make_schema([("id", "BIGINT"), ("country", "STRING"), ("amount", "INT")],
                         options={"bucket": "4", "bucket-key": "id", "file.format": "parquet",
                                  "file-index.bitmap.columns": "country,amount",
                                  "file-index.bloom-filter.columns": "id",
                                  "file-index.bloom-filter.id.items": "400"})  # containers read whole
    writer = TableWriter.create(str(root), "db.t", schema)
    rng = np.random.default_rng(3)
    countries = np.array(["NZ", "AU", "US", "DE", None], dtype=object)
    for commit in range(6):
        n = 400
        picked = countries[rng.integers(0, 4 if commit % 2 else 5, n)]
        writer.write(pa.table({"id": pa.array(np.arange(commit * n, (commit + 1) * n, dtype=np.int64)),
                               "country": pa.array(list(picked), pa.string()),
                               "amount": pa.array(rng.integers(0, 50, n).astype(np.int32))}))
    return root


WHERES = ["country = 'NZ'", "country IN ('NZ', 'AU', 'XX')", "country <> 'NZ'", "country IS NULL",
          "country IS NOT NULL", "country NOT IN ('NZ', 'US')", "country = 'NZ' OR amount = 3",
          "country = 'NZ' AND amount = 3", "country = 'NA'", "id = 5 AND country = 'NZ'",
          "country = 'NZ' OR country = 'AU'"]


@pytest.mark.parametrize("where", WHERES)
def test_explain_on_the_bytes_decides_as_the_readers(table_dir: Path, where: str, monkeypatch):
    """The whole explanation (decisions, raw results, bytes and requests per file, funnel) is the
    same with the index stage on the bytes as through a reader per file."""
    fast, slow, calls = explain_both(lambda: open_warehouse(str(table_dir)).table("db.t"), where, monkeypatch)
    assert fast == slow
    assert any(f["raw_index_result"] is not None for f in fast["files"])
    # each column in one leaf is answered on the bytes (bitmap by its lookup, the bloom filter by its
    # reader opened on the bytes); a column in two leaves goes to the readers of the container
    if where.count("country") == 1:
        assert calls and all(calls), where
    else:
        assert calls and not any(calls), where


def test_bitmap_answer_is_the_rows_holding_the_value(table_dir: Path):
    """Truth from the data: each consulted file's bitmap is the rows of that file holding 'NZ'."""
    import pyarrow.parquet as pq

    table = open_warehouse(str(table_dir)).table("db.t")
    ex = explain(table, "country = 'NZ'")
    checked = 0
    for f in ex.files:
        if isinstance(f.raw_index_result, BitmapResult):
            column = pq.read_table(f.path, columns=["country"]).column(0).to_pylist()
            assert sorted(f.raw_index_result.bitmap) == [i for i, v in enumerate(column) if v == "NZ"]
            checked += 1
    assert checked > 0


def test_leaf_function_without_bitmap_answer_is_left_to_the_readers():
    """A range leaf on a bitmap column (the reader answers REMAIN) and a column of two kinds are
    answered by the readers opened on the bytes; an equality on a bitmap column by its lookup; a
    column in two leaves or a kind that is not a file index makes no plan."""
    plans = index_bytes.BytesPlans()
    row_type = {"c": parse_type("STRING")}
    assert isinstance(plans.plan(Leaf("lessThan", "c", ("x",)), row_type, (("c", "bitmap"),)).root,
                      index_bytes._Readers)
    assert isinstance(plans.plan(Leaf("equal", "c", ("x",)), row_type, (("c", "bitmap"),)).root, index_bytes._Leaf)
    assert isinstance(plans.plan(Leaf("equal", "c", ("x",)), row_type,
                                 (("c", "bitmap"), ("c", "bloom-filter"))).root, index_bytes._Readers)
    assert plans.plan(Leaf("equal", "c", ("x",)), row_type, (("c", "no-such-kind"),)) is None
    twice = parse_where("c = 'x' OR c = 'y'", row_type)
    assert plans.plan(twice, row_type, (("c", "bitmap"),)) is None


def test_read_ahead_counts_and_fails_as_reading_each_file(table_dir: Path, tmp_path: Path, monkeypatch):
    """``.index`` files read ahead side by side: each file's bytes, requests and problems are those
    of reading it when it is decided (one of them missing, one not a container)."""
    import shutil

    from indexcore.scan import file_index

    copy = tmp_path / "wh"
    shutil.copytree(table_dir, copy)
    indexes = sorted(copy.rglob("*.index"))
    assert len(indexes) >= 2 * file_index.READ_AHEAD_CHUNK
    indexes[0].unlink()
    indexes[1].write_bytes(b"not a file index container at all" * 3)
    reads = []
    read_ahead = file_index.FileIndexStage.read_ahead

    def counted(self, batch):
        read_ahead(self, batch)
        reads.append(len(self._ahead))

    monkeypatch.setattr(file_index.FileIndexStage, "read_ahead", counted)
    ahead = explain(open_warehouse(str(copy)).table("db.t"), "country = 'NZ'").to_json()
    assert sum(reads) >= 2 * file_index.READ_AHEAD_CHUNK
    monkeypatch.setattr(file_index.FileIndexStage, "read_ahead", lambda self, batch: None)
    one_by_one = explain(open_warehouse(str(copy)).table("db.t"), "country = 'NZ'").to_json()
    assert ahead == one_by_one
    assert len(ahead["problems"]) == 2
    assert {f["requests"] for f in ahead["files"] if f["raw_index_result"] is not None and not f["problems"]} == {1}


def test_one_writers_heads_and_blocks_are_parsed_once(monkeypatch):
    """Blobs of one layout (same keys, other rows and row counts, as one writer's files are): one
    lookup parses the V2 head and walks the index block once, and answers each blob with the
    rows and bytes of a reader made for it."""
    from indexcore.formats.bitmap import lookup as lookup_module

    calls = {"head": 0, "walk": 0}
    parse_head, walk_strings = lookup_module.parse_head, lookup_module.walk_strings

    def counted_head(*args):
        calls["head"] += 1
        return parse_head(*args)

    def counted_walk(*args):
        calls["walk"] += 1
        return walk_strings(*args)

    monkeypatch.setattr(lookup_module, "parse_head", counted_head)
    monkeypatch.setattr(lookup_module, "walk_strings", counted_walk)
    dtype = parse_type("STRING")
    codec = KeyCodec(dtype)
    rng = random.Random(7)
    # two writers' layouts in turn (another first key, another key count), as files come in a plan
    layouts = [["BR", "DE", "FR", "GB", "IN", "JP", "NZ", "US", "ZA"], ["AU", "BR", "NZ", "USA"]]
    shared = BitmapLookup(codec, ["NZ"])
    for n in (9, 40, 41, 300, 1000, 9):
        for keys in layouts:
            values = keys + [rng.choice(keys) for _ in range(n - len(keys))]
            rng.shuffle(values)
            blob = _blob(dtype, values, 2)
            row_count, rows, used = shared.rows(blob, "blob")
            assert row_count == n
            assert (sorted(rows), used) == _reader_answer(dtype, blob, ["NZ"])
            assert sorted(rows) == [i for i, v in enumerate(values) if v == "NZ"]
    assert calls == {"head": 2, "walk": 2}


@pytest.mark.parametrize("values", [["a", "bb", None, "a", "ccc", "bb", "a", "d"] * 5 + ["single"],
                                    ["a", "bb", "a", "ccc", "bb", "a", "d"] * 5 + [None, "single"]])
@pytest.mark.parametrize("block", ["16kb", "32b"])
def test_a_lookup_that_remembers_a_layout_answers_damaged_blobs_as_the_reader(block: str, values: list):
    """Each damaged blob after the intact one through one lookup (the intact blob's head and walks
    remembered): None where a fresh lookup answers None, else exactly its and the reader's rows and
    bytes, and the intact blob still answers
    its own rows after each (a damaged blob never changes what is remembered into a wrong answer)."""
    dtype = parse_type("STRING")
    blob = _blob(dtype, values, 2, block)
    codec = KeyCodec(dtype)
    probes = (["a"], ["single"], [None], ["zzz"], ["bb", "d"])
    # every row count from -1 on (fewer rows than bitmaps, than the single null row's position)
    recounted = [blob[:1] + struct.pack(">i", n) + blob[5:] for n in range(-1, len(values) + 2)]
    lookups = [BitmapLookup(codec, probe) for probe in probes]
    intact = [(sorted(got[1]), got[2]) for got in (lk.rows(blob, "intact") for lk in lookups)]
    assert intact == [_reader_answer(dtype, blob, probe) for probe in probes]
    answered = 0
    for at in range(len(blob)):
        for flip in (0x01, 0x80, 0xFF):
            damaged = bytearray(blob)
            damaged[at] ^= flip
            for cut in (bytes(damaged), blob[:at], *(recounted if at == 0 and flip == 1 else ())):
                for lk, probe, want_intact in zip(lookups, probes, intact, strict=True):
                    got = lk.rows(cut, "damaged")
                    fresh = BitmapLookup(codec, probe).rows(cut, "damaged")  # nothing remembered
                    assert (got is None) == (fresh is None), (at, flip, probe)
                    if got is not None:
                        assert (got[0], sorted(got[1]), got[2]) == (fresh[0], sorted(fresh[1]), fresh[2])
                        try:
                            want = _reader_answer(dtype, cut, probe)
                        except (IndexCoreError, ValueError, OverflowError, MemoryError):
                            want = None
                        assert want is not None, (at, flip, probe)
                        assert (sorted(got[1]), got[2]) == want, (at, flip, probe)
                        answered += 1
                    again = lk.rows(blob, "intact")
                    assert (sorted(again[1]), again[2]) == want_intact, (at, flip, probe)
    assert answered > 0
