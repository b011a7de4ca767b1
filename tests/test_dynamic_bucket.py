"""The vectorised dynamic-bucket assigner against Paimon's rule spelled out one key at a time
(a known key keeps its bucket; a new one goes to the lowest bucket below the target, else to
the lowest unused bucket number), in both key orders the writers use, and its memory: a few
bytes per key, not a Python dict entry."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from indexcore.formats.binary_row import key_hash
from indexcore.types import parse_type
from indexcore.write import TableWriter, make_schema
from indexcore.write.dynamic_bucket import DynamicBuckets
from indexcore.write.large_sample import user_batches
from indexcore.write.task import dynamic_assignment, key_hash_array, partition_codes, partition_of


def rule(pairs, target, counts=None):
    """Paimon's assigner, one key after the other, from nothing but the rule."""
    index: dict = {}
    counts = {p: dict(c) for p, c in (counts or {}).items()}
    out = []
    for p, h in pairs:
        known = index.setdefault(p, {})
        if h not in known:
            c = counts.setdefault(p, {})
            b = next((b for b in sorted(c) if c[b] < target), None)
            if b is None:
                b = next(b for b in range(len(c) + 1) if b not in c)
            known[h] = b
            c[b] = c.get(b, 0) + 1
        out.append(known[h])
    return out


@pytest.mark.parametrize("target", [1, 3, 50])
def test_first_seen_order_follows_the_rule_over_many_calls(target):
    rng = np.random.default_rng(target)
    state = DynamicBuckets(target)
    state.counts[("b",)] = {0: target, 2: max(0, target - 1)}  # a hole at 1, bucket 2 part-full
    seen: list = []
    for _ in range(5):
        parts = [("a",), ("b",), (None,)]
        codes = rng.integers(0, 3, 400)
        hashes = rng.integers(-2**31, 2**31, 400) // 2**24  # repeats, within and across calls
        got = state.assign(parts, codes, hashes)
        seen += [(parts[c], int(h)) for c, h in zip(codes.tolist(), hashes.tolist(), strict=True)]
        want = rule(seen, target, {("b",): {0: target, 2: max(0, target - 1)}})[-400:]
        assert got.tolist() == want
    assert all(np.all(np.diff(h) > 0) for h in state.hashes.values())  # kept sorted, each once


def test_ascending_order_equals_the_sorted_pairs_of_the_pipeline(tmp_path):
    """The bulk writer's vectorised path gives the buckets the Spark pipeline's
    ``dynamic_assignment`` (sorted distinct pairs, one key at a time) gives."""
    schema = make_schema([("p", "STRING"), ("k", "BIGINT")], partition_keys=["p"], primary_keys=["p", "k"],
                         options={"bucket": "-1", "dynamic-bucket.target-row-num": "40"})
    vec = TableWriter.create(str(tmp_path / "vec"), "db.t", schema)
    ref = TableWriter.create(str(tmp_path / "ref"), "db.t", schema)
    rng = np.random.default_rng(3)
    for _ in range(4):
        rows = pa.table({"p": pa.array(rng.choice(["x", "y", None], 900).tolist(), pa.string()),
                         "k": pa.array(rng.integers(0, 3000, 900), pa.int64())})
        got = vec.dynamic_buckets(rows, ascending=True)
        parts = partition_of(schema, rows)
        hashes = [key_hash((k,), [parse_type("BIGINT NOT NULL")]) for k in rows.column("k").to_pylist()]
        assignment = dynamic_assignment(ref.assign_dynamic, parts, hashes)
        assert got.tolist() == [assignment[ph] for ph in zip(parts, hashes, strict=True)]


def test_partition_codes_and_key_hashes_equal_the_per_row_values():
    schema = make_schema([("d", "DATE"), ("r", "STRING"), ("k", "BIGINT"), ("s", "STRING")],
                         partition_keys=["d", "r"], primary_keys=["d", "r", "k", "s"])
    rows = pa.table({"d": pa.array([1, 2, 1, None, 2], pa.int32()).cast(pa.date32()),
                     "r": pa.array(["a", "a", "a", "b", None]),
                     "k": pa.array([5, 6, 5, 7, 8], pa.int64()), "s": pa.array(["x", "y", "x", "z", "w"])})
    partitions, codes = partition_codes(schema, rows)
    assert [partitions[c] for c in codes.tolist()] == partition_of(schema, rows)
    assert len(set(partitions)) == len(partitions) == 4
    types = [parse_type("BIGINT NOT NULL"), parse_type("STRING NOT NULL")]
    assert key_hash_array(schema, rows, ["k", "s"]).tolist() == [
        key_hash((k, s), types) for k, s in zip(rows.column("k").to_pylist(), rows.column("s").to_pylist(),
                                                   strict=True)]


def test_a_known_key_costs_bytes_not_a_dict_entry():
    """200,000 keys over 4 partitions: the state grows by about 8 bytes a key (sorted int32
    hashes and int32 buckets); a dict of Python ints would take over 100."""
    state = DynamicBuckets(200)
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 4, 200_000)
    hashes = rng.choice(2**31 - 1, 200_000, replace=False)  # distinct, without a 2^31 permutation
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    state.assign([("ap",), ("eu",), ("sa",), ("us",)], codes, hashes, ascending=True)
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert kept < 20 * 200_000, kept
    assert sum(len(h) for h in state.hashes.values()) == 200_000
    assert sum(n for c in state.counts.values() for n in c.values()) == 200_000
    assert max(n for c in state.counts.values() for n in c.values()) == 200


def test_user_batches_equal_the_listed_older_users():
    """The users sample counts its older users instead of listing them; ``random.sample`` over
    the range picks what it picked over the list."""
    import random

    rnd = random.Random("11:users")
    old: list[int] = []
    for (version, keys), v in zip(user_batches(11, 3), range(1, 4), strict=True):
        per_batch = 4 * 3 * 200 - (200 // 3 if v == 3 else 0)
        new = list(range(len(old), len(old) + per_batch))
        assert version == v and keys.tolist() == new + sorted(rnd.sample(old, len(old) // 10))
        old += new


def test_target_must_be_positive():
    with pytest.raises(ValueError, match="target-row-num"):
        DynamicBuckets(0)
