"""Row filtering speed: the vectorized row evaluator against the per-value path (each leaf
function's ``test`` on every internal value).

Builds a 1M-row table (BIGINT, DOUBLE with NaN/-0.0/inf, STRING with non-ASCII, TIMESTAMP(9),
DECIMAL(10, 2), DECIMAL(30, 4), DATE, BOOLEAN; 10% nulls; fixed seed) and times
``indexcore.expr.rows.mask`` for a few predicates, then the same predicates with vectorizing
switched off (the per-value path over internal values, which is what the filter did before). Both answers
are checked equal. Prints times and the ratio row-by-row / vectorized; asserts nothing.

Run: ``python bench/bench_filter.py [rows] [--quick]`` (``--quick``: 5,000 rows; it runs, it
measures nothing)
"""

from __future__ import annotations

import decimal
import sys
import time
from unittest import mock

import numpy as np
import pyarrow as pa

from indexcore.expr import parse_where
from indexcore.expr import rows as evaluator
from indexcore.types import DataField, parse_type
from indexcore.warehouse.model import TableSchema

ROWS = 1_000_000
SEED = 20240101
COLUMNS = {"id": "BIGINT", "score": "DOUBLE", "name": "STRING", "ts": "TIMESTAMP(9)",
           "price": "DECIMAL(10, 2)", "wide": "DECIMAL(30, 4)", "day": "DATE", "flag": "BOOLEAN"}
WHERES = (
    "id BETWEEN 1000 AND 500000",
    "score > 0.0",
    "score IN (1.5, -0.0, 2.25) OR score IS NULL",
    "name >= 'm' AND name < 'é'",
    "ts > TIMESTAMP '2001-09-09 01:46:40.000000001'",
    "price <= 12.34 AND day <> DATE '1999-12-31'",
    "wide NOT BETWEEN -5 AND 5",
    "flag = true AND id NOT IN (1, 2, 3, 4, 5, 6, 7, 8)",
)


def build(rows: int) -> tuple[pa.Table, TableSchema]:
    rng = np.random.default_rng(SEED)
    nulls = {name: rng.random(rows) < 0.10 for name in COLUMNS}
    scores = rng.normal(0, 10, rows).round(2)
    scores[rng.random(rows) < 0.02] = np.nan
    scores[rng.random(rows) < 0.02] = -0.0
    scores[rng.random(rows) < 0.01] = np.inf
    words = np.array(["", "alpha", "beta", "mango", "zeta", "émile", "中文", "😀", "Zulu", "m"])
    cents = rng.integers(-100_000, 100_000, rows)
    arrays = {
        "id": pa.array(rng.integers(0, 1_000_000, rows), pa.int64(), mask=nulls["id"]),
        "score": pa.array(scores, pa.float64(), mask=nulls["score"]),
        "name": pa.array(words[rng.integers(0, len(words), rows)], pa.string(), mask=nulls["name"]),
        "ts": pa.array(rng.integers(0, 2 * 10 ** 18, rows), pa.int64(), mask=nulls["ts"]).cast(
            pa.timestamp("ns")),
        "price": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(10, 2),
                          mask=nulls["price"]),
        "wide": pa.array([decimal.Decimal(int(c)).scaleb(-4) for c in cents], pa.decimal128(30, 4),
                         mask=nulls["wide"]),
        "day": pa.array(rng.integers(0, 20_000, rows).astype(np.int32), pa.int32(),
                        mask=nulls["day"]).cast(pa.date32()),
        "flag": pa.array(rng.random(rows) < 0.5, pa.bool_(), mask=nulls["flag"]),
    }
    schema = TableSchema(0, tuple(DataField(i, n, parse_type(t)) for i, (n, t) in enumerate(COLUMNS.items())))
    return pa.table(arrays), schema


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--quick"]
    rows = 5_000 if "--quick" in sys.argv[1:] else int(args[0]) if args else ROWS
    table, schema = build(rows)
    print(f"{rows:,} rows; times in ms (vectorized: best of 3; row-by-row: one run)")
    print(f"{'predicate':55s} {'vector':>9s} {'rows':>10s} {'ratio':>8s}  matches")
    total_fast = total_slow = 0.0
    for where in WHERES:
        pred = parse_where(where, schema.row_type())
        fast = min(timed(lambda p=pred: evaluator.mask(table, p, schema))[0] for _ in range(3))
        _, mask = timed(lambda p=pred: evaluator.mask(table, p, schema))
        with mock.patch.object(evaluator, "_prepare", lambda column, dtype: None):
            slow, reference = timed(lambda p=pred: evaluator.mask(table, p, schema))
        if not np.array_equal(mask, reference):
            raise SystemExit(f"vectorized and row-by-row masks differ for {where!r}")
        total_fast += fast
        total_slow += slow
        print(f"{where:55s} {fast * 1000:9.1f} {slow * 1000:10.1f} {slow / fast:7.0f}x  {int(mask.sum()):,}")
    print(f"{'all':55s} {total_fast * 1000:9.1f} {total_slow * 1000:10.1f} {total_slow / total_fast:7.0f}x")


if __name__ == "__main__":
    main()
