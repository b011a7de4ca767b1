"""Committing written files as Paimon's ``FileStoreCommit`` does: manifests, manifest lists,
the index manifest, ``snapshot-N`` and the LATEST/EARLIEST hints.

Each batch is an APPEND snapshot; a primary-key table with deletion vectors then gets a COMPACT
snapshot, as with ``commit.force-compact``: its level-0 files move to a level above 0
(upgraded unchanged, or replaced by their rewrite without ``-D`` rows) and older copies of the
touched keys are marked in deletion vectors (:mod:`.index_files`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from indexcore.formats.binary_row import EMPTY_ROW, serialize_binary_row
from indexcore.write.avro import INDEX_MANIFEST_SCHEMA, MANIFEST_LIST_SCHEMA, MANIFEST_SCHEMA, write_avro
from indexcore.write.datafile import WrittenFile
from indexcore.write.index_files import IndexFileWriter
from indexcore.write.layout import MAX_LEVEL, field_types, jackson, write_bytes, write_text
from indexcore.write.task import sort_token

BASE_TIME_MILLIS = 1_717_200_000_000  # 2024-06-01T00:00:00Z: snapshot times count from here


class Committer(IndexFileWriter):
    """The :class:`~indexcore.write.table.TableWriter`'s commit (a mixin over the writer's state:
    ``snapshot_id``, ``_pending_snapshots``, ``commit_index``, ``total_records``, ``_manifests``, ``_index_manifest``,
    ``_buckets``, ``_namer``, ``schema``, ``table_path``, ``meta_path``, ``commit_user``,
    ``keep_files``). Each commit's entries go to its own manifest file at once; with
    ``keep_files`` off nothing per file stays in memory after its commit."""

    def _time(self) -> int:
        """Fixed snapshot times (one minute apart) so rebuilds are identical; a snapshot reserved
        by :meth:`commit_later` and not yet written counts as written."""
        return BASE_TIME_MILLIS + 60_000 * (self.snapshot_id + self._pending_snapshots + 1)

    def commit(self, written: Sequence[WrittenFile]) -> list[int]:
        """Commit the files of one batch; returns the snapshot ids created."""
        return self.commit_later(written)()

    def commit_later(self, written: Sequence[WrittenFile]) -> Callable[[], list[int]]:
        """:meth:`commit` in two steps, so a driver can hand the next batch to its workers in
        between: now what the next :meth:`next_task_spec` reads (row ids, each bucket's files and
        next sequence number, the snapshot's number and time reserved); the returned call writes
        the manifest, manifest lists and snapshot, the same bytes as :meth:`commit`. It must be
        called before the next commit. A table with deletion vectors or dynamic buckets commits
        here at once (its compaction and index files read the state each snapshot leaves)."""
        if self._pending_snapshots:
            raise RuntimeError("the previous commit_later's snapshot is not written yet")
        written = sorted(written, key=lambda w: w.file.file_name)
        if self.row_tracking:  # Paimon assigns row ids at commit, file after file
            for i, w in enumerate(written):
                written[i] = replace(w, file=replace(w.file, first_row_id=self.next_row_id))
                self.next_row_id += w.file.row_count
        level0 = [w for w in written if w.compact_of is None]
        outputs = {w.compact_of: w for w in written if w.compact_of is not None}
        entries = [(0, w.partition, w.bucket, w.file) for w in level0]
        index_changes = self._update_hash_index(level0) if self.dynamic_bucket else {}
        for w in level0:
            b = self._buckets[(w.partition, w.bucket)]
            if self.keep_files:
                b.files[w.file.file_name] = w.file
            else:
                b.counted += 1
            b.next_seq = max(b.next_seq, w.file.max_sequence_number + 1)
        if self.deletion_vectors or self.dynamic_bucket:
            ids = [self._snapshot(entries, "APPEND", index_changes)]
            if self.deletion_vectors and level0:
                ids.append(self._compact(level0, outputs))
            return lambda: ids
        commit_index, self._pending_snapshots = self.commit_index, 1

        def write_snapshot() -> list[int]:
            if not self._pending_snapshots:
                raise RuntimeError("this commit's snapshot is written already")
            self._pending_snapshots = 0
            return [self._snapshot(entries, "APPEND", {}, commit_index)]

        return write_snapshot

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
        for key in sorted(touched, key=lambda k: (tuple(map(sort_token, k[0])), k[1])):
            index_changes[key] = self._write_dv_index(key)
        return self._snapshot(entries, "COMPACT", index_changes)


    def _partition_types(self):
        return [f.type for f in self.schema.partition_fields]

    def _snapshot(self, entries: list[tuple], kind: str, index_changes: dict, commit_index: int | None = None) -> int:
        """Write one snapshot of ``entries`` (its commit identifier: ``commit_index``, default the
        writer's current one)."""
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
            "commitUser": self.commit_user,
            "commitIdentifier": self.commit_index if commit_index is None else commit_index, "commitKind": kind,
            "timeMillis": self._time() - 60_000,
            "logOffsets": {}, "totalRecordCount": self.total_records,
            "deltaRecordCount": delta_count, "changelogRecordCount": 0,
        })
        if self.row_tracking:
            doc["nextRowId"] = self.next_row_id
        snap_dir = os.path.join(self.meta_path, "snapshot")
        write_text(os.path.join(snap_dir, f"snapshot-{self.snapshot_id}"), jackson(doc))
        write_text(os.path.join(snap_dir, "LATEST"), str(self.snapshot_id))
        if not os.path.exists(os.path.join(snap_dir, "EARLIEST")):
            first = min(int(n[len("snapshot-"):]) for n in os.listdir(snap_dir) if n.startswith("snapshot-"))
            write_text(os.path.join(snap_dir, "EARLIEST"), str(first))
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
                    "_VALUE_STATS_COLS": None, "_EXTERNAL_PATH": None, "_FIRST_ROW_ID": f.first_row_id,
                    "_WRITE_COLS": None,
                },
            })
        name = self._namer.next("manifest")
        data = write_avro(MANIFEST_SCHEMA, records, name)
        write_bytes(os.path.join(self.table_path, "manifest", name), data)
        partitions = [p for _, p, _, _ in entries]
        row_ids = [r for _, _, _, f in entries if f.first_row_id is not None
                   for r in (f.first_row_id, f.first_row_id + f.row_count - 1)]
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
            "_MIN_ROW_ID": min(row_ids) if row_ids else None, "_MAX_ROW_ID": max(row_ids) if row_ids else None,
        }

    def _write_manifest_list(self, metas: list[dict]) -> tuple[str, int]:
        name = self._namer.next("manifest-list")
        data = write_avro(MANIFEST_LIST_SCHEMA, metas, name)
        write_bytes(os.path.join(self.table_path, "manifest", name), data)
        return name, len(data)

    def _write_index_manifest(self) -> None:
        ptypes = self._partition_types()
        records = []
        for (partition, bucket), b in sorted(self._buckets.items(),
                                             key=lambda kv: (tuple(map(sort_token, kv[0][0])), kv[0][1])):
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
        records.extend(self._global_indexes)
        name = self._namer.next("index-manifest")
        write_bytes(os.path.join(self.table_path, "manifest", name),
                     write_avro(INDEX_MANIFEST_SCHEMA, records, name))
        self._index_manifest = name
