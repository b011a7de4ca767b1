"""Readable HTML summaries for Jupyter (``_repr_html_`` of Warehouse, Table and Explanation)."""

from __future__ import annotations

import html

from indexcore.errors import IndexCoreError


def _table(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th style='text-align:left'>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{html.escape(_cell(r.get(c)))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def warehouse_html(warehouse) -> str:
    """The warehouse URL and one line per table: snapshot, live files, rows."""
    rows = []
    for name in warehouse.tables():
        try:
            table = warehouse.table(name)
            snap = table.snapshot()
            rows.append({"table": name, "snapshot": snap.id if snap else None,
                         "records": snap.total_record_count if snap else 0,
                         "primary keys": ", ".join(table.schema().primary_keys),
                         "partition keys": ", ".join(table.schema().partition_keys)})
        except IndexCoreError as exc:
            rows.append({"table": name, "primary keys": f"unreadable: {exc}"})
    return (f"<b>Paimon warehouse</b> <code>{html.escape(warehouse.url)}</code> (read-only), "
            f"{len(rows)} table(s)" + _table(rows, ["table", "snapshot", "records", "primary keys",
                                                    "partition keys"]))


def table_html(table) -> str:
    """Schema, keys, bucket, latest snapshot, tags and branches of one table."""
    try:
        schema = table.schema()
    except IndexCoreError as exc:
        return f"<b>Paimon table</b> <code>{html.escape(table.name)}</code>: {html.escape(str(exc))}"
    snap = table.snapshot()
    facts = [("primary keys", ", ".join(schema.primary_keys) or "none"),
             ("partition keys", ", ".join(schema.partition_keys) or "none"), ("bucket", schema.bucket),
             ("snapshots", len(table.snapshot_ids())),
             ("latest snapshot", f"{snap.id} ({snap.commit_kind}, {snap.total_record_count:,} records)"
              if snap and snap.total_record_count is not None else (snap.id if snap else "none")),
             ("tags", ", ".join(table.tags()) or "none"), ("branches", ", ".join(table.branches()) or "none")]
    fields = [{"id": f.id, "name": f.name, "type": f.type.sql()} for f in schema.fields]
    return (f"<b>Paimon table</b> <code>{html.escape(table.name)}</code>"
            + _table([dict(facts)], [k for k, _ in facts]) + _table(fields, ["id", "name", "type"]))


def explanation_html(explanation) -> str:
    """The pruning funnel and the files read, for one explained condition."""
    funnel = [{"stage": k, "files": v.get("files"), "rows": v.get("rows")} for k, v in explanation.funnel.items()]
    read = [f for f in explanation.files if f.skipped_by is None]
    return (f"<b>explain</b> <code>{html.escape(explanation.sql)}</code> on "
            f"<code>{html.escape(explanation.table)}</code> at snapshot {explanation.snapshot_id}: "
            f"{len(read)} of {len(explanation.files)} files read"
            + _table(funnel, ["stage", "files", "rows"])
            + (f"<p>{len(explanation.violations)} violation(s)</p>" if explanation.violations else ""))
