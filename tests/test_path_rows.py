"""PathRows: a plan's paths -> their rows without a dict of every path, checked against a dict."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from indexcore.warehouse.plan_columns import PathRows


def _paths(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = {f"s3://bucket/wh/db.db/t/dt=2024-{rng.randrange(1, 13):02d}/bucket-{rng.randrange(64)}/"
           f"data-{rng.getrandbits(64):016x}-{i}.parquet" for i in range(n)}
    return sorted(out, key=lambda _: rng.random())


@pytest.mark.parametrize("n,chunks", [(0, 1), (1, 1), (7, 1), (70_000, 1), (70_000, 3)])
def test_rows_are_a_dicts(n: int, chunks: int) -> None:
    """Single and batch lookups, membership, iteration and length agree with a dict built from the
    same texts, over one Arrow chunk or several (and across the hashing slices of 65,536)."""
    texts = _paths(n, n)
    cut = sorted(random.Random(1).sample(range(1, n), chunks - 1)) if n > chunks else []
    column = pa.chunked_array([pa.array(texts[a:b], pa.string()) for a, b in zip([0, *cut], [*cut, n], strict=True)],
                              pa.string())
    want = {t: i for i, t in enumerate(texts)}
    got = PathRows(column)
    assert len(got) == n and list(got) == texts
    rng = random.Random(n)
    asked = rng.sample(texts, min(n, 500)) + texts[-3:]
    assert [got[t] for t in asked] == [want[t] for t in asked]
    assert got.rows(asked).tolist() == [want[t] for t in asked]
    assert got.rows(texts).tolist() == list(range(n))
    assert "s3://elsewhere/x.parquet" not in got and 7 not in got
    with pytest.raises(KeyError):
        got["s3://elsewhere/x.parquet"]
    with pytest.raises(KeyError):
        got.rows([*asked, "s3://elsewhere/x.parquet"])
    mixed = got.rows(["s3://elsewhere/x.parquet", *asked[:3]], missing=-1)
    assert mixed.dtype == np.int64 and mixed.tolist() == [-1, *(want[t] for t in asked[:3])]
    assert got.rows([]).tolist() == []
