"""The advisor's column profile (the largest distinct count of a sampled file), counted for all
files in one group-by: equal to each file's distinct non-null values counted by construction,
for every type the profile meets (floats and types a group-by refuses are counted file by file)."""

from __future__ import annotations

import datetime
import decimal
import math
import random
import struct

import pyarrow as pa
import pytest

from indexcore.analysis.advise_candidates import _max_distinct


def _distinct(values: list) -> int:
    """Distinct non-null values as Arrow's count_distinct counts them (every NaN one value, -0.0
    apart from 0.0: floats by their bits)."""
    seen = set()
    for v in values:
        if v is None:
            continue
        seen.add("nan" if isinstance(v, float) and math.isnan(v) else
                 struct.pack(">d", v) if isinstance(v, float) else v)
    return len(seen)


CASES = {
    "int": (pa.int32(), lambda r: r.randrange(-5, 20)),
    "bigint": (pa.int64(), lambda r: r.randrange(-(1 << 40), 1 << 40) if r.random() < 0.3 else r.randrange(4)),
    "string": (pa.string(), lambda r: r.choice(["", "a", "A", "é", "ab", "b" * 30])),
    "binary": (pa.binary(), lambda r: r.choice([b"", b"\x00", b"\x00\x00", b"x"])),
    "bool": (pa.bool_(), lambda r: r.random() < 0.5),
    "date": (pa.date32(), lambda r: datetime.date(2024, 1, 1) + datetime.timedelta(days=r.randrange(6))),
    "timestamp": (pa.timestamp("us"), lambda r: datetime.datetime(2024, 1, 1, 0, 0, r.randrange(5))),
    "decimal": (pa.decimal128(10, 2), lambda r: decimal.Decimal(r.randrange(-300, 300)) / 100),
    "double": (pa.float64(), lambda r: r.choice([0.0, -0.0, 1.5, math.nan, math.inf, 2.0])),
    "float": (pa.float32(), lambda r: r.choice([0.0, 1.5, math.nan, -2.0])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_max_distinct_equals_each_files_count(name):
    dtype, draw = CASES[name]
    for seed in range(25):
        rng = random.Random(seed)
        files = []
        for _ in range(rng.randrange(1, 12)):
            n = rng.choice([0, 1, 3, 60, 200])
            files.append([None if rng.random() < 0.2 else draw(rng) for _ in range(n)])
        columns = []
        for values in files:  # some files' columns in two chunks, as a read may give them
            cut = len(values) // 2
            chunks = [pa.array(values[:cut], dtype), pa.array(values[cut:], dtype)] if rng.random() < 0.5 \
                else [pa.array(values, dtype)]
            columns.append(pa.chunked_array(chunks, type=dtype))
        assert _max_distinct(columns) == max(_distinct(v) for v in files), (name, seed)


def test_types_neither_counts_fail_as_before():
    """A type neither a group-by nor count_distinct takes is refused as count_distinct refuses it."""
    dtype = pa.list_(pa.int32())
    columns = [pa.chunked_array([pa.array([[1], [1], [2], None], dtype)]), pa.chunked_array([pa.array([[3]], dtype)])]
    with pytest.raises(pa.ArrowNotImplementedError, match="count_distinct"):
        _max_distinct(columns)
