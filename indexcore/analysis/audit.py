"""Index audit: does every index of a table still describe the data it claims to index?

:func:`audit_file` checks one live data file against its own indexes (it reads the file's
rows, so it is what Spark tasks run); :func:`audit_table` checks what spans files: deletion
vector files against the index manifest, hash indexes across buckets, unreferenced index
files. Both return :class:`Finding` lists, one ``OK`` finding per check that passed, so a
health report can count what was checked as well as what failed
(:func:`health_frames`).

Each file-index kind's check (does the index agree with the column's values) lives beside its
format and is reached through :mod:`indexcore.formats.registry` (``IndexKind.audit``); this module
reads the columns once (:class:`~indexcore.formats.column_values.ColumnValues`) and turns what a
check reports into findings. Nothing here imports pandas except the health report, so a Spark
task stays light.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from indexcore.errors import IndexCoreError
from indexcore.formats.binary_row import key_hash
from indexcore.formats.column_values import MAX_VALUES_LISTED, ColumnValues
from indexcore.formats.container import FileIndexContainer, read_container
from indexcore.formats.deletion_vector import scan_deletion_vector_file
from indexcore.formats.registry import FILE_INDEX_TYPES, index_kind
from indexcore.io import BytesSource, Fetch
from indexcore.paimon.index_types import DELETION_VECTORS, HASH
from indexcore.views.common import partition_text
from indexcore.warehouse.data_file import read_raw
from indexcore.warehouse.file_columns import evolve_columns
from indexcore.warehouse.manifest import read_records
from indexcore.warehouse.model import LiveFile

if TYPE_CHECKING:
    import pandas as pd



class Severity(StrEnum):
    """How a check came out (JSON: the value)."""

    OK = "OK"
    ERROR = "ERROR"
    WARNING = "WARNING"
    NOT_CHECKED = "NOT_CHECKED"


OK, ERROR, WARNING, NOT_CHECKED = Severity.OK, Severity.ERROR, Severity.WARNING, Severity.NOT_CHECKED


class Check(StrEnum):
    """The audit's checks (JSON: the value). ``AUDIT`` is a file whose audit itself failed."""

    AUDIT = "audit"
    BITMAP_ROWS = "bitmap-rows"
    DATA_FILE = "data-file"
    DV_CARDINALITY = "dv-cardinality"
    DV_DECODES = "dv-decodes"
    DV_FILE_OK = "dv-file-ok"
    DV_MANIFEST = "dv-manifest"
    DV_OK = "dv-ok"
    DV_ORPHAN = "dv-orphan"
    DV_POSITIONS = "dv-positions"
    HASH_DECODES = "hash-decodes"
    HASH_DUPLICATE = "hash-duplicate"
    HASH_KEYS = "hash-keys"
    HASH_OK = "hash-ok"
    HASH_OVERSIZE = "hash-oversize"
    HASH_ROW_COUNT = "hash-row-count"
    INDEX_COLUMN = "index-column"
    INDEX_DECODES = "index-decodes"
    INDEX_MISSING = "index-missing"
    INDEX_OK = "index-ok"
    INDEX_UNREFERENCED = "index-unreferenced"
    MIN_MAX = "min-max"
    NULL_ROWS = "null-rows"
    PLAN = "plan"
    ROW_COUNT = "row-count"
    STALE_VALUES = "stale-values"
    VALUE_COVERAGE = "value-coverage"


#: A hash index holding more than this many times ``dynamic-bucket.target-row-num`` keys is flagged.
OVERSIZE_FACTOR = 2.0


@dataclass(frozen=True)
class Finding:
    """One audit result: a check that passed (``OK``), failed (``ERROR``/``WARNING``) or was skipped."""

    check: Check
    severity: Severity
    path: str
    message: str = ""
    partition: str = ""
    bucket: int | None = None
    column: str | None = None
    index_type: str | None = None
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check.value, "severity": self.severity.value, "path": self.path,
                "message": self.message, "partition": self.partition, "bucket": self.bucket,
                "column": self.column, "index_type": self.index_type, "value": self.value}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Finding:
        return Finding(**{**d, "check": Check(d["check"]), "severity": Severity(d["severity"])})


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, IndexCoreError) else f"{type(exc).__name__}: {exc}"


class _FileAudit:
    """Collects the findings of one data file, stamped with its partition and bucket."""

    def __init__(self, table, live_file: LiveFile):
        self.table = table
        self.lf = live_file
        self.partition = partition_text(live_file.partition, [f.type for f in table.schema().partition_fields])
        self.findings: list[Finding] = []

    def add(self, check: Check, severity: Severity, message: str = "", path: str | None = None,
            column: str | None = None, index_type: str | None = None, value: Any = None) -> None:
        self.findings.append(Finding(check, severity, path or self.lf.path, message, self.partition,
                                     self.lf.bucket, column, index_type, value))


# ---------------------------------------------------------------------------------------
# Data


def _read_columns(table, live_file: LiveFile, columns: list[str]) -> tuple[int, dict[str, ColumnValues]]:
    """Row count and the columns of the data file, as written (no DV)."""
    schema = table.file_schema(live_file)
    raw = read_raw(table.storage, live_file.path, live_file.file.file_format)
    known = [c for c in columns if c in schema.field_names]
    cols = evolve_columns(raw, schema, schema, known, live_file.partition_spec, live_file.file.write_cols)
    return raw.num_rows, {c: ColumnValues(cols.column(c), schema.field(c).type) for c in known}


# ---------------------------------------------------------------------------------------
# One data file


def _open_container(table, fa: _FileAudit) -> FileIndexContainer | None:
    lf = fa.lf
    where = lf.index_path or f"{lf.path} (embedded file index)"
    try:
        source = table.file_index_source(lf)
        if source is None:
            return None
        data = source.read_all("file index")  # the audit reads every blob: one request
        return read_container(BytesSource(data, name=source.name))
    except IndexCoreError as exc:
        missing = "not found" in exc.message
        fa.add(Check.INDEX_MISSING if missing else Check.INDEX_DECODES, ERROR, _reason(exc), path=where)
        return None


def audit_file(table, live_file: LiveFile, plan=None, cache: dict | None = None) -> list[Finding]:
    """Every check of one live data file: its file indexes, its deletion vector, its keys' hashes.

    ``plan`` (the snapshot's :class:`Plan`, or anything with its ``hash_indexes``) enables the
    hash-index check of dynamic-bucket tables; ``cache`` (any dict) keeps decoded hash indexes between files of one process.
    """
    fa = _FileAudit(table, live_file)
    container = _open_container(table, fa) if live_file.has_file_index else None
    schema = table.file_schema(live_file)
    columns = container.head.columns() if container is not None else []
    need = list(columns)
    hash_entries = _hash_entries(table, live_file, plan)
    pk = list(schema.trimmed_primary_keys) if hash_entries else []
    need += [k for k in pk if k not in need]
    data_rows, values = None, {}
    if need or live_file.deletion_vector is not None:
        try:
            data_rows, values = _read_columns(table, live_file, need)
        except IndexCoreError as exc:
            fa.add(Check.DATA_FILE, ERROR, _reason(exc))
            return fa.findings
        if data_rows != live_file.file.row_count:
            fa.add(Check.ROW_COUNT, ERROR, f"data file holds {data_rows} rows, the manifest says "
                   f"{live_file.file.row_count}", value=data_rows)
    if container is not None:
        _audit_container(table, fa, container, schema, data_rows, values)
    if live_file.deletion_vector is not None:
        _audit_dv(table, fa, data_rows)
    if hash_entries:
        _audit_key_hashes(table, fa, schema, pk, values, hash_entries, cache)
    return fa.findings


def _audit_container(table, fa: _FileAudit, container: FileIndexContainer, schema, n: int,
                     values: dict[str, ColumnValues]) -> None:
    for entry in container.head.entries:
        column, index_type = entry.column, entry.index_type
        if column not in values:
            fa.add(Check.INDEX_COLUMN, WARNING, "indexed column is not in the file's schema", column=column,
                   index_type=index_type)
            continue
        dtype = schema.field(column).type
        col = values[column]
        if entry.empty:
            if col.has_values:
                fa.add(Check.VALUE_COVERAGE, ERROR, "empty index but the data holds values", column=column,
                       index_type=index_type)
            else:
                fa.add(Check.INDEX_OK, OK, "empty index over no value", column=column, index_type=index_type)
            continue
        if index_type not in FILE_INDEX_TYPES:
            fa.add(Check.INDEX_DECODES, NOT_CHECKED, f"index type {index_type!r} is not decoded by indexcore",
                   column=column, index_type=index_type)
            continue
        passed = True
        try:
            reader = container.reader(entry, dtype, schema.file_index_options(column, index_type))
            for d in index_kind(index_type).audit(reader, col, n):
                passed = False
                fa.add(Check(d.check), ERROR, d.message, column=column, index_type=index_type, value=d.value)
        except IndexCoreError as exc:
            fa.add(Check.INDEX_DECODES, ERROR, _reason(exc), path=fa.lf.index_path or fa.lf.path,
                   column=column, index_type=index_type)
            continue
        if passed:
            fa.add(Check.INDEX_OK, OK, f"{index_type} on {column} agrees with {n} rows", column=column,
                   index_type=index_type)


def _audit_dv(table, fa: _FileAudit, data_rows: int | None) -> None:
    lf = fa.lf
    rng = lf.deletion_vector
    try:
        dv = table.deletion_vector(lf)
    except IndexCoreError as exc:
        fa.add(Check.DV_DECODES, ERROR, _reason(exc), path=lf.dv_file_path, index_type=DELETION_VECTORS)
        return
    ok = True
    if rng.cardinality is not None and dv.cardinality != rng.cardinality:
        ok = False
        fa.add(Check.DV_CARDINALITY, ERROR, f"deletion vector holds {dv.cardinality} positions, the index "
               f"manifest says {rng.cardinality}", path=lf.dv_file_path, index_type=DELETION_VECTORS,
               value=dv.cardinality)
    rows = data_rows if data_rows is not None else lf.file.row_count
    if dv.cardinality and dv.positions.max() >= rows:
        ok = False
        fa.add(Check.DV_POSITIONS, ERROR, f"deletes position {dv.positions.max()} of a {rows}-row file",
               path=lf.dv_file_path, index_type=DELETION_VECTORS, value=dv.positions.max())
    if ok:
        fa.add(Check.DV_OK, OK, f"{dv.cardinality} deleted positions, CRC checked", path=lf.dv_file_path,
               index_type=DELETION_VECTORS)


def _hash_entries(table, live_file: LiveFile, plan) -> list:
    if plan is None or not plan.hash_indexes:
        return []
    return plan.hash_indexes.get((live_file.partition, live_file.bucket), [])


def _hash_set(table, entry, cache: dict | None) -> set[int]:
    key = ("hash", entry.index_file.file_name)
    if cache is not None and key in cache:
        return cache[key]
    hashes = {int(h) for h in table.hash_index(entry).hashes}
    if cache is not None:
        cache[key] = hashes
    return hashes


def _audit_key_hashes(table, fa: _FileAudit, schema, pk: list[str], values: dict, entries: list,
                      cache: dict | None) -> None:
    known: set[int] = set()
    for entry in entries:
        try:
            known |= _hash_set(table, entry, cache)
        except IndexCoreError as exc:
            fa.add(Check.HASH_DECODES, ERROR, _reason(exc), index_type=HASH)
            return
    types = [schema.field(k).type for k in pk]
    try:
        hashes = [key_hash(row, types) for row in zip(*(values[k].values for k in pk), strict=True)]
    except (IndexCoreError, KeyError, TypeError, ValueError) as exc:
        fa.add(Check.HASH_KEYS, NOT_CHECKED, f"cannot hash the keys: {_reason(exc)}", index_type=HASH)
        return
    missing = [h for h in dict.fromkeys(hashes) if h not in known]
    if missing:
        fa.add(Check.HASH_KEYS, ERROR, f"{len(missing)} key hashes of this file are not in the bucket's hash index",
               index_type=HASH, value=missing[:MAX_VALUES_LISTED])
    else:
        fa.add(Check.HASH_KEYS, OK, f"{len(hashes)} key hashes found in the bucket's hash index", index_type=HASH)


# ---------------------------------------------------------------------------------------
# Table level


def audit_table(table, plan) -> list[Finding]:
    """Checks spanning files: DV index files and orphan DV ranges, hash indexes, stray index files."""
    out: list[Finding] = []
    ptypes = [f.type for f in table.schema().partition_fields]
    live = {(lf.partition, lf.bucket, lf.file.file_name) for lf in plan.files}
    for p in plan.problems:
        severity = NOT_CHECKED if "not decoded" in p.reason else ERROR
        out.append(Finding(Check.PLAN, severity, p.path, f"{p.structure}: {p.reason}"))
    _audit_dv_files(table, plan, live, ptypes, out)
    _audit_hash_indexes(table, plan, ptypes, out)
    _audit_unreferenced(table, plan, out)
    return out


def _audit_dv_files(table, plan, live: set, ptypes: list, out: list[Finding]) -> None:
    # object stores: every DV file of the snapshot in one round of parallel requests
    table.storage.prefetch([Fetch(table.index_file_path(e, table.partition_dir(e.partition)))
                            for e in plan.index_entries if e.index_file.index_type == DELETION_VECTORS])
    for e in plan.index_entries:
        meta = e.index_file
        if meta.index_type != DELETION_VECTORS:
            continue
        part = partition_text(e.partition, ptypes)
        path = table.index_file_path(e, table.partition_dir(e.partition))
        for r in meta.dv_ranges or ():
            if (e.partition, e.bucket, r.data_file) not in live:
                out.append(Finding(Check.DV_ORPHAN, WARNING, path, f"deletion vector of {r.data_file}, which is "
                                   "no longer live", part, e.bucket, index_type=DELETION_VECTORS,
                                   value=r.data_file))
        try:
            scanned = scan_deletion_vector_file(table.storage.open(path))
        except IndexCoreError as exc:
            out.append(Finding(Check.DV_DECODES, ERROR, path, _reason(exc), part, e.bucket,
                               index_type=DELETION_VECTORS))
            continue
        at = {s.offset: s for s in scanned.entries}
        bad = 0
        for r in meta.dv_ranges or ():
            s = at.get(r.offset)
            if s is None or s.length != r.length or (r.cardinality is not None and s.cardinality != r.cardinality):
                bad += 1
                out.append(Finding(Check.DV_MANIFEST, ERROR, path, f"range of {r.data_file} (offset {r.offset}, "
                                   f"length {r.length}, cardinality {r.cardinality}) does not match the file",
                                   part, e.bucket, index_type=DELETION_VECTORS, value=r.data_file))
        if meta.file_size != scanned.size:
            bad += 1
            out.append(Finding(Check.DV_MANIFEST, ERROR, path, f"file is {scanned.size} bytes, the index manifest "
                               f"says {meta.file_size}", part, e.bucket, index_type=DELETION_VECTORS))
        if not bad:
            out.append(Finding(Check.DV_FILE_OK, OK, path, f"{len(scanned.entries)} deletion vectors, CRCs checked",
                               part, e.bucket, index_type=DELETION_VECTORS))


def hash_rows_mismatch(count: int, meta) -> str | None:
    """Why a HASH index file disagrees with its index-manifest entry ``meta`` (None when it agrees)."""
    if count == meta.row_count:
        return None
    return f"holds {count} hashes, the index manifest says {meta.row_count}"


def _audit_hash_indexes(table, plan, ptypes: list, out: list[Finding]) -> None:
    target = table.core_options.dynamic_bucket_target_row_num
    seen: dict[tuple, dict[int, int]] = defaultdict(dict)
    for (partition, bucket), entries in sorted(plan.hash_indexes.items(), key=lambda kv: kv[0][1]):
        part = partition_text(partition, ptypes)
        for e in entries:
            path = table.index_file_path(e, table.partition_dir(partition))
            try:
                index = table.hash_index(e)
            except IndexCoreError as exc:
                out.append(Finding(Check.HASH_DECODES, ERROR, path, _reason(exc), part, bucket, index_type=HASH))
                continue
            mismatch = hash_rows_mismatch(index.count, e.index_file)
            ok = mismatch is None
            if mismatch:
                out.append(Finding(Check.HASH_ROW_COUNT, ERROR, path, mismatch, part, bucket, index_type=HASH))
            if index.count > OVERSIZE_FACTOR * target:
                ok = False
                out.append(Finding(Check.HASH_OVERSIZE, WARNING, path, f"{index.count} keys, far beyond "
                                   f"dynamic-bucket.target-row-num {target}", part, bucket, index_type=HASH,
                                   value=index.count))
            others = seen[partition]
            twice = [int(h) for h in np.unique(index.hashes) if others.get(int(h), bucket) != bucket]
            if twice:
                ok = False
                out.append(Finding(Check.HASH_DUPLICATE, ERROR, path, f"{len(twice)} key hashes are also in "
                                   f"another bucket of the partition", part, bucket, index_type=HASH,
                                   value=twice[:MAX_VALUES_LISTED]))
            for h in np.unique(index.hashes):
                others.setdefault(int(h), bucket)
            if ok:
                out.append(Finding(Check.HASH_OK, OK, path, f"{index.count} key hashes", part, bucket,
                                   index_type=HASH))


def _older_index_files(table, plan) -> set[str]:
    """Index file names listed by the index manifest of any readable snapshot (retained files)."""
    names: set[str] = set()
    manifests = {s.index_manifest for s in table.snapshots() if s.index_manifest}
    manifests.discard(plan.snapshot.index_manifest if plan.snapshot is not None else None)
    for name in sorted(manifests):
        path = table.manifest_path(name)
        try:
            recs = read_records(table.storage.read_bytes(path), table.manifest_format, path)
        except IndexCoreError:
            continue
        names.update(r["_FILE_NAME"] for r in recs if "_FILE_NAME" in r)
    return names


def _audit_unreferenced(table, plan, out: list[Finding]) -> None:
    """Index files on disk that no manifest references: neither this snapshot nor a retained one.

    An ``.index`` file beside a data file that still exists belongs to a retained data file.
    """
    referenced = {posixpath.normpath(lf.index_path) for lf in plan.files if lf.index_path}
    for e in plan.index_entries:
        try:
            referenced.add(posixpath.normpath(table.index_file_path(e, table.partition_dir(e.partition))))
        except IndexCoreError:
            continue
    older: set[str] | None = None
    folders = {posixpath.join(table.data_root, "index")}
    folders |= {posixpath.dirname(lf.path) for lf in plan.files}
    for folder in sorted(folders):
        try:
            entries = table.storage.listdir(folder)
        except IndexCoreError:
            continue
        names = {posixpath.basename(e["name"].rstrip("/")) for e in entries}
        for entry in entries:
            name = posixpath.basename(entry["name"].rstrip("/"))
            full = posixpath.normpath(table.storage.resolve(entry["name"]))
            if entry.get("type") != "file" or full in referenced:
                continue
            if name.endswith(".index"):
                if name[:-len(".index")] in names:
                    continue
            elif folder.endswith("/index") and name.startswith("index-"):
                if older is None:
                    older = _older_index_files(table, plan)
                if name in older:
                    continue
            else:
                continue
            out.append(Finding(Check.INDEX_UNREFERENCED, WARNING, full,
                               "index file that no manifest references (orphan)"))


# ---------------------------------------------------------------------------------------
# Health report


def findings_frame(findings: Iterable[Finding | dict]) -> pd.DataFrame:
    import pandas as pd  # only the health report needs pandas: a Spark task auditing files stays light

    rows = [f.to_dict() if isinstance(f, Finding) else dict(f) for f in findings]
    cols = list(Finding.__dataclass_fields__)
    return pd.DataFrame(rows, columns=cols)


def health_frames(findings: Iterable[Finding | dict]) -> dict[str, pd.DataFrame]:
    """Counts of OK / ERROR / WARNING / NOT_CHECKED findings per table, partition and bucket."""
    import pandas as pd  # only the health report needs pandas: a Spark task auditing files stays light

    df = findings_frame(findings)
    sev = [s.value for s in Severity]

    def count(by: list[str]) -> pd.DataFrame:
        if df.empty:
            return pd.DataFrame(columns=[*by, *sev, "healthy"])
        d = df.assign(_n=1)
        if by:
            d = d.assign(bucket=d["bucket"].fillna(-1).astype(int)) if "bucket" in by else d
            t = d.pivot_table(index=by, columns="severity", values="_n", aggfunc="sum", fill_value=0)
        else:
            t = d.groupby("severity")["_n"].sum().to_frame().T
        t = t.reindex(columns=sev, fill_value=0).reset_index(drop=not by)
        t.columns.name = None
        t["healthy"] = t[ERROR] == 0
        return t

    return {"table": count([]), "partition": count(["partition"]),
            "bucket": count(["partition", "bucket"])}
