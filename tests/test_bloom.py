"""Bloom-filter file index against Paimon's golden vectors: reader results and writer bytes."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats.bloom import (
    BloomFilterReader,
    BloomFilterWriter,
    blob_contains_hash,
    estimate_items,
    hash_function,
    items_for_fpp,
    might_contain,
    optimal_bits,
)
from indexcore.formats.registry import new_writer, open_reader
from indexcore.io import BytesSource
from indexcore.types import from_json, parse_type

SINGLE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "golden" / "single"
BLOOM_IDS = sorted(p.stem for p in SINGLE.glob("bloom_*.json")) if SINGLE.is_dir() else []


def _load(golden: Path, vid: str) -> dict:
    return json.loads((golden / "single" / f"{vid}.json").read_text(encoding="utf-8"))


def _values(vec: dict, dtype) -> list:
    raws = vec.get("values_raw") or [None] * len(vec["values"])
    return [from_json(dtype, v, r) for v, r in zip(vec["values"], raws, strict=True)]


def _leaves(vec: dict, dtype):
    for p in vec["predicates"]:
        pred = p["predicate"]
        if pred["op"] in ("and", "or"):
            continue
        raws = pred.get("literals_raw") or [None] * len(pred["literals"])
        lits = tuple(from_json(dtype, v, r) for v, r in zip(pred["literals"], raws, strict=True))
        expected = "SKIP" if p["result"] == [] else p["result"]
        yield p["id"], Leaf(pred["op"], "c", lits), expected


@pytest.mark.parametrize("vid", BLOOM_IDS)
def test_reader_matches_paimon(golden: Path, vid: str) -> None:
    vec = _load(golden, vid)
    assert vec["index_type"] == "bloom-filter"
    dtype = parse_type(vec["column"]["type"])
    data = (golden / "single" / vec["bin_file"]).read_bytes()
    reader = open_reader("bloom-filter", dtype, BytesSource(data, name=vid), vec["options"])
    mismatches = [(pid, reader.visit(leaf).to_json(), want) for pid, leaf, want in _leaves(vec, dtype)
                  if reader.visit(leaf).to_json() != want]
    assert not mismatches


@pytest.mark.parametrize("vid", BLOOM_IDS)
def test_might_contain_on_the_bytes_answers_like_paimon(golden: Path, vid: str) -> None:
    """``might_contain(blob, value, dtype)`` (no reader) gives Paimon's answer for every ``=`` of
    the golden vector, and no value the column holds is answered absent."""
    vec = _load(golden, vid)
    dtype = parse_type(vec["column"]["type"])
    data = (golden / "single" / vec["bin_file"]).read_bytes()
    if len(data) <= 4:  # an empty writer's blob: nothing to test on
        return
    for pid, leaf, want in _leaves(vec, dtype):
        if leaf.function.name == "equal" and leaf.literals[0] is not None:
            assert might_contain(data, leaf.literals[0], dtype, vid) == (want == "REMAIN"), pid
    assert all(might_contain(data, v, dtype) for v in _values(vec, dtype) if v is not None)


def test_blob_contains_hash_agrees_with_the_probing_reader() -> None:
    """On a filter too large to read whole, the reader probes byte by byte through its source
    (``probe_positions``); the test on the bytes must answer the same for any hash."""
    dtype = parse_type("BIGINT")
    writer = BloomFilterWriter(dtype, {"items": "20000", "fpp": "0.2"})
    for v in range(0, 60_000, 9):
        writer.write(v)
    data = writer.serialized_bytes()
    reader = BloomFilterReader(dtype, BytesSource(data))
    assert reader.num_bits > 8 * 4096  # the probing path
    rng = random.Random(5)
    hashes = [rng.randrange(-2**63, 2**63) for _ in range(3000)] + [hash_function(dtype)(v) for v in range(0, 900, 3)]
    answers = [blob_contains_hash(data, h) for h in hashes]
    assert answers == [reader.test_hash(h) for h in hashes]
    assert True in answers and False in answers
    for bad in (b"", b"\0\0\0\1", b"\0\0\0\0\xff"):
        with pytest.raises(CorruptFileError, match="hash functions") as err:
            blob_contains_hash(bad, 1, "bad.bin")
        assert err.value.file == "bad.bin" and err.value.offset == 0


@pytest.mark.parametrize("vid", BLOOM_IDS)
def test_writer_is_byte_identical(golden: Path, vid: str) -> None:
    vec = _load(golden, vid)
    dtype = parse_type(vec["column"]["type"])
    writer = new_writer("bloom-filter", dtype, vec["options"])
    for value in _values(vec, dtype):
        writer.write(value)
    out = writer.serialized_bytes()
    assert writer.empty == vec["writer_empty"]
    assert len(out) == vec["bin_size"]
    assert out == (golden / "single" / vec["bin_file"]).read_bytes()
    # the reader over our own bytes gives Paimon's answers too
    reader = BloomFilterReader(dtype, BytesSource(out), vec["options"])
    for _, leaf, want in _leaves(vec, dtype):
        assert reader.visit(leaf).to_json() == want


def test_golden_bloom_vectors_present(golden: Path) -> None:
    manifest = json.loads((golden / "single_manifest.json").read_text(encoding="utf-8"))
    listed = sorted(v["id"] for v in manifest["vectors"] if v["index_type"] == "bloom-filter")
    assert listed == BLOOM_IDS
    print(f"bloom-filter golden vectors: {len(BLOOM_IDS)}")


def test_no_false_negatives_and_summary(golden: Path) -> None:
    vec = _load(golden, "bloom_i100_f001__string__highcard")
    dtype = parse_type(vec["column"]["type"])
    values = [v for v in _values(vec, dtype) if v is not None]
    reader = BloomFilterReader(dtype, BytesSource((golden / "single" / vec["bin_file"]).read_bytes()),
                               vec["options"])
    assert all(reader.might_contain(v) for v in values)
    s = reader.summary()
    assert s["num_bits"] == optimal_bits(100, 0.01) == (vec["bin_size"] - 4) * 8
    assert s["configured_items"] == 100 and s["configured_fpp"] == 0.01
    assert 0 < s["bits_set"] <= s["num_bits"]
    # 2000 rows in a filter sized for 100 items: almost saturated, so the estimate is far above 100
    assert s["fill_ratio"] > 0.9 and s["estimated_fpp"] > 0.5
    assert s["estimated_items"] > 500
    need = items_for_fpp(len(set(values)), 0.01)
    assert need["items"] == len(set(values)) and need["num_bits"] > s["num_bits"]


def test_estimate_is_close_for_a_well_sized_filter() -> None:
    dtype = parse_type("BIGINT")
    writer = BloomFilterWriter(dtype, {"items": "5000", "fpp": "0.05"})
    for i in range(3000):
        writer.write(i * 7919)
    s = BloomFilterReader(dtype, BytesSource(writer.serialized_bytes())).summary()
    assert abs(s["estimated_items"] - 3000) < 150
    assert s["estimated_fpp"] < 0.05
    assert "configured_items" not in s
    assert math.isinf(estimate_items(8, 8, 1))


def test_large_filter_reads_only_probed_bytes() -> None:
    """A default-sized filter (items=1000000, fpp=0.1: about 600 KB) answers from a few bytes."""
    dtype = parse_type("INT")
    writer = BloomFilterWriter(dtype)
    for v in range(0, 600, 7):
        writer.write(v)
    data = writer.serialized_bytes()
    assert len(data) == optimal_bits(1_000_000, 0.1) // 8 + 4 > 500_000
    source = BytesSource(data)
    reader = BloomFilterReader(dtype, source)
    assert reader.visit(Leaf("equal", "c", (77,))).to_json() == "REMAIN"
    nbytes, requests = source.stats.snapshot()
    assert nbytes <= 4 + reader.num_hash_functions
    assert requests <= 1 + reader.num_hash_functions
    assert reader.visit(Leaf("in", "c", (1, 2, 3))).to_json() == "SKIP"


def test_nan_payloads_hash_like_the_canonical_nan() -> None:
    dtype = parse_type("DOUBLE")
    writer = BloomFilterWriter(dtype, {"items": "10", "fpp": "0.01"})
    writer.write(float("nan"))
    reader = BloomFilterReader(dtype, BytesSource(writer.serialized_bytes()))
    other_nan = from_json(dtype, None, "7ff8000000000001")
    assert math.isnan(other_nan)
    assert reader.visit_equal(other_nan).to_json() == "REMAIN"
    assert reader.visit_equal(None).to_json() == "REMAIN"


def test_unsupported_and_corrupt() -> None:
    with pytest.raises(UnsupportedError):
        BloomFilterWriter(parse_type("BOOLEAN"))
    with pytest.raises(UnsupportedError):
        BloomFilterReader(parse_type("DECIMAL(10, 2)"), BytesSource(b"\0\0\0\1\0"))
    dtype = parse_type("INT")
    for bad in (b"", b"\0\0\0\1", b"\0\0\0\0\xff", b"\xff\xff\xff\xff\xff"):
        with pytest.raises(CorruptFileError) as err:
            BloomFilterReader(dtype, BytesSource(bad, name="bad.bin")).visit_equal(1)
        assert err.value.offset == 0 and err.value.file == "bad.bin"
