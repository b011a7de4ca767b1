"""Paimon's dynamic-bucket assignment (``bucket = -1`` primary-key tables), vectorised.

Paimon's hash bucket assigner: a known key hash keeps its bucket; a new one goes to the lowest
bucket of its partition holding fewer than ``dynamic-bucket.target-row-num`` keys, or, when
every bucket is full, to the lowest bucket number not yet used. New keys of one call therefore
fill the partition's open buckets in ascending order, each up to the target, then fresh bucket
numbers in ascending order: a cumulative sum of capacities and one ``searchsorted`` assign them
all. Per partition the writer keeps its known hashes as one sorted ``int32`` array with a
parallel bucket array (8 bytes a key, against about 100 for a Python dict entry), so a
million-file build holds its millions of user keys in tens of megabytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class DynamicBuckets:
    """The assigner's state for one table: per partition the known key hashes (sorted) with
    their buckets, and the number of keys in each bucket."""

    def __init__(self, target: int):
        if target <= 0:
            raise ValueError(f"dynamic-bucket.target-row-num must be positive, got {target}")
        self.target = target
        self.hashes: dict[tuple, np.ndarray] = {}  # per partition, sorted int32
        self.buckets: dict[tuple, np.ndarray] = {}  # per partition, the bucket of each hash above
        self.counts: dict[tuple, dict[int, int]] = {}  # per partition: keys per bucket

    def assign(self, partitions: Sequence[tuple], codes: np.ndarray, hashes: np.ndarray,
               *, ascending: bool = False) -> np.ndarray:
        """The bucket of every row: row ``i`` is in partition ``partitions[codes[i]]`` with key
        hash ``hashes[i]``. New keys are taken in order of first appearance, or with
        ``ascending`` in ascending hash order (how the bulk and Spark writers feed a batch, so
        buckets do not depend on which task holds which rows)."""
        codes = np.asarray(codes, np.int64)
        hashes = np.asarray(hashes, np.int64)
        if len(codes) != len(hashes):
            raise ValueError("one partition code per key hash")
        out = np.empty(len(hashes), np.int32)
        for code, partition in enumerate(partitions):
            rows = np.flatnonzero(codes == code)
            if len(rows):
                out[rows] = self._assign_partition(partition, hashes[rows], ascending)
        return out

    def _assign_partition(self, partition: tuple, hashes: np.ndarray, ascending: bool) -> np.ndarray:
        uniq, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        known = self.hashes.get(partition, np.empty(0, np.int32))
        known_buckets = self.buckets.get(partition, np.empty(0, np.int32))
        pos = np.searchsorted(known, uniq)
        hit = pos < len(known)
        hit[hit] = known[pos[hit]] == uniq[hit]
        result = np.empty(len(uniq), np.int32)
        result[hit] = known_buckets[pos[hit]]
        new = np.flatnonzero(~hit)
        if len(new):
            if not ascending:
                new = new[np.argsort(first[new], kind="stable")]
            assigned = self._fill(partition, len(new))
            result[new] = assigned
            merged = np.concatenate([known, uniq[new].astype(np.int32)])
            order = np.argsort(merged, kind="stable")
            self.hashes[partition] = merged[order]
            self.buckets[partition] = np.concatenate([known_buckets, assigned])[order]
        return result[inverse.reshape(-1)]

    def _fill(self, partition: tuple, n: int) -> np.ndarray:
        """Buckets for ``n`` new keys in assignment order, counted into the partition's buckets."""
        counts = self.counts.setdefault(partition, {})
        target = self.target
        numbers = sorted(b for b, c in counts.items() if c < target)
        room = [target - counts[b] for b in numbers]
        left = n - sum(room)
        candidate = 0
        while left > 0:  # fresh bucket numbers, lowest first, skipping numbers in use
            while candidate in counts:
                candidate += 1
            numbers.append(candidate)
            room.append(target)
            left -= target
            candidate += 1
        ends = np.cumsum(room)
        slot = np.searchsorted(ends, np.arange(n), side="right")
        assigned = np.asarray(numbers, np.int32)[slot]
        used, taken = np.unique(slot, return_counts=True)
        for s, k in zip(used.tolist(), taken.tolist(), strict=True):
            counts[numbers[s]] = counts.get(numbers[s], 0) + k
        return assigned
