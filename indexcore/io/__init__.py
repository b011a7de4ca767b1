"""Storage layer: read-only fsspec files, byte ranges, and a count of what was read.

Every higher layer reads through a :class:`ByteSource`, so "bytes read" and "requests" can be
reported for any decision (a V2 bitmap lookup, a DV decode, an explain over a table).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import fsspec
from fsspec.core import split_protocol, url_to_fs
from fsspec.implementations.local import LocalFileSystem

from indexcore.cache import LRU, env_int
from indexcore.config import parse_pairs
from indexcore.errors import CorruptFileError, IndexCoreError, StorageError
from indexcore.io.roots import Layer, Roots, canonical_protocol, normalize_path, refused


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

    def snapshot(self) -> tuple[int, int]:
        return self.bytes_read, self.requests


class RangeCache:
    """Byte ranges of immutable files, keyed by path, least recently used out past ``max_bytes``.

    Also remembers file sizes learned on the way, so opening a cached file needs no request.
    """

    def __init__(self, max_bytes: int = 256 << 20):
        self.max_bytes = max_bytes
        self.held = 0
        self._ranges: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._starts: dict[str, set[int]] = {}
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, offset: int, length: int, prefix: bool = False) -> bytes | None:
        """The bytes at ``[offset, offset + length)``; with ``prefix``, the longest cached start."""
        best = None
        with self._lock:
            for start in self._starts.get(key, ()):
                data = self._ranges[(key, start)]
                if start <= offset < start + len(data):
                    self._ranges.move_to_end((key, start))
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
            old = self._ranges.pop((key, start), None)
            if old is not None:
                self.held -= len(old)
                if len(old) > len(data):
                    data = old
            self._ranges[(key, start)] = data
            self._starts.setdefault(key, set()).add(start)
            self.held += len(data)
            while self.held > self.max_bytes:
                (k, s), dropped = self._ranges.popitem(last=False)
                self.held -= len(dropped)
                starts = self._starts[k]
                starts.discard(s)
                if not starts:
                    del self._starts[k]

    def size(self, key: str) -> int | None:
        with self._lock:
            return self._sizes.get(key)

    def set_size(self, key: str, size: int) -> None:
        with self._lock:
            self._sizes[key] = size
            while len(self._sizes) > 100_000:
                self._sizes.popitem(last=False)


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

    def slice(self, offset: int, length: int, name: str | None = None) -> ByteSource:
        """A window of this source; reads through it are counted on the same stats."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(f"window of {length} bytes does not fit in {self.size}",
                                   file=self.name, structure="slice", offset=offset)
        return SliceSource(self, offset, length, name)


class BytesSource(ByteSource):
    """Bytes already in memory (golden blobs, blobs embedded in a manifest): bytes are counted,
    requests are not (nothing goes to storage)."""

    requests_per_read = 0

    def __init__(self, data: bytes, name: str = "<memory>", stats: ReadStats | None = None,
                 readahead: int = 0):
        # bytes are immutable, so they are kept as given; anything else is copied once
        self._bytes = data if type(data) is bytes else bytes(data)
        self.name = name
        self.size = len(self._bytes)
        self.stats = stats if stats is not None else ReadStats()
        self.readahead = readahead

    def _read(self, offset: int, length: int) -> bytes:
        if offset == 0 and length == self.size:
            return self._bytes
        return self._bytes[offset:offset + length]


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
def _storage_errors(name: str, doing: str, offset: int | None = None):
    """An OS error while ``doing`` (open, read) a file, as our StorageError naming the file."""
    try:
        yield
    except OSError as exc:
        raise _storage_error(exc, name, doing, offset) from exc


def _storage_error(exc: OSError, name: str, doing: str, offset: int | None = None) -> StorageError:
    """Our StorageError for an OS error while ``doing`` (open, read) the file ``name``."""
    if isinstance(exc, FileNotFoundError):
        return StorageError("file not found", file=name)
    return StorageError(f"cannot {doing}: {exc}", file=name, offset=offset)


# opening a file without following a symlink (absent on Windows, where every file takes the full check)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _pread_fully(fd: int, offset: int, length: int) -> bytes:
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


class _Descriptors:
    """A process-wide cap on the local file descriptors that FileSources keep open between reads.

    Holding the descriptor makes a ranged read one ``pread`` instead of an fsspec open/seek/close;
    past the cap (many sources alive at once) a source opens the file for each read instead.
    """

    limit = 64

    def __init__(self) -> None:
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


_DESCRIPTORS = _Descriptors()


class FileSource(ByteSource):
    """A file on any fsspec filesystem, opened read-only; each read is one ranged request.

    Local files are read with ``os.pread`` on a descriptor kept while the source lives (within
    :class:`_Descriptors`' cap; ``keep_descriptor=False`` for a source kept long in a cache, which
    opens the file for each read instead); other filesystems go through fsspec's ``cat_file``.
    """

    _fd: int | None = None
    _keep_fd = True

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str, name: str | None = None,
                 size: int | None = None, stats: ReadStats | None = None,
                 cache: RangeCache | None = None, readahead: int | None = None, keep_descriptor: bool = True):
        self.fs, self.path = fs, path
        self._keep_fd = keep_descriptor
        self.name = name or path
        self.stats = stats if stats is not None else ReadStats()
        self._local = isinstance(fs, LocalFileSystem)
        self._os_path = fs._strip_protocol(path) if self._local and ":" in path else path
        self._cache, self._key = cache, path
        self.readahead = (0 if self._local else READAHEAD) if readahead is None else readahead
        if size is None and cache is not None:
            size = cache.size(path)
        with _storage_errors(self.name, "open"):
            if self._local and size is None:
                self._open_local()
                size = os.fstat(self._fd).st_size if self._fd is not None else None
            self.size = int(size if size is not None else fs.size(path))
            if cache is not None:
                cache.set_size(path, self.size)

    def _open_local(self) -> None:
        if self._keep_fd and _DESCRIPTORS.acquire():
            try:
                self._fd = os.open(self._os_path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except BaseException:
                _DESCRIPTORS.release()
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
            _DESCRIPTORS.release()
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError, TypeError):
            self.close()

    def _pread(self, offset: int, length: int) -> bytes:
        if self._fd is None:
            self._open_local()
        if self._fd is not None:
            return _pread_fully(self._fd, offset, length)
        with open(self._os_path, "rb", buffering=0) as f:
            return _pread_fully(f.fileno(), offset, length)

    def _read(self, offset: int, length: int) -> bytes:
        with _storage_errors(self.name, "read", offset):
            if self._local:
                return self._pread(offset, length)
            return self.fs.cat_file(self.path, start=offset, end=offset + length)


def _int_env(name: str, default: int) -> int:
    try:
        return max(int(os.environ.get(name, default)), 0)
    except ValueError:
        return default


# how many files are fetched at once, the head size hint, and the cache per warehouse
CONCURRENCY = _int_env("INDEXCORE_CONCURRENCY", 32) or 1
READAHEAD = _int_env("INDEXCORE_READAHEAD", 64 << 10)
CACHE_BYTES = _int_env("INDEXCORE_CACHE_BYTES", 256 << 20)
PRIVATE_CACHE_BYTES = 16 << 20
# files Paimon rewrites in place: never cached
MUTABLE_NAMES = frozenset({"LATEST", "EARLIEST"})
_default_options: dict = {}


def set_default_storage_options(options: dict | None) -> None:
    """Options every Storage of this process gets when it is given none (``--storage-option``)."""
    _default_options.clear()
    _default_options.update(options or {})


def parse_storage_options(pairs: list[str] | tuple[str, ...] | None) -> dict:
    """``["k=v", ...]`` -> ``{k: v}``; ``true``/``false``/integers become bool/int, as fsspec expects."""
    return parse_pairs(pairs, "a storage option", StorageError, typed=True)


@dataclass(frozen=True)
class Fetch:
    """One ranged (or, with ``end=None``, whole-file) read for :meth:`Storage.fetch_many`."""

    path: str
    start: int = 0
    end: int | None = None


class Storage:
    """A read-only filesystem rooted at a warehouse URL; refuses paths outside its roots.

    ``allowed_roots`` (default: the warehouse itself) bound every path read, checked by
    :class:`~indexcore.io.roots.Roots` before anything is opened. Files of object stores are
    cached per Storage (immutable Paimon files; never ``LATEST``/``EARLIEST``), and
    :meth:`fetch_many` reads many files concurrently (``concurrency``, default 32).
    """

    def __init__(self, url: str, allowed_roots: list[str] | None = None, storage_options: dict | None = None,
                 concurrency: int | None = None, readahead: int | None = None,
                 cache_bytes: int | None = None):
        url = os.fspath(url)
        self.url = url
        self.storage_options = dict(_default_options if storage_options is None else storage_options)
        self.guard = Roots(list(allowed_roots) if allowed_roots else [url])
        self.guard.check(url)
        try:
            self.fs, root = url_to_fs(url, **self.storage_options)
        except (ValueError, ImportError, OSError) as exc:
            raise StorageError(f"cannot open {url!r}: {exc}") from exc
        self.protocol = canonical_protocol(
            self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0])
        self._local = isinstance(self.fs, LocalFileSystem)
        self.root = self._norm(root)
        self.stats = ReadStats()
        self.concurrency = max(int(concurrency or CONCURRENCY), 1)
        self.readahead = (0 if self._local else READAHEAD) if readahead is None else readahead
        size = CACHE_BYTES if cache_bytes is None else cache_bytes
        self.cache = RangeCache(size) if size > 0 and not self._local else None
        self.roots = [self.root]
        # raw parent directory -> its resolved form, for directories inside the allowed roots
        self._dirs = LRU(env_int("INDEXCORE_RESOLVED_DIRS", 4096))

    def _norm(self, path: str) -> str:
        path = self.fs._strip_protocol(path)
        return posixpath.normpath(path) if path else path

    @staticmethod
    def _under(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip("/") + "/")

    def resolve(self, path: str) -> str:
        """An absolute path on this filesystem, checked to lie under an allowed root.

        Relative paths are taken from the warehouse root; a path that names a protocol must be
        this filesystem's; local paths are checked with their symlinks resolved. A file in a
        directory already resolved and allowed costs one lookup (and, locally, one ``lstat``
        so a symlinked file is still followed): a walk over 50,000 files in a few hundred
        bucket directories resolves each directory once.
        """
        path = os.fspath(path)
        if "::" in path:
            raise refused(path)
        full = self._in_resolved_dir(path)
        if full is not None and not (self._local and os.path.islink(full)):
            return full
        parent, base = posixpath.split(path)
        full = self._resolve(path)
        if base and base not in (".", "..") and parent not in self._dirs:
            folder = posixpath.dirname(full)
            if self.guard.allows(Layer(self.protocol, normalize_path(self.protocol, folder))):
                self._dirs.put(parent, folder)
        return full

    def _in_resolved_dir(self, path: str, seen: dict[str, str | None] | None = None) -> str | None:
        """``path`` in its directory's resolved, allowed form when that directory was resolved
        before (None otherwise, or for ``.``, ``..`` and ``::`` chains); the file itself may
        still be a symlink, which the caller checks. ``seen``: a batch's own memo of directories
        looked up, sparing the shared cache's lock per file."""
        parent, base = posixpath.split(path)
        if not base or base in (".", "..") or "::" in path:
            return None
        if seen is None:
            allowed_dir = self._dirs.get(parent)
        else:
            allowed_dir = seen.get(parent)
            if allowed_dir is None:
                allowed_dir = seen[parent] = self._dirs.get(parent)
        if allowed_dir is None:
            return None
        return allowed_dir + base if allowed_dir.endswith("/") else f"{allowed_dir}/{base}"  # posixpath.join

    def _resolve(self, path: str) -> str:
        protocol, _ = split_protocol(path)
        if protocol is not None and canonical_protocol(protocol) != self.protocol:
            raise refused(path)
        stripped = self.fs._strip_protocol(path)
        if protocol is None and not self._absolute(stripped):
            stripped = posixpath.join(self.root, stripped)
        full = posixpath.normpath(stripped)
        if not self.guard.allows(Layer(self.protocol, normalize_path(self.protocol, full))):
            raise refused(path)
        return full

    def _absolute(self, path: str) -> bool:
        if self._local:
            return posixpath.isabs(path)
        # object stores have no leading slash: a path is absolute when it is inside the warehouse
        return self._under(posixpath.normpath(path), self.root) or any(
            self._under(posixpath.normpath(path), r.path) for r in self.guard.roots
            if r.protocol == self.protocol)

    def open(self, path: str, size: int | None = None, keep_descriptor: bool = True) -> FileSource:
        """A :class:`FileSource` on ``path`` (``keep_descriptor=False``: for a source that a cache
        keeps, so it holds none of the process's capped descriptors between reads)."""
        full = self.resolve(path)
        return FileSource(self.fs, full, name=self.display(full), size=size, stats=self.stats,
                          cache=self.cache, readahead=self.readahead, keep_descriptor=keep_descriptor)

    def read_prefix(self, path: str, length: int) -> tuple[bytes, int, str]:
        """The first ``length`` bytes of a file (fewer when it is shorter), its size and its name."""
        got = self.read_prefixes([path], length)[0]
        if isinstance(got, IndexCoreError):
            raise got
        return got

    def read_prefixes(self, paths: Sequence[str], length: int) -> list[tuple[bytes, int, str] | IndexCoreError]:
        """:meth:`read_prefix` of each path, in order; a file that cannot be read is its error.

        Local files take one ``open``/``fstat``/``pread`` each in one loop, without a
        :class:`FileSource` (a census reads 50,000 heads this way); a file of a directory already
        resolved and allowed is opened without following a symlink (no ``lstat`` per file), a
        symlinked one takes the full check of :meth:`resolve`. Other filesystems go through the
        cached, ranged path (prefetch concurrently first: :meth:`fetch_many`).
        """
        out: list[tuple[bytes, int, str] | IndexCoreError] = []
        if not self._local:
            for path in paths:
                try:
                    source = self.open(path)
                    source.prefetch(0, length)
                    out.append((source.read(0, min(length, source.size)), source.size, source.name))
                except IndexCoreError as exc:
                    out.append(exc)
            return out
        nbytes, reads = 0, 0
        folders: dict[str, str | None] = {}  # this batch's directories (a few hundred for 50,000 files)
        for path in paths:
            full, fd = None, -1
            try:
                full = self._in_resolved_dir(path, folders) if _NO_FOLLOW else None
                if full is not None:
                    try:
                        fd = os.open(full, os.O_RDONLY | _NO_FOLLOW)
                    except OSError as exc:
                        if exc.errno != errno.ELOOP:
                            raise
                if fd < 0:
                    full = self.resolve(path)
                    fd = os.open(full, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                try:
                    size = os.fstat(fd).st_size
                    data = _pread_fully(fd, 0, min(length, size))
                finally:
                    os.close(fd)
            except IndexCoreError as exc:
                out.append(exc)
                continue
            except OSError as exc:
                out.append(_storage_error(exc, self.display(full or path), "open" if fd < 0 else "read"))
                continue
            nbytes, reads = nbytes + len(data), reads + 1
            out.append((data, size, self.display(full)))
        self.stats.add(nbytes, reads)
        self.stats.served(nbytes)
        return out

    def read_bytes(self, path: str) -> bytes:
        """A whole file in one request (cached unless it is a ``LATEST``/``EARLIEST`` hint)."""
        full = self.resolve(path)
        if self._local:
            return self.open(full).read_all()
        mutable = posixpath.basename(full) in MUTABLE_NAMES
        if not mutable and self.cache is not None:
            size = self.cache.size(full)
            hit = self.cache.get(full, 0, size) if size is not None else None
            if hit is not None:
                return hit
        with _storage_errors(self.display(full), "read"):
            data = self.fs.cat_file(full)
        self.stats.add(len(data))
        if not mutable and self.cache is not None:
            self.cache.set_size(full, len(data))
            self.cache.put(full, 0, data)
        return data

    def note_size(self, path: str, size: int | None) -> None:
        """Remember a file's size known from metadata (an index manifest), sparing a request."""
        if self.cache is not None and size is not None and size >= 0:
            self.cache.set_size(self._norm(path), int(size))

    def exists(self, path: str) -> bool:
        try:
            return self.fs.exists(self.resolve(path))
        except OSError:
            return False

    def listdir(self, path: str) -> list[dict]:
        """Entries (``name``, ``type``, ``size``) under a directory; empty if it is missing."""
        try:
            entries = self.fs.ls(self.resolve(path), detail=True)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list: {exc}", file=path) from exc
        if self.cache is not None:
            for e in entries:
                if e.get("type") == "file" and e.get("size") is not None:
                    self.cache.set_size(self._norm(e["name"]), int(e["size"]))
        return entries

    def created(self, path: str, entry: dict | None = None) -> _dt.datetime | None:
        """When a folder (or file) was made, naive UTC: its own time, else its oldest object's.

        Object stores keep no folders, so a folder's time there is the earliest ``LastModified``
        of what lies under it (one listing); local folders carry their own ``mtime``.
        """
        own = modified_time(entry) if entry is not None else None
        if own is not None:
            return own
        try:
            found = self.fs.find(self.resolve(path), detail=True)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot list: {exc}", file=path) from exc
        times = [t for t in map(modified_time, found.values()) if t is not None]
        return min(times, default=None)

    def display(self, full: str) -> str:
        return full if self.protocol == "file" else f"{self.protocol}://{full}"

    # -- many files at once -----------------------------------------------------------------
    def fetch_many(self, fetches: list[Fetch]) -> list[bytes | BaseException]:
        """Each fetch's bytes (or the error it met), read ``concurrency`` at a time.

        Async backends (s3fs, gcsfs, adlfs...) get one ``cat_ranges`` batch; others a bounded
        thread pool. Every fetch is one request, counted on :attr:`stats`.
        """
        if not fetches:
            return []
        try:
            fulls = [self.resolve(f.path) for f in fetches]
        except StorageError as exc:
            return [exc] * len(fetches)
        if getattr(self.fs, "async_impl", False) and len(fetches) > 1:
            out = self._fetch_async(fetches, fulls)
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(fetches))) as pool:
                out = list(pool.map(self._fetch_one, fulls, fetches))
        for data in out:
            if isinstance(data, bytes):
                self.stats.add(len(data))
        return out

    def _fetch_one(self, full: str, f: Fetch) -> bytes | BaseException:
        try:
            if self._local:
                with open(self.fs._strip_protocol(full), "rb") as fh:
                    fh.seek(f.start)
                    return fh.read() if f.end is None else fh.read(f.end - f.start)
            return self.fs.cat_file(full, start=f.start if f.end is not None else None, end=f.end)
        except (OSError, ValueError) as exc:
            return exc

    def _fetch_async(self, fetches: list[Fetch], fulls: list[str]) -> list[bytes | BaseException]:
        ends = [f.end if f.end is not None else None for f in fetches]
        starts = [f.start if f.end is not None else None for f in fetches]
        try:
            got = self.fs.cat_ranges(fulls, starts, ends, on_error="return", batch_size=self.concurrency)
        except (OSError, ValueError) as exc:
            return [exc] * len(fetches)
        return [g if isinstance(g, bytes | BaseException) else OSError(str(g)) for g in got]

    def prefetch(self, fetches: list[Fetch]) -> int:
        """Fetch files or ranges concurrently into the cache, so later reads cost no request.

        A whole-file fetch (or one that came back short) also records the file's size. Errors
        are left for the later read to report. Returns how many fetches succeeded.
        """
        if self.cache is None or not fetches:
            return 0
        todo = []
        for f in fetches:
            full = self.resolve(f.path) if "::" not in f.path else None
            if full is None or posixpath.basename(full) in MUTABLE_NAMES:
                continue
            size = self.cache.size(full)
            end = size if f.end is None else f.end if size is None else min(f.end, size)
            if end is not None and self.cache.get(full, f.start, end - f.start) is not None:
                continue
            todo.append(Fetch(full, f.start, f.end))
        ok = 0
        for f, data in zip(todo, self.fetch_many(todo), strict=True):
            if not isinstance(data, bytes):
                continue
            ok += 1
            self.cache.put(f.path, f.start, data)
            if f.end is None or (f.start == 0 and len(data) < f.end - f.start):
                self.cache.set_size(f.path, f.start + len(data))
        return ok


def open_file(path_or_url: str, storage_options: dict | None = None,
              allowed_roots: list[str] | None = None) -> FileSource:
    """Open one file read-only, for the CLI commands that take a single FILE."""
    text = os.fspath(path_or_url)
    if allowed_roots:
        Roots(list(allowed_roots)).check(text)
    options = dict(_default_options if storage_options is None else storage_options)
    try:
        fs, path = url_to_fs(text, **options)
    except (ValueError, ImportError, OSError) as exc:
        raise StorageError(f"cannot open {path_or_url!r}: {exc}") from exc
    return FileSource(fs, path, name=text)


def modified_time(entry: dict) -> _dt.datetime | None:
    """An fsspec listing entry's modification time as naive UTC (``mtime``, ``LastModified``, ...)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        when = entry.get(key)
        if isinstance(when, int | float) and when > 0:
            return _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=float(when))
        if isinstance(when, str):
            try:
                when = _dt.datetime.fromisoformat(when.replace("Z", "+00:00"))
            except ValueError:
                continue
        if isinstance(when, _dt.datetime):
            return when.astimezone(_dt.UTC).replace(tzinfo=None) if when.tzinfo else when
    return None
