"""What changed between two snapshots of a table, from the file indexes' point of view.

:func:`diff` reports the data files added and removed, the live rows at both snapshots (rows a read
returns, :mod:`.live_rows`; ``records_*`` are the files' records), per file kept in both the index types
that changed, the ``file-index.*`` options that changed, the live files lacking an index the
options configure (``lost`` when the same file carried it before), deletion-vector growth and
file balance per partition and bucket, and with a workload the pruning of every query at
both snapshots (:func:`pruning`, from :func:`.explain.explain`'s funnel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from indexcore.analysis.advise import index_inventory
from indexcore.analysis.balance import dv_by_bucket, size_skew
from indexcore.analysis.live_rows import live_rows
from indexcore.analysis.workload import Query, scans
from indexcore.errors import IndexCoreError
from indexcore.scan import explain
from indexcore.views import view
from indexcore.views.common import partition_label, partition_types

Progress = Callable[[int, int, str], None]


def pruning(table, where: str, snapshot_id: int | None) -> dict[str, Any]:
    """Files and rows a condition reads at a snapshot, and the fractions pruned."""
    ex = explain(table, where, snapshot_id=snapshot_id)
    f = ex.funnel
    total_files, total_rows = f["all"]["files"], f["all"]["rows"]
    return {"snapshot": ex.snapshot_id, "files": total_files, "rows": total_rows,
            "files_read": f["read"]["files"], "rows_read": f["read"]["rows"],
            "files_skipped_by_index": sum(1 for d in ex.files if d.skipped_by == "index"),
            "pruned_files": 1 - f["read"]["files"] / total_files if total_files else 0.0,
            "pruned_rows": 1 - f["read"]["rows"] / total_rows if total_rows else 0.0}


def _file_row(lf, types, labels) -> dict[str, Any]:
    return {"file": lf.file.file_name, "partition": partition_label(lf.partition, types, labels), "bucket": lf.bucket,
            "level": lf.file.level, "rows": lf.file.row_count, "bytes": lf.file.file_size}


def _index_map(table, snapshot_id: int) -> tuple[dict[str, set[tuple[str, str]]], dict[str, set[tuple[str, str]]]]:
    """Per data file path: the (column, type) indexes it carries, and the configured ones it lacks."""
    inventory, _ = index_inventory(table, snapshot_id)
    has: dict[str, set[tuple[str, str]]] = {}
    lacks: dict[str, set[tuple[str, str]]] = {}
    for g in inventory:
        for path in g.blobs:
            has.setdefault(path, set()).add((g.column, g.index_type))
        for path in g.missing:
            lacks.setdefault(path, set()).add((g.column, g.index_type))
    return has, lacks


def _index_options(schema) -> dict[str, str]:
    return {k: v for k, v in schema.options.items() if k.startswith("file-index.")}


def _label(pairs) -> list[str]:
    return sorted(f"{c}:{t}" for c, t in pairs)


def diff(table, from_snapshot: int, to_snapshot: int | None = None, queries: Sequence[Query] | None = None,
         progress: Progress | None = None) -> dict[str, Any]:
    """Compare snapshot ``from_snapshot`` with ``to_snapshot`` (latest by default)."""
    old, new = table.plan(from_snapshot), table.plan(to_snapshot)
    if old.snapshot is None or new.snapshot is None:
        raise IndexCoreError(f"table {table.name} has no snapshot {from_snapshot if old.snapshot is None else to_snapshot}")
    s1, s2 = old.snapshot.id, new.snapshot.id
    types = partition_types(table)
    before = {lf.path: lf for lf in old.files}
    after = {lf.path: lf for lf in new.files}
    added = [_file_row(after[p], types, table.caches.labels) for p in sorted(set(after) - set(before))]
    removed = [_file_row(before[p], types, table.caches.labels) for p in sorted(set(before) - set(after))]

    has1, _ = _index_map(table, s1)
    has2, lacks2 = _index_map(table, s2)
    changed = []
    for p in sorted(set(before) & set(after)):
        a, b = has1.get(p, set()), has2.get(p, set())
        if a != b:
            changed.append({"file": after[p].file.file_name, "removed": _label(a - b), "added": _label(b - a)})
    lost = []
    for p in sorted(lacks2):
        lf = after[p]
        was = has1.get(p, set()) & lacks2[p]
        lost.append({"file": lf.file.file_name, "partition": partition_label(lf.partition, types, table.caches.labels),
                     "bucket": lf.bucket, "missing": _label(lacks2[p]), "lost": _label(was)})
    o1 = _index_options(table.read_schema(s1, old.snapshot))
    o2 = _index_options(table.read_schema(s2, new.snapshot))
    options = [{"option": k, "from": o1.get(k), "to": o2.get(k)} for k in sorted(set(o1) | set(o2))
               if o1.get(k) != o2.get(k)]

    dv1, dv2 = (dv_by_bucket(view(table, "deletion_vectors", s).to_pandas()) for s in (s1, s2))
    dv = []
    keys = sorted({(r.partition, r.bucket) for r in dv1.itertuples()} | {(r.partition, r.bucket) for r in dv2.itertuples()},
                  key=str)
    index1 = {(r.partition, r.bucket): r for r in dv1.itertuples()}
    index2 = {(r.partition, r.bucket): r for r in dv2.itertuples()}
    for k in keys:
        a, b = index1.get(k), index2.get(k)
        d1, d2 = (int(a.deleted) if a is not None else 0), (int(b.deleted) if b is not None else 0)
        if d1 == d2 and (a is None) == (b is None):
            continue
        dv.append({"partition": k[0], "bucket": int(k[1]), "deleted_from": d1, "deleted_to": d2, "growth": d2 - d1,
                   "density_from": round(float(a.density), 4) if a is not None else 0.0,
                   "density_to": round(float(b.density), 4) if b is not None else 0.0})

    live1, live2 = live_rows(table, s1), live_rows(table, s2)  # rows a read returns, not records
    g1, skew1 = size_skew(table, s1, by="bucket")
    g2, skew2 = size_skew(table, s2, by="bucket")
    buckets = {"from": {k: round(float(v), 4) for k, v in skew1.items()},
               "to": {k: round(float(v), 4) for k, v in skew2.items()},
               "groups_from": len(g1), "groups_to": len(g2)}

    out: dict[str, Any] = {
        "table": table.name, "from": s1, "to": s2,
        "summary": {"files_from": len(before), "files_to": len(after), "added": len(added), "removed": len(removed),
                    "rows_from": live1.live, "rows_to": live2.live,
                    "rows_exact": live1.exact and live2.exact,
                    "records_from": live1.records, "records_to": live2.records,
                    "index_changed": len(changed), "missing_configured": len(lost),
                    "lost_configured": sum(1 for x in lost if x["lost"])},
        "added": added, "removed": removed, "index_changes": changed, "missing_configured_indexes": lost,
        "index_options": options, "deletion_vectors": dv, "bucket_balance": buckets,
    }
    if queries is not None:
        found, skipped = scans(queries, table.name, table.read_schema(s2, new.snapshot).field_names)
        rows = []
        for i, scan in enumerate(found):
            if progress is not None:
                progress(i, len(found), scan.name)
            if scan.where is None:
                continue
            row: dict[str, Any] = {"query": scan.name, "where": scan.where}
            for label, sid in (("from", s1), ("to", s2)):
                try:
                    row[label] = pruning(table, scan.where, sid)
                except IndexCoreError as exc:
                    row[label] = {"error": exc.message}
            a, b = row["from"], row["to"]
            if "error" not in a and "error" not in b:
                row["pruned_rows_change"] = round(b["pruned_rows"] - a["pruned_rows"], 6)
                row["pruned_files_change"] = round(b["pruned_files"] - a["pruned_files"], 6)
                row["worse"] = b["pruned_rows"] < a["pruned_rows"] or b["pruned_files"] < a["pruned_files"]
            rows.append(row)
        out["queries"] = rows
        out["skipped_queries"] = skipped
    return out
