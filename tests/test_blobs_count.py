"""``len(Blobs)``: the files carrying an index, counted by marking the census dictionary's indices
(:class:`indexcore.views.census_blobs.Blobs`), not by hashing them (Arrow's ``count_distinct``,
0.1 s per index at 1,000,000 files on the health path).

Truth by construction (paths made here, repeated, null, sliced, in chunks over one dictionary and
over two) and, on every table of the sample, the conformance warehouses and the 10k bench table,
the paths the group's files are mapped by (``iter``) and its :meth:`~Blobs.paths` as texts."""

from __future__ import annotations

import random

import pyarrow as pa
from warehouse_tables import every_table, warehouse_roots

from indexcore.analysis.advise import index_inventory
from indexcore.errors import IndexCoreError
from indexcore.views.census_blobs import Blobs


def _blobs(parts) -> Blobs:
    blobs = Blobs(None)  # counting reads no census row
    for paths in parts:
        blobs.add(paths, list(range(len(paths))))
    return blobs


def test_made_paths_are_counted_once_each():
    rng = random.Random(29)
    words = pa.array([f"data-{i}.parquet" for i in range(50)])
    other = pa.array([f"data-{i}.parquet" for i in range(30, 90)])  # another dictionary, overlapping texts
    for _ in range(300):
        parts, texts = [], set()
        for _ in range(rng.randint(1, 4)):
            at = [rng.choice([None, *range(len(words))]) for _ in range(rng.randint(0, 30))]
            part = pa.DictionaryArray.from_arrays(pa.array(at, pa.int32()), words)
            lo = rng.randint(0, len(part))
            part = part.slice(lo)  # a slice: its indices start past the buffer's first
            parts.append(part)
            texts |= {p for p in part.to_pylist() if p is not None}
        assert len(_blobs(parts)) == len(texts)
        assert len(_blobs([pa.chunked_array(parts, parts[0].type)])) == len(texts)
        mixed = [*parts, pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 59], pa.int32()), other)]
        assert len(_blobs(mixed)) == len(texts | {"data-30.parquet", "data-31.parquet", "data-89.parquet"})
        plain = [p.cast(pa.string()) for p in parts]
        assert len(_blobs(plain)) == len(texts)


def test_every_index_group_counts_the_files_it_maps():
    checked = 0
    for _root, table in every_table(warehouse_roots(bench=True)):
        try:
            groups, _problems = index_inventory(table)
        except IndexCoreError:  # a table that cannot be read has no inventory
            continue
        for g in groups:
            counted = len(g.blobs)
            assert counted == len(set(g.blobs.paths().to_pylist())), (table.name, g.column, g.index_type)
            assert counted == len(list(iter(g.blobs))) == len(g.blobs), (table.name, g.column, g.index_type)
            checked += counted > 0
    assert checked >= 10
