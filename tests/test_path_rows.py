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


def test_loaded_in_another_process_it_hashes_again(tmp_path) -> None:
    """Python's text hashes differ between processes (PYTHONHASHSEED): a PathRows pickled in one
    process and loaded in another (a Spark worker) finds its texts there."""
    import os
    import subprocess
    import sys

    code = ("import pickle, sys, pyarrow as pa; from indexcore.warehouse.plan_columns import PathRows\n"
            "path = sys.argv[2]\n"
            "if sys.argv[1] == 'dump':\n"
            "    pickle.dump(PathRows(pa.array([f's3://b/t/f-{i}.parquet' for i in range(1000)])), open(path, 'wb'))\n"
            "else:\n"
            "    got = pickle.load(open(path, 'rb'))\n"
            "    assert got['s3://b/t/f-7.parquet'] == 7 and got.rows(['s3://b/t/f-999.parquet']).tolist() == [999]\n"
            "    print('found')\n")
    saved = tmp_path / "rows.pickle"
    for seed, step in (("1", "dump"), ("2", "load")):
        out = subprocess.run([sys.executable, "-c", code, step, str(saved)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "found"
