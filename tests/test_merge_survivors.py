"""Deduplicate and first-row merges on columns (:func:`indexcore.warehouse.merge.survivors`) against
a brute-force merge written here from Paimon's rules: per key, records ordered by the sequence
field (nulls first), the sequence number, the higher level first, then file order and position;
deduplicate keeps the last record unless it retracts (ignoring deletes: the last that does not
retract), first-row the first that does not retract."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from indexcore.paimon.options import CoreOptions
from indexcore.warehouse.merge import (
    FILE_ORDER,
    LEVEL,
    POSITION,
    RETRACT_KINDS,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    merge_records,
    survivors,
)


def _records(seed: int, n: int = 400, seq_type: pa.DataType | None = None) -> pa.Table:
    """Records with few distinct keys (many versions each), ties in the sequence number broken by
    level, file order and position, nulls in the sequence field and in one key column."""
    rnd = random.Random(seed)
    seq_type = seq_type or pa.int64()
    region = [rnd.choice(["eu", "us", None]) for _ in range(n)]
    uid = [rnd.randrange(12) for _ in range(n)]
    ts = [None if rnd.random() < 0.2 else rnd.randrange(4) for _ in range(n)]
    if pa.types.is_floating(seq_type):
        ts = [None if v is None else float(v) for v in ts]
    return pa.table({
        "region": pa.array(region, pa.string()), "uid": pa.array(uid, pa.int64()),
        "ts": pa.array(ts, seq_type), "v": pa.array(range(n), pa.int64()),
        SEQUENCE_NUMBER: pa.array([rnd.randrange(5) for _ in range(n)], pa.int64()),
        VALUE_KIND: pa.array([rnd.choice([0, 0, 1, 2, 3]) for _ in range(n)], pa.int8()),
        LEVEL: pa.array([rnd.randrange(3) for _ in range(n)], pa.int32()),
        FILE_ORDER: pa.array([rnd.randrange(4) for _ in range(n)], pa.int32()),
        POSITION: pa.array(range(n), pa.int64())})


def _brute(records: pa.Table, keys: list[str], seq: list[str], first: bool, ignore_delete: bool) -> list[int]:
    rows = records.to_pylist()
    by_key: dict = {}
    for i, r in enumerate(rows):
        by_key.setdefault(tuple(r[k] for k in keys), []).append(i)
    out = []
    for idx in by_key.values():
        idx.sort(key=lambda i: (tuple((0, 0) if rows[i][s] is None else (1, rows[i][s]) for s in seq),
                                rows[i][SEQUENCE_NUMBER], -rows[i][LEVEL], rows[i][FILE_ORDER], rows[i][POSITION]))
        live = [i for i in idx if rows[i][VALUE_KIND] not in RETRACT_KINDS]
        if first:
            out += live[:1]
        elif ignore_delete:
            out += live[-1:]
        elif rows[idx[-1]][VALUE_KIND] not in RETRACT_KINDS:
            out.append(idx[-1])
    return sorted(out)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("first,ignore_delete", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("seq", [[], ["ts"]])
def test_survivors_on_columns_equal_the_brute_force_merge(seed, first, ignore_delete, seq):
    records = _records(seed)
    keys = ["region", "uid"]
    want = _brute(records, keys, seq, first, ignore_delete)
    got = survivors(records, keys, seq, first, ignore_delete)
    assert got is not None and got.to_pylist() == want
    options = CoreOptions.parse({"merge-engine": "first-row" if first else "deduplicate",
                           "ignore-delete": str(ignore_delete).lower(), **({"sequence.field": "ts"} if seq else {})})
    merged = merge_records(records, keys, ["region", "uid", "v"], options)
    assert merged.column("v").to_pylist() == want


def test_floating_sequence_fields_are_left_to_the_python_merge():
    """Arrow sorts NaN and nulls together where Paimon puts NaN last: no column answer, and the
    Python merge still gives the brute force's rows."""
    records = _records(1, seq_type=pa.float64())
    assert survivors(records, ["uid"], ["ts"], False, False) is None
    options = CoreOptions.parse({"sequence.field": "ts"})
    assert merge_records(records, ["uid"], ["v"], options).column("v").to_pylist() == \
        _brute(records, ["uid"], ["ts"], False, False)


def test_no_records_and_no_keys():
    empty = _records(0).slice(0, 0)
    assert survivors(empty, ["uid"], [], False, False).to_pylist() == []
    records = _records(2, n=30)
    assert survivors(records, [], [], False, False).to_pylist() == _brute(records, [], [], False, False)
