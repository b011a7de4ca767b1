"""Deletion-vector index files against the files Paimon wrote (golden/dv, deletion_vectors/)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from indexcore.errors import CorruptFileError, IndexCoreError, UnsupportedError
from indexcore.formats.deletion_vector import (
    MAX_POSITION_32,
    DeletionVectorMeta,
    read_deletion_vector,
    read_deletion_vectors,
    scan_deletion_vector_file,
    serialize_deletion_vector,
    write_deletion_vector_file,
)
from indexcore.io import BytesSource, open_file


def positions_sha256(positions) -> str:
    return hashlib.sha256(np.asarray(positions, dtype="<u8").tobytes()).hexdigest()


def golden_dv_files(golden: Path) -> list[tuple[Path, dict]]:
    manifest = json.loads((golden / "dv_manifest.json").read_text())
    files = [(golden / e["file"], json.loads((golden / e["json"]).read_text())) for e in manifest["dv_files"]]
    assert files, "dv_manifest.json lists no DV file"
    return files


def check_positions(positions: list[int], expected: dict) -> None:
    assert len(positions) == expected["count"] == expected["cardinality"]
    assert positions_sha256(positions) == expected["positions_sha256"]
    if "positions" in expected:
        assert positions == expected["positions"]
    else:
        assert positions[:100] == expected["first_100"]
        assert positions[-100:] == expected["last_100"]


# ------------------------------------------------------------------------------ golden/dv


def test_golden_scan_agrees_with_every_entry(golden):
    for path, meta in golden_dv_files(golden):
        dv_file = scan_deletion_vector_file(open_file(str(path)))
        assert dv_file.version == meta["version_byte"]
        assert dv_file.size == meta["file_size"] == meta["index_file_meta"]["file_size"]
        assert dv_file.bitmap == ("64" if meta["bitmap64"] else "32")
        assert len(dv_file.entries) == len(meta["deletion_vectors"]) == meta["index_file_meta"]["row_count"]
        for entry, expected in zip(dv_file.entries, meta["deletion_vectors"], strict=True):
            assert entry.offset == expected["offset"]
            assert entry.length == expected["length"]
            assert entry.size == expected["length_prefix_value"]
            assert entry.size + 8 == expected["bytes_on_disk"]
            assert entry.cardinality == expected["cardinality"]
            assert (entry.dv.bitmap64, expected["dv_class"]) in (
                (False, "BitmapDeletionVector"), (True, "Bitmap64DeletionVector"))
            check_positions(entry.dv.to_list(), expected)


def test_golden_read_by_manifest_meta_one_request_each(golden):
    for path, meta in golden_dv_files(golden):
        source = open_file(str(path))
        metas = [DeletionVectorMeta(e["data_file"], e["offset"], e["length"], e["cardinality"])
                 for e in meta["deletion_vectors"]]
        dvs = read_deletion_vectors(source, metas, bitmap64=meta["bitmap64"])
        assert source.stats.requests == len(metas)
        for expected in meta["deletion_vectors"]:
            dv = dvs[expected["data_file"]]
            check_positions(dv.to_list(), expected)
            if expected["cardinality"]:
                first = (expected.get("positions") or expected["first_100"])[0]
                last = (expected.get("positions") or expected["last_100"])[-1]
                assert dv.is_deleted(first) and dv.is_deleted(last)
                assert not dv.is_deleted(last + 1)


def test_golden_writer_is_byte_identical(golden):
    for path, meta in golden_dv_files(golden):
        original = path.read_bytes()
        assert hashlib.sha256(original).hexdigest() == meta["file_sha256"]
        decoded = scan_deletion_vector_file(original)
        # rebuild from plain position lists, not from the decoded bitmaps' containers
        inputs = [(e["data_file"], np.asarray(entry.dv.to_list(), dtype=np.int64))
                  for e, entry in zip(meta["deletion_vectors"], decoded.entries, strict=True)]
        data, metas = write_deletion_vector_file(inputs, bitmap64=meta["bitmap64"])
        assert data == original
        assert [(m.data_file, m.offset, m.length, m.cardinality) for m in metas] == [
            (e["data_file"], e["offset"], e["length"], e["cardinality"]) for e in meta["deletion_vectors"]]


# ---------------------------------------------------------------------- deletion_vectors/


@pytest.fixture(scope="module")
def dv_expected(conformance) -> tuple[Path, dict]:
    folder = conformance / "deletion_vectors"
    return folder, json.loads((folder / "expected.json").read_text())


@pytest.mark.parametrize("name", ["dvindex-32", "dvindex-64"])
def test_conformance_files_agree(dv_expected, name):
    folder, expected = dv_expected
    want = expected["files"][name]
    dv_file = scan_deletion_vector_file(open_file(str(folder / name)))
    assert dv_file.version == want["version"]
    assert dv_file.bitmap == want["bitmap"]
    assert len(dv_file.entries) == len(want["entries"])
    for entry, exp in zip(dv_file.entries, want["entries"], strict=True):
        assert (entry.offset, entry.size, entry.length, entry.cardinality) == (
            exp["offset"], exp["size_field"], exp["dv_meta_length"], exp["cardinality"])
        assert entry.dv.to_list() == exp["deleted"]
        dv = read_deletion_vector(open_file(str(folder / name)), exp["offset"], exp["dv_meta_length"])
        assert dv.to_list() == exp["deleted"]
        assert dv.bitmap64 == (want["bitmap"] == "64")


@pytest.mark.parametrize("name", ["dvindex-32", "dvindex-64"])
def test_conformance_writer_is_byte_identical(dv_expected, name):
    folder, expected = dv_expected
    want = expected["files"][name]
    data, metas = write_deletion_vector_file(
        [(f"f{i}", e["deleted"]) for i, e in enumerate(want["entries"])], bitmap64=want["bitmap"] == "64")
    assert data == (folder / name).read_bytes()
    assert [(m.offset, m.length, m.cardinality) for m in metas] == [
        (e["offset"], e["dv_meta_length"], e["cardinality"]) for e in want["entries"]]


def test_manifest_length_is_checked(dv_expected):
    folder, expected = dv_expected
    for name, kind in (("dvindex-32", False), ("dvindex-64", True)):
        entry = expected["files"][name]["entries"][0]
        source = open_file(str(folder / name))
        wrong = entry["size_field"] + 8 if not kind else entry["size_field"]
        with pytest.raises(CorruptFileError, match="records length"):
            read_deletion_vector(source, entry["offset"], wrong)
        with pytest.raises(CorruptFileError, match="-bit deletion vector"):
            read_deletion_vector(source, entry["offset"], bitmap64=not kind)


def test_warehouse_dv_files_scan_cleanly(conformance):
    paths = sorted(p for p in (conformance / "warehouses").glob("*/*.db/*/index/index-*") if p.is_file())
    assert paths, "no DV index files in the conformance warehouses"
    for path in paths:
        dv_file = scan_deletion_vector_file(open_file(str(path)))
        assert dv_file.version == 1
        end = dv_file.entries[-1].offset + dv_file.entries[-1].size + 8 if dv_file.entries else 1
        assert end == path.stat().st_size
        assert all(e.cardinality > 0 for e in dv_file.entries)


# ------------------------------------------------------------------------------ corruption


def test_crc_flip_names_file_structure_and_offset(dv_expected):
    folder, expected = dv_expected
    for name in ("dvindex-32", "dvindex-64"):
        data = bytearray((folder / name).read_bytes())
        entry = expected["files"][name]["entries"][1]
        crc_at = entry["offset"] + 4 + entry["size_field"]
        data[crc_at] ^= 0x01
        source = BytesSource(bytes(data), name=name)
        with pytest.raises(CorruptFileError) as info:
            scan_deletion_vector_file(source)
        err = info.value
        assert (err.file, err.structure, err.offset) == (name, "deletion vector CRC", crc_at)
        assert name in str(err) and str(crc_at) in str(err)
        # the first entry is intact and still reads
        first = expected["files"][name]["entries"][0]
        assert read_deletion_vector(source, first["offset"]).to_list() == first["deleted"]


def test_truncation_and_bad_version(dv_expected):
    folder, _ = dv_expected
    data = (folder / "dvindex-32").read_bytes()
    for cut in range(2, len(data)):
        if cut == 33:  # a clean entry boundary is a valid, shorter file
            assert len(scan_deletion_vector_file(data[:cut]).entries) == 1
            continue
        with pytest.raises(CorruptFileError) as info:
            scan_deletion_vector_file(data[:cut])
        assert info.value.offset is not None and info.value.structure
    with pytest.raises(CorruptFileError):
        scan_deletion_vector_file(b"")
    with pytest.raises(UnsupportedError):
        scan_deletion_vector_file(b"\x02" + data[1:])
    assert scan_deletion_vector_file(b"\x01").entries == ()


def test_huge_declared_length_is_not_allocated():
    record = (2**31 - 1).to_bytes(4, "big") + b"\x5e\x43\xf2\xd0"
    with pytest.raises(CorruptFileError, match="declared length"):
        read_deletion_vector(BytesSource(b"\x01" + record), 1)
    with pytest.raises(CorruptFileError, match="declared length"):
        read_deletion_vector(b"\x01" + record, 1)


def _with_crc(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data + zlib.crc32(data).to_bytes(4, "big")


def test_bad_bitmap_behind_a_valid_crc():
    good = serialize_deletion_vector([1, 2, 3])[4:-4]
    # trailing garbage inside the declared length
    with pytest.raises(CorruptFileError, match="fills"):
        read_deletion_vector(_with_crc(good + b"\x00\x00"), 0)
    # an array container whose values are not sorted
    bad = bytearray(good)
    bad[-6:] = (3).to_bytes(2, "little") + (2).to_bytes(2, "little") + (1).to_bytes(2, "little")
    with pytest.raises(CorruptFileError, match="roaring"):
        read_deletion_vector(_with_crc(bytes(bad)), 0)
    # 64-bit keys out of order
    empty32 = BitMap().serialize()
    data64 = (b"\xd1\xd3\x39\x64" + (2).to_bytes(8, "little") + (1).to_bytes(4, "little") + empty32
              + (0).to_bytes(4, "little") + empty32)
    with pytest.raises(CorruptFileError, match="out of order"):
        read_deletion_vector(_with_crc(data64), 0)
    with pytest.raises(CorruptFileError, match="magic"):
        read_deletion_vector(_with_crc(b"\x00\x00\x00\x00" + empty32), 0)


def _mutations():
    return st.one_of(
        st.tuples(st.just("truncate"), st.integers(0, 10**6), st.just(0)),
        st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
        st.tuples(st.just("extend"), st.binary(min_size=1, max_size=40), st.just(0)),
    )


@pytest.fixture(scope="module")
def corpus(conformance) -> list[bytes]:
    files = [(conformance / "deletion_vectors" / n).read_bytes() for n in ("dvindex-32", "dvindex-64")]
    files.append(write_deletion_vector_file(
        [("a", [0, 5, 2**31, 2**32 + 1, 2**40 + 7]), ("b", range(1000, 70000))], bitmap64=True)[0])
    files.append(write_deletion_vector_file([("a", range(0, 200000, 3)), ("b", [MAX_POSITION_32])])[0])
    return files


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 3), mutations=st.lists(_mutations(), min_size=1, max_size=3),
       offset=st.integers(0, 200))
def test_mutated_bytes_raise_only_indexcore_errors(corpus, which, mutations, offset):
    data = bytearray(corpus[which])
    for kind, arg, xor in mutations:
        if kind == "truncate":
            del data[arg % (len(data) + 1):]
        elif kind == "flip" and data:
            data[arg % len(data)] ^= xor
        elif kind == "extend":
            data += arg
    blob = bytes(data)
    try:
        dv_file = scan_deletion_vector_file(BytesSource(blob, name="mutated"))
    except IndexCoreError:
        pass
    else:
        # every byte is covered by a CRC, so a file that still scans must be a canonical Paimon file
        rebuilt, _ = write_deletion_vector_file([(str(e.offset), e.dv.positions) for e in dv_file.entries],
                                                bitmap64=dv_file.bitmap == "64")
        assert rebuilt == blob
    for source in (blob, BytesSource(blob)):
        with contextlib.suppress(IndexCoreError):
            read_deletion_vector(source, offset)
        with contextlib.suppress(IndexCoreError):
            read_deletion_vector(source, offset, length=offset * 7 % 300)


# ------------------------------------------------------------------------------ writer


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3 * 2**32 + 2**20), max_size=300), st.booleans())
def test_64bit_round_trip(positions, as_bitmap):
    source = BitMap64(positions) if as_bitmap else positions
    record = serialize_deletion_vector(source, bitmap64=True)
    dv = read_deletion_vector(record, 0, length=len(record))
    assert dv.bitmap64
    assert dv.to_list() == sorted(set(positions))
    count = int.from_bytes(record[8:16], "little")
    assert count == (max(positions) >> 32) + 1 if positions else count == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, MAX_POSITION_32), max_size=300), st.lists(st.integers(0, 2**20), max_size=3))
def test_32bit_round_trip_matches_pyroaring_portable(positions, runs):
    everything = set(positions)
    for start in runs:
        everything.update(range(start, start + 5000))
    record = serialize_deletion_vector(everything)
    expected = BitMap(everything)
    expected.run_optimize()
    assert record[8:-4] == expected.serialize()
    assert read_deletion_vector(record, 0, length=len(record) - 8).positions == expected


def test_writer_rejects_positions_out_of_range():
    with pytest.raises(ValueError):
        serialize_deletion_vector([MAX_POSITION_32 + 1])
    with pytest.raises(ValueError):
        serialize_deletion_vector([-1], bitmap64=True)


def test_summary_and_is_deleted():
    record = serialize_deletion_vector([3, 7, 2**32 + 9], bitmap64=True)
    dv = read_deletion_vector(record, 0)
    assert dv.summary() == {"bitmap": "64", "cardinality": 3, "min": 3, "max": 2**32 + 9,
                            "serialized_bytes": len(record) - 8}
    assert dv.is_deleted(2**32 + 9) and not dv.is_deleted(4) and not dv.is_deleted(-1)
    dv32 = read_deletion_vector(serialize_deletion_vector([5]), 0)
    assert dv32.is_deleted(5) and not dv32.is_deleted(2**40)
