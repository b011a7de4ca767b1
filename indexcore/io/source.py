"""Byte sources: a random-access, read-only view of one file (or of bytes in memory), the
byte ranges they keep, read-ahead of heads, and what was read.

Every higher layer reads through a :class:`ByteSource`, so "bytes read" and "requests" can be
reported for any decision (a V2 bitmap lookup, a DV decode, an explain over a table).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field

import fsspec
from fsspec.implementations.local import LocalFileSystem

from indexcore.cache import LRU
from indexcore.config import settings
from indexcore.errors import CorruptFileError, IndexCoreError, StorageError

# what a source without a shared cache keeps of its own reads, and the file sizes a cache keeps
PRIVATE_CACHE_BYTES = 16 << 20
SIZES_KEPT = 100_000
# local descriptors a Storage keeps open between reads
DESCRIPTORS_KEPT = 64
# opening a file without following a symlink (absent on Windows, where every file takes the full check)
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)

@dataclass
class ReadStats:
    """Bytes and requests actually read; shared by every source opened from one place."""

    bytes_read: int = 0
    requests: int = 0
    # bytes handed to readers, from storage or from what was already fetched: what a decision
    # needed, the same whether or not a prefetch or the cache had the bytes already
    bytes_served: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, nbytes: int, requests: int = 1) -> None:
        with self._lock:
            self.bytes_read += nbytes
            self.requests += requests

    def served(self, nbytes: int) -> None:
        with self._lock:
            self.bytes_served += nbytes

    def add_served(self, nbytes: int) -> None:
        """``nbytes`` read and handed to a reader at once, without a request (bytes in memory)."""
        with self._lock:
            self.bytes_read += nbytes
            self.bytes_served += nbytes

    def snapshot(self) -> tuple[int, int]:
        return self.bytes_read, self.requests


class RangeCache:
    """Byte ranges of immutable files, keyed by path, least recently used out past ``max_bytes``
    (a :class:`~indexcore.cache.LRU` weighed by bytes; a range larger than the budget is not kept).

    Also remembers file sizes learned on the way (up to ``SIZES_KEPT`` files), so opening a
    cached file needs no request.
    """

    def __init__(self, max_bytes: int = 256 << 20):
        self.max_bytes = max_bytes
        self._ranges = LRU(max_bytes, evicted=self._forget)
        self._starts: dict[str, set[int]] = {}  # path -> starts of its kept ranges, kept with them
        self._sizes = LRU(SIZES_KEPT)
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Bytes held."""
        return self._ranges.weight

    def _forget(self, key: tuple[str, int], data: bytes) -> None:
        path, start = key
        starts = self._starts[path]
        starts.discard(start)
        if not starts:
            del self._starts[path]

    def get(self, key: str, offset: int, length: int, prefix: bool = False) -> bytes | None:
        """The bytes at ``[offset, offset + length)``; with ``prefix``, the longest cached start."""
        best = None
        ranges = self._ranges
        with self._lock:
            for start in self._starts.get(key, ()):
                data = ranges.peek((key, start))
                if start <= offset < start + len(data):
                    ranges.get((key, start))  # recently used
                    if offset + length <= start + len(data):
                        if start == offset and length == len(data):
                            return data
                        return data[offset - start:offset - start + length]
                    if prefix and (best is None or start + len(data) - offset > len(best)):
                        best = data[offset - start:]
        return best

    def put(self, key: str, start: int, data: bytes) -> None:
        if not data or len(data) > self.max_bytes:
            return
        with self._lock:
            old = self._ranges.peek((key, start))
            if old is not None and len(old) > len(data):
                data = old
            self._starts.setdefault(key, set()).add(start)
            self._ranges.put((key, start), data, len(data))

    def size(self, key: str) -> int | None:
        return self._sizes.peek(key)

    def set_size(self, key: str, size: int) -> None:
        self._sizes.put(key, size)


class ByteSource:
    """A random-access, read-only view of one file (or of bytes in memory).

    ``readahead`` is the size hint a format reader uses to fetch a head in one request
    (:meth:`prefetch`); 0 reads exactly the bytes asked for. Ranges fetched are kept in a
    :class:`RangeCache` when the source has one, so later reads inside them cost no request.
    """

    name: str
    size: int
    stats: ReadStats
    readahead: int = 0
    _cache: RangeCache | None = None
    _key: str = ""

    def _read(self, offset: int, length: int) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def _cached(self, offset: int, length: int, prefix: bool = False) -> bytes | None:
        return self._cache.get(self._key, offset, length, prefix) if self._cache is not None else None

    def _keep(self, offset: int, data: bytes) -> None:
        if self._cache is None:
            self._cache = RangeCache(PRIVATE_CACHE_BYTES)
        self._cache.put(self._key, offset, data)

    requests_per_read = 1

    def _fetch(self, offset: int, length: int) -> bytes:
        data = self._read(offset, length)
        self.stats.add(len(data), self.requests_per_read)
        if self._cache is not None:
            self._cache.put(self._key, offset, data)
        return data

    def read(self, offset: int, length: int, structure: str = "bytes") -> bytes:
        """Exactly ``length`` bytes at ``offset``; a short or out-of-range read is corruption."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(
                f"needs {length} bytes but the file has {max(self.size - max(offset, 0), 0)} left",
                file=self.name, structure=structure, offset=offset)
        if length == 0:
            return b""
        data = self._cached(offset, length)
        if data is None:
            head = self._cached(offset, length, prefix=True)
            if head:  # the start is held already: fetch only the rest
                data = head + self._fetch(offset + len(head), length - len(head))
            else:
                data = self._fetch(offset, length)
        if len(data) != length:
            raise CorruptFileError(f"short read: wanted {length} bytes, got {len(data)}",
                                   file=self.name, structure=structure, offset=offset)
        self.stats.served(length)
        return data

    def prefetch(self, offset: int, length: int) -> None:
        """Fetch ``[offset, offset + length)`` (clipped to the file) in one request and keep it."""
        offset = max(offset, 0)
        length = min(length, self.size - offset)
        if length <= 0 or self._cached(offset, length) is not None:
            return
        data = self._read(offset, length)
        self.stats.add(len(data), self.requests_per_read)
        self._keep(offset, data)

    def read_ahead(self, offset: int = 0, length: int = 0) -> None:
        """Fetch a head at ``offset`` in one request: ``readahead`` bytes, or ``length`` if longer.

        A reader calls it once with no length, then again with the head's real length once it
        knows it (nothing is read when the first window already holds it). No-op when
        ``readahead`` is 0 (local files and memory: exact reads cost nothing).
        """
        if self.readahead > 0:
            self.prefetch(offset, max(length, self.readahead))

    def read_all(self, structure: str = "file") -> bytes:
        return self.read(0, self.size, structure)

    def keep(self, offset: int, data: bytes) -> None:
        """Bytes of this file at ``offset`` already read elsewhere: later reads inside them cost no request."""
        if data:
            self._keep(offset, data)

    def fetched(self, offset: int, length: int) -> bytes:
        """``[offset, offset + length)`` (clipped to the file) in at most one request, counted as read
        but not as served: for a caller that hands the bytes on to readers that count what they use."""
        offset = max(offset, 0)
        length = min(length, self.size - offset)
        if length <= 0:
            return b""
        data = self._cached(offset, length)
        return data if data is not None else self._fetch(offset, length)

    def slice(self, offset: int, length: int, name: str | None = None) -> ByteSource:
        """A window of this source; reads through it are counted on the same stats."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(f"window of {length} bytes does not fit in {self.size}",
                                   file=self.name, structure="slice", offset=offset)
        return SliceSource(self, offset, length, name)


class BytesSource(ByteSource):
    """Bytes already in memory (golden blobs, blobs embedded in a manifest, a whole ``.index`` file
    read in one request): bytes are counted, requests are not (nothing goes to storage).

    ``base``/``size`` make it a window of ``data``: :meth:`slice` gives such a window over the same
    bytes (no copy, no chain of sources), and a read is one bounds check and one slice.
    """

    requests_per_read = 0

    def __init__(self, data: bytes, name: str = "<memory>", stats: ReadStats | None = None,
                 readahead: int = 0, base: int = 0, size: int | None = None):
        # bytes are immutable, so they are kept as given; anything else is copied once
        self._bytes = data if type(data) is bytes else bytes(data)
        self._base = base
        self.name = name
        self.size = len(self._bytes) - base if size is None else size
        self.stats = stats if stats is not None else ReadStats()
        self.readahead = readahead

    def _read(self, offset: int, length: int) -> bytes:
        start = self._base + offset
        if start == 0 and length == len(self._bytes):
            return self._bytes
        return self._bytes[start:start + length]

    def read(self, offset: int, length: int, structure: str = "bytes") -> bytes:
        if self._cache is not None or offset < 0 or length <= 0 or offset + length > self.size:
            return super().read(offset, length, structure)  # errors, empty reads, a kept prefetch
        start = self._base + offset
        data = self._bytes if start == 0 and length == len(self._bytes) else self._bytes[start:start + length]
        self.stats.add_served(length)
        return data

    def slice(self, offset: int, length: int, name: str | None = None) -> ByteSource:
        if offset < 0 or length < 0 or offset + length > self.size:
            return super().slice(offset, length, name)  # the error
        return BytesSource(self._bytes, name or self.name, self.stats, self.readahead, self._base + offset, length)


class SliceSource(ByteSource):
    def __init__(self, parent: ByteSource, offset: int, length: int, name: str | None = None):
        self._parent, self._base = parent, offset
        self.name = name or parent.name
        self.size = length
        self.stats = parent.stats
        self.readahead = parent.readahead

    def _read(self, offset: int, length: int) -> bytes:
        return self._parent._read(self._base + offset, length)

    def _cached(self, offset: int, length: int, prefix: bool = False) -> bytes | None:
        return self._parent._cached(self._base + offset, length, prefix)

    def _keep(self, offset: int, data: bytes) -> None:
        self._parent._keep(self._base + offset, data)

    def _fetch(self, offset: int, length: int) -> bytes:
        return self._parent._fetch(self._base + offset, length)

    def prefetch(self, offset: int, length: int) -> None:
        offset = max(offset, 0)
        self._parent.prefetch(self._base + offset, min(length, self.size - offset))


@contextlib.contextmanager
def storage_errors(name: str, doing: str, offset: int | None = None):
    """An OS error while ``doing`` (open, read) a file, as our StorageError naming the file; so is
    a backend's own exception (botocore's ``EndpointConnectionError`` is no OSError), summarised."""
    try:
        yield
    except IndexCoreError:
        raise
    except OSError as exc:
        raise storage_error(exc, name, doing, offset) from exc
    except Exception as exc:  # the with-blocks hold one backend call each: this is the backend's
        raise backend_error(doing, exc, name, offset) from exc


def storage_error(exc: OSError, name: str, doing: str, offset: int | None = None) -> StorageError:
    """Our StorageError for an OS error while ``doing`` (open, read) the file ``name``."""
    if isinstance(exc, FileNotFoundError):
        return StorageError("file not found", file=name)
    return backend_error(doing, exc, name, offset)


BACKEND_FAILED = "the storage backend failed"


def backend_error(doing: str, exc: BaseException, file: str | None = None,
                  offset: int | None = None) -> StorageError:
    """A storage backend's failure while ``doing`` (open, read, list), summarised: one fixed
    sentence whatever the failure (a refused connection reads as a denied or broken request), the
    backend's exception and text kept in ``detail`` for the operator, never in the message."""
    return StorageError(f"cannot {doing}: {BACKEND_FAILED}", file=file, offset=offset,
                        detail=f"{type(exc).__name__}: {exc}")


def pread_fully(fd: int, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` (fewer only at the end of the file)."""
    data = os.pread(fd, length, offset)
    if len(data) == length or not data:
        return data
    parts = [data]
    got = len(data)
    while got < length:
        more = os.pread(fd, length - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class Descriptors:
    """A budget of local file descriptors that FileSources keep open between reads, owned by
    whoever opens them (each :class:`~indexcore.io.storage.Storage` has one of ``limit``).

    Holding the descriptor makes a ranged read one ``pread`` instead of an fsspec open/seek/close;
    past the budget (many sources alive at once) a source opens the file for each read instead.
    """

    def __init__(self, limit: int = DESCRIPTORS_KEPT) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self.held = 0

    def acquire(self) -> bool:
        with self._lock:
            if self.held >= self.limit:
                return False
            self.held += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.held -= 1


class FileSource(ByteSource):
    """A file on any fsspec filesystem, opened read-only; each read is one ranged request.

    Local files are read with ``os.pread`` on a descriptor kept while the source lives (within
    ``descriptors``, the opener's :class:`Descriptors` budget, else one of the source's own;
    ``keep_descriptor=False`` for a source kept long in a cache, which opens the file for each
    read instead); other filesystems go through fsspec's ``cat_file``.
    """

    _fd: int | None = None
    _keep_fd = True

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str, name: str | None = None,
                 size: int | None = None, stats: ReadStats | None = None,
                 cache: RangeCache | None = None, readahead: int | None = None, keep_descriptor: bool = True,
                 descriptors: Descriptors | None = None):
        self.fs, self.path = fs, path
        self._keep_fd = keep_descriptor
        self.name = name or path
        self.stats = stats if stats is not None else ReadStats()
        self._local = isinstance(fs, LocalFileSystem)
        self._os_path = fs._strip_protocol(path) if self._local and ":" in path else path
        self._cache, self._key = cache, path
        if readahead is None:
            readahead = 0 if self._local else settings().readahead
        self.readahead = readahead
        self._descriptors = descriptors if descriptors is not None or not self._local else Descriptors(1)
        if size is None and cache is not None:
            size = cache.size(path)
        with storage_errors(self.name, "open"):
            if self._local and size is None:
                self._open_local()
                size = os.fstat(self._fd).st_size if self._fd is not None else None
            self.size = int(size if size is not None else fs.size(path))
            if cache is not None:
                cache.set_size(path, self.size)

    def _open_local(self) -> None:
        if self._keep_fd and self._descriptors.acquire():
            try:
                self._fd = os.open(self._os_path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except BaseException:
                self._descriptors.release()
                raise

    def __getstate__(self) -> dict:
        # a descriptor means nothing in another process, and two owners would close it twice
        state = dict(self.__dict__)
        state.pop("_fd", None)
        return state

    def close(self) -> None:
        """Let go of a kept descriptor (reads after this reopen the file)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            self._descriptors.release()
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError, TypeError):
            self.close()

    def _pread(self, offset: int, length: int) -> bytes:
        if self._fd is None:
            self._open_local()
        if self._fd is not None:
            return pread_fully(self._fd, offset, length)
        with open(self._os_path, "rb", buffering=0) as f:
            return pread_fully(f.fileno(), offset, length)

    def _read(self, offset: int, length: int) -> bytes:
        with storage_errors(self.name, "read", offset):
            if self._local:
                return self._pread(offset, length)
            return self.fs.cat_file(self.path, start=offset, end=offset + length)

