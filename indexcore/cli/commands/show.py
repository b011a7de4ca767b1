"""``show WAREHOUSE 'db.table[$branch_NAME]$VIEW'``: one view of :mod:`indexcore.views`.

Output ``{"columns": [...], "rows": [{...}]}``; times as ISO 8601, ``dv_ranges`` and
``write_cols`` as JSON lists. Views: Paimon's ``$snapshots``, ``$schemas``, ``$options``,
``$manifests``, ``$files``, ``$file_indexes``, ``$table_indexes``, ``$buckets``,
``$partitions``, ``$tags``, ``$branches``, and ours: ``$bitmap_indexes``, ``$bitmap_values``,
``$bloom_filters``, ``$deletion_vectors``, ``$hash_buckets``, and the derived views of
:mod:`indexcore.analysis` (``$health``, ``$global_indexes``, ``$vector_indexes``, ...).
"""

from __future__ import annotations

import argparse

from indexcore.cli.arguments import SNAPSHOT_ID
from indexcore.config import variable
from indexcore.errors import IndexCoreError
from indexcore.spark.jobs.metadata import metadata_master, spark_census, spark_health_view, spark_plan
from indexcore.views import VIEWS, parse_identifier, to_records, view
from indexcore.warehouse import Warehouse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="show a system-table view, e.g. 'db.t$files' or 'db.t$branch_dev$tags'",
                       description="Show one view of a table as a table, JSON or CSV. Views: "
                                   + ", ".join(f"${v}" for v in VIEWS))
    p.add_argument("warehouse", metavar="WAREHOUSE", help="warehouse root path or URL")
    p.add_argument("table", metavar="DB.TABLE$VIEW", help="e.g. 'demo.events$files' (quote the $)")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="$files, $file_indexes and $health: plan / read index heads in Spark tasks; by default in "
                        "this process, or on Spark past " + variable("spark_metadata_files") + " live files")
    p.set_defaults(func=run_show)


def run_show(args: argparse.Namespace) -> dict:
    ident = parse_identifier(args.table)
    if ident.view is None:
        raise IndexCoreError(f"{args.table!r} names no view; add one, e.g. '{args.table}$files'")
    table = Warehouse(args.warehouse, storage_options=args.storage_options).table(ident.table_ref)
    on_spark = ("files", "file_indexes", "health")
    if args.master and ident.view not in on_spark:
        raise IndexCoreError(f"--master applies to ${', $'.join(on_spark)}, not ${ident.view}")
    master = metadata_master(table, args.snapshot, args.master) if ident.view in on_spark else None
    if master and ident.view == "health":
        return to_records(spark_health_view(table, args.warehouse, master, args.snapshot))
    if master:
        run = spark_plan if ident.view == "files" else spark_census
        return to_records(run(args.warehouse, ident.table_ref, master, args.snapshot,
                              storage_options=args.storage_options).table)
    return to_records(view(table, ident.view, args.snapshot))
