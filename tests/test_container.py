"""The FileIndexFormat container against files written by Paimon."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats.bloom import BloomFilterReader, BloomFilterWriter
from indexcore.formats.container import (
    EmptyFileIndexReader,
    decode_modified_utf8,
    encode_modified_utf8,
    read_container,
    write_container,
)
from indexcore.io import BytesSource, open_file
from indexcore.types import from_json, parse_type


@pytest.fixture(scope="module")
def cdir(golden: Path) -> Path:
    return golden / "container"


def _meta(cdir: Path, cid: str) -> dict:
    return json.loads((cdir / f"{cid}.json").read_text(encoding="utf-8"))


def _components(cdir: Path, meta: dict) -> list[tuple[str, list[tuple[str, bytes | None]]]]:
    return [(col["name"], [(ix["index_type"], (cdir / ix["component_file"]).read_bytes()
                            if ix["component_file"] else None) for ix in col["indexes"]])
            for col in meta["columns"]]


@pytest.mark.parametrize("cid", ["container_a", "container_empty"])
def test_head_matches_paimon(cdir: Path, cid: str) -> None:
    meta = _meta(cdir, cid)
    source = open_file(str(cdir / meta["file"]))
    container = read_container(source)
    head = container.head
    assert (head.magic, head.version) == (meta["magic"], meta["version"])
    assert head.head_length == meta["head_length"]
    assert head.redundant_length == meta["redundant_length"]
    assert head.file_size == meta["file_size"]
    assert head.columns() == [c["name"] for c in meta["columns"]]
    for col in meta["columns"]:
        got = [(e.index_type, e.offset, e.length, e.empty) for e in head.entries_for(col["name"])]
        assert got == [(ix["index_type"], ix["offset"], ix["length"], ix["empty"]) for ix in col["indexes"]]
    # Paimon's indexMetas() reports the same entries (in HashMap order)
    java = {(m["column"], m["index_type"], m["size_in_bytes"], m["empty"]) for m in meta["java_index_metas"]}
    assert java == {(e.column, e.index_type, e.length, e.empty) for e in head.entries}
    # only the head was read: the 16-byte prefix, then the rest of the head
    assert source.stats.snapshot() == (meta["head_length"], 2)
    summary = container.summary()
    assert summary["head_length"] == meta["head_length"]
    assert [c["name"] for c in summary["columns"]] == head.columns()


def test_blobs_are_lazy_slices_equal_to_components(cdir: Path) -> None:
    meta = _meta(cdir, "container_a")
    source = open_file(str(cdir / meta["file"]))
    container = read_container(source)
    after_head = source.stats.snapshot()
    blobs = {(e.column, e.index_type): container.blob(e) for e in container.head.entries}
    assert source.stats.snapshot() == after_head
    n = 0
    for col in meta["columns"]:
        for ix in col["indexes"]:
            blob = blobs[(col["name"], ix["index_type"])]
            if ix["empty"]:
                assert blob.size == 0
                continue
            assert blob.read_all() == (cdir / ix["component_file"]).read_bytes()
            n += 1
    assert n == sum(1 for e in container.head.entries if not e.empty)


@pytest.mark.parametrize("cid", ["container_a", "container_empty"])
def test_rewrite_is_byte_identical(cdir: Path, cid: str) -> None:
    meta = _meta(cdir, cid)
    out = write_container(_components(cdir, meta))
    original = (cdir / meta["file"]).read_bytes()
    print(f"{cid}: rewritten {len(out)} bytes, byte-identical={out == original}")
    assert out == original


def test_redundant_bytes_round_trip(cdir: Path) -> None:
    meta = _meta(cdir, "container_a")
    out = write_container(_components(cdir, meta), redundant=b"future")
    container = read_container(BytesSource(out))
    assert container.head.redundant_length == 6
    assert container.head.head_length == meta["head_length"] + 6
    first = container.head.entries[0]
    assert container.blob(first).read_all() == (cdir / meta["columns"][0]["indexes"][0]["component_file"]).read_bytes()


def test_empty_index_entry_reader_matches_paimon(cdir: Path) -> None:
    meta = _meta(cdir, "container_a")
    container = read_container(open_file(str(cdir / meta["file"])))
    types = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    (entry,) = container.head.entries_for("empty_idx")
    assert entry.empty
    reader = container.reader(entry, types["empty_idx"])
    assert isinstance(reader, EmptyFileIndexReader)
    checked = 0
    for p in meta["predicates"]:
        pred = p["predicate"]
        if pred.get("field") != "empty_idx":
            continue
        raws = pred.get("literals_raw") or [None] * len(pred["literals"])
        lits = tuple(from_json(types["empty_idx"], v, r) for v, r in zip(pred["literals"], raws, strict=True))
        assert reader.visit(Leaf(pred["op"], "empty_idx", lits)).to_json() == p["result"]
        checked += 1
    assert checked == 3
    assert reader.visit(Leaf("in", "empty_idx", (1, 2))).to_json() == "SKIP"
    assert reader.visit(Leaf("notIn", "empty_idx", (1,))).to_json() == "REMAIN"
    assert reader.visit(Leaf("isNotNull", "empty_idx")).to_json() == "SKIP"
    assert reader.visit(Leaf("between", "empty_idx", (1, 2))).to_json() == "REMAIN"


def test_bloom_components_rebuild_and_answer(cdir: Path) -> None:
    """Each bloom entry of container_a is rebuilt from the column values with its options."""
    meta = _meta(cdir, "container_a")
    source = open_file(str(cdir / meta["file"]))
    container = read_container(source)
    types = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    n = 0
    for col in meta["columns"]:
        dtype = types[col["name"]]
        for ix in col["indexes"]:
            if ix["index_type"] != "bloom-filter":
                continue
            raws = meta.get("values_raw", {}).get(col["name"]) or [None] * len(meta["values"][col["name"]])
            values = [from_json(dtype, v, r) for v, r in zip(meta["values"][col["name"]], raws, strict=True)]
            writer = BloomFilterWriter(dtype, ix["options"])
            for v in values:
                writer.write(v)
            assert writer.serialized_bytes() == (cdir / ix["component_file"]).read_bytes()
            entry = next(e for e in container.head.entries_for(col["name"]) if e.index_type == "bloom-filter")
            reader = container.reader(entry, dtype, ix["options"])
            assert isinstance(reader, BloomFilterReader)
            assert all(reader.visit_equal(v).remain() for v in values if v is not None)
            n += 1
    assert n == 3


def _corrupt(data: bytes, name: str = "bad.index") -> CorruptFileError:
    with pytest.raises(CorruptFileError) as err:
        read_container(BytesSource(data, name=name))
    assert err.value.file == name
    assert err.value.structure
    assert err.value.offset is not None
    return err.value


def test_truncations_raise_with_offset(cdir: Path) -> None:
    data = (cdir / "container_a.index").read_bytes()
    head_length = struct.unpack(">i", data[12:16])[0]
    for cut in (0, 7, 16, 23, 100, head_length - 1):
        _corrupt(data[:cut])
    # cut inside the bodies: the head is whole but the last body runs past the end of the file
    err = _corrupt(data[:-1])
    assert 16 < err.offset < head_length


def test_bad_headers(cdir: Path) -> None:
    data = bytearray((cdir / "container_a.index").read_bytes())
    err = _corrupt(b"\0" * 8 + bytes(data[8:]))
    assert err.offset == 0 and "magic" in err.message
    bad_version = bytes(data[:8]) + struct.pack(">i", 2) + bytes(data[12:])
    with pytest.raises(UnsupportedError) as uerr:
        read_container(BytesSource(bad_version))
    assert uerr.value.offset == 8
    err = _corrupt(bytes(data[:12]) + struct.pack(">i", len(data) + 1) + bytes(data[16:]))
    assert err.offset == 12
    err = _corrupt(bytes(data[:16]) + struct.pack(">i", 1 << 30) + bytes(data[20:]))
    assert err.offset == 16
    # an entry whose start points into the head
    first_start = 16 + 4 + 2 + 2 + 4 + 2 + len("bloom-filter")
    assert struct.unpack(">i", data[first_start:first_start + 4])[0] == head_length_of(data)
    patched = bytes(data[:first_start]) + struct.pack(">i", 20) + bytes(data[first_start + 4:])
    assert _corrupt(patched).offset == first_start


def head_length_of(data: bytes) -> int:
    return struct.unpack(">i", data[12:16])[0]


def test_modified_utf8() -> None:
    assert encode_modified_utf8("a") == b"\x00\x01a"
    assert encode_modified_utf8("\0") == b"\x00\x02\xc0\x80"
    assert encode_modified_utf8("é") == b"\x00\x02\xc3\xa9"
    assert encode_modified_utf8("\U0001F600") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"
    for text in ("plain", "\0nul", "ünï", "列名", "emoji \U0001F600"):
        assert decode_modified_utf8(encode_modified_utf8(text)[2:]) == text
    container = read_container(BytesSource(write_container([("列\0名", [("bloom-filter", b"\0\0\0\1\xff")])])))
    assert container.head.columns() == ["列\0名"]


@pytest.mark.parametrize("cid", ["container_a", "container_empty"])
def test_quick_head_parser_agrees_with_the_careful_one_on_any_bytes(cdir: Path, cid: str) -> None:
    """The shaped and quick parsers (every census) and the careful one (named faults) read the
    same heads: on Paimon's head and on thousands of mutations of it, the fast ones either
    decline (None) or return exactly what the careful one returns."""
    import random

    from indexcore.errors import IndexCoreError
    from indexcore.formats.container import _parse_careful, _parse_quick, _parse_shaped, parse_head

    data = (cdir / f"{cid}.index").read_bytes()
    length = struct.unpack_from(">i", data, 12)[0]
    head, size = data[:length], len(data)
    assert _parse_quick(head, size) == _parse_careful(head, size, cid) == parse_head(head, size, cid)
    # parse_head learned the layout of a head with entries: the shaped parser now reads it, and
    # a mutation of a span or a name either matches the careful parser or is declined
    learned = bool(_parse_careful(head, size, cid).entries)
    assert _parse_shaped(head, size) == (_parse_careful(head, size, cid) if learned else None)
    rng = random.Random(7)
    agreed = declined = reshaped = 0
    for _ in range(3000):
        mutated = bytearray(head)
        for _ in range(rng.randint(1, 3)):
            mutated[rng.randrange(16, len(mutated))] = rng.randrange(256)
        mutated, file_size = bytes(mutated), size + rng.choice((0, 0, -40, 1000))
        quick = _parse_quick(mutated, file_size)
        shaped = _parse_shaped(mutated, file_size)
        try:
            careful = _parse_careful(mutated, file_size, cid)
        except IndexCoreError:
            careful = None
        if shaped is not None:
            assert shaped == careful and hash(shaped) == hash(careful) and repr(shaped) == repr(careful)
            reshaped += 1
        if quick is None:
            declined += 1
        else:
            assert quick == careful
            agreed += 1
    assert agreed and declined and (reshaped or not learned)
