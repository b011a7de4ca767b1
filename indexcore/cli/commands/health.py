"""``health WAREHOUSE [TABLE]``: the health summary of a warehouse or one table.

A warehouse gives its score and one row per table (score, issue counts, index bytes against
data bytes, small files, DV density, unusable files), then every item; a table gives its score
and items, then index bytes per kind, bloom sizing, coverage and unusable files. Items name the
app page that explains them.
"""

from __future__ import annotations

import json

from indexcore.analysis.health import health_frames, table_health, warehouse_health
from indexcore.cli.output import ProgressBar
from indexcore.config import variable
from indexcore.spark.jobs.metadata import metadata_master, spark_health
from indexcore.warehouse import Warehouse


def _records(frame) -> list[dict]:
    """JSON-able rows (NaN as null) of a frame."""
    return json.loads(frame.to_json(orient="records"))


def cmd_health(args) -> dict:
    wh = Warehouse(args.warehouse, storage_options=args.storage_options)

    def measure(table):
        return _health(table, args.warehouse, args.master)

    if args.table:
        h = measure(wh.table(args.table))
        frames = health_frames(h)
        return {"table": h.table, "snapshot": h.snapshot, "score": h.score,
                **{name: _records(f.drop(columns=["table"])) for name, f in frames.items()}}
    h = warehouse_health(wh, progress=ProgressBar("health"), measure=measure)
    return {"warehouse": wh.url, "score": h.score, **{name: _records(f) for name, f in health_frames(h).items()}}


def _health(table, url: str, master: str | None):
    """The table's health, measured in Spark tasks when asked (``--master``) or past the operator's
    ``spark_metadata_files`` setting (only sums and a few rows come back: the driver plans no data
    file), else in this process."""
    chosen = metadata_master(table, None, master)
    if chosen:
        return spark_health(table, url, chosen, progress=ProgressBar(f"health of {table.name} on Spark"))
    return table_health(table)


def register(subparsers) -> None:
    p = subparsers.add_parser("health", help="health summary of a warehouse or table: score and items, index "
                                             "bytes against data bytes, small files, DV density, bloom sizing")
    p.add_argument("warehouse", help="warehouse root: a local path or an fsspec URL")
    p.add_argument("table", nargs="?", default=None, help="database.table (default: every table)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="measure health in Spark tasks (local[2], spark://..., sc://...): manifests, index heads and "
                        "per-file sums there, only aggregates back; by default in this process, or on Spark past " + variable("spark_metadata_files") + " live files")
    p.set_defaults(func=cmd_health)
