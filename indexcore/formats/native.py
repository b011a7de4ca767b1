"""What the readers backed by Paimon's native libraries share (paimon-mosaic, paimon-vindex,
paimon-ftindex): the error when the optional package is absent, and the read callback they call
for bytes, which turns each request into a ranged read of our :class:`~indexcore.io.ByteSource`."""

from __future__ import annotations

import threading

from indexcore.errors import IndexCoreError, UnsupportedError
from indexcore.io import ByteSource


def missing_package(package: str, extra: str, what: str, file: str | None = None) -> UnsupportedError:
    """The error for an optional native library that is not installed (one wording for all)."""
    return UnsupportedError(f"{what} needs the optional package {package} "
                            f"(pip install \"indexcore[{extra}]\" or pip install {package})", file=file)


class SourceReads:
    """Byte ranges of a ByteSource for a native library's callbacks. The libraries may call from
    several threads, so reads are serialized; the first error of ours is kept (:attr:`error`),
    since the library only sees a failed read and reports its own message."""

    def __init__(self, source: ByteSource, structure: str):
        self.source = source
        self.structure = structure
        self.lock = threading.Lock()
        self.error: IndexCoreError | None = None

    def pread(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (paimon-ftindex's ``pread``; paimon-mosaic's ``read_at``)."""
        with self.lock:
            try:
                return self.source.read(offset, length, self.structure)
            except IndexCoreError as exc:
                self.error = self.error or exc
                raise

    __call__ = pread

    def pread_many(self, ranges) -> list[bytes]:
        """Each ``(offset, length)`` (paimon-vindex's ``pread_many``)."""
        return [self.pread(offset, length) for offset, length in ranges]
