"""Our C decoder of Avro records to Arrow columns (indexcore.warehouse.avro_columns, issue 30 item 4).

Truth: fastavro's records of the same bytes (a foreign decoder), for every Avro manifest-like
file of the conformance warehouses and for hand-written schemas of every type the decoder does;
damaged bytes are built by hand (a container written here, its block data cut or changed) and
must give our CorruptFileError naming the file, the block's offset and the byte, never a crash
or a hang. The fallbacks (polars, fastavro) are forced by the ``decoder`` parameter.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import random
import zlib

import fastavro
import pytest
from test_plan_columns import _naive

from indexcore.errors import CorruptFileError
from indexcore.warehouse import avro_columns
from indexcore.warehouse.manifest import MANIFEST_ENTRY, read_records
from indexcore.warehouse.manifest_columns import (
    _zigzag,
    default_decoder,
    read_manifest_groups,
    read_manifest_table,
)

pytestmark = pytest.mark.skipif(not avro_columns.AVAILABLE, reason="the C extension is not built (no compiler)")


def _avro_manifests(conformance):
    files = [p for p in sorted((conformance / "warehouses").glob("**/manifest/*"))
             if p.is_file() and p.read_bytes()[:4] == b"Obj\x01"]
    assert len(files) > 300
    return files


def test_every_conformance_avro_manifest_decodes_natively_as_fastavro_does(conformance):
    native = rows_union = 0
    for path in _avro_manifests(conformance):
        data = path.read_bytes()
        schema = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])
        assert avro_columns.compile_program(schema) is not None, path  # the C decoder does every one
        native += 1
        rows_union += isinstance(schema, list)  # Paimon 0.9 wrote rows as ["null", record]
        got = read_manifest_table(data, "avro", str(path), decoder="native")
        assert got.to_pylist() == _naive(read_records(data, "avro", str(path))), path
        assert got.schema == read_manifest_table(data, "avro", str(path), decoder="polars").schema, path
    assert native > 300 and rows_union > 0


@pytest.mark.parametrize("decoder", ["polars", "fastavro"])
def test_the_fallback_decoders_give_the_same_table(conformance, decoder):
    for path in _avro_manifests(conformance)[::5]:
        data = path.read_bytes()
        assert read_manifest_table(data, "avro", str(path), decoder=decoder) == \
            read_manifest_table(data, "avro", str(path), decoder="native"), path


def test_only_the_fields_asked_for(conformance):
    path = next(p for p in _avro_manifests(conformance) if p.name.startswith("manifest-") and "list" not in p.name
                and isinstance(fastavro.reader(io.BytesIO(p.read_bytes())).writer_schema, dict))
    data = path.read_bytes()
    full = read_manifest_table(data, "avro", "m", decoder="native")
    some = read_manifest_table(data, "avro", "m", decoder="native", fields=frozenset(["_KIND", "_FILE"]))
    assert some.column_names == ["_KIND", "_FILE"]
    assert some == full.select(["_KIND", "_FILE"])
    for decoder in ("polars", "fastavro"):
        assert read_manifest_table(data, "avro", "m", decoder=decoder, fields=frozenset(["_KIND", "_FILE"])) == some


RICH = {"type": "record", "name": "r", "namespace": "x.y", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": ["null", "string"]},
    {"name": "by", "type": ["bytes", "null"]},
    {"name": "fx", "type": {"type": "fixed", "name": "Sixteen", "size": 3}},
    {"name": "fx2", "type": ["null", "Sixteen"]},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
    {"name": "n", "type": "null"},
    {"name": "inner", "type": ["null", {"type": "record", "name": "In", "fields": [
        {"name": "a", "type": {"type": "array", "items": ["null", "long"]}},
        {"name": "bits", "type": {"type": "array", "items": "boolean"}},
        {"name": "deep", "type": ["null", {"type": "array", "items": {"type": "record", "name": "D", "fields": [
            {"name": "k", "type": "string"}, {"name": "v", "type": ["null", "double"]}]}}]}]}]},
    {"name": "again", "type": ["null", "x.y.In"]},
]}


def _rich_rows(n: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        inner = None if i % 4 == 3 else {
            "a": [rnd.choice([None, rnd.randrange(-2**63, 2**63)]) for _ in range(rnd.randrange(4))],
            "bits": [rnd.random() < 0.5 for _ in range(rnd.randrange(12))],
            "deep": None if i % 3 == 0 else [{"k": f"k{j}é", "v": rnd.choice([None, rnd.random()])}
                                             for j in range(rnd.randrange(3))]}
        rows.append({"b": i % 2 == 0, "i": rnd.randrange(-2**31, 2**31), "l": rnd.randrange(-2**63, 2**63),
                     "f": 1.5 * i, "d": rnd.random(), "s": None if i % 5 == 0 else "✓" * (i % 7),
                     "by": None if i % 6 == 0 else bytes([i % 256]) * (i % 9), "fx": bytes([i % 256, 1, 2]),
                     "fx2": None if i % 2 else b"abc", "day": datetime.date(2020, 1, 1) + datetime.timedelta(i),
                     "ts": None if i % 3 else datetime.datetime(2024, 5, 1, 1, 2, 3, i, tzinfo=datetime.UTC),
                     "n": None, "inner": inner, "again": inner if i % 2 else None})
    return rows


def _write(schema, rows, codec="null", block=100) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, rows, codec=codec, sync_interval=block)
    return out.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate"])  # zstd: the conformance manifests
def test_every_type_the_decoder_does_equals_fastavro(codec):
    rows = _rich_rows(300)
    data = _write(RICH, rows, codec)
    assert len(list(fastavro.block_reader(io.BytesIO(data)))) > 1  # several blocks
    got = read_manifest_table(data, "avro", "rich", decoder="native")
    assert got.to_pylist() == _naive(list(fastavro.reader(io.BytesIO(data))))
    assert str(got.schema.field("day").type) == "date32[day]" and str(got.schema.field("ts").type) == "timestamp[us]"


@pytest.mark.parametrize("field", [
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "m", "type": {"type": "map", "values": "long"}},
    {"name": "u", "type": ["null", "long", "string"]},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
])
def test_a_schema_the_decoder_does_not_do_falls_back_to_the_same_values(field):
    schema = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}, field]}
    value = {"e": "B", "m": {"a": 1}, "u": "s", "dec": __import__("decimal").Decimal("1.25")}[field["name"]]
    data = _write(schema, [{"x": 1, field["name"]: value}, {"x": 2, field["name"]: value}])
    assert avro_columns.compile_program(schema) is None
    got = read_manifest_table(data, "avro", "odd", decoder="native")
    assert got == read_manifest_table(data, "avro", "odd", decoder="fastavro")
    assert got.column("x").to_pylist() == [1, 2]


def test_a_recursive_schema_falls_back():
    schema = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "long"}, {"name": "next", "type": ["null", "Node"]}]}
    assert avro_columns.compile_program(schema) is None


# --- damaged bytes: a null-codec container written by hand, its one block's data changed ---

SMALL = {"type": "record", "name": "r", "fields": [
    {"name": "n", "type": "long"}, {"name": "s", "type": ["null", "string"]},
    {"name": "a", "type": {"type": "array", "items": "long"}}]}


def _container(schema: dict, count: int, block: bytes) -> tuple[bytes, int]:
    """A null-codec Avro container of one block; and the file offset of that block."""
    sync = bytes(range(16))
    head = b"Obj\x01" + _zigzag(1) + _zigzag(len(b"avro.schema")) + b"avro.schema"
    text = json.dumps(schema).encode()
    head += _zigzag(len(text)) + text + _zigzag(0) + sync
    return head + _zigzag(count) + _zigzag(len(block)) + block + sync, len(head)


def _record(n: int, s: str | None, a: list[int]) -> bytes:
    out = _zigzag(n) + (_zigzag(0) if s is None else _zigzag(1) + _zigzag(len(s.encode())) + s.encode())
    if a:
        out += _zigzag(len(a)) + b"".join(_zigzag(x) for x in a)
    return out + _zigzag(0)


def test_the_hand_written_container_decodes():
    block = _record(5, "hi", [1, 2]) + _record(-1, None, [])
    data, _ = _container(SMALL, 2, block)
    assert list(fastavro.reader(io.BytesIO(data))) == [{"n": 5, "s": "hi", "a": [1, 2]}, {"n": -1, "s": None, "a": []}]
    assert read_manifest_table(data, "avro", "ok", decoder="native").to_pylist() == \
        [{"n": 5, "s": "hi", "a": [1, 2]}, {"n": -1, "s": None, "a": []}]


@pytest.mark.parametrize("block,count,why,byte", [
    (_zigzag(5) + b"\x80", 1, "truncated varint", 1),  # cut inside the union's index
    (_record(5, "hello", [])[:5], 1, "length runs past the end of the block", 2),
    (_record(5, "hi", [1, 2])[:-3], 1, "array count runs past the end", 5),
    (b"\xff" * 11, 1, "varint longer than 64 bits", 0),
    (_zigzag(5) + _zigzag(2) + _zigzag(0), 1, "union branch index out of range", 1),
    (_zigzag(5) + _zigzag(1) + _zigzag(50) + b"abc", 1, "length runs past the end of the block", 2),
    (_zigzag(5) + _zigzag(1) + _zigzag(-3) + b"abc", 1, "negative length", 2),
    (_zigzag(5) + _zigzag(1) + _zigzag(2) + b"\xff\xfe" + _zigzag(0), 1, "not valid UTF-8", 2),
    (_zigzag(5) + _zigzag(0) + _zigzag(1000) + _zigzag(1) + _zigzag(0), 1, "array count runs past the end", 2),
    (_record(5, None, []) + b"\x00\x00", 1, "bytes left over", 3),
    (_record(5, None, []), 2, "truncated varint", 3),
    (_record(5, None, []), 9, "record count larger than the block", 0),
])
def test_damaged_block_data_names_file_block_and_byte(block, count, why, byte):
    data, at = _container(SMALL, count, block)
    with pytest.raises(CorruptFileError, match=why) as exc:
        read_manifest_table(data, "avro", "bad.avro", decoder="native")
    err = exc.value
    assert err.file == "bad.avro" and err.structure == "avro block" and err.offset == at
    assert f"byte {byte} of the block" in err.message


def test_random_damage_gives_our_error_or_a_table_never_a_crash(conformance):
    """Flipped bytes in the (null-codec) blocks of a Paimon manifest: each decodes or raises our
    error (a crash would end this process, a hang the test's timeout)."""
    path = next(p for p in _avro_manifests(conformance) if p.name.startswith("manifest-") and "list" not in p.name
                and isinstance(fastavro.reader(io.BytesIO(p.read_bytes())).writer_schema, dict))
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    schema, rows = reader.writer_schema, list(reader)
    data = _write(schema, rows * 5, "null", block=1 << 20)
    head = data.index(b"_EXTERNAL_PATH") + 200  # past the header's schema text
    rnd = random.Random(30)
    outcomes = set()
    for _ in range(400):
        bad = bytearray(data)
        for _ in range(rnd.randrange(1, 4)):
            bad[rnd.randrange(head, len(bad) - 16)] = rnd.randrange(256)
        try:
            read_manifest_table(bytes(bad), "avro", "fuzz", decoder="native")
            outcomes.add("table")
        except CorruptFileError as exc:
            assert exc.file == "fuzz" and exc.offset is not None
            outcomes.add("error")
    assert "error" in outcomes


def test_a_forked_child_decodes_natively(conformance):
    """The C decoder starts no thread: a fork() child uses it (polars' pool would hang there)."""
    path = _avro_manifests(conformance)[0]
    data = path.read_bytes()
    want = read_manifest_table(data, "avro", str(path), decoder="native").to_pylist()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: decode, report, leave without running the parent's cleanups
        try:
            ok = default_decoder() == "native" and \
                read_manifest_table(data, "avro", str(path)).to_pylist() == want
            os.write(w, b"ok" if ok else b"differs")
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fo:
        said = fo.read()
    os.waitpid(pid, 0)
    assert said == b"ok"


def test_manifests_of_one_schema_decode_together_and_a_bad_one_is_left_out(conformance):
    """read_manifest_groups: one table for the files of one writer schema, each file's rows where
    the spans say; a file whose block data does not decode is left for the caller to report."""
    paths = [p for p in _avro_manifests(conformance) if p.name.startswith("manifest-") and "list" not in p.name
             and isinstance(fastavro.reader(io.BytesIO(p.read_bytes())).writer_schema, dict)]
    reader = fastavro.reader(io.BytesIO(paths[0].read_bytes()))
    schema, rows = reader.writer_schema, list(reader)
    good = [_write(schema, rows * k, "deflate") for k in (1, 3, 2)]
    bad = bytearray(_write(schema, rows, "null"))
    bad[bad.index(b"_EXTERNAL_PATH") + 200:] = b"\x07" * (len(bad) - bad.index(b"_EXTERNAL_PATH") - 216) + bad[-16:]
    files = [(good[0], "g0"), (bytes(bad), "bad"), (good[1], "g1"), (b"not avro", "x"), (good[2], "g2")]
    groups = read_manifest_groups(files, MANIFEST_ENTRY)
    spans = {i: (table, start, n) for table, members in groups for i, start, n in members}
    assert sorted(spans) == [0, 2, 4]
    for i, (table, start, n) in spans.items():
        assert table.slice(start, n) == read_manifest_table(files[i][0], "avro", files[i][1]), i
    with pytest.raises(CorruptFileError):
        read_manifest_table(bytes(bad), "avro", "bad")
    together = read_manifest_groups([(good[0], "g0"), (good[1], "g1")], MANIFEST_ENTRY)
    assert len(together) == 1 and [n for _, _, n in together[0][1]] == [len(rows), 3 * len(rows)]


def test_a_null_row_of_a_paimon_09_union_is_refused():
    schema = ["null", {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]}]
    data = _write(schema, [{"x": 1}, {"x": 2}])
    assert read_manifest_table(data, "avro", "u", decoder="native").to_pylist() == [{"x": 1}, {"x": 2}]
    with pytest.raises(CorruptFileError, match="a null row") as exc:
        read_manifest_table(_write(schema, [{"x": 1}, None]), "avro", "u")
    assert "record 1 of block 0" in exc.value.message and exc.value.file == "u"


def test_a_snappy_container_is_never_zero_rows():
    """Snappy blocks carry a CRC and stay fastavro's (which needs cramjam): the rows, or our error."""
    rows = _zigzag(5) + _zigzag(7)
    snappy = bytes([len(rows), (len(rows) - 1) << 2]) + rows  # one literal: uncompressed snappy
    block = snappy + zlib.crc32(rows).to_bytes(4, "big")
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]}).encode()
    sync = bytes(range(16))
    data = (b"Obj\x01" + _zigzag(2) + _zigzag(11) + b"avro.schema" + _zigzag(len(schema)) + schema + _zigzag(10) + b"avro.codec"
            + _zigzag(6) + b"snappy" + _zigzag(0) + sync + _zigzag(2) + _zigzag(len(block)) + block + sync)
    try:
        got = read_manifest_table(data, "avro", "s", decoder="native").to_pylist()
    except CorruptFileError:  # fastavro without a snappy library
        got = None
    assert got in (None, [{"x": 5}, {"x": 7}])


def test_all_distinct_agrees_with_a_python_set():
    """The C distinctness check of file names (the plan's fast path when nothing is deleted) against
    Python's set, on chunked and sliced arrays, empty and long strings, and random draws."""
    import pyarrow as pa

    rng = random.Random(5)
    cases = [[], [""], ["", ""], ["a", "b", "a"], ["x" * 100, "x" * 99 + "y", "x" * 100],
             [f"data-{i}-0.parquet" for i in range(5000)],
             [f"data-{i}-0.parquet" for i in range(5000)] + ["data-4999-0.parquet"]]
    for _ in range(300):
        alphabet = "ab" if rng.random() < 0.5 else "abcdefgh"
        cases.append(["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
                      for _ in range(rng.randint(0, 40))])
    for values in cases:
        want = len(set(values)) == len(values)
        arr = pa.array(values, pa.string())
        assert avro_columns.all_distinct(arr) is want, values
        cut = rng.randint(0, len(values))
        chunked = pa.chunked_array([arr.slice(0, cut), arr.slice(cut)], pa.string())
        assert avro_columns.all_distinct(chunked) is want, values
        if len(values) > 2:  # a sliced array: its offset into the buffers
            part = values[1:-1]
            assert avro_columns.all_distinct(arr.slice(1, len(values) - 2)) is (len(set(part)) == len(part))
    assert avro_columns.all_distinct(pa.array(["a", None])) is None  # nulls: the caller's general check
    assert avro_columns.all_distinct(pa.array([b"a"], pa.binary())) is None
