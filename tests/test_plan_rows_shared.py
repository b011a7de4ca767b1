"""``census_blobs.names_plan_rows``: the one test of whether a census's ``file_path`` names plan rows
(a dictionary over the plan's own path column), which bloom sizing and the index inventory share.
Truth by construction: dictionaries made over the very path array, over an equal copy of it, plain
text, and columns of one and of two chunks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from indexcore.views.census_blobs import census_file_rows, names_plan_rows

PATHS = pa.array([f"p/data-{i}.parquet" for i in range(6)], pa.string())
INDICES = pa.array([4, 0, 4, 2], pa.int32())


def test_a_dictionary_over_the_plan_paths_names_plan_rows():
    own = pa.DictionaryArray.from_arrays(INDICES, PATHS)
    assert names_plan_rows(own, PATHS)
    assert names_plan_rows(pa.chunked_array([own]), PATHS)
    assert names_plan_rows(own, pa.chunked_array([PATHS]))
    assert names_plan_rows(pa.DictionaryArray.from_arrays(INDICES, PATHS.slice(0)), PATHS)  # a view: same buffers


def test_copies_plain_text_and_several_chunks_do_not():
    copy = pa.array(PATHS.to_pylist(), pa.string())
    assert copy.equals(PATHS)
    assert not names_plan_rows(pa.DictionaryArray.from_arrays(INDICES, copy), PATHS)
    assert not names_plan_rows(PATHS.take(INDICES), PATHS)
    own = pa.DictionaryArray.from_arrays(INDICES, PATHS)
    assert not names_plan_rows(pa.chunked_array([own, own]), PATHS)
    assert not names_plan_rows(pa.DictionaryArray.from_arrays(INDICES, PATHS.slice(1)), PATHS)


def test_the_inventory_maps_rows_alike_either_way():
    """Plan rows taken as they are, or matched by text: the same rows (-1 for a path not planned)."""
    own = pa.DictionaryArray.from_arrays(INDICES, PATHS)
    copy = pa.DictionaryArray.from_arrays(INDICES, pa.array(PATHS.to_pylist() + ["elsewhere"]))
    assert census_file_rows(pa.chunked_array([own]), PATHS).tolist() == [4, 0, 4, 2]
    assert census_file_rows(pa.chunked_array([copy]), PATHS).tolist() == [4, 0, 4, 2]
    other = pa.array(["p/data-3.parquet", "elsewhere"])
    assert np.array_equal(census_file_rows(pa.chunked_array([other]), PATHS), [3, -1])
