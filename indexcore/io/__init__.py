"""Storage layer: read-only fsspec files, byte ranges, and a count of what was read.

The interface the higher layers read through: a :class:`ByteSource` (random access to one file
or to bytes in memory, :mod:`indexcore.io.source`), a :class:`Storage` rooted at a warehouse
(:mod:`indexcore.io.storage`) with its :class:`Fetch` requests, the allowed roots
(:mod:`indexcore.io.roots`) and which storage options a browser may set on a shared server
(:mod:`indexcore.io.options`). The definitions live in those modules; this package names them.
"""

from indexcore.io.source import ByteSource, BytesSource, FileSource, RangeCache, ReadStats, SliceSource
from indexcore.io.storage import Fetch, Storage, modified_time, open_file, parse_storage_options

__all__ = ["ByteSource", "BytesSource", "Fetch", "FileSource", "RangeCache", "ReadStats", "SliceSource",
           "Storage", "modified_time", "open_file", "parse_storage_options"]
