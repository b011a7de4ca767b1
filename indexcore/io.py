"""Storage layer: read-only fsspec files, byte ranges, and a count of what was read.

Every higher layer reads through a :class:`ByteSource`, so "bytes read" and "requests" can be
reported for any decision (a V2 bitmap lookup, a DV decode, an explain over a table).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from dataclasses import dataclass, field

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from .errors import CorruptFileError, StorageError


@dataclass
class ReadStats:
    """Bytes and requests actually read; shared by every source opened from one place."""

    bytes_read: int = 0
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.bytes_read += nbytes
            self.requests += 1

    def snapshot(self) -> tuple[int, int]:
        return self.bytes_read, self.requests


class ByteSource:
    """A random-access, read-only view of one file (or of bytes in memory)."""

    name: str
    size: int
    stats: ReadStats

    def _read(self, offset: int, length: int) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def read(self, offset: int, length: int, structure: str = "bytes") -> bytes:
        """Exactly ``length`` bytes at ``offset``; a short or out-of-range read is corruption."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(
                f"needs {length} bytes but the file has {max(self.size - max(offset, 0), 0)} left",
                file=self.name, structure=structure, offset=offset)
        if length == 0:
            return b""
        data = self._read(offset, length)
        self.stats.add(len(data))
        if len(data) != length:
            raise CorruptFileError(f"short read: wanted {length} bytes, got {len(data)}",
                                   file=self.name, structure=structure, offset=offset)
        return data

    def read_all(self, structure: str = "file") -> bytes:
        return self.read(0, self.size, structure)

    def slice(self, offset: int, length: int, name: str | None = None) -> ByteSource:
        """A window of this source; reads through it are counted on the same stats."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise CorruptFileError(f"window of {length} bytes does not fit in {self.size}",
                                   file=self.name, structure="slice", offset=offset)
        return SliceSource(self, offset, length, name)


class BytesSource(ByteSource):
    """Bytes already in memory (golden blobs, blobs embedded in a manifest)."""

    def __init__(self, data: bytes, name: str = "<memory>", stats: ReadStats | None = None):
        # bytes are immutable, so they are kept as given; anything else is copied once
        self._bytes = data if type(data) is bytes else bytes(data)
        self.name = name
        self.size = len(self._bytes)
        self.stats = stats if stats is not None else ReadStats()

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

    def _read(self, offset: int, length: int) -> bytes:
        return self._parent._read(self._base + offset, length)


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
    :class:`_Descriptors`' cap); other filesystems go through fsspec's ``cat_file``.
    """

    _fd: int | None = None

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str, name: str | None = None,
                 size: int | None = None, stats: ReadStats | None = None):
        self.fs, self.path = fs, path
        self.name = name or path
        self.stats = stats if stats is not None else ReadStats()
        self._local = isinstance(fs, LocalFileSystem)
        self._os_path = fs._strip_protocol(path) if self._local and ":" in path else path
        try:
            if self._local and size is None:
                self._open_local()
                size = os.fstat(self._fd).st_size if self._fd is not None else None
            self.size = int(size if size is not None else fs.size(path))
        except FileNotFoundError as exc:
            raise StorageError("file not found", file=self.name) from exc
        except OSError as exc:
            raise StorageError(f"cannot open: {exc}", file=self.name) from exc

    def _open_local(self) -> None:
        if _DESCRIPTORS.acquire():
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
        try:
            if self._local:
                return self._pread(offset, length)
            return self.fs.cat_file(self.path, start=offset, end=offset + length)
        except FileNotFoundError as exc:
            raise StorageError("file not found", file=self.name) from exc
        except OSError as exc:
            raise StorageError(f"cannot read: {exc}", file=self.name, offset=offset) from exc


class Storage:
    """A read-only filesystem rooted at a warehouse URL; refuses paths outside its roots."""

    def __init__(self, url: str, allowed_roots: list[str] | None = None, storage_options: dict | None = None):
        url = os.fspath(url)
        try:
            self.fs, root = url_to_fs(url, **(storage_options or {}))
        except (ValueError, ImportError, OSError) as exc:
            raise StorageError(f"cannot open {url!r}: {exc}") from exc
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self.root = self._norm(root)
        self.url = url
        self.stats = ReadStats()
        roots = [self._norm(url_to_fs(r)[1]) for r in (allowed_roots or [])]
        if roots and not any(self._under(self.root, r) for r in roots):
            raise StorageError(f"{url} is outside the allowed roots {allowed_roots}")
        self.roots = roots or [self.root]

    def _norm(self, path: str) -> str:
        path = self.fs._strip_protocol(path) if hasattr(self, "fs") else path
        return posixpath.normpath(path) if path else path

    @staticmethod
    def _under(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip("/") + "/")

    def resolve(self, path: str) -> str:
        """An absolute path on this filesystem, checked to lie under an allowed root."""
        stripped = self.fs._strip_protocol(path)
        if "://" not in path and not posixpath.isabs(stripped):
            stripped = posixpath.join(self.root, stripped)
        full = posixpath.normpath(stripped)
        if not any(self._under(full, r) for r in self.roots):
            raise StorageError("path is outside the allowed roots", file=path)
        return full

    def open(self, path: str, size: int | None = None) -> FileSource:
        full = self.resolve(path)
        return FileSource(self.fs, full, name=self.display(full), size=size, stats=self.stats)

    def read_bytes(self, path: str) -> bytes:
        return self.open(path).read_all()

    def exists(self, path: str) -> bool:
        try:
            return self.fs.exists(self.resolve(path))
        except OSError:
            return False

    def listdir(self, path: str) -> list[dict]:
        """Entries (``name``, ``type``, ``size``) under a directory; empty if it is missing."""
        try:
            return self.fs.ls(self.resolve(path), detail=True)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list: {exc}", file=path) from exc

    def display(self, full: str) -> str:
        return full if self.protocol in ("file", "local") else f"{self.protocol}://{full}"


def open_file(path_or_url: str, storage_options: dict | None = None) -> FileSource:
    """Open one file read-only, for the CLI commands that take a single FILE."""
    try:
        fs, path = url_to_fs(os.fspath(path_or_url), **(storage_options or {}))
    except (ValueError, ImportError, OSError) as exc:
        raise StorageError(f"cannot open {path_or_url!r}: {exc}") from exc
    return FileSource(fs, path, name=os.fspath(path_or_url))
