"""Frozen metadata records of a Paimon table, named after Paimon's own classes.

Everything here is plain data decoded from a warehouse: schema JSON, snapshot JSON, manifest
lists, manifests (data files) and index manifests. Partition values and stats are decoded to
the internal values of :mod:`indexcore.types`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from indexcore.paimon.layout import PathLayout
from indexcore.paimon.options import DEFAULT_PARTITION_NAME as DEFAULT_PARTITION_NAME  # re-exported
from indexcore.paimon.options import CoreOptions
from indexcore.types import DataField, DataType

ADD = "ADD"
DELETE = "DELETE"


@dataclass(frozen=True)
class Problem:
    """One part of a warehouse that could not be read; the rest keeps working."""

    path: str
    structure: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "structure": self.structure, "reason": self.reason}


@dataclass(frozen=True)
class TableSchema:
    """``schema/schema-N``: fields with ids, partition and primary keys, options."""

    id: int
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    comment: str | None = None
    time_millis: int | None = None
    highest_field_id: int | None = None
    version: int | None = None

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def field_by_id(self, field_id: int) -> DataField | None:
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    @cached_property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @cached_property
    def core_options(self) -> CoreOptions:
        """The options as one typed record, parsed once per schema."""
        return CoreOptions.parse(self.options)

    def path_layout(self, data_root: str) -> PathLayout:
        """The folders of a table under ``data_root`` laid out by this schema's options."""
        return PathLayout.of(data_root, self.partition_fields, self.core_options)

    def file_index_options(self, column: str, index_type: str) -> dict[str, str]:
        """Writer options of one file index on ``column`` (see :meth:`CoreOptions.file_index_options`)."""
        return self.core_options.file_index_options(column, index_type)

    def row_type(self) -> dict[str, DataType]:
        return {f.name: f.type for f in self.fields}

    @property
    def partition_fields(self) -> tuple[DataField, ...]:
        return tuple(self.field(k) for k in self.partition_keys)

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary keys without the partition keys (the key of a PK data file)."""
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)

    @property
    def bucket(self) -> int:
        """``bucket`` option; Paimon's default is -1 (dynamic for PK, unaware for append)."""
        return self.core_options.bucket

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """``bucket-key`` option, else the trimmed primary keys (empty for an append table)."""
        return self.core_options.bucket_keys(self.trimmed_primary_keys)

    @property
    def skips_level0(self) -> bool:
        """Whether a batch read leaves level-0 files out (see :meth:`CoreOptions.batch_skips_level0`)."""
        return self.core_options.batch_skips_level0(self.primary_keys)


@dataclass(frozen=True)
class Snapshot:
    """``snapshot/snapshot-N`` JSON."""

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    commit_user: str | None = None
    commit_identifier: int | None = None
    commit_kind: str | None = None
    time_millis: int | None = None
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    next_row_id: int | None = None
    version: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    log_offsets: dict | None = field(default=None, hash=False, compare=False)
    statistics: str | None = None
    properties: dict | None = field(default=None, hash=False, compare=False)
    path: str | None = None


@dataclass(frozen=True)
class ManifestFileMeta:
    """One row of a manifest list: a manifest file and its summary."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats | None
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


@dataclass(frozen=True)
class SimpleStats:
    """Min/max/null-count per column, decoded to internal values (``None`` = null / unknown)."""

    min_values: tuple
    max_values: tuple
    null_counts: tuple

    @staticmethod
    def empty() -> SimpleStats:
        return SimpleStats((), (), ())

    def value_at(self, i: int) -> tuple[Any, Any, int | None]:
        """(min, max, null count) of field ``i`` of the stats layout (``None`` past its end)."""
        mins, maxs, nulls = self.min_values, self.max_values, self.null_counts
        return (mins[i] if i < len(mins) else None, maxs[i] if i < len(maxs) else None,
                nulls[i] if i < len(nulls) else None)


@dataclass(frozen=True)
class DataFileMeta:
    """A data file as recorded in a manifest entry (``_FILE`` record).

    ``key_stats`` / ``value_stats`` decode lazily from BinaryRow bytes; see :mod:`.manifest`.
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: tuple
    max_key: tuple
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: Any = None
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    @property
    def file_format(self) -> str:
        """The format from the file's extension (``parquet``, ``orc``, ``avro``...)."""
        name = self.file_name
        return name.rsplit(".", 1)[-1].lower() if "." in name else ""

    @property
    def index_file_name(self) -> str | None:
        """The separate file-index file among ``extra_files`` (ends with ``.index``)."""
        for extra in self.extra_files:
            if extra.endswith(".index"):
                return extra
        return None


@dataclass(frozen=True)
class ManifestEntry:
    """One row of a manifest: a data file added to or deleted from a partition/bucket."""

    kind: str
    partition: tuple
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        """What ADD/DELETE entries are merged on (Paimon's ``FileEntry.Identifier``)."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files,
                f.embedded_index, f.external_path)


@dataclass(frozen=True)
class DeletionVectorRange:
    """Where one data file's deletion vector sits in a DV index file."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True)
class GlobalIndexMeta:
    """The ``_GLOBAL_INDEX`` record of an index manifest entry: which rows and field it covers.

    ``row_range_start``/``row_range_end`` are inclusive row ids (row tracking); ``index_meta``
    is format-specific (first/last key for BTree and bitmap, JSON options for vector indexes);
    ``source_meta`` lists the data files a primary-key index was built from.
    """

    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: tuple[int, ...] | None = None
    index_meta: bytes | None = None
    source_meta: bytes | None = None

    @property
    def row_count(self) -> int:
        return self.row_range_end - self.row_range_start + 1


@dataclass(frozen=True)
class IndexFileMeta:
    """A table-level index file (deletion vectors, hash bucket index, global index...)."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None
    external_path: str | None = None
    global_index_meta: GlobalIndexMeta | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class IndexManifestEntry:
    kind: str
    partition: tuple
    bucket: int
    index_file: IndexFileMeta


@dataclass(frozen=True, slots=True)  # slots: one per planned file, a quarter of the memory of a __dict__
class LiveFile:
    """A data file that is live in a snapshot, with everything needed to read and skip it."""

    partition: tuple
    partition_spec: dict[str, Any] = field(hash=False, compare=False)
    bucket: int = 0
    file: DataFileMeta = None  # type: ignore[assignment]
    path: str = ""
    index_path: str | None = None
    deletion_vector: DeletionVectorRange | None = None
    dv_file_path: str | None = None
    bitmap64: bool = False
    total_buckets: int | None = None

    @property
    def has_file_index(self) -> bool:
        return self.file.embedded_index is not None or self.index_path is not None
