"""The warehouses tests read table by table: the sample warehouse, the conformance warehouses
(``../shared/conformance/warehouses``) and, where asked, the 10k bench sample when
``bench/bench_app.py`` has built it; one home for the roots and the walk over their tables."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from indexcore.warehouse import Warehouse
from indexcore.warehouse.table import Table

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"
CONFORMANCE = ROOT.parent / "shared" / "conformance"
BENCH_10K = Path(tempfile.gettempdir()) / "indexcore-bench" / "large-10000"


def warehouse_roots(bench: bool = False) -> list[Path]:
    """The sample and conformance warehouses found (the bench sample too with ``bench``, once built)."""
    conformance = CONFORMANCE / "warehouses"
    roots = [SAMPLE, *(sorted(p for p in conformance.iterdir() if p.is_dir()) if conformance.is_dir() else [])]
    return [*roots, BENCH_10K] if bench and (BENCH_10K / "large.db").is_dir() else roots


def every_table(roots: Iterable[Path]) -> Iterator[tuple[Path, Table]]:
    """``(root, table)`` for every table of each root that is a folder, opened one at a time (a
    loop keeps one table's caches at once, not every table's)."""
    for root in roots:
        if not root.is_dir():
            continue
        warehouse = Warehouse(str(root))
        for name in warehouse.tables():
            yield root, warehouse.table(name)
