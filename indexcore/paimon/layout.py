"""Where Paimon puts a table's files: partition folders, bucket folders, index and external paths.

The partition folder follows Paimon's ``InternalRowPartitionComputer`` and
``PartitionPathUtils``: with ``partition.legacy-name = true`` (the default) a value is written
as its internal value's ``toString()`` (a DATE as epoch days, a TIMESTAMP as ISO
``LocalDateTime``); with ``false`` it is cast to STRING (``2024-01-01``,
``2024-01-01 10:00:00.000``). A null or blank value becomes ``partition.default-name``; keys
and values are percent-escaped. The reader and the writer both call :class:`PathLayout`.
"""

from __future__ import annotations

import datetime as _dt
import posixpath
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from indexcore.paimon.options import CoreOptions
from indexcore.types import DataField, DataType, Timestamp

POSTPONE_BUCKET = -2
# SpecialFields: the field ids of a primary-key data file's system columns (``_KEY_<field>`` is
# KEY_FIELD_ID_START + the field's id)
KEY_FIELD_ID_START = 1_073_741_823  # Integer.MAX_VALUE / 2
SEQUENCE_NUMBER_ID = 2_147_483_646
VALUE_KIND_ID = 2_147_483_645
INDEX_DIR = "index"
SCHEMA_PREFIX = "schema-"
SNAPSHOT_PREFIX = "snapshot-"
TAG_PREFIX = "tag-"
BRANCH_PREFIX = "branch-"
_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset('"#%\'*/:=?\\\x7f{}[]^')
_EPOCH_DATE = _dt.date(1970, 1, 1)
_SCHEME = re.compile(r"^file:(//)?", re.IGNORECASE)


def escape_path_name(text: str) -> str:
    """``PartitionPathUtils.escapePathName``: ``%XX`` for control and special characters."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape_path_name(text: str) -> str:
    """The inverse of :func:`escape_path_name`."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def strip_scheme(path: str) -> str:
    """A ``file:`` URI as a plain path (other paths unchanged)."""
    m = _SCHEME.match(path)
    return path[m.end():] if m else path


def schema_path(meta_root: str, schema_id: int) -> str:
    """``schema/schema-N`` of a table or branch folder."""
    return posixpath.join(meta_root, "schema", f"{SCHEMA_PREFIX}{schema_id}")


def snapshot_path(meta_root: str, snapshot_id: int) -> str:
    """``snapshot/snapshot-N`` of a table or branch folder."""
    return posixpath.join(meta_root, "snapshot", f"{SNAPSHOT_PREFIX}{snapshot_id}")


def tag_path(meta_root: str, name: str) -> str:
    """``tag/tag-NAME`` of a table or branch folder (Paimon's ``TagManager``)."""
    return posixpath.join(meta_root, "tag", f"{TAG_PREFIX}{name}")


def branch_path(table_root: str, name: str) -> str:
    """``branch/branch-NAME``: a branch's own schemas, snapshots and tags (``BranchManager``)."""
    return posixpath.join(table_root, "branch", f"{BRANCH_PREFIX}{name}")


def _java_float(value: float, single: bool) -> str:
    """Java's ``Float.toString`` / ``Double.toString``: shortest digits, ``E`` outside [1e-3, 1e7)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if single:
        bits = struct.pack(">f", value)
        text = next(t for t in (f"{struct.unpack('>f', bits)[0]:.{p}g}" for p in range(1, 10))
                    if struct.pack(">f", float(t)) == bits)
    else:
        text = repr(float(value))
    d = Decimal(text)
    if d == 0:
        return "-0.0" if str(text).startswith("-") else "0.0"
    if Decimal("0.001") <= abs(d) < Decimal("1e7"):
        plain = format(d, "f")
        if "." in plain:
            plain = plain.rstrip("0")
        return plain + "0" if plain.endswith(".") else plain if "." in plain else plain + ".0"
    mantissa, exponent = format(d, "e").split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}"


def _local_date_time(ts: Timestamp) -> str:
    """``LocalDateTime.toString()``: seconds only when non-zero, fraction in 3, 6 or 9 digits."""
    dt = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ts.millis)
    text = dt.strftime("%Y-%m-%dT%H:%M")
    frac = (ts.millis % 1000) * 1_000_000 + ts.nanos
    if dt.second or frac:
        text += f":{dt.second:02d}"
        if frac:
            digits = f"{frac:09d}"
            text += "." + (digits[:3] if frac % 1_000_000 == 0 else digits[:6] if frac % 1000 == 0 else digits)
    return text


def _fraction(nanos: int, precision: int) -> str:
    """``DateTimeUtils.formatTimestamp``'s fraction: nine digits, trailing zeros cut down to precision."""
    digits = f"{nanos:09d}"
    while len(digits) > precision and digits.endswith("0"):
        digits = digits[:-1]
    return digits


def _time_fraction(millis: int, precision: int) -> str:
    """``formatTimestampMillis``: digit by digit while something non-zero is left, up to precision."""
    out = ""
    rest = millis % 1000
    for scale in (100, 10, 1):
        if rest == 0 or len(out) >= precision:
            break
        out += str(rest // scale)
        rest %= scale
    return out


def partition_text(dtype: DataType, value: Any, legacy: bool) -> str | None:
    """The text of one partition value (internal value) as Paimon puts it in a path."""
    if value is None:
        return None
    root = dtype.root
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if root == "DATE":
        return str(value) if legacy else (_EPOCH_DATE + _dt.timedelta(days=int(value))).isoformat()
    if root == "TIME":
        if legacy:
            return str(value)
        t = int(value)
        text = f"{t // 3_600_000:02d}:{t // 60_000 % 60:02d}:{t // 1000 % 60:02d}"
        frac = _time_fraction(t, dtype.precision if dtype.precision is not None else 0)
        return f"{text}.{frac}" if frac else text
    if isinstance(value, Timestamp):
        if legacy:
            return _local_date_time(value)
        dt = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=value.millis)
        frac = _fraction((value.millis % 1000) * 1_000_000 + value.nanos,
                         dtype.precision if dtype.precision is not None else 6)
        return dt.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "")
    if root == "DECIMAL":
        return format(value, "f")
    if root in ("FLOAT", "DOUBLE"):
        return _java_float(float(value), root == "FLOAT")
    return str(value)


def format_partition(values: Sequence[Any], types: Sequence[DataType | None]) -> str:
    """A partition (or a key) as every view, page, chart and CLI output writes it, the one format:
    Paimon's system-table ``{v1, v2}`` (``$files``, ``$partitions``), each value the text Paimon
    casts it to (:func:`partition_text` without legacy names: a DATE as ``2024-06-01``, never epoch
    days), a null as ``null``; ``{}`` for no keys."""
    out = []
    for dtype, value in zip(types, values, strict=False):
        try:
            text = partition_text(dtype, value, False) if dtype is not None else None
        except (TypeError, ValueError, OverflowError):  # a value its type does not describe: as it is
            text = None
        out.append("null" if value is None else text if text is not None else str(value))
    return "{" + ", ".join(out) + "}"


@dataclass(frozen=True)
class PathLayout:
    """A table's folders: partition and bucket directories, index files, external roots.

    ``data_root`` is the table folder that holds data, index and manifest files (a branch
    shares its main table's).
    """

    data_root: str
    partition_fields: tuple[DataField, ...]
    options: CoreOptions

    @classmethod
    def of(cls, data_root: str, partition_fields: Sequence[DataField], options: CoreOptions) -> PathLayout:
        return cls(data_root.rstrip("/"), tuple(partition_fields), options)

    def partition_spec(self, values: Sequence[Any]) -> list[tuple[str, str]]:
        """(key, text) per partition key; null or blank values as ``partition.default-name``."""
        legacy = self.options.partition_legacy_name
        out = []
        for f, v in zip(self.partition_fields, values, strict=True):
            text = partition_text(f.type, v, legacy)
            out.append((f.name, text if text is not None and text.strip() else
                        self.options.partition_default_name))
        return out

    def partition_dir(self, values: Sequence[Any]) -> str:
        """``k=v/k2=v2`` relative to the data folder ('' for an unpartitioned table)."""
        return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in self.partition_spec(values))

    @staticmethod
    def bucket_name(bucket: int) -> str:
        return "bucket-postpone" if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"

    @property
    def data_dir(self) -> str:
        """Where partition folders start: the table folder, or ``data-file.path-directory`` in it."""
        sub = self.options.data_file_path_directory
        return posixpath.join(self.data_root, sub) if sub else self.data_root

    def bucket_dir(self, partition_dir: str, bucket: int) -> str:
        """The folder of one bucket's data files."""
        parts = [self.data_dir, partition_dir, self.bucket_name(bucket)] if partition_dir else \
            [self.data_dir, self.bucket_name(bucket)]
        return posixpath.join(*parts)

    def index_file_path(self, file_name: str, partition_dir: str | None, bucket: int) -> str:
        """A table-level index file (DV, hash): ``index/`` or, with
        ``index-file-in-data-file-dir``, its bucket folder."""
        if self.options.index_file_in_data_file_dir and partition_dir is not None:
            return posixpath.join(self.bucket_dir(partition_dir, bucket), file_name)
        return posixpath.join(self.data_root, INDEX_DIR, file_name)

    def external_roots(self) -> list[str]:
        """``data-file.external-paths`` as plain paths without a trailing slash."""
        return [strip_scheme(r).rstrip("/") for r in self.options.data_file_external_paths]
