"""Allowed roots: which URLs the explorer may read, decided before anything is opened.

A URL is split into its ``::`` layers; each layer's protocol is made canonical (``local`` ->
``file``, ``s3a`` -> ``s3``, ``gcs`` -> ``gs``...) and must be one the operator allows
(the ``allowed_protocols`` setting, default: the protocols of the roots). Every layer that names a
path must lie inside a root of its protocol and, where the path does not carry it (``hdfs://``,
``ftp://``...), on the root's host; local paths are compared after resolving symlinks. Only the
server user's own home expands (``~``, ``~/x``): ``~name`` is refused whether or not the user
exists, and so is a NUL byte. The refusal reads the same whether or not the target exists, so it
tells nothing about it.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from urllib.parse import urlsplit

from fsspec.core import split_protocol
from fsspec.registry import get_filesystem_class

from indexcore.cache import LRU
from indexcore.config import root_problem, settings
from indexcore.errors import StorageError

# layers that only cache the layer below: they add no path of their own
CACHING_PROTOCOLS = frozenset({"simplecache", "filecache", "blockcache", "cached"})
LOCAL = "file"


def canonical_protocol(protocol: str | None) -> str:
    """The first name fsspec gives the protocol's filesystem (``local`` -> ``file``)."""
    if not protocol:
        return LOCAL
    protocol = protocol.lower()
    if protocol in CACHING_PROTOCOLS:
        return protocol
    try:
        names = get_filesystem_class(protocol).protocol
    except (ValueError, ImportError):
        return protocol
    return names if isinstance(names, str) else names[0]


@dataclass(frozen=True)
class Layer:
    """One layer of a URL: its canonical protocol, path (``""`` for a caching layer) and the host
    it is read from when the path does not name it (``hdfs://namenode:8020/wh``; else ``""``)."""

    protocol: str
    path: str
    host: str = ""


def check_text(url: str) -> str:
    """``url`` when it can name a file: a NUL byte is refused (no OS call takes one)."""
    if "\x00" in url:
        raise StorageError("not a valid path: it holds a NUL byte", file=url.replace("\x00", "\\x00"))
    return url


def other_home(path: str) -> bool:
    """``~name...``: another user's home, which is never expanded (and so never enumerated)."""
    return path.startswith("~") and path != "~" and not path.startswith("~/")


def local_url(text: str) -> str:
    """A warehouse URL as typed, with a local path made absolute (``~``/``~/`` expanded, symlinks
    resolved) for cache keys and messages; ``~name`` stays as typed, for :meth:`Roots.check`
    to refuse with the one refusal text."""
    text = check_text(text.strip())
    if "://" in text or "::" in text or other_home(text):
        return text
    return os.path.realpath(os.path.expanduser(text))


_PROBE = "indexcore-host-probe"


def _host(protocol: str, part: str) -> str:
    """The host of a URL layer when the protocol's paths do not carry it (``hdfs://nn:8020/wh``
    strips to ``/wh``, ``s3://bucket/wh`` to ``bucket/wh``: the bucket is in the path); else ``""``."""
    if protocol == LOCAL or "://" not in part:
        return ""
    if _strip(protocol, f"{protocol}://{_PROBE}/x").lstrip("/").startswith(_PROBE + "/"):
        return ""
    return urlsplit(part).netloc.lower()


def _strip(protocol: str, text: str) -> str:
    try:
        cls = get_filesystem_class(protocol)
    except (ValueError, ImportError):
        return split_protocol(text)[1]
    return cls._strip_protocol(text)


def _realpath(path: str, real_dirs: LRU | None) -> str:
    """``os.path.realpath``, with the parent directory's resolution kept in ``real_dirs`` when
    given (a walk over 50,000 files in a few hundred directories resolves each directory once);
    a path whose last component is itself a symlink (or ``.``/``..``) is resolved in full."""
    path = os.path.abspath(os.path.expanduser(path))
    parent, base = os.path.split(path)
    if real_dirs is None or not base or base in (".", "..") or os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(_real_dir(parent, real_dirs), base)


def _real_dir(directory: str, real_dirs: LRU) -> str:
    """``os.path.realpath`` of an absolute directory through ``real_dirs``: its parent's resolution
    (kept) joined with its name unless the directory is itself a symlink, so a new bucket directory
    of a known table costs one ``lstat``, not one per component of its path."""
    real = real_dirs.get(directory)
    if real is None:
        up, name = os.path.split(directory)
        if not name or up == directory or os.path.islink(directory):
            real = os.path.realpath(directory)
        else:
            real = os.path.join(_real_dir(up, real_dirs), name)
        real_dirs.put(directory, real)
    return real


def normalize_path(protocol: str, path: str, real_dirs: LRU | None = None) -> str:
    """A layer's path in comparable form: symlinks resolved for local paths (parent directories
    kept in ``real_dirs``), ``..`` folded."""
    if protocol == LOCAL:
        return _realpath(path, real_dirs) if path else path
    path = posixpath.normpath(path) if path else path
    return path.rstrip("/")


def layers(url: str, real_dirs: LRU | None = None) -> list[Layer]:
    """The layers of a (possibly chained) URL, outermost first, with normalized paths."""
    out = []
    for part in check_text(str(url)).split("::"):
        protocol, rest = split_protocol(part)
        proto = canonical_protocol(protocol)
        if proto in CACHING_PROTOCOLS:
            out.append(Layer(proto, ""))
            continue
        if proto == LOCAL and other_home(rest):
            raise refused(url)
        out.append(Layer(proto, normalize_path(proto, _strip(proto, part), real_dirs), _host(proto, part)))
    return out


def inside(path: str, root: str) -> bool:
    return path == root or root in ("", "/") or path.startswith(root.rstrip("/") + "/")


class Roots:
    """The allowed roots and protocols; :meth:`check` refuses any URL outside them.

    Keeps the local directories it resolved (``realpath_dirs`` setting) for the paths it checks.
    Each root given must be one location (:func:`~indexcore.config.root_problem`): ``s3://``
    would allow every bucket (``validate=False``: the roots are a warehouse URL bounding itself).
    """

    def __init__(self, roots: list[str], protocols: list[str] | None = None, validate: bool = True):
        for root in roots if validate else ():
            problem = root_problem(str(root))
            if problem:
                raise StorageError(f"not a valid allowed root: it {problem}", file=str(root).replace("\x00", "\\x00"))
        config = settings()
        self.real_dirs = LRU(config.realpath_dirs)
        self.roots: list[Layer] = []
        for root in roots:
            self.roots.append(layers(root, self.real_dirs)[-1])
        if protocols is None and config.allowed_protocols:
            protocols = list(config.allowed_protocols)
        if protocols is None:
            names = {layer.protocol for root in roots for layer in layers(root, self.real_dirs)}
        else:
            names = {canonical_protocol(p.strip()) for p in protocols}
        self.protocols = frozenset(names)

    def allows(self, layer: Layer) -> bool:
        if layer.protocol not in self.protocols:
            return False
        if layer.protocol in CACHING_PROTOCOLS:
            return True
        return any(r.protocol == layer.protocol and r.host == layer.host and inside(layer.path, r.path)
                   for r in self.roots)

    def normalize(self, protocol: str, path: str) -> str:
        """:func:`normalize_path` through this guard's resolved directories."""
        return normalize_path(protocol, path, self.real_dirs)

    def check(self, url: str) -> list[Layer]:
        """The URL's layers when every one is allowed; else the same StorageError for any target."""
        found = layers(url, self.real_dirs)
        if not found or not all(self.allows(layer) for layer in found):
            raise refused(url)
        return found


def refused(url: str) -> StorageError:
    """One message for every refusal, whether or not the target exists."""
    return StorageError("not allowed: outside the allowed roots", file=str(url))
