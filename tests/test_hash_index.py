"""Dynamic-bucket hash index: 4-byte big-endian int hashes back to back (seed 000).

The conformance warehouses hold no hash index file (every ``index/`` file is a DV file), so the
expected bytes here are built from the documented layout with :mod:`struct`.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexcore.errors import CorruptFileError
from indexcore.formats.hash_index import read_hash_index, write_hash_index
from indexcore.io import BytesSource

INT32 = st.integers(-(2**31), 2**31 - 1)


@given(st.lists(INT32, max_size=200))
def test_layout_matches_the_documented_format(hashes):
    data = write_hash_index(hashes)
    assert data == struct.pack(f">{len(hashes)}i", *hashes)
    index = read_hash_index(BytesSource(data))
    assert index.count == len(hashes)
    assert index.hashes.dtype == np.int32
    assert index.hashes.tolist() == hashes


def test_summary_counts_distinct_and_duplicates():
    data = struct.pack(">6i", 7, -1, 7, 2**31 - 1, -(2**31), 7)
    index = read_hash_index(data)
    assert index.summary() == {"count": 6, "distinct": 4, "duplicates": 2, "min": -(2**31), "max": 2**31 - 1}
    assert 7 in index and -1 in index and 8 not in index
    assert read_hash_index(b"").summary()["count"] == 0


@pytest.mark.parametrize("size", [1, 2, 3, 5, 4099])
def test_length_not_multiple_of_four_is_corrupt(size):
    with pytest.raises(CorruptFileError) as info:
        read_hash_index(BytesSource(bytes(size), name="hash"))
    assert info.value.file == "hash" and info.value.structure == "hash index"
    assert info.value.offset == size - size % 4


def test_writer_rejects_values_outside_int32():
    with pytest.raises(ValueError):
        write_hash_index([2**31])
