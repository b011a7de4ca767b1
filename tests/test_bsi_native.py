"""The C decoder of BSI parts (``indexcore.formats._roaring_rows``, issue 30 item 5): a part's
bitmaps read to its rows' values in one pass give the answers and summaries of the pyroaring path
(Paimon's golden vectors, built blobs, damaged bytes), and a bitmap the decoder accepts is the
bitmap pyroaring reads; what it does not accept goes through the Python reader, which names it."""

from __future__ import annotations

import random

import numpy as np
import pytest
from golden_vectors import leaf_of, load, normalize, vector_ids
from pyroaring import BitMap

from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf
from indexcore.formats import bsi
from indexcore.formats.bsi import BsiReader, BsiWriter, _roaring_rows
from indexcore.io import BytesSource
from indexcore.types import parse_type

pytestmark = pytest.mark.skipif(not bsi.NATIVE, reason="the optional C extension is not built (setup.py)")
IDS = vector_ids("bsi__*.json")
OPS = ("equal", "notEqual", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual")


def _answers(dtype, data: bytes, leaves) -> object:
    """What a reader says of ``data``: its summary and each leaf's rows, or the error it raises."""
    try:
        reader = BsiReader(dtype, BytesSource(data, "blob"), {})
        return reader.summary(), [normalize(reader.visit(leaf)) for leaf in leaves]
    except IndexCoreError as exc:
        return type(exc).__name__, str(exc)


def _python_answers(monkeypatch, dtype, data: bytes, leaves) -> object:
    with monkeypatch.context() as m:
        m.setattr(bsi, "_roaring_rows", None)
        return _answers(dtype, data, leaves)


def _native(dtype, data: bytes) -> bool:
    """Whether the reader's parts came from the C decoder (their values at hand)."""
    reader = BsiReader(dtype, BytesSource(data), {})
    return all(part._values is not None for part in (reader.positive, reader.negative) if part.slice_count)


@pytest.mark.parametrize("vid", IDS)
def test_golden_vectors_answer_alike(golden, vid, monkeypatch):
    vec, dtype, data = load(golden, vid)
    leaves = [leaf_of(dtype, p["predicate"]) for p in vec["predicates"] if p["predicate"]["op"] not in ("and", "or")]
    assert _answers(dtype, data, leaves) == _python_answers(monkeypatch, dtype, data, leaves)
    assert _native(dtype, data)


def _built(values: list) -> bytes:
    writer = BsiWriter(parse_type("BIGINT"))
    writer.write_batch(values)
    return writer.serialized_bytes()


@pytest.mark.parametrize("seed", range(6))
def test_built_blobs_answer_alike(seed, monkeypatch):
    """Blobs of every container kind: arrays, full bitmap containers (dense rows), runs (long runs
    of one value after run optimisation), rows past 65,536 (several containers), both parts."""
    rng = random.Random(seed)
    n = rng.choice((50, 5000, 70_000, 140_000))
    spread = rng.choice((3, 1000, 1 << 40))
    values = [None if rng.random() < 0.1 else rng.randrange(-spread, spread) for _ in range(n)]
    if seed % 2:
        values = sorted(values, key=lambda v: (v is None, v or 0))  # runs
    dtype = parse_type("BIGINT")
    data = _built(values)
    probes = [rng.randrange(-spread, spread) for _ in range(4)] + [0, spread, -spread]
    leaves = [Leaf(op, "c", (p,)) for p in probes for op in OPS] + [Leaf("between", "c", (-spread // 2, spread // 3))]
    got = _answers(dtype, data, leaves)
    assert got == _python_answers(monkeypatch, dtype, data, leaves)
    assert _native(dtype, data)
    present = [v for v in values if v is not None]
    assert (got[0]["min"], got[0]["max"], got[0]["null_count"]) == (min(present), max(present), n - len(present))


def test_damaged_blobs_answer_alike_or_fail_alike(golden, monkeypatch):
    """Bytes flipped anywhere in Paimon's blobs: the reader with the C decoder answers as the
    pyroaring path does, or raises its very error (file, structure, offset)."""
    rng = random.Random(5)
    tried = failed = 0
    for vid in ("bsi__bigint__lowcard", "bsi__int__somenull", "bsi__bigint__unique"):
        if vid not in IDS:
            continue
        vec, dtype, data = load(golden, vid)
        leaves = [leaf_of(dtype, p["predicate"]) for p in vec["predicates"] if p["predicate"]["op"] not in ("and", "or")]
        for _ in range(150):
            bad = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                bad[rng.randrange(len(bad))] = rng.randrange(256)
            got = _answers(dtype, bytes(bad), leaves)
            assert got == _python_answers(monkeypatch, dtype, bytes(bad), leaves)
            tried += 1
            failed += isinstance(got[0], str)
    assert tried and failed, "some damage must be refused"


def _bitmaps(rng: random.Random) -> list[BitMap]:
    out = [BitMap(), BitMap([0]), BitMap([65535, 65536]), BitMap(range(0, 200_000, 3)),
           BitMap(range(10, 70_000)), BitMap(rng.sample(range(1 << 20), 3000))]
    for bm in list(out):
        runs = BitMap(bm)
        runs.run_optimize()
        out.append(runs)
    return out


def test_rows_of_a_bitmap_are_pyroarings():
    rng = random.Random(3)
    checked = refused = 0
    for bm in _bitmaps(rng):
        data = bm.serialize()
        rows, size = _roaring_rows.rows(b"pad" + data + b"tail", 3, 3 + len(data))
        assert size == len(data) and np.frombuffer(rows, np.uint32).tolist() == list(bm)
        for _ in range(60):  # damaged: accepted only as what pyroaring reads
            bad = bytearray(data)
            bad[rng.randrange(len(bad))] = rng.randrange(256)
            try:
                rows, size = _roaring_rows.rows(bytes(bad), 0, len(bad))
            except ValueError as exc:
                assert "at byte" in str(exc)
                refused += 1
                continue
            assert np.frombuffer(rows, np.uint32).tolist() == list(BitMap.deserialize(bytes(bad[:size])))
            checked += 1
    assert checked and refused


@pytest.mark.parametrize("values", [[3, None, 7, 7, 120], [-3, None, -70], [5, -5, None, 0, -9, 12]],
                         ids=["positive", "negative", "both"])
def test_a_summary_makes_no_bitmap(values, monkeypatch):
    """The Range page's per-file summaries: with the parts decoded in C, rows, nulls, min and max are
    counted on the decoded rows (no existence bitmap deserialized), true to the values written."""
    data = _built(values)
    reader = BsiReader(parse_type("BIGINT"), BytesSource(data, "blob"), {})
    made = []
    real = bsi.roaring.deserialize
    monkeypatch.setattr(bsi.roaring, "deserialize", lambda *a: made.append(a[1:]) or real(*a))
    got = reader.summary()
    assert made == []
    present = [v for v in values if v is not None]
    assert (got["min"], got["max"], got["null_count"]) == (min(present), max(present), len(values) - len(present))
    assert (got["positive"]["rows"], got["negative"]["rows"]) == (sum(v >= 0 for v in present),
                                                                  sum(v < 0 for v in present))


@pytest.mark.parametrize("seed", range(4))
def test_between_on_the_positive_part_alone(seed, monkeypatch):
    """``BETWEEN`` of two non-negative keys over a blob with no negative part is answered in one pass
    over the decoded values (:meth:`~indexcore.formats.bsi.BsiPart.between`): the rows the
    pyroaring path's two comparisons leave, which are the rows whose value lies in the range
    (bounds below the least value, above the greatest, inside, equal to them, and crossed)."""
    rng = random.Random(seed)
    n = rng.choice((60, 3000, 70_000))
    values = [None if rng.random() < 0.1 else rng.randrange(5, 5000) for _ in range(n)]
    data = _built(values)
    dtype = parse_type("BIGINT")
    present = sorted({v for v in values if v is not None})
    bounds = [0, 4, present[0], present[-1], 5000, 10**12] + [rng.randrange(0, 6000) for _ in range(6)]
    pairs = [(a, b) for a in bounds for b in bounds]
    reader = BsiReader(dtype, BytesSource(data), {})
    assert reader.negative.rows() is not None and not len(reader.negative.rows())
    calls = []
    between = bsi.BsiPart.between
    monkeypatch.setattr(bsi.BsiPart, "between", lambda self, lo, hi: calls.append(1) or between(self, lo, hi))
    leaves = [Leaf("between", "c", pair) for pair in pairs]
    got = _answers(dtype, data, leaves)
    assert len(calls) == len(pairs)  # each answered in the one pass
    assert got == _python_answers(monkeypatch, dtype, data, leaves)
    for (lo, hi), rows in zip(pairs, got[1], strict=True):  # truth from construction
        assert rows == normalize(BitMap(i for i, v in enumerate(values) if v is not None and lo <= v <= hi))
    assert (got[0]["min"], got[0]["max"]) == (present[0], present[-1])
    with monkeypatch.context() as m:  # values at hand, no C to compare them: numpy's masks, the same rows
        m.setattr(bsi, "_roaring_rows", None)
        assert [normalize(reader.visit(leaf)) for leaf in leaves] == got[1]
