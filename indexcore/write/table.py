"""Create Paimon tables and commit written data files as snapshots, on the driver.

A :class:`TableWriter` owns one table it created. Rows are turned into data files by
:func:`write_task_rows` (in-process or inside Spark tasks); :meth:`TableWriter.commit` then
writes what Paimon's ``FileStoreCommit`` writes: a manifest with the new entries, base and
delta manifest lists, the index manifest, ``snapshot-N`` and the LATEST/EARLIEST hints.

Primary-key tables with ``deletion-vectors.enabled`` commit each batch twice, as Paimon does
with ``commit.force-compact``: an APPEND snapshot with level-0 files, then a COMPACT snapshot
that moves them to a level above 0 (upgraded unchanged, or rewritten without ``-D`` rows) and
marks older copies of the touched keys in per-bucket deletion-vector index files. Dynamic
bucket tables (``bucket = -1`` with a primary key) keep one HASH index file per bucket.
"""

from __future__ import annotations

import copy
import os
import posixpath
import shutil
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from indexcore.errors import ReadOnlyError, UnsupportedError
from indexcore.formats.binary_row import EMPTY_ROW, bucket_of, key_hash, serialize_binary_row
from indexcore.formats.deletion_vector import write_deletion_vector_file
from indexcore.formats.hash_index import write_hash_index
from indexcore.paimon.layout import BRANCH_PREFIX, branch_path, schema_path, snapshot_path, tag_path
from indexcore.warehouse.model import (
    DELETION_VECTORS,
    HASH,
    DataFileMeta,
    DeletionVectorRange,
    IndexFileMeta,
    TableSchema,
)
from indexcore.write.avro import INDEX_MANIFEST_SCHEMA, MANIFEST_LIST_SCHEMA, MANIFEST_SCHEMA, write_avro
from indexcore.write.datafile import (
    COMPACT_SOURCE,
    DELETE,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    WrittenFile,
    arrow_type,
    internal_values,
    write_data_file,
)
from indexcore.write.layout import COMMIT_USER_PREFIX, MAX_LEVEL, Namer, field_types, jackson, schema_json

READ_ONLY_MARKER = ".indexcore-read-only"
BASE_TIME_MILLIS = 1_717_200_000_000  # 2024-06-01T00:00:00Z: snapshot times count from here
BUCKET = "_BUCKET"


@dataclass(frozen=True)
class TaskSpec:
    """Everything a task needs to turn rows into data files; small and picklable."""

    table_path: str
    schema: TableSchema
    seed: Any
    commit_index: int
    seq_starts: dict = field(default_factory=dict, hash=False, compare=False)
    creation_millis: int = 0
    compact_output: bool = False


def partition_of(schema: TableSchema, rows: pa.Table) -> list[tuple]:
    """The partition (tuple of internal values) of every row."""
    if not schema.partition_keys:
        return [()] * rows.num_rows
    cols = [internal_values(rows.column(k), schema.field(k).type) for k in schema.partition_keys]
    return list(zip(*cols, strict=True))


def key_hashes(schema: TableSchema, rows: pa.Table, names: Sequence[str]) -> list[int]:
    """``BinaryRow.hashCode()`` of ``names`` for every row."""
    types = field_types(schema, names)
    cols = [internal_values(rows.column(k), schema.field(k).type) for k in names]
    return [key_hash(values, types) for values in zip(*cols, strict=True)]


def fixed_buckets(schema: TableSchema, rows: pa.Table) -> list[int]:
    """Bucket of every row of a fixed-bucket table (bucket-unaware tables: all 0)."""
    n = schema.bucket
    if n <= 0:
        return [0] * rows.num_rows
    keys = schema.bucket_keys
    if not keys:
        raise UnsupportedError("a fixed-bucket append table needs the 'bucket-key' option")
    return [bucket_of(h, n) for h in key_hashes(schema, rows, keys)]


def write_task_rows(spec: TaskSpec, rows: pa.Table, task_id: Any) -> list[WrittenFile]:
    """Write the rows one task holds: one data file per partition and bucket.

    ``rows`` has the table columns, a ``_BUCKET`` column, and ``_VALUE_KIND`` for deletes of a
    primary-key table. With ``compact_output`` a group holding ``-D`` rows is also written
    again without them, as the compaction output the COMPACT snapshot adds.
    """
    if rows.num_rows == 0:
        return []
    schema = spec.schema
    namer = Namer(spec.seed, spec.table_path.rstrip("/").rsplit("/", 1)[-1], spec.commit_index, task_id)
    parts = partition_of(schema, rows)
    buckets = rows.column(BUCKET).to_pylist()
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, (p, b) in enumerate(zip(parts, buckets, strict=True)):
        groups[(p, b)].append(i)
    out = []
    for (partition, bucket) in sorted(groups, key=lambda g: (tuple(map(_sort_token, g[0])), g[1])):
        group = rows.take(pa.array(groups[(partition, bucket)]))
        if schema.primary_keys:
            group = group.sort_by([(k, "ascending") for k in schema.trimmed_primary_keys])
        seq = spec.seq_starts.get((partition, bucket), 0)
        written = write_data_file(spec.table_path, schema, partition, bucket, group,
                                  namer.next("data", ".parquet"), seq_start=seq,
                                  creation_millis=spec.creation_millis)
        out.append(written)
        if spec.compact_output and written.deletes:
            kinds = group.column(VALUE_KIND) if VALUE_KIND in group.column_names else None
            if kinds is not None:
                with_seq = group.append_column(
                    SEQUENCE_NUMBER, pa.array(range(seq, seq + group.num_rows), pa.int64()))
                kept = with_seq.filter(pc.not_equal(kinds, DELETE))
                if kept.num_rows:
                    compacted = write_data_file(spec.table_path, schema, partition, bucket, kept,
                                                namer.next("data", ".parquet"), level=1,
                                                file_source=COMPACT_SOURCE,
                                                creation_millis=spec.creation_millis)
                    out.append(replace(compacted, compact_of=written.file.file_name))
    return out


def _sort_token(value: Any) -> tuple:
    return (value is None, str(type(value)), value if value is not None else 0)


@dataclass
class _Bucket:
    """What the committer remembers about one partition/bucket."""

    files: dict[str, DataFileMeta] = field(default_factory=dict)
    next_seq: int = 0
    keys: dict[tuple, tuple[str, int]] = field(default_factory=dict)
    dvs: dict[str, BitMap] = field(default_factory=dict)
    dv_index: IndexFileMeta | None = None
    hashes: list[int] = field(default_factory=list)
    hash_index: IndexFileMeta | None = None


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
    import json

    names = [n for n in os.listdir(snap_dir) if n.startswith("snapshot-")]
    if not names:
        return False
    for name in names:
        with open(os.path.join(snap_dir, name), encoding="utf-8") as fh:
            user = json.load(fh).get("commitUser") or ""
        if not user.startswith(COMMIT_USER_PREFIX):
            return False
    return True


class TableWriter:
    """Writes one Paimon table from scratch: schema, data files, indexes and snapshots."""

    def __init__(self, table_path: str, schema: TableSchema, seed: Any = 0):
        self.table_path = table_path
        self.meta_path = table_path  # schema/, snapshot/ and tag/ (a branch's own folder)
        self.branch_name: str | None = None
        self.schema = schema
        self.seed = seed
        self._namer = Namer(seed, "commit", posixpath.basename(table_path.rstrip("/")))
        self.commit_user = COMMIT_USER_PREFIX + self._namer.uuid()
        self.snapshot_id = 0
        self.commit_index = 0
        self.total_records = 0
        self._manifests: list[dict] = []
        self._index_manifest: str | None = None
        self._buckets: dict[tuple, _Bucket] = defaultdict(_Bucket)
        self._dynamic: dict[tuple, dict[int, int]] = defaultdict(dict)
        self._dynamic_counts: dict[tuple, dict[int, int]] = defaultdict(dict)

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(cls, warehouse: Any, name: str, schema: TableSchema, seed: Any = 0,
               overwrite: bool = False) -> TableWriter:
        """Create ``db.table`` under a local warehouse root and write ``schema/schema-0``.

        An existing table is replaced only with ``overwrite`` and only if indexcore made it.
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
        _write_text(os.path.join(path, "schema", f"schema-{schema.id}"), schema_json(schema))
        return cls(path, schema, seed)

    # ------------------------------------------------------------------ properties

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
        """Add the ``_BUCKET`` column: fixed hash buckets, bucket 0, or dynamic assignment."""
        if self.dynamic_bucket:
            hashes = key_hashes(self.schema, rows, self.schema.trimmed_primary_keys)
            buckets = self.assign_dynamic(list(zip(partition_of(self.schema, rows), hashes, strict=True)))
        else:
            buckets = fixed_buckets(self.schema, rows)
        return rows.append_column(BUCKET, pa.array(buckets, pa.int32()))

    def assign_dynamic(self, partition_hashes: Iterable[tuple[tuple, int]]) -> list[int]:
        """Paimon's hash bucket assigner: a known key keeps its bucket; a new one fills the
        lowest bucket below ``dynamic-bucket.target-row-num`` (default 2,000,000)."""
        target = self.schema.core_options.dynamic_bucket_target_row_num
        out = []
        for partition, h in partition_hashes:
            index = self._dynamic[partition]
            if h not in index:
                counts = self._dynamic_counts[partition]
                bucket = next((b for b in sorted(counts) if counts[b] < target), None)
                if bucket is None:
                    bucket = next(b for b in range(len(counts) + 1) if b not in counts)
                index[h] = bucket
                counts[bucket] = counts.get(bucket, 0) + 1
            out.append(index[h])
        return out

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
        names = list(self.schema.field_names)
        target = pa.schema([pa.field(f.name, arrow_type(f.type)) for f in self.schema.fields])
        rows = rows.select(names).cast(target)
        if self.is_pk:
            rows = rows.append_column(VALUE_KIND, pa.array([0] * rows.num_rows, pa.int8()))
            if deletes is not None and deletes.num_rows:
                d = deletes.select(names).cast(target)
                d = d.append_column(VALUE_KIND, pa.array([DELETE] * deletes.num_rows, pa.int8()))
                rows = pa.concat_tables([rows, d])
        return self.assign_buckets(rows)

    # ------------------------------------------------------------------ commit

    def _time(self) -> int:
        """Fixed snapshot times (one minute apart) so rebuilds are identical."""
        return BASE_TIME_MILLIS + 60_000 * (self.snapshot_id + 1)

    def commit(self, written: Sequence[WrittenFile]) -> list[int]:
        """Commit the files of one batch; returns the snapshot ids created."""
        written = sorted(written, key=lambda w: w.file.file_name)
        level0 = [w for w in written if w.compact_of is None]
        outputs = {w.compact_of: w for w in written if w.compact_of is not None}
        ids = []
        entries = [(0, w.partition, w.bucket, w.file) for w in level0]
        index_changes = self._update_hash_index(level0) if self.dynamic_bucket else {}
        for w in level0:
            b = self._buckets[(w.partition, w.bucket)]
            b.files[w.file.file_name] = w.file
            b.next_seq = max(b.next_seq, w.file.max_sequence_number + 1)
        ids.append(self._snapshot(entries, "APPEND", index_changes))
        if self.deletion_vectors and level0:
            ids.append(self._compact(level0, outputs))
        return ids

    def _compact(self, level0: list[WrittenFile], outputs: dict[str, WrittenFile]) -> int:
        entries = []
        touched: set[tuple] = set()
        for w in level0:
            key = (w.partition, w.bucket)
            b = self._buckets[key]
            levels = [f.level for f in b.files.values() if f.level > 0]
            level = max(1, (min(levels) if levels else MAX_LEVEL + 1) - 1)
            entries.append((1, w.partition, w.bucket, w.file))
            del b.files[w.file.file_name]
            out = outputs.get(w.file.file_name)
            if out is not None:
                new_meta = replace(out.file, level=level)
                new_keys = out.keys or ()
            elif not w.deletes:
                new_meta = replace(w.file, level=level)
                new_keys = w.keys or ()
            else:
                new_meta, new_keys = None, ()
            changed = self._mark_deleted(b, w.keys or ())
            if new_meta is not None:
                b.files[new_meta.file_name] = new_meta
                entries.append((0, w.partition, w.bucket, new_meta))
                for pos, k in enumerate(new_keys):
                    b.keys[k] = (new_meta.file_name, pos)
            deleted = set(w.keys[i] for i in w.deletes) if w.keys else set()
            for k in deleted:
                b.keys.pop(k, None)
            if changed:
                touched.add(key)
        index_changes = {}
        for key in sorted(touched, key=lambda k: (tuple(map(_sort_token, k[0])), k[1])):
            index_changes[key] = self._write_dv_index(key)
        return self._snapshot(entries, "COMPACT", index_changes)

    def _mark_deleted(self, b: _Bucket, keys: Iterable[tuple]) -> bool:
        changed = False
        for k in keys:
            hit = b.keys.get(k)
            if hit is not None and hit[0] in b.files:
                b.dvs.setdefault(hit[0], BitMap()).add(hit[1])
                changed = True
        return changed

    def _write_dv_index(self, key: tuple) -> tuple[str, IndexFileMeta | None, IndexFileMeta | None]:
        b = self._buckets[key]
        dvs = [(name, bm) for name, bm in sorted(b.dvs.items()) if name in b.files and len(bm)]
        old = b.dv_index
        if not dvs:
            b.dv_index = None
            return (DELETION_VECTORS, old, None)
        data, metas = write_deletion_vector_file(dvs, bitmap64=self.bitmap64)
        name = self._namer.next("index")
        _write_bytes(self._index_path(name, key), data)
        ranges = tuple(DeletionVectorRange(m.data_file, m.offset, m.length, m.cardinality) for m in metas)
        b.dv_index = IndexFileMeta(DELETION_VECTORS, name, len(data), len(ranges), ranges)
        return (DELETION_VECTORS, old, b.dv_index)

    def _update_hash_index(self, level0: list[WrittenFile]) -> dict:
        changes = {}
        for w in level0:
            b = self._buckets[(w.partition, w.bucket)]
            known = set(b.hashes)
            types = field_types(self.schema, self.schema.trimmed_primary_keys)
            new = [h for h in (key_hash(k, types) for k in (w.keys or ())) if h not in known]
            if not new and b.hash_index is not None:
                continue
            b.hashes.extend(dict.fromkeys(new))
            data = write_hash_index(b.hashes)
            name = self._namer.next("index")
            _write_bytes(self._index_path(name, (w.partition, w.bucket)), data)
            old, b.hash_index = b.hash_index, IndexFileMeta(HASH, name, len(data), len(b.hashes))
            changes[(w.partition, w.bucket)] = (HASH, old, b.hash_index)
        return changes

    # ------------------------------------------------------------------ metadata files

    def _index_path(self, name: str, key: tuple) -> str:
        """Where a bucket's DV or hash index file goes (``index/`` or its bucket folder)."""
        layout = self.schema.path_layout(self.table_path)
        return layout.index_file_path(name, layout.partition_dir(key[0]), key[1])

    def _partition_types(self):
        return [f.type for f in self.schema.partition_fields]

    def _snapshot(self, entries: list[tuple], kind: str, index_changes: dict) -> int:
        self.snapshot_id += 1
        base = list(self._manifests)
        delta = []
        delta_count = 0
        if entries:
            delta.append(self._write_manifest(entries))
            delta_count = sum(f.row_count if k == 0 else -f.row_count for k, _, _, f in entries)
        self.total_records += delta_count
        base_name, base_size = self._write_manifest_list(base)
        delta_name, delta_size = self._write_manifest_list(delta)
        self._manifests = base + delta
        if index_changes:
            self._write_index_manifest()
        doc: dict[str, Any] = {
            "version": 3, "id": self.snapshot_id, "schemaId": self.schema.id,
            "baseManifestList": base_name, "baseManifestListSize": base_size,
            "deltaManifestList": delta_name, "deltaManifestListSize": delta_size,
            "changelogManifestList": None,
        }
        if self._index_manifest:
            doc["indexManifest"] = self._index_manifest
        doc.update({
            "commitUser": self.commit_user, "commitIdentifier": self.commit_index, "commitKind": kind,
            "timeMillis": self._time() - 60_000,
            "logOffsets": {}, "totalRecordCount": self.total_records,
            "deltaRecordCount": delta_count, "changelogRecordCount": 0,
        })
        snap_dir = os.path.join(self.meta_path, "snapshot")
        _write_text(os.path.join(snap_dir, f"snapshot-{self.snapshot_id}"), jackson(doc))
        _write_text(os.path.join(snap_dir, "LATEST"), str(self.snapshot_id))
        if not os.path.exists(os.path.join(snap_dir, "EARLIEST")):
            first = min(int(n[len("snapshot-"):]) for n in os.listdir(snap_dir) if n.startswith("snapshot-"))
            _write_text(os.path.join(snap_dir, "EARLIEST"), str(first))
        return self.snapshot_id

    def _stats_bytes(self, stats, names: Sequence[str]) -> dict:
        types = field_types(self.schema, names)
        return {"_MIN_VALUES": serialize_binary_row(stats.min_values, types),
                "_MAX_VALUES": serialize_binary_row(stats.max_values, types),
                "_NULL_COUNTS": list(stats.null_counts)}

    def _write_manifest(self, entries: list[tuple]) -> dict:
        ptypes = self._partition_types()
        keys = self.schema.trimmed_primary_keys if self.is_pk else ()
        ktypes = field_types(self.schema, keys)
        records = []
        for kind, partition, bucket, f in entries:
            records.append({
                "_VERSION": 2, "_KIND": kind, "_PARTITION": serialize_binary_row(partition, ptypes),
                "_BUCKET": bucket, "_TOTAL_BUCKETS": self.total_buckets,
                "_FILE": {
                    "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size, "_ROW_COUNT": f.row_count,
                    "_MIN_KEY": serialize_binary_row(f.min_key, ktypes) if keys else EMPTY_ROW,
                    "_MAX_KEY": serialize_binary_row(f.max_key, ktypes) if keys else EMPTY_ROW,
                    "_KEY_STATS": self._stats_bytes(f.key_stats, keys) if keys else
                    {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW, "_NULL_COUNTS": []},
                    "_VALUE_STATS": self._stats_bytes(f.value_stats, self.schema.field_names),
                    "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
                    "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
                    "_SCHEMA_ID": f.schema_id, "_LEVEL": f.level, "_EXTRA_FILES": list(f.extra_files),
                    "_CREATION_TIME": f.creation_time, "_DELETE_ROW_COUNT": f.delete_row_count,
                    "_EMBEDDED_FILE_INDEX": f.embedded_index, "_FILE_SOURCE": f.file_source,
                    "_VALUE_STATS_COLS": None, "_EXTERNAL_PATH": None, "_FIRST_ROW_ID": None,
                    "_WRITE_COLS": None,
                },
            })
        name = self._namer.next("manifest")
        data = write_avro(MANIFEST_SCHEMA, records, name)
        _write_bytes(os.path.join(self.table_path, "manifest", name), data)
        partitions = [p for _, p, _, _ in entries]
        mins, maxs, nulls = [], [], []
        for i in range(len(ptypes)):
            vals = [p[i] for p in partitions if p[i] is not None]
            mins.append(min(vals) if vals else None)
            maxs.append(max(vals) if vals else None)
            nulls.append(len(partitions) - len(vals))
        return {
            "_VERSION": 2, "_FILE_NAME": name, "_FILE_SIZE": len(data),
            "_NUM_ADDED_FILES": sum(1 for e in entries if e[0] == 0),
            "_NUM_DELETED_FILES": sum(1 for e in entries if e[0] == 1),
            "_PARTITION_STATS": {"_MIN_VALUES": serialize_binary_row(mins, ptypes),
                                 "_MAX_VALUES": serialize_binary_row(maxs, ptypes),
                                 "_NULL_COUNTS": nulls},
            "_SCHEMA_ID": self.schema.id,
            "_MIN_BUCKET": min(e[2] for e in entries), "_MAX_BUCKET": max(e[2] for e in entries),
            "_MIN_LEVEL": min(e[3].level for e in entries), "_MAX_LEVEL": max(e[3].level for e in entries),
            "_MIN_ROW_ID": None, "_MAX_ROW_ID": None,
        }

    def _write_manifest_list(self, metas: list[dict]) -> tuple[str, int]:
        name = self._namer.next("manifest-list")
        data = write_avro(MANIFEST_LIST_SCHEMA, metas, name)
        _write_bytes(os.path.join(self.table_path, "manifest", name), data)
        return name, len(data)

    def _write_index_manifest(self) -> None:
        ptypes = self._partition_types()
        records = []
        for (partition, bucket), b in sorted(self._buckets.items(),
                                             key=lambda kv: (tuple(map(_sort_token, kv[0][0])), kv[0][1])):
            for meta in (b.hash_index, b.dv_index):
                if meta is None:
                    continue
                ranges = None
                if meta.dv_ranges is not None:
                    ranges = [{"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                              for r in meta.dv_ranges]
                records.append({
                    "_VERSION": 1, "_KIND": 0, "_PARTITION": serialize_binary_row(partition, ptypes),
                    "_BUCKET": bucket, "_INDEX_TYPE": meta.index_type, "_FILE_NAME": meta.file_name,
                    "_FILE_SIZE": meta.file_size, "_ROW_COUNT": meta.row_count,
                    "_DELETIONS_VECTORS_RANGES": ranges, "_EXTERNAL_PATH": None, "_GLOBAL_INDEX": None,
                })
        name = self._namer.next("index-manifest")
        _write_bytes(os.path.join(self.table_path, "manifest", name),
                     write_avro(INDEX_MANIFEST_SCHEMA, records, name))
        self._index_manifest = name

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
        _write_text(schema_path(self.meta_path, schema.id), schema_json(schema))
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
        shutil.copyfile(source, _ensure_dir(path))
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
            import json

            with open(tag_file, encoding="utf-8") as fh:
                sid = int(json.load(fh)["id"])
            if sid != self.snapshot_id:
                raise UnsupportedError(f"indexcore branches from the latest snapshot only (tag {tag!r} "
                                       f"pins {sid}, the latest is {self.snapshot_id})")
            shutil.copyfile(tag_file, _ensure_dir(tag_path(folder, tag)))
            shutil.copyfile(snapshot_path(self.meta_path, sid), _ensure_dir(snapshot_path(folder, sid)))
            first_schema = 0
            branch = copy.deepcopy(self)
        else:
            first_schema = self.schema.id
            branch = TableWriter(self.table_path, self.schema, self.seed)
        for sid in range(first_schema, self.schema.id + 1):
            source = schema_path(self.meta_path, sid)
            if os.path.exists(source):
                shutil.copyfile(source, _ensure_dir(schema_path(folder, sid)))
        branch.meta_path = folder
        branch.branch_name = name
        branch.seed = f"{self.seed}:{BRANCH_PREFIX}{name}"
        branch._namer = Namer(branch.seed, "commit", posixpath.basename(self.table_path.rstrip("/")))
        branch.commit_user = COMMIT_USER_PREFIX + branch._namer.uuid()
        return branch

    # ------------------------------------------------------------------ inspection

    def live_files(self) -> dict[tuple, list[DataFileMeta]]:
        """Live data files per (partition, bucket) after the last commit."""
        return {k: list(b.files.values()) for k, b in self._buckets.items() if b.files}

    def deletion_vectors_of(self) -> dict[str, list[int]]:
        """Deleted positions per data file, as committed."""
        return {name: sorted(bm) for b in self._buckets.values() for name, bm in b.dvs.items()
                if name in b.files and len(bm)}


def _write_bytes(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def _ensure_dir(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def _write_text(path: str, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))
