"""Which live files a per-file analysis decodes when a snapshot has too many to decode them all.

Counting files, bytes and index kinds reads metadata and container heads only, so it covers
every file. Decoding every bitmap dictionary, bloom filter or range-bitmap of 50,000 files takes
minutes, so the pages decode a fixed random sample (the same files on every run, ``seed``) and
say how large it is; a user asks for all files explicitly. One rule for every sample.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from indexcore.warehouse.model import LiveFile


def sample_files(files: Sequence[LiveFile], n: int | None, whole_buckets: bool = False,
                 seed: int = 0) -> list[LiveFile]:
    """``n`` of ``files`` chosen at random with ``seed``, in path order; all when ``n`` is None
    or not smaller. ``whole_buckets`` takes whole (partition, bucket) groups, as primary-key
    reads merge a bucket's files together."""
    groups = [(lf.partition, lf.bucket) for lf in files] if whole_buckets else None
    return [files[i] for i in sample_rows([lf.path for lf in files], n, groups, seed)]


def sample_rows(paths: Sequence[str], n: int | None, groups: Sequence[Hashable] | None = None,
                seed: int = 0) -> list[int]:
    """Where in ``paths`` the files :func:`sample_files` picks lie, in its order: the same draw
    for a caller holding the files as columns (``groups``: each file's (partition values, bucket)
    when whole buckets are taken)."""
    if n is None or n >= len(paths):
        return list(range(len(paths)))
    if groups is None:
        return sample_positions(paths, n, seed)
    rng = random.Random(seed)
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(groups):
        members.setdefault(key, []).append(i)
    keys = sorted(members, key=str)
    rng.shuffle(keys)
    out: list[int] = []
    for k in keys:
        if len(out) >= n:
            break
        out.extend(members[k])
    return sorted(out, key=paths.__getitem__)


def sample_positions(paths: Sequence[str], n: int, seed: int = 0) -> list[int]:
    """Where in ``paths`` the ``n`` files :func:`sample_files` picks lie, in path order: the same
    draw over positions alone, for a caller holding the files as columns."""
    if n >= len(paths):
        return sorted(range(len(paths)), key=paths.__getitem__)
    return sorted(random.Random(seed).sample(range(len(paths)), n), key=paths.__getitem__)


def decode_sample(files: Sequence[LiveFile], n: int | None) -> list[LiveFile]:
    """The files a per-file analysis over all live files decodes: every file when ``n`` covers
    the files with a file index, else the same sample of those that the index views decode (so a
    page's figures over one sample are about the same files)."""
    indexed = [lf for lf in files if lf.has_file_index]
    if n is None or n >= len(indexed):
        return list(files)
    return sample_files(indexed, n)


def decode_sample_rows(paths: Sequence[str], indexed: Sequence[bool], n: int | None) -> list[int]:
    """Where in a snapshot's live files (``paths`` in plan order, ``indexed``: the file has a file
    index) the files :func:`decode_sample` picks lie, in its order: the same choice for a caller
    holding the plan as columns (:meth:`~indexcore.warehouse.table.Table.plan_columns`)."""
    rows = [i for i, has in enumerate(indexed) if has]
    if n is None or n >= len(rows):
        return list(range(len(paths)))
    return [rows[j] for j in sample_positions([paths[i] for i in rows], n)]
