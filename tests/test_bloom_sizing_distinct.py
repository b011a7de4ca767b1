""":func:`.bloom_sizing.distinct_inverse`: each distinct row count and each file's number among them,
by counting small non-negative integers (not sorting 1M row counts); against ``np.unique``."""

from __future__ import annotations

import numpy as np

from indexcore.analysis.bloom_sizing import distinct_inverse


def test_equal_to_numpy_unique():
    rng = np.random.default_rng(29)
    cases = [np.zeros(0, np.int64), np.array([5]), np.array([0, 0, 0]), rng.integers(0, 500, 100_000),
             rng.integers(-5, 5, 1000), rng.integers(0, 1 << 40, 1000), np.array([3, 3, 1, (1 << 20) - 1]),
             rng.integers(0, 2000, 10).astype(np.int32), np.array([7, 1 << 21])]
    for values in cases:
        got, where = distinct_inverse(values)
        want, want_where = np.unique(values, return_inverse=True)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
        assert where.shape == want_where.shape and where.tolist() == want_where.tolist()
        assert got[where].tolist() == values.tolist()  # each value found back by its number
