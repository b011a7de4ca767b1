"""Table options (Paimon's ``CoreOptions``) parsed once into a frozen record with typed fields.

A malformed value (``bucket = x``) does not stop a table from opening: the field keeps Paimon's
default and the problem is kept in :attr:`CoreOptions.problems`, which the reader reports and
:meth:`CoreOptions.check` (the writer) raises as an :class:`OptionError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from indexcore.errors import IndexCoreError
from indexcore.formats.base import parse_memory_size
from indexcore.formats.registry import FILE_INDEX_TYPES

FILE_INDEX_PREFIX = "file-index."
DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
DEFAULT_IN_MANIFEST_THRESHOLD = 500
DEFAULT_TARGET_ROW_NUM = 2_000_000
# Paimon's ``target-file-size`` when unset: 128 MB for a primary-key table, 256 MB for an append table
DEFAULT_TARGET_FILE_SIZE_PK = 128 << 20
DEFAULT_TARGET_FILE_SIZE_APPEND = 256 << 20
# ours, not Paimon's: a data file under this share of the target file size counts as small
SMALL_FILE_SHARE = 0.25
MANIFEST_FORMATS = ("avro", "orc", "parquet")
FIRST_ROW = "first-row"
_BOOLEANS = {"true": True, "false": False}


class OptionError(IndexCoreError):
    """A table option whose value Paimon would reject (not a number, not true/false...)."""


@dataclass(frozen=True)
class FileIndexSpec:
    """One file index the options ask for: column, Paimon index type, and its writer options."""

    column: str
    index_type: str
    options: tuple[tuple[str, str], ...] = ()


class _Parser:
    """Reads typed values out of the raw map, keeping Paimon's default on a malformed value."""

    def __init__(self, raw: Mapping[str, str]):
        self.raw = raw
        self.problems: list[tuple[str, str]] = []

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.raw.get(key)
        return default if value is None else str(value).strip()

    def lower(self, key: str, default: str) -> str:
        return (self.text(key, default) or default).lower()

    def typed(self, key: str, default: Any, convert, what: str) -> Any:
        """``convert(text)``, or ``default`` with a problem noted when the text does not convert."""
        value = self.text(key)
        if value is None:
            return default
        try:
            return convert(value)
        except (ValueError, KeyError, IndexCoreError):
            self.problems.append((key, f"not {what}: {value!r}"))
            return default

    def boolean(self, key: str, default: bool = False) -> bool:
        return self.typed(key, default, lambda v: _BOOLEANS[v.lower()], "true or false")

    def integer(self, key: str, default: int) -> int:
        return self.typed(key, default, int, "an integer")

    def memory(self, key: str, default: int) -> int:
        return self.typed(key, default, parse_memory_size, "a memory size")

    def names(self, key: str) -> tuple[str, ...]:
        return tuple(n.strip() for n in (self.text(key) or "").split(",") if n.strip())

    def choice(self, key: str, default: str, allowed: Iterable[str]) -> str:
        value = self.lower(key, default)
        if value not in allowed:
            self.problems.append((key, f"unknown value {value!r} (one of {', '.join(allowed)})"))
            return default
        return value


@dataclass(frozen=True)
class CoreOptions:
    """Every option indexcore acts on, typed; :attr:`raw` keeps the map as the schema holds it."""

    raw: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    bucket: int = -1
    bucket_key: tuple[str, ...] = ()
    bucket_function_type: str = "default"
    dynamic_bucket_target_row_num: int = DEFAULT_TARGET_ROW_NUM
    merge_engine: str = "deduplicate"
    sequence_fields: tuple[str, ...] = ()
    changelog_producer: str = "none"
    ignore_delete: bool = False
    aggregation_remove_record_on_delete: bool = False
    partial_update_remove_record_on_delete: bool = False
    default_aggregate_function: str = "last_non_null_value"
    deletion_vectors_enabled: bool = False
    deletion_vectors_bitmap64: bool = False
    deletion_vectors_merge_on_read: bool = False
    file_index_read_enabled: bool = True
    file_index_in_manifest_threshold: int = DEFAULT_IN_MANIFEST_THRESHOLD
    partition_legacy_name: bool = True
    partition_default_name: str = DEFAULT_PARTITION_NAME
    manifest_format: str = "avro"
    file_format: str = "parquet"
    target_file_size: int | None = None
    data_file_path_directory: str | None = None
    data_file_external_paths: tuple[str, ...] = ()
    index_file_in_data_file_dir: bool = False
    data_evolution_enabled: bool = False
    row_tracking_enabled: bool = False
    scan_fallback_branch: str | None = None
    problems: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> CoreOptions:
        """The record of a schema's ``options`` map (values compared as Paimon does)."""
        raw = {str(k): str(v) for k, v in (options or {}).items()}
        p = _Parser(raw)
        out = cls(
            raw=raw,
            bucket=p.integer("bucket", -1),
            bucket_key=p.names("bucket-key"),
            bucket_function_type=p.lower("bucket-function.type", "default"),
            dynamic_bucket_target_row_num=p.integer("dynamic-bucket.target-row-num", DEFAULT_TARGET_ROW_NUM),
            merge_engine=p.lower("merge-engine", "deduplicate"),
            sequence_fields=p.names("sequence.field"),
            changelog_producer=p.lower("changelog-producer", "none"),
            ignore_delete=p.boolean("ignore-delete") or p.boolean("first-row.ignore-delete")
            or p.boolean("partial-update.ignore-delete"),
            aggregation_remove_record_on_delete=p.boolean("aggregation.remove-record-on-delete"),
            partial_update_remove_record_on_delete=p.boolean("partial-update.remove-record-on-delete"),
            default_aggregate_function=p.lower("fields.default-aggregate-function", "last_non_null_value"),
            deletion_vectors_enabled=p.boolean("deletion-vectors.enabled"),
            deletion_vectors_bitmap64=p.boolean("deletion-vectors.bitmap64"),
            deletion_vectors_merge_on_read=p.boolean("deletion-vectors.merge-on-read"),
            file_index_read_enabled=p.boolean("file-index.read.enabled", True),
            file_index_in_manifest_threshold=p.memory("file-index.in-manifest-threshold",
                                                      DEFAULT_IN_MANIFEST_THRESHOLD),
            partition_legacy_name=p.boolean("partition.legacy-name", True),
            partition_default_name=p.text("partition.default-name") or DEFAULT_PARTITION_NAME,
            manifest_format=p.choice("manifest.format", "avro", MANIFEST_FORMATS),
            file_format=p.lower("file.format", "parquet"),
            target_file_size=p.memory("target-file-size", 0) or None,
            data_file_path_directory=p.text("data-file.path-directory") or None,
            data_file_external_paths=p.names("data-file.external-paths"),
            index_file_in_data_file_dir=p.boolean("index-file-in-data-file-dir"),
            data_evolution_enabled=p.boolean("data-evolution.enabled"),
            row_tracking_enabled=p.boolean("row-tracking.enabled"),
            scan_fallback_branch=p.text("scan.fallback-branch") or None,
        )
        object.__setattr__(out, "problems", tuple(p.problems))
        return out

    def get(self, key: str, default: str | None = None) -> str | None:
        """The raw text of any option (for options indexcore does not type)."""
        return self.raw.get(key, default)

    def check(self) -> CoreOptions:
        """Raise :class:`OptionError` naming the first malformed option (the writer's policy)."""
        if self.problems:
            key, reason = self.problems[0]
            raise OptionError(f"option {key}: {reason}", structure="table options")
        return self

    # -- merge ------------------------------------------------------------------------------
    def aggregate_function(self, field_name: str) -> str:
        """``fields.<name>.aggregate-function``, else ``fields.default-aggregate-function``."""
        value = self.raw.get(f"fields.{field_name}.aggregate-function")
        return value.strip().lower() if value else self.default_aggregate_function

    def batch_skips_level0(self, primary_keys: Iterable[str]) -> bool:
        """Whether a batch read of a primary-key table leaves level-0 files out.

        A table with deletion vectors (unless ``deletion-vectors.merge-on-read``) or the
        ``first-row`` merge engine reads only files already compacted above level 0.
        """
        if not tuple(primary_keys):
            return False
        return (self.deletion_vectors_enabled and not self.deletion_vectors_merge_on_read) \
            or self.merge_engine == FIRST_ROW

    def bucket_keys(self, trimmed_primary_keys: tuple[str, ...]) -> tuple[str, ...]:
        """``bucket-key``, else the primary keys without the partition keys."""
        return self.bucket_key or trimmed_primary_keys

    # -- file sizes -------------------------------------------------------------------------
    def target_file_size_for(self, has_primary_key: bool) -> int:
        """``target-file-size``, else Paimon's default for the table kind (``CoreOptions.targetFileSize``)."""
        if self.target_file_size:
            return self.target_file_size
        return DEFAULT_TARGET_FILE_SIZE_PK if has_primary_key else DEFAULT_TARGET_FILE_SIZE_APPEND

    def small_file_threshold(self, has_primary_key: bool) -> int:
        """Bytes under which a data file counts as small: ``SMALL_FILE_SHARE`` of the target file size."""
        return int(SMALL_FILE_SHARE * self.target_file_size_for(has_primary_key))

    # -- file indexes -----------------------------------------------------------------------
    def file_index_columns(self, index_type: str) -> tuple[str, ...]:
        return tuple(n.strip() for n in (self.raw.get(f"{FILE_INDEX_PREFIX}{index_type}.columns") or "")
                     .split(",") if n.strip())

    def configured_indexes(self) -> list[tuple[str, str]]:
        """(column, index type) pairs of ``file-index.<type>.columns``, by index type."""
        return [(c, t) for t in FILE_INDEX_TYPES for c in self.file_index_columns(t)]

    def file_index_options(self, column: str, index_type: str) -> dict[str, str]:
        """The writer options of ``index_type`` on ``column``.

        ``file-index.<type>.<key>`` applies to every column; ``file-index.<type>.<column>.<key>``
        to one column and wins. ``columns`` itself is not a writer option.
        """
        prefix = f"{FILE_INDEX_PREFIX}{index_type}."
        own = f"{prefix}{column}."
        out: dict[str, str] = {}
        for key, value in self.raw.items():
            tail = key[len(prefix):]
            if key.startswith(prefix) and "." not in tail and tail != "columns":
                out[tail] = value
        for key, value in self.raw.items():
            if key.startswith(own) and "." not in key[len(own):]:
                out[key[len(own):]] = value
        return out

    def file_indexes(self, field_names: Iterable[str]) -> list[FileIndexSpec]:
        """The file indexes a writer builds, in field order then index type order.

        Raises :class:`OptionError` for a column the table does not have.
        """
        order = {name: i for i, name in enumerate(field_names)}
        specs = []
        for column, index_type in self.configured_indexes():
            if column not in order:
                raise OptionError(f"option {FILE_INDEX_PREFIX}{index_type}.columns names unknown "
                                  f"column {column!r}", structure="table options")
            opts = self.file_index_options(column, index_type)
            specs.append(FileIndexSpec(column, index_type, tuple(sorted(opts.items()))))
        return sorted(specs, key=lambda s: (order[s.column], FILE_INDEX_TYPES.index(s.index_type)))
