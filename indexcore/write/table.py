"""Create Paimon tables and commit written data files as snapshots, on the driver.

A :class:`TableWriter` owns one table it created. Rows are turned into data files by
:func:`~indexcore.write.task.write_task_rows` (in-process or inside Spark tasks);
:meth:`TableWriter.commit` (:mod:`.commit`) then writes what Paimon's ``FileStoreCommit``
writes: a manifest with the new entries, base and delta manifest lists, the index manifest,
``snapshot-N`` and the LATEST/EARLIEST hints.

Primary-key tables with ``deletion-vectors.enabled`` commit each batch twice, as Paimon does
with ``commit.force-compact``: an APPEND snapshot with level-0 files, then a COMPACT snapshot
that moves them to a level above 0 (upgraded unchanged, or rewritten without ``-D`` rows) and
marks older copies of the touched keys in per-bucket deletion-vector index files
(:mod:`.index_files`). Dynamic bucket tables (``bucket = -1`` with a primary key) keep one
HASH index file per bucket. Tags and branches are written as Paimon's ``TagManager`` and
``BranchManager`` do.
"""

from __future__ import annotations

import copy
import json
import os
import posixpath
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from indexcore.errors import ReadOnlyError, UnsupportedError
from indexcore.paimon.layout import BRANCH_PREFIX, branch_path, schema_path, snapshot_path, tag_path
from indexcore.warehouse.model import DataFileMeta, TableSchema
from indexcore.write.commit import BASE_TIME_MILLIS, Committer
from indexcore.write.datafile import DELETE, VALUE_KIND, arrow_type
from indexcore.write.dynamic_bucket import DynamicBuckets
from indexcore.write.index_files import BucketState
from indexcore.write.layout import COMMIT_USER_PREFIX, Namer, ensure_dir, schema_json, write_text
from indexcore.write.task import (
    BUCKET,
    TaskSpec,
    fixed_buckets,
    key_hash_array,
    partition_codes,
    write_task_rows,
)

READ_ONLY_MARKER = ".indexcore-read-only"


def check_writable(warehouse: Any) -> str:
    """The warehouse root as a local path; ReadOnlyError for a browsing handle or flagged root."""
    if not isinstance(warehouse, str | os.PathLike):
        raise ReadOnlyError(f"{warehouse!r} was opened for browsing; pass a warehouse path to write")
    root = os.fspath(warehouse)
    if "://" in root and not root.startswith("file://"):
        raise UnsupportedError(f"indexcore writes local warehouses only, not {root}")
    root = root.removeprefix("file://")
    probe = os.path.abspath(root)
    while True:
        if os.path.exists(os.path.join(probe, READ_ONLY_MARKER)):
            raise ReadOnlyError(f"warehouse {root} is flagged read-only ({READ_ONLY_MARKER})", file=probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return root


def created_by_indexcore(table_path: str) -> bool:
    """True if every snapshot of the table was committed by indexcore (or it is empty)."""
    snap_dir = os.path.join(table_path, "snapshot")
    if not os.path.isdir(table_path):
        return True
    if not os.path.isdir(snap_dir):
        return not os.listdir(table_path)
    names = [n for n in os.listdir(snap_dir) if n.startswith("snapshot-")]
    if not names:
        return False
    for name in names:
        with open(os.path.join(snap_dir, name), encoding="utf-8") as fh:
            user = json.load(fh).get("commitUser") or ""
        if not user.startswith(COMMIT_USER_PREFIX):
            return False
    return True



class TableWriter(Committer):
    """Writes one Paimon table from scratch: schema, data files, indexes and snapshots."""

    def __init__(self, table_path: str, schema: TableSchema, seed: Any = 0, keep_files: bool = True):
        if not keep_files and schema.primary_keys:
            raise UnsupportedError("a primary-key table's writer keeps its files' metadata "
                                   "(compaction and deletion vectors read it)")
        self.keep_files = keep_files  # off: live files are only counted (bulk append tables)
        self.table_path = table_path
        self.meta_path = table_path  # schema/, snapshot/ and tag/ (a branch's own folder)
        self.branch_name: str | None = None
        self.schema = schema
        self.seed = seed
        self._namer = Namer(seed, "commit", posixpath.basename(table_path.rstrip("/")))
        self.commit_user = COMMIT_USER_PREFIX + self._namer.uuid()
        self.snapshot_id = 0
        self._pending_snapshots = 0  # reserved by commit_later, not yet written (0 or 1)
        self.commit_index = 0
        self.total_records = 0
        self._manifests: list[dict] = []
        self._index_manifest: str | None = None
        self.next_row_id = 0  # row tracking: the first row id of the next data file
        self._global_indexes: list[dict] = []  # index-manifest records of global index files
        self._buckets: dict[tuple, BucketState] = defaultdict(BucketState)
        self._dynamic = DynamicBuckets(schema.core_options.dynamic_bucket_target_row_num) \
            if schema.primary_keys and schema.bucket == -1 else None

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(cls, warehouse: Any, name: str, schema: TableSchema, seed: Any = 0,
               overwrite: bool = False, keep_files: bool = True) -> TableWriter:
        """Create ``db.table`` under a local warehouse root and write ``schema/schema-0``.

        An existing table is replaced only with ``overwrite`` and only if indexcore made it.
        ``keep_files=False`` (append tables): the writer counts live files instead of keeping
        their metadata, so a million-file build holds nothing per file.
        """
        root = check_writable(warehouse)
        db, _, table = name.partition(".")
        if not db or not table:
            raise UnsupportedError(f"table name must be 'database.table', got {name!r}")
        schema.core_options.check().file_indexes(schema.field_names)
        path = os.path.join(root, f"{db}.db", table)
        if os.path.exists(path):
            if not created_by_indexcore(path):
                raise ReadOnlyError(f"{name} exists and was not written by indexcore; not touching it",
                                    file=path)
            if not overwrite and os.listdir(path):
                raise ReadOnlyError(f"{name} exists; pass overwrite=True to rebuild it", file=path)
            shutil.rmtree(path)
        os.makedirs(os.path.join(path, "schema"))
        if schema.time_millis is None or schema.time_millis == 0:
            schema = replace(schema, time_millis=BASE_TIME_MILLIS)
        write_text(os.path.join(path, "schema", f"schema-{schema.id}"), schema_json(schema))
        return cls(path, schema, seed, keep_files)

    # ------------------------------------------------------------------ properties

    @property
    def row_tracking(self) -> bool:
        """``row-tracking.enabled``: data files get ``first_row_id`` and snapshots ``nextRowId``."""
        return self.schema.core_options.row_tracking_enabled

    @property
    def is_pk(self) -> bool:
        return bool(self.schema.primary_keys)

    @property
    def dynamic_bucket(self) -> bool:
        return self.is_pk and self.schema.bucket == -1

    @property
    def deletion_vectors(self) -> bool:
        return self.is_pk and self.schema.core_options.deletion_vectors_enabled

    @property
    def bitmap64(self) -> bool:
        return self.schema.core_options.deletion_vectors_bitmap64

    @property
    def total_buckets(self) -> int:
        return self.schema.bucket if self.schema.bucket > 0 else -1

    def next_task_spec(self) -> TaskSpec:
        """The spec tasks write the next batch with (fixes names, sequence numbers, times)."""
        self.commit_index += 1
        seqs = {k: b.next_seq for k, b in self._buckets.items()}
        return TaskSpec(self.table_path, self.schema, self.seed, self.commit_index, seqs,
                        self._time(), self.deletion_vectors)

    # ------------------------------------------------------------------ buckets

    def assign_buckets(self, rows: pa.Table) -> pa.Table:
        """Rows with ``_BUCKET``: fixed buckets from the key hash, dynamic ones assigned to new
        keys in row order."""
        buckets = self.dynamic_buckets(rows) if self.dynamic_bucket else fixed_buckets(self.schema, rows)
        return rows.append_column(BUCKET, pa.array(buckets, pa.int32()))

    def dynamic_buckets(self, rows: pa.Table, *, ascending: bool = False) -> np.ndarray:
        """The dynamic bucket of every row (:class:`~indexcore.write.dynamic_bucket.DynamicBuckets`):
        new keys in row order, or with ``ascending`` in ascending key-hash order per partition."""
        partitions, codes = partition_codes(self.schema, rows)
        hashes = key_hash_array(self.schema, rows, self.schema.trimmed_primary_keys)
        return self._dynamic.assign(partitions, codes, hashes, ascending=ascending)

    def assign_dynamic(self, partition_hashes: Iterable[tuple[tuple, int]]) -> list[int]:
        """Paimon's hash bucket assigner over ``(partition, key hash)`` pairs, new keys in the
        given order: a known key keeps its bucket; a new one fills the lowest bucket below
        ``dynamic-bucket.target-row-num`` (default 2,000,000), or opens the lowest bucket
        number not yet used."""
        pairs = list(partition_hashes)
        index: dict[tuple, int] = {}
        codes = np.fromiter((index.setdefault(p, len(index)) for p, _ in pairs), np.int64, len(pairs))
        hashes = np.fromiter((h for _, h in pairs), np.int64, len(pairs))
        return self._dynamic.assign(list(index), codes, hashes).tolist()

    # ------------------------------------------------------------------ in-process write

    def write(self, rows: pa.Table, deletes: pa.Table | None = None) -> list[int]:
        """Write and commit one batch in this process; returns the new snapshot ids.

        ``deletes`` (primary-key tables) holds rows whose keys are deleted by this batch.
        """
        batch = self.prepare_batch(rows, deletes)
        spec = self.next_task_spec()
        return self.commit(write_task_rows(spec, batch, 0))

    def prepare_batch(self, rows: pa.Table, deletes: pa.Table | None = None) -> pa.Table:
        """Rows with ``_VALUE_KIND`` (PK tables) and ``_BUCKET``, ready for :func:`write_task_rows`."""
        return self.assign_buckets(self.with_kinds(rows, deletes))

    def with_kinds(self, rows: pa.Table, deletes: pa.Table | None = None) -> pa.Table:
        """Rows in the table's columns and types, deletes after upserts with ``_VALUE_KIND`` (PK tables)."""
        names = list(self.schema.field_names)
        target = pa.schema([pa.field(f.name, arrow_type(f.type)) for f in self.schema.fields])
        rows = rows.select(names).cast(target)
        if self.is_pk:
            rows = rows.append_column(VALUE_KIND, pa.array([0] * rows.num_rows, pa.int8()))
            if deletes is not None and deletes.num_rows:
                d = deletes.select(names).cast(target)
                d = d.append_column(VALUE_KIND, pa.array([DELETE] * deletes.num_rows, pa.int8()))
                rows = pa.concat_tables([rows, d])
        return rows

    # ------------------------------------------------------------------ schema, tags, branches

    def alter_schema(self, schema: TableSchema) -> TableSchema:
        """Commit the next schema version: this one plus columns added at the end.

        Append tables only (older files keep their schema id; readers fill the new columns
        with nulls). Later batches are written under the new schema.
        """
        old = self.schema
        if self.is_pk:
            raise UnsupportedError("indexcore evolves the schema of append tables only")
        if schema.fields[:len(old.fields)] != old.fields or schema.partition_keys != old.partition_keys \
                or schema.primary_keys != old.primary_keys:
            raise UnsupportedError("a new schema may only add columns at the end")
        schema.core_options.check().file_indexes(schema.field_names)
        schema = replace(schema, id=old.id + 1, time_millis=self._time())
        write_text(schema_path(self.meta_path, schema.id), schema_json(schema))
        self.schema = schema
        return schema

    def create_tag(self, name: str, snapshot_id: int | None = None) -> str:
        """Write ``tag/tag-NAME`` pinning a snapshot (the latest by default), as Paimon's
        ``TagManager`` does (the snapshot JSON itself); returns its path."""
        sid = self.snapshot_id if snapshot_id is None else int(snapshot_id)
        source = snapshot_path(self.meta_path, sid)
        if not os.path.exists(source):
            raise UnsupportedError(f"no snapshot {sid} to tag", file=source)
        path = tag_path(self.meta_path, name)
        if os.path.exists(path):
            raise ReadOnlyError(f"tag {name!r} exists", file=path)
        shutil.copyfile(source, ensure_dir(path))
        return path

    def create_branch(self, name: str, tag: str | None = None) -> TableWriter:
        """Create ``branch/branch-NAME`` as Paimon's ``BranchManager`` does and return its writer.

        From ``tag``: the tag, its snapshot and the schemas up to the tag's are copied into the
        branch folder, and the branch goes on from the tagged state (which must be the latest,
        since the writer keeps only its latest state). Without a tag: the latest schema only,
        no snapshot. Data, index and manifest files stay in the table folder, shared.
        """
        if not name or name == "main" or "/" in name or name.isdigit():
            raise UnsupportedError(f"not a branch name: {name!r}")
        folder = branch_path(self.table_path, name)
        if os.path.exists(folder):
            raise ReadOnlyError(f"branch {name!r} exists", file=folder)
        if tag is not None:
            tag_file = tag_path(self.meta_path, tag)
            if not os.path.exists(tag_file):
                raise UnsupportedError(f"no tag {tag!r}", file=tag_file)
            with open(tag_file, encoding="utf-8") as fh:
                sid = int(json.load(fh)["id"])
            if sid != self.snapshot_id:
                raise UnsupportedError(f"indexcore branches from the latest snapshot only (tag {tag!r} "
                                       f"pins {sid}, the latest is {self.snapshot_id})")
            shutil.copyfile(tag_file, ensure_dir(tag_path(folder, tag)))
            shutil.copyfile(snapshot_path(self.meta_path, sid), ensure_dir(snapshot_path(folder, sid)))
            first_schema = 0
            branch = copy.deepcopy(self)
        else:
            first_schema = self.schema.id
            branch = TableWriter(self.table_path, self.schema, self.seed)
        for sid in range(first_schema, self.schema.id + 1):
            source = schema_path(self.meta_path, sid)
            if os.path.exists(source):
                shutil.copyfile(source, ensure_dir(schema_path(folder, sid)))
        branch.meta_path = folder
        branch.branch_name = name
        branch.seed = f"{self.seed}:{BRANCH_PREFIX}{name}"
        branch._namer = Namer(branch.seed, "commit", posixpath.basename(self.table_path.rstrip("/")))
        branch.commit_user = COMMIT_USER_PREFIX + branch._namer.uuid()
        return branch

    # ------------------------------------------------------------------ inspection

    def live_files(self) -> dict[tuple, list[DataFileMeta]]:
        """Live data files per (partition, bucket) after the last commit."""
        if not self.keep_files:
            raise UnsupportedError(f"the writer of {self.table_path} counts its files without keeping "
                                   "their metadata; use live_file_counts()")
        return {k: list(b.files.values()) for k, b in self._buckets.items() if b.files}

    def live_file_counts(self) -> dict[tuple, int]:
        """How many live data files each (partition, bucket) holds after the last commit."""
        counts = {k: len(b.files) + b.counted for k, b in self._buckets.items()}
        return {k: n for k, n in counts.items() if n}

    def deletion_vectors_of(self) -> dict[str, list[int]]:
        """Deleted positions per data file, as committed."""
        return {name: sorted(bm) for b in self._buckets.values() for name, bm in b.dvs.items()
                if name in b.files and len(bm)}
