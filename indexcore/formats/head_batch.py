"""File-index container heads of a batch of local files, read and parsed in one C call.

A census reads the heads of every ``.index`` file of a snapshot (50,000 at 50k files); per file the
Python path opens, reads, closes and parses in a dozen calls. Here the optional extension
``_container_heads`` (setup.py) does one batch in one call: each file in a directory the storage
resolved and allowed once (:meth:`~indexcore.io.storage.Storage.local_folder`) is opened without
following a symlink, read (the GIL released) and its head checked by the rules of the container's
quick parser (:func:`~indexcore.formats.container.head_spans`), then returned as flat int64
columns. A file it does not read or finds not well formed is a fault, returned as data; the caller
reads that file through the Python path, which names file, structure and offset. Without the
extension (:data:`NATIVE` False), or on object stores, the Python path reads every file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from indexcore.io import Storage

try:  # the optional C extension built by setup.py; without it heads are read in Python
    from indexcore.formats import _container_heads
except ImportError:  # pragma: no cover - a build without a C compiler
    _container_heads = None

NATIVE = _container_heads is not None
# what a fault's kind says (the second value of :attr:`HeadColumns.faults`; the third is an errno
# for OPEN and READ, the byte offset in the head for HEAD and NAME)
FOLDER, OPEN, READ, HEAD, NAME = 1, 2, 3, 4, 5


@dataclass
class Layouts:
    """The distinct head layouts of one walk: ``(column, kind)`` pairs and empty flags per layout
    id (mutable scratch of one walk, filled by the C reader: not kept beyond it)."""

    ids: dict = field(default_factory=dict)  # layout key bytes -> id
    shapes: list = field(default_factory=list)  # id -> ((column, kind) pairs, empty flags)
    folders: dict = field(default_factory=dict)  # parent as written -> resolved folder (None: not allowed)


@dataclass(frozen=True)
class HeadColumns:
    """One batch's heads as columns: per file its layout id (-1: a fault), container size and entry
    count; the entries' ``(offset, length)`` flat in file order; the faults as
    ``(position, kind, errno or offset)``; and what was read."""

    layout: np.ndarray
    size: np.ndarray
    entries: np.ndarray
    spans: np.ndarray
    faults: list[tuple[int, int, int]]
    nbytes: int
    reads: int


def native_storage(storage: Storage) -> bool:
    """Whether :func:`read_heads` reads this storage's files in C (local files, extension built)."""
    return NATIVE and storage.local


def read_heads(storage: Storage, index_paths: list, embedded: list, layouts: Layouts,
               prefix: int) -> HeadColumns:
    """The heads of one batch of containers (an ``.index`` path, or the embedded bytes, per file):
    the first ``prefix`` bytes of each file read, and the rest of a longer head. The bytes read are
    counted on the storage's stats as :meth:`~indexcore.io.storage.Storage.read_prefixes` counts them."""
    folders = layouts.folders
    for parent in _container_heads.folders(index_paths, embedded, folders):
        folders[parent] = storage.local_folder(parent)
    faults, layout, size, entries, spans, nbytes, reads = _container_heads.heads(
        index_paths, embedded, folders, prefix, layouts.ids, layouts.shapes)
    storage.stats.add(nbytes, reads)
    storage.stats.served(nbytes)
    return HeadColumns(np.frombuffer(layout, np.int64), np.frombuffer(size, np.int64),
                       np.frombuffer(entries, np.int64), np.frombuffer(spans, np.int64), faults, nbytes, reads)


@dataclass(frozen=True)
class WholeFiles:
    """One batch of containers read whole in C: per file its bytes (None: larger than the limit),
    its name as :meth:`~indexcore.io.storage.Storage.read_prefixes` names it, and the positions of
    the files it could not open or read (the caller's Python path says why)."""

    blobs: list
    names: list
    faults: list[int]


def read_wholes(storage: Storage, index_paths: list[str], folders: dict, limit: int | list[int],
                prefix: bool = False) -> WholeFiles:
    """The ``.index`` files ``index_paths`` read whole in one C call, each opened as
    :func:`read_heads` opens it (folders resolved and allowed once, ``folders``: the caller's memo
    of them, no symlink followed): the bytes :meth:`~indexcore.io.storage.Storage.read_prefixes`
    reads with ``limit`` (one for all, or a list of one per path: files of many sizes in one call),
    without a Python ``open``/``pread``/``close`` per file; a file longer than its limit is None,
    or with ``prefix`` its first limit bytes (as read_prefixes). Counted on the storage's stats as
    read, not served (the readers given them count what they use)."""
    embedded = [None] * len(index_paths)
    for parent in _container_heads.folders(index_paths, embedded, folders):
        folders[parent] = storage.local_folder(parent)
    blobs, faults, nbytes, reads = _container_heads.wholes(index_paths, folders, limit, prefix)
    storage.stats.add(nbytes, reads)
    names = []
    for path, blob in zip(index_paths, blobs, strict=True):
        if blob is None:
            names.append(path)
            continue
        parent, _, base = path.rpartition("/")
        folder = folders[parent]  # the folder the C reader opened it in (as Storage._in_resolved_dir joins)
        names.append(storage.display(folder + base if folder.endswith("/") else f"{folder}/{base}"))
    return WholeFiles(blobs, names, [i for i, _kind, _detail in faults])
