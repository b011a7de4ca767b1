"""The profile's distinct counts taken for all sampled files at once (``max_distinct``): equal
to Arrow's own ``count_distinct`` of each file's column (the foreign truth), maximum over the
files, on strings, integers, nulls, empty files and one-file lists; floats go file by file."""

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from indexcore.analysis.advise_profile import max_distinct


def _truth(arrays) -> int:
    return max((pc.count_distinct(a, mode="only_valid").as_py() for a in arrays), default=0)


def _values(rng: random.Random, kind: str, n: int, distinct: int, nulls: float) -> list:
    out = []
    for _ in range(n):
        if rng.random() < nulls:
            out.append(None)
        elif kind == "string":
            out.append(f"v{rng.randrange(distinct)}" * rng.randrange(1, 3))
        elif kind == "float":
            out.append(rng.choice([0.0, -0.0, float("nan"), 1.5, float(rng.randrange(distinct))]))
        else:
            out.append(rng.randrange(-distinct, distinct))
    return out


@pytest.mark.parametrize("kind,arrow_type", [("string", pa.string()), ("string", pa.large_string()),
                                             ("int", pa.int32()), ("int", pa.int64()), ("int", pa.int8()),
                                             ("float", pa.float64())])
def test_equal_to_count_distinct_file_by_file(kind, arrow_type):
    rng = random.Random(f"{kind}{arrow_type}")
    for case in range(60):
        files = rng.randrange(1, 12)
        arrays = [pa.array(_values(rng, kind, rng.choice([0, 1, 5, 60, 300]), rng.choice([1, 3, 50, 100]),
                                   rng.choice([0.0, 0.2, 1.0])), arrow_type) for _ in range(files)]
        chunked = [pa.chunked_array([a[:len(a) // 2], a[len(a) // 2:]], arrow_type) for a in arrays]
        assert max_distinct(arrays) == _truth(arrays), case
        assert max_distinct(chunked) == _truth(arrays), case


def test_edges():
    assert max_distinct([]) == 0
    assert max_distinct([pa.array([], pa.string()), pa.array([None, None], pa.string())]) == 0
    assert max_distinct([pa.array(["a", "b", "a"]), pa.array(["c"])]) == 2
    # the file with the most distinct values is not the one with the most rows
    assert max_distinct([pa.array(["x"] * 500), pa.array(["a", "b", "c", None])]) == 3
    # mixed types: file by file
    assert max_distinct([pa.array([1, 2], pa.int32()), pa.array([1, 2, 3], pa.int64())]) == 3
