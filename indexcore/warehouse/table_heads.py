"""A table's file indexes: container heads (kept as bytes and parsed, per file), the readers of
their blobs (kept within a byte budget), and concurrent prefetch of index and DV files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

from indexcore.errors import CorruptFileError, IndexCoreError
from indexcore.formats.container import STRUCTURE as HEAD_STRUCTURE
from indexcore.formats.container import (
    ContainerHead,
    FileIndexContainer,
    IndexEntry,
    head_bytes,
    head_length,
    parse_head,
    well_formed_head,
)
from indexcore.formats.registry import open_reader
from indexcore.io import ByteSource, BytesSource, Fetch
from indexcore.types import DataType
from indexcore.warehouse.model import LiveFile

# bytes read first from an ``.index`` file: its whole head, nearly always
HEAD_PREFETCH_BYTES = 4096
# a ``.index`` file up to this size is read whole in one request (they are 2-18 KB) where its blobs
# are wanted (explain's index stage, the per-file views); past it, the head and what the readers
# need are read ranged
WHOLE_INDEX_BYTES = 64 << 10


@dataclass(frozen=True)
class HeadSource:
    """Where one data file's index container is: embedded in its manifest entry, or its ``.index``
    file. What a census of container heads needs of a file (made from plan columns without a
    :class:`LiveFile`)."""

    path: str
    index_path: str | None
    embedded: bytes | None

    @property
    def key(self) -> tuple:
        """The container's identity: its ``.index`` file, or the data file it is embedded in."""
        return (self.path, self.index_path if self.embedded is None else None)


def head_source(lf: LiveFile) -> HeadSource:
    return HeadSource(lf.path, lf.index_path, lf.file.embedded_index)


def _weight(path: str, index_path: str | None, hit: tuple) -> int:
    """What a kept head costs in memory: its bytes, its key's and name's text and about 400 bytes
    of Python objects (two tuples, an int, the map's node), so the bound is the memory held."""
    head, _size, name, error = hit
    return len(head or b"") + len(path) + len(index_path or "") + len(name) + len(error or "") + 400


def _reader_key(lf: LiveFile, entry: IndexEntry, dtype: DataType, options: dict | None) -> tuple:
    """Where :meth:`TableIndexHeads.index_reader` keeps a blob's reader."""
    return _head_key(lf), entry, dtype, tuple(sorted((options or {}).items()))


def reader_key(path: str, index_path: str | None, embedded: bool, entry: IndexEntry, dtype: DataType,
               options: dict | None) -> tuple:
    """:func:`_reader_key` of a blob given by its census columns (data file, ``.index`` file, whether
    the index is embedded), for a view that opens readers without a live file."""
    return (path, None if embedded else index_path), entry, dtype, tuple(sorted((options or {}).items()))


def _head_key(lf: LiveFile) -> tuple:
    """A file index container's identity: its ``.index`` file, or the data file it is embedded in."""
    return (lf.path, lf.index_path if lf.file.embedded_index is None else None)


@dataclass(frozen=True)
class KeptContainer:
    """A file's index container whose head and readers come from its table's caches
    (:meth:`TableIndexHeads.index_container`); it answers as :class:`FileIndexContainer` does."""

    table: TableIndexHeads
    file: LiveFile
    head: ContainerHead

    def reader(self, entry: IndexEntry, dtype: DataType, options: dict | None = None):
        return self.table.index_reader(self.file, entry, dtype, options)

    def prefetch(self, columns: Iterable[str]) -> None:
        """Nothing to fetch ahead: kept readers have read their bytes."""


class TableIndexHeads:
    """File-index reads of :class:`~indexcore.warehouse.table.Table`."""

    def prefetch(self, files: Iterable[LiveFile], index: bool = True, dv: bool = True,
                 data: bool = False) -> int:
        """Fetch the ``.index`` files, deletion-vector ranges (and data files) of ``files`` concurrently.

        On an object store this turns a walk over many files into rounds of parallel requests
        (one per ``.index`` head, one per DV file spanning its needed ranges, one per data
        file); the walk then reads from the storage cache. Nothing happens on local storage.
        """
        storage = self.storage
        if storage.cache is None:
            return 0
        fetches = []
        spans: dict[str, list[int]] = {}
        for lf in files:
            if index and lf.index_path and lf.file.embedded_index is None:
                fetches.append(Fetch(lf.index_path, 0, max(storage.readahead, 1) * 4))
            if data:
                fetches.append(Fetch(lf.path))
            r = lf.deletion_vector
            if dv and r is not None and lf.dv_file_path:
                lo_hi = spans.setdefault(lf.dv_file_path, [r.offset, r.offset + r.length + 8])
                lo_hi[0] = min(lo_hi[0], r.offset)
                lo_hi[1] = max(lo_hi[1], r.offset + r.length + 8)
        fetches += [Fetch(path, lo, hi) for path, (lo, hi) in spans.items()]
        return storage.prefetch(fetches)

    def prefetch_batch(self, data: bool = False) -> int:
        """Files :meth:`iter_prefetched` fetches ahead at once (fewer when it reads whole data files)."""
        return max(self.storage.concurrency * (1 if data else 8), 1)

    def iter_prefetched(self, files: Iterable[LiveFile], index: bool = True, dv: bool = True,
                        data: bool = False) -> Iterator[LiveFile]:
        """``files`` in order, each batch :meth:`prefetch`-ed before it is yielded (bounded memory)."""
        files = list(files)
        step = self.prefetch_batch(data)
        for i in range(0, len(files), step):
            batch = files[i:i + step]
            self.prefetch(batch, index=index, dv=dv, data=data)
            yield from batch

    def iter_index_heads(self, files: Iterable[LiveFile]) -> Iterator[tuple[LiveFile, object, str | None]]:
        """(file, container head, error) for each file with a file index, reading heads only.

        What work over a few files' indexes needs (their entries, without a reader per blob);
        ``head`` is None when ``error`` says why it is unreadable. Parsed heads are kept per file
        (bounded), over the kept head bytes of :meth:`iter_head_bytes`.
        """
        files = [lf for lf in files if lf.has_file_index]
        heads = self.caches.heads
        hits = [heads.get(_head_key(lf)) for lf in files]
        fresh = self._parsed(self.iter_head_bytes([lf for lf, hit in zip(files, hits, strict=True) if hit is None]))
        for lf, hit in zip(files, hits, strict=True):
            yield (lf, *hit) if hit is not None else next(fresh)

    def _parsed(self, raw: Iterable[tuple]) -> Iterator[tuple[LiveFile, object, str | None]]:
        """:meth:`iter_head_bytes` rows parsed into heads, each kept."""
        for lf, head, size, name, error in raw:
            if error is None:
                try:
                    hit = (parse_head(head, size, name), None)
                except IndexCoreError as exc:
                    hit = (None, str(exc))
            else:
                hit = (None, error)
            self.caches.heads.put(_head_key(lf), hit)
            yield lf, *hit

    def iter_head_bytes(self, files: Iterable[LiveFile]) -> Iterator[tuple[LiveFile, bytes | None, int, str,
                                                                          str | None]]:
        """(file, head bytes, container size, container name, error) for each file with a file index
        (:meth:`iter_source_heads` of each)."""
        files = [lf for lf in files if lf.has_file_index]
        for lf, hit in zip(files, self.iter_source_heads([head_source(lf) for lf in files]), strict=True):
            yield lf, *hit

    def iter_source_heads(self, sources: Iterable[HeadSource]) -> Iterator[tuple[bytes | None, int, str,
                                                                               str | None]]:
        """(head bytes, container size, container name, error) for each of ``sources``: each head
        checked (magic, version, length) but not parsed, for a census that reads 50,000 of them
        column-wise (:func:`~indexcore.formats.container.head_spans`) without an object per entry.
        Kept per file (bounded by bytes), so the views and pages that walk the same snapshot read
        each container head once; uncached ``.index`` heads are read a batch at a time
        (:meth:`Storage.read_prefixes`, prefetched concurrently on object stores).
        """
        step = self.head_batch_size()
        pending = iter(sources)  # taken a batch at a time: a census makes its sources as it goes
        while batch := list(islice(pending, step)):
            yield from self.head_batch([s.path for s in batch], [s.index_path for s in batch],
                                       [s.embedded for s in batch])

    def head_batch_size(self) -> int:
        """Containers :meth:`head_batch` is best given at once (their reads made side by side)."""
        return max(self.storage.concurrency * 8, 256)

    def head_batch(self, paths: Sequence[str], index_paths: Sequence[str | None],
                   embedded: Sequence[bytes | None]) -> list[tuple[bytes | None, int, str, str | None]]:
        """:meth:`iter_source_heads` of one batch given as columns (data file path, ``.index`` path,
        embedded index bytes per file): no :class:`HeadSource` per file, for a census of 50,000. The
        ``.index`` heads not kept are read in one :meth:`Storage.read_prefixes` call."""
        kept = self.caches.head_bytes
        out: list = [None] * len(paths)
        missed = []  # the on-disk containers whose head is not kept
        for i, inline in enumerate(embedded):
            if inline is None:
                hit = kept.get((paths[i], index_paths[i]))
                if hit is None:
                    missed.append(i)
                else:
                    out[i] = hit
        if missed:
            storage = self.storage
            wanted = [index_paths[i] for i in missed]
            if storage.cache is not None:
                storage.prefetch([Fetch(p, 0, max(storage.readahead, 1) * 4) for p in wanted])
            for i, read in zip(missed, storage.read_prefixes(wanted, HEAD_PREFETCH_BYTES), strict=True):
                hit = self._head_hit(paths[i], index_paths[i], None, read)
                kept.put((paths[i], index_paths[i]), hit, _weight(paths[i], index_paths[i], hit))
                out[i] = hit
        for i, inline in enumerate(embedded):
            if inline is not None:  # a slice of manifest bytes the plan holds: cut again, not kept
                out[i] = self._head_hit(paths[i], index_paths[i], inline, None)
        return out

    def keep_read_heads(self, paths: Sequence[str], index_paths: Sequence[str],
                        reads: Sequence[tuple | IndexCoreError]) -> None:
        """Keep the heads of ``.index`` files a caller read itself (``reads``: :meth:`Storage.read_prefixes`
        of ``index_paths``, e.g. whole, for their blobs too) where :meth:`head_batch` finds them, as it
        would have read them: each file is read once for its head and its blobs."""
        kept = self.caches.head_bytes
        for path, index_path, read in zip(paths, index_paths, reads, strict=True):
            if kept.get((path, index_path)) is None:
                hit = self._head_hit(path, index_path, None, read)
                kept.put((path, index_path), hit, _weight(path, index_path, hit))

    def _head_hit(self, path: str, index_path: str | None, inline: bytes | None,
                  read: tuple | IndexCoreError | None) -> tuple[bytes | None, int, str, str | None]:
        """(head bytes, container size, name, error) of one container, from its embedded bytes
        ``inline`` or the prefix ``read`` of its ``.index`` file."""
        if inline is None and read is not None and not isinstance(read, IndexCoreError):
            data, size, name = read
            head = well_formed_head(data, size)
            if head is not None:
                return head, size, name, None
        try:
            head, size, name = self._container_head_bytes(HeadSource(path, index_path, inline), read)
            return head, size, name, None
        except IndexCoreError as exc:
            return None, 0, index_path or path, str(exc)

    def _container_head_bytes(self, src: HeadSource, prefix: tuple | IndexCoreError | None = None
                              ) -> tuple[bytes, int, str]:
        """A file's container head bytes, its container's size and name: from the manifest's bytes,
        or from the first bytes of its ``.index`` file (``prefix``: :meth:`Storage.read_prefixes`
        of it, read here when None); a head longer than that is read in full."""
        embedded = src.embedded
        if embedded is not None:
            data, size, name = embedded, len(embedded), f"{src.path} (embedded file index)"
        else:
            if prefix is None:
                prefix = self.storage.read_prefix(src.index_path, HEAD_PREFETCH_BYTES)
            if isinstance(prefix, IndexCoreError):
                raise prefix
            data, size, name = prefix
        head = head_bytes(data, size, name)
        if head is None:  # longer than the prefix read
            source = self._container_source(src, keep_descriptor=False)
            head = source.read(0, head_length(data, size, name), HEAD_STRUCTURE)
        return head, size, name

    def index_container(self, lf: LiveFile) -> KeptContainer:
        """A file's index container read through the table's caches: its head kept per file, each
        blob's reader kept within the reader budget (:meth:`index_reader`). For work that asks the
        same files many times (trying candidate predicates); a bytes count taken around it sees
        only what was not read before. An unreadable head raises :class:`CorruptFileError`."""
        for _lf, head, error in self.iter_index_heads([lf]):
            if head is None:
                raise CorruptFileError(error or "unreadable file index", file=lf.index_path or lf.path,
                                       structure="file index container")
            return KeptContainer(self, lf, head)
        raise IndexCoreError(f"{lf.path} has no file index")

    def index_reader(self, lf: LiveFile, entry: IndexEntry, dtype: DataType, options: dict | None):
        """The reader of one blob of a file's index container, kept while it fits the table's reader
        budget: the views and metrics of one page that walk the same files (summaries, values,
        lookups) then open and decode each blob once. A kept reader holds no file descriptor
        between reads. An error opening it is raised, not kept."""

        key = _reader_key(lf, entry, dtype, options)
        reader = self.caches.readers.get(key)
        if reader is None:
            source = self.file_index_source(lf, keep_descriptor=False)
            reader = FileIndexContainer(source, None).reader(entry, dtype, options)
            self.caches.readers.put(key, reader, max(entry.length, 1))
        return reader

    def keep_index_reader(self, lf: LiveFile, entry: IndexEntry, dtype: DataType, options: dict | None,
                          blob: bytes, name: str) -> None:
        """Open the reader :meth:`index_reader` would, on the blob's bytes the caller read with its
        whole container (``name``: the container's), and keep it there; an error opening it is left
        for :meth:`index_reader` to raise."""
        key = _reader_key(lf, entry, dtype, options)
        if self.caches.readers.get(key) is None:
            source = BytesSource(blob, f"{name}#{entry.column}.{entry.index_type}", self.storage.stats)
            try:
                reader = open_reader(entry.index_type, dtype, source, options or {})
            except IndexCoreError:
                return
            self.caches.readers.put(key, reader, max(entry.length, 1))

    def keep_readers(self, kept: list[tuple[tuple, object, int]]) -> None:
        """Keep readers, each ``(key, reader, length)`` opened on a blob of ``length`` bytes, where
        :meth:`index_reader` finds them (``key``: :func:`reader_key`; one already kept stays), under
        one taking of the cache's lock (a page keeps thousands)."""
        self.caches.readers.put_many(((key, reader, max(length, 1)) for key, reader, length in kept), replace=False)

    def file_index_source(self, live_file: LiveFile, keep_descriptor: bool = True) -> ByteSource | None:
        """The file's file-index bytes: embedded in the manifest, or its ``.index`` file."""
        return self._container_source(head_source(live_file), keep_descriptor)

    def _container_source(self, src: HeadSource, keep_descriptor: bool = True) -> ByteSource | None:
        if src.embedded is not None:
            return BytesSource(src.embedded, name=f"{src.path} (embedded file index)", stats=self.storage.stats)
        if src.index_path:
            return self.storage.open(src.index_path, keep_descriptor=keep_descriptor)
        return None

