"""Storage: a read-only fsspec filesystem rooted at a warehouse, refusing paths outside its
allowed roots, with its cache of immutable files, concurrent fetches and a count of what was read.
"""

from __future__ import annotations

import datetime as _dt
import errno
import os
import posixpath
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fsspec.core import split_protocol, url_to_fs
from fsspec.implementations.local import LocalFileSystem

from indexcore.cache import LRU
from indexcore.config import parse_pairs, settings
from indexcore.errors import IndexCoreError, StorageError
from indexcore.io.roots import Layer, Roots, canonical_protocol, check_text, layers, refused
from indexcore.io.s3_direct import DirectGets
from indexcore.io.source import (
    NO_FOLLOW,
    Descriptors,
    FileSource,
    RangeCache,
    ReadStats,
    backend_error,
    pread_fully,
    storage_error,
    storage_errors,
)

# files Paimon rewrites in place: never cached
MUTABLE_NAMES = frozenset({"LATEST", "EARLIEST"})


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
    :meth:`fetch_many` reads many files concurrently (``concurrency``; unset arguments come
    from :func:`~indexcore.config.settings`). Local files opened through it keep descriptors
    within its own :class:`~indexcore.io.source.Descriptors` budget.
    """

    def __init__(self, url: str, allowed_roots: list[str] | None = None, storage_options: dict | None = None,
                 concurrency: int | None = None, readahead: int | None = None,
                 cache_bytes: int | None = None):
        url = os.fspath(url)
        self.url = url
        config = settings()
        self.storage_options = dict(storage_options or {})
        self.guard = Roots(list(allowed_roots)) if allowed_roots else Roots([url], validate=False)
        self.host = self.guard.check(url)[-1].host  # the fs below reads from this host only
        self.concurrency = max(int(concurrency or config.concurrency), 1)
        try:
            self.fs, root = url_to_fs(url, **pooled(url, self.storage_options, self.concurrency))
        except ImportError as exc:  # fsspec's own text: which package the protocol needs
            raise StorageError(f"cannot open: {exc}", file=url) from exc
        except (ValueError, OSError) as exc:
            raise backend_error("open", exc, url) from exc
        self.protocol = canonical_protocol(
            self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0])
        self._local = isinstance(self.fs, LocalFileSystem)
        self.root = self._norm(root)
        self.stats = ReadStats()
        self.readahead = (0 if self._local else config.readahead) if readahead is None else readahead
        size = config.cache_bytes if cache_bytes is None else cache_bytes
        self.cache = RangeCache(size) if size > 0 and not self._local else None
        self.descriptors = Descriptors()
        # S3 GETs signed and sent without botocore's per-call work, when the options allow
        self._direct = DirectGets.of(self.fs)
        self.roots = [self.root]
        # raw parent directory -> its resolved form, for directories inside the allowed roots
        self._dirs = LRU(config.resolved_dirs)

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
        path = check_text(os.fspath(path))
        if "::" in path:
            raise refused(path)
        full = self._in_resolved_dir(path)
        if full is not None and not (self._local and os.path.islink(full)):
            return full
        parent, base = posixpath.split(path)
        full = self._resolve(path)
        if base and base not in (".", "..") and parent not in self._dirs:
            folder = posixpath.dirname(full)
            if self.guard.allows(Layer(self.protocol, self.guard.normalize(self.protocol, folder), self.host)):
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
            if allowed_dir is None:  # not resolved yet: looked up again until it is
                allowed_dir = self._dirs.get(parent)
                if allowed_dir is not None:
                    seen[parent] = allowed_dir
        if allowed_dir is None:
            return None
        return allowed_dir + base if allowed_dir.endswith("/") else f"{allowed_dir}/{base}"  # posixpath.join

    @property
    def local(self) -> bool:
        """Whether this storage reads the local filesystem (no object store, no storage cache)."""
        return self._local

    def local_folder(self, parent: str) -> str | None:
        """The resolved, allowed form of the local directory ``parent`` (as a path in metadata
        names it), whose files a batch reader opens directly without following a symlink, as
        :meth:`read_prefixes` does (None: not local, or not allowed: its files take :meth:`resolve`).
        Resolved once per directory and remembered as :meth:`resolve` remembers it."""
        if not self._local or not NO_FOLLOW or not parent or "::" in parent:
            return None
        hit = self._dirs.get(parent)
        if hit is not None:
            return hit
        try:
            full = self._resolve(check_text(parent))  # refused outside the allowed roots
        except IndexCoreError:
            return None
        self._dirs.put(parent, full)
        return full

    def _resolve(self, path: str) -> str:
        protocol, _ = split_protocol(path)
        if protocol is not None and (canonical_protocol(protocol) != self.protocol
                                     or layers(path)[-1].host != self.host):
            raise refused(path)
        stripped = self.fs._strip_protocol(path)
        if protocol is None and not self._absolute(stripped):
            stripped = posixpath.join(self.root, stripped)
        full = posixpath.normpath(stripped)
        if not self.guard.allows(Layer(self.protocol, self.guard.normalize(self.protocol, full), self.host)):
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
                          cache=self.cache, readahead=self.readahead, keep_descriptor=keep_descriptor,
                          descriptors=self.descriptors)

    def read_prefix(self, path: str, length: int) -> tuple[bytes, int, str]:
        """The first ``length`` bytes of a file (fewer when it is shorter), its size and its name."""
        got = self.read_prefixes([path], length)[0]
        if isinstance(got, IndexCoreError):
            raise got
        return got

    def read_prefixes(self, paths: Sequence[str], length: int, served: bool = True,
                      folders: dict[str, str | None] | None = None,
                      counted: bool = True) -> list[tuple[bytes, int, str] | IndexCoreError]:
        """:meth:`read_prefix` of each path, in order; a file that cannot be read is its error.
        ``served=False``: the bytes are counted as read, not as served (the caller hands them to
        readers that count what they use, e.g. whole small ``.index`` files). ``folders``: the
        caller's memo of directories looked up, kept across calls (else one per call).
        ``counted=False`` (local files): nothing is counted on :attr:`stats`, the caller counts
        each file read where it uses it (reads made ahead, side by side).

        Local files take one ``open``/``pread`` each in one loop (an ``fstat`` too when the file is
        longer than ``length``), without a
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
                    if served:
                        source.prefetch(0, length)
                        data = source.read(0, min(length, source.size))
                    else:
                        data = source.fetched(0, length)
                    out.append((data, source.size, source.name))
                except IndexCoreError as exc:
                    out.append(exc)
            return out
        nbytes, reads = 0, 0
        if folders is None:
            folders = {}  # this batch's directories (a few hundred for 50,000 files)
        for path in paths:
            full, fd = None, -1
            try:
                full, fd = self._open_checked(path, folders)
                try:
                    # one pread: a regular file's short read is its end (its size, with no fstat
                    # and no second pread that returns nothing), a full one is followed by fstat
                    data = os.pread(fd, length, 0)
                    size = len(data) if len(data) < length else os.fstat(fd).st_size
                finally:
                    os.close(fd)
            except IndexCoreError as exc:
                out.append(exc)
                continue
            except OSError as exc:
                # an open that failed names the path it opened (the folder's, or the resolved one)
                out.append(storage_error(exc, self.display(full or exc.filename or path), "open" if fd < 0 else "read"))
                continue
            nbytes, reads = nbytes + len(data), reads + 1
            out.append((data, size, self.display(full)))
        if counted:
            self.stats.add(nbytes, reads)
            if served:
                self.stats.served(nbytes)
        return out

    def _open_checked(self, path: str, folders: dict[str, str | None] | None = None) -> tuple[str, int]:
        """A local file opened for reading, and the path opened: in a directory already resolved and
        allowed, without following a symlink (no ``lstat`` per file); a symlinked file, or one of a
        new directory, through the full check of :meth:`resolve`. Raises ``OSError`` as ``open``
        does and IndexCoreError for a path outside the allowed roots."""
        full = self._in_resolved_dir(check_text(path), folders) if NO_FOLLOW else None
        if full is not None:
            try:
                return full, os.open(full, os.O_RDONLY | NO_FOLLOW)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
        full = self.resolve(path)
        return full, os.open(full, os.O_RDONLY | getattr(os, "O_BINARY", 0))

    def read_small(self, path: str, limit: int) -> tuple[str, bytes | None, int]:
        """Of a local file: its resolved path, its whole bytes when it holds at most ``limit``
        bytes (None when larger: the caller opens the path) and its size, in one ``open``, ``fstat``
        and ``pread``, opened as :meth:`read_prefixes` opens (:meth:`_open_checked`). Raises ``OSError`` as
        ``open`` does (missing file) and IndexCoreError for a path outside the allowed roots."""
        if not self._local:
            raise ValueError("read_small reads local files only")
        full, fd = self._open_checked(os.fspath(path))
        try:
            size = os.fstat(fd).st_size
            data = pread_fully(fd, 0, size) if size <= limit else None
        finally:
            os.close(fd)
        return full, data, size

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
        got = self._direct.fetch([full], [None], [None], 1)[0] if self._direct is not None else None
        if got is not None:
            data = got.data
        else:
            with storage_errors(self.display(full), "read"):
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
        full = self.resolve(path)
        try:
            return self.fs.exists(full)
        except OSError:  # as before: S3 answers 403 for a missing key the caller may not list
            return False
        except Exception as exc:  # a backend that cannot be reached (no OSError): summarised
            raise backend_error("check", exc, path) from exc

    def listdir(self, path: str) -> list[dict]:
        """Entries (``name``, ``type``, ``size``) under a directory; empty if it is missing."""
        try:
            entries = self.fs.ls(self.resolve(path), detail=True)
        except FileNotFoundError:
            return []
        except Exception as exc:  # OSError or a backend's own class (botocore's are no OSError)
            raise backend_error("list", exc, path) from exc
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
        except Exception as exc:  # OSError or a backend's own class
            raise backend_error("list", exc, path) from exc
        times = [t for t in map(modified_time, found.values()) if t is not None]
        return min(times, default=None)

    def display(self, full: str) -> str:
        return full if self.protocol == "file" else f"{self.protocol}://{full}"

    # -- many files at once -----------------------------------------------------------------
    def fetch_many(self, fetches: list[Fetch]) -> list[bytes | BaseException]:
        """Each fetch's bytes (or the error it met), read ``concurrency`` at a time.

        Async backends (s3fs, gcsfs, adlfs...) get one ``cat_ranges`` batch (plain S3 GETs first
        go the direct way, :class:`~indexcore.io.s3_direct.DirectGets`: one request per fetch, a
        whole file too, and the object's size learned from the answer); others a bounded thread
        pool. Every fetch is one request, counted on :attr:`stats` (a direct GET that failed is
        made again through s3fs, which reports the error).
        """
        if not fetches:
            return []
        try:
            fulls = [self.resolve(f.path) for f in fetches]
        except StorageError as exc:
            return [exc] * len(fetches)
        if self._direct is not None or (getattr(self.fs, "async_impl", False) and len(fetches) > 1):
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
        except Exception as exc:  # noqa: BLE001  (the fetch's error, reported by the later read)
            return exc

    def _fetch_async(self, fetches: list[Fetch], fulls: list[str]) -> list[bytes | BaseException]:
        ends = [f.end if f.end is not None else None for f in fetches]
        starts = [f.start if f.end is not None else None for f in fetches]
        out: list = [None] * len(fetches)
        if self._direct is not None:
            for i, got in enumerate(self._direct.fetch(fulls, starts, ends, self.concurrency)):
                if got is not None:
                    out[i] = got.data
                    if (got.size is not None and self.cache is not None
                            and posixpath.basename(fulls[i]) not in MUTABLE_NAMES):
                        self.cache.set_size(fulls[i], got.size)  # no HEAD when the file is opened
        rest = [i for i, data in enumerate(out) if data is None]
        if not rest:
            return out
        try:
            got = self.fs.cat_ranges([fulls[i] for i in rest], [starts[i] for i in rest], [ends[i] for i in rest],
                                     on_error="return", batch_size=self.concurrency)
        except Exception as exc:  # noqa: BLE001  (each fetch's error, reported by the later read)
            got = [exc] * len(rest)
        for i, g in zip(rest, got, strict=True):
            out[i] = g if isinstance(g, bytes | BaseException) else OSError(str(g))
        return out

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


def pooled(url: str, options: dict, concurrency: int) -> dict:
    """``options`` for opening ``url``, with an S3 client's connection pool as large as the
    requests made at once (botocore keeps 10, so 32 fetches in flight waited for 10 connections);
    a ``max_pool_connections`` the options set is kept."""
    if canonical_protocol(split_protocol(url)[0]) != "s3":
        return options
    config = options.get("config_kwargs") or {}
    if not isinstance(config, dict) or "max_pool_connections" in config:
        return options
    return {**options, "config_kwargs": {**config, "max_pool_connections": max(concurrency, 10)}}


def open_file(path_or_url: str, storage_options: dict | None = None,
              allowed_roots: list[str] | None = None) -> FileSource:
    """Open one file read-only, for the CLI commands that take a single FILE."""
    text = check_text(os.fspath(path_or_url))
    if allowed_roots:
        Roots(list(allowed_roots)).check(text)
    try:
        fs, path = url_to_fs(text, **(storage_options or {}))
    except ImportError as exc:  # fsspec's own text: which package the protocol needs
        raise StorageError(f"cannot open: {exc}", file=text) from exc
    except (ValueError, OSError) as exc:
        raise backend_error("open", exc, text) from exc
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
