"""One exception family for everything indexcore refuses or cannot read.

A corrupt or truncated input raises a :class:`CorruptFileError` that names the file, the
structure being decoded and the byte offset, so a user can find the bad bytes. What a storage
backend said (its exception and text) is kept apart in ``detail``, never in the message: the
message is what a browser user of a shared server sees, the detail is for the operator (the CLI
prints it; the app does not).
"""

from __future__ import annotations


class IndexCoreError(Exception):
    """Base of every error indexcore raises on purpose."""

    def __init__(self, message: str, *, file: str | None = None, structure: str | None = None,
                 offset: int | None = None, detail: str | None = None):
        self.message = message
        self.file = file
        self.structure = structure
        self.offset = offset
        self.detail = detail
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file:
            where.append(f"file {self.file}")
        if self.structure:
            where.append(f"in {self.structure}")
        if self.offset is not None:
            where.append(f"at byte {self.offset}")
        return f"{self.message} ({', '.join(where)})" if where else self.message


class CorruptFileError(IndexCoreError):
    """The bytes do not follow the format: bad magic, bad CRC, truncated, impossible length."""


class UnsupportedError(IndexCoreError):
    """A valid input that indexcore does not handle (an unknown index kind, a newer version)."""


class PredicateError(IndexCoreError):
    """Bad SQL, an unknown column, or a literal that does not fit the column type."""


class StorageError(IndexCoreError):
    """A path that cannot be opened, is outside the allowed roots, or is not reachable."""


class SettingsError(IndexCoreError):
    """An ``INDEXCORE_*`` setting that bounds what may be read is malformed: the explorer refuses to start."""


class ReadOnlyError(IndexCoreError):
    """An attempt to write into a warehouse that was opened for browsing."""


class SparkError(IndexCoreError):
    """A Spark master that is not allowed, does not answer, or cannot start a session."""


class SparkMemoryError(SparkError):
    """A Spark job whose results did not fit the driver (a lost task result, the JVM's heap or the
    results' cap): the message names the setting to raise and a figure."""
