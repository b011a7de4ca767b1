"""Explain on the columnar plan (issue 30 item 5): where a page planned the columns, the stages
before the file index decide on them and a live file is made only for the files they keep. The
truth is explain over the live files of the same plan (every stage on every object, as before):
the JSON, the frame and the I/O counts must be the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from indexcore.frames.what_if import explanation_frames
from indexcore.scan import explain
from indexcore.scan import explainer as explainer_module
from indexcore.warehouse import Warehouse
from indexcore.warehouse.plan_columns import PlanColumns

# append tables: partitioned and bucketed on a key, schema evolution, empty partitions, file indexes
CASES = {
    "append_09": ["f1 = 10", "f2 = 0", "f2 = 1 AND f1 = 20", "f0 = 'Alex'", "f3 > 12", "f2 IN (0, 1)", "f1 IS NULL",
                  "f1 <> 10", "f1 < 20", "f3 <= 12", "f3 >= 13", "f0 < 'B'", "f0 >= 'Alex'"],
    "append_complex_data": ["f1 = 10", "f2 = 0", "f2 = 1 AND f1 = 20", "f3 > DATE '1970-01-01'"],
    "parquet_append_table": ["f12 = DATE '1970-03-23'", "f5 = 3000000001", "f2 > 40", "f8 = 's31'"],
    "append_table_with_alter_table": ["key0 = 0", "a = 65", "e > 600", "key0 = 1 AND d IS NULL"],
    "append_table_alter_table_with_cast": ["key0 = 0", "key1 = 1"],
    "append_with_empty_partition_with_empty_value": ["f0 IS NULL", "f0 = ''", "f1 > 1"],
    "append_with_bitmap": ["f0 = 'Bob'", "f1 = 20 AND f2 = 1", "f0 = 'Nobody'", "f3 > 15"],
    "append_with_bsi_bitmap_bloomfilter": ["f1 > 100", "f0 = 'Bob' AND f1 = 100", "f3 = 14.1"],
}


@pytest.fixture(scope="module")
def root(conformance: Path) -> Path:
    return conformance / "warehouses" / "parquet"


def _explained(root: Path, name: str, sql: str, on_plan: bool, **kwargs):
    """Explain on a warehouse opened afresh whose columnar plan a page made (so explain decides
    on it), or with that turned off: every stage over the live files made from the same plan."""
    table = Warehouse(str(root)).table(f"{name}.{name}")
    table.plan_columns()
    if on_plan:
        ex = explain(table, sql, **kwargs)
    else:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(explainer_module, "plan_applies", lambda *a: None)
            ex = explain(table, sql, **kwargs)
    return ex, json.dumps(ex.to_json(), default=str), explanation_frames(table, ex)


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_on_the_plan_columns_equals_explain_on_live_files(root, name, monkeypatch):
    """Each case's JSON (decisions, notes, stats, funnel, I/O) and frames equal explain's over
    live files; the partition / bucket / paths restrictions too; the early stages ran on the
    columns wherever the table has no row ids, and made live files only for the files they kept."""
    on_plan: list[int] = []
    made: list[int] = []
    decide = explainer_module.decide_on_plan
    monkeypatch.setattr(explainer_module, "decide_on_plan",
                        lambda table, ex, plan, rows, *a: (on_plan.append(len(rows)), decide(table, ex, plan, rows, *a)))
    live_file = PlanColumns._live_file
    monkeypatch.setattr(PlanColumns, "_live_file", lambda self, table, rec: (made.append(1), live_file(self, table, rec))[1])
    for sql in CASES[name]:
        for kwargs in ({}, {"bucket": 0}, {"partition": None}):
            on_plan.clear()
            made.clear()
            got, got_json, got_frames = _explained(root, name, sql, True, **kwargs)
            fast = bool(on_plan)
            early_kept = sum(1 for f in got.files if f.partition_decision == "REMAIN" and f.bucket_decision == "REMAIN"
                             and f.level_decision == "REMAIN" and f.stats_decision == "REMAIN")
            made_fast = len(made)
            want, want_json, want_frames = _explained(root, name, sql, False, **kwargs)
            assert got_json == want_json, (name, sql, kwargs)
            assert got_frames["files"].equals(want_frames["files"])
            assert got_frames["why"]["summary"] == want_frames["why"]["summary"]
            assert fast and made_fast == early_kept, (name, sql, made_fast, early_kept)
        table = Warehouse(str(root)).table(f"{name}.{name}")
        paths = [lf.path for lf in table.plan().files][::2]
        assert json.dumps(_explained(root, name, sql, True, paths=paths)[0].to_json(), default=str) == \
            json.dumps(_explained(root, name, sql, False, paths=paths)[0].to_json(), default=str)


def test_some_case_prunes_at_every_early_stage(root):
    """The cases above reach each early stage's SKIP on the columns (else the equality says little)."""
    skipped = set()
    for name, sqls in CASES.items():
        for sql in sqls:
            ex = _explained(root, name, sql, True)[0]
            skipped |= {f.skipped_by for f in ex.files if f.skipped_by is not None}
    assert {"partition", "bucket", "stats"} <= {str(s) for s in skipped}


@pytest.mark.parametrize("name", ["append_with_global_index", "data_evolution_with_dense_stats",
                                  "pk_table_scan_and_read_dv"])
def test_row_ids_and_primary_keys_explain_live_files(root, name):
    """The global index stage needs row ids per live file, and a primary-key table's value filter
    decides whole buckets across files: neither is decided on the columns."""
    from indexcore.scan.plan_stages import plan_applies

    table = Warehouse(str(root)).table(f"{name}.{name}")
    assert plan_applies(table, table.schema(), table.plan_columns()) is None


TYPES = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "DATE", "TIME", "BIGINT", "FLOAT", "DOUBLE", "TIMESTAMP(3)",
         "TIMESTAMP(6)", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "DECIMAL(10, 2)", "DECIMAL(30, 2)", "STRING", "BYTES"]


def _value(rng, root: str, dtype):
    """A random internal value of ``dtype`` (None a fifth of the time)."""
    from decimal import Decimal

    from indexcore.types import Timestamp

    if rng.random() < 0.2:
        return None
    pick = {"BOOLEAN": lambda: rng.random() < 0.5, "TINYINT": lambda: rng.randint(-128, 127),
            "SMALLINT": lambda: rng.randint(-2 ** 15, 2 ** 15 - 1), "INT": lambda: rng.randint(-2 ** 31, 2 ** 31 - 1),
            "DATE": lambda: rng.randint(-100000, 100000), "TIME": lambda: rng.randint(0, 86399999),
            "BIGINT": lambda: rng.randint(-2 ** 63, 2 ** 63 - 1), "FLOAT": lambda: float(rng.choice([1.5, -0.25, 3e38])),
            "DOUBLE": lambda: rng.uniform(-1e300, 1e300),
            "TIMESTAMP": lambda: Timestamp(rng.randint(-2 ** 50, 2 ** 50),
                                           rng.randint(0, 999999) if (dtype.precision or 6) > 3 else 0),
            "TIMESTAMP_LTZ": lambda: Timestamp(rng.randint(-2 ** 50, 2 ** 50), 0),
            "DECIMAL": lambda: Decimal(rng.randint(-10 ** 12, 10 ** 12)).scaleb(-2),
            "VARCHAR": lambda: "x" * rng.randint(0, 20), "VARBINARY": lambda: b"y" * rng.randint(0, 20)}
    return pick[root]()


def test_a_stats_field_read_a_column_at_a_time_is_the_rows_own():
    """A ``FieldColumn`` over rows written by the BinaryRow writer (every stats type, nulls,
    shorter rows, no row, empty and cut bytes) gives what decoding each row's field alone gives,
    and marks the rows that do not fit their bytes (which that decoding refuses)."""
    import random

    from indexcore.errors import IndexCoreError
    from indexcore.formats.binary_row import decode_binary_field, serialize_binary_row
    from indexcore.scan.stats_columns import _IRREGULAR, FieldColumn, field_values
    from indexcore.types import parse_type

    rng = random.Random(7)
    types = [parse_type(t) for t in TYPES]
    raws: list = [None, b"", b"\x00\x00"]
    for _ in range(300):
        arity = rng.choice([len(types), len(types), rng.randint(0, len(types))])
        raw = serialize_binary_row([_value(rng, t.root, t) for t in types[:arity]], types[:arity])
        raws.append(raw[:rng.randint(4, len(raw) - 1)] if rng.random() < 0.1 and len(raw) > 4 else raw)
    column = pa.array(raws, pa.binary())
    sliced = pa.concat_arrays([pa.array([b"\x01" * 9, None], pa.binary()), column]).slice(2)
    picked = np.array(sorted(rng.sample(range(len(raws)), 100)), np.int64)
    for at, dtype in enumerate(types):
        want = []
        for raw in raws:
            try:
                want.append(decode_binary_field(raw, at, dtype))
            except IndexCoreError:
                want.append(_IRREGULAR)
        got = field_values(FieldColumn(column, np.arange(len(raws)), at, dtype))
        assert got == want, dtype
        assert [type(v) for v in got] == [type(v) for v in want], dtype
        assert _IRREGULAR in got and any(v is not None and v is not _IRREGULAR for v in got), dtype
        # some of the rows, read off a slice of a larger array (its offset into the buffers)
        assert field_values(FieldColumn(sliced, picked, at, dtype)) == [want[i] for i in picked.tolist()], dtype


@pytest.mark.parametrize("steps", [1, 3, 200])
def test_progress_on_the_plan_counts_up_to_every_file_in_few_calls(root, steps, monkeypatch):
    """Explain on the plan reports progress in file order, ending at every file, a call every
    1/PROGRESS_STEPS of the files (and one per batch end), each naming a file of the table."""
    from indexcore.scan import plan_stages

    monkeypatch.setattr(plan_stages, "PROGRESS_STEPS", steps)
    name = "append_09"
    calls = []
    ex, _json, _frames = _explained(root, name, "f1 = 10", True, progress=lambda *a: calls.append(a))
    n = len(ex.files)
    assert n > 3 and calls
    done = [c[0] for c in calls]
    assert done == sorted(set(done)) and done[-1] == n and all(c[1] == n for c in calls)
    assert len(calls) <= steps + 1 + n // 64  # a batch of live files ends a report too
    names = {f.path.rsplit("/", 1)[-1] for f in ex.files}
    assert {c[2] for c in calls} <= names
    if steps == 1:
        assert len(calls) <= 2 + n // 64


def test_file_stats_kept_typed_over_chunks_are_each_files_own_cells():
    """Value stats in three chunks, the files in a shuffled order, decoded a field and a chunk at a
    time into typed columns (``FileStats``): each file's cells equal decoding its own BinaryRows
    (the writer's rows, nulls, rows shorter than the layout, no row, null counts past the row);
    a row cut short goes to the per-file path; a column's JSON values off the numbers equal
    ``to_json_values`` of the values; a file given its own cells keeps them."""
    import random

    from indexcore.formats.binary_row import decode_binary_field, serialize_binary_row
    from indexcore.scan.stats import LACKS
    from indexcore.scan.stats_columns import FileStats, StatsBytes, _decode_group
    from indexcore.types import parse_type, to_json_values

    rng = random.Random(11)
    types = tuple(parse_type(t) for t in ("TIMESTAMP(3)", "BIGINT", "STRING", "TIMESTAMP_LTZ(3)"))
    lows, highs, nulls, want = [], [], [], []
    for i in range(900):
        arity = rng.choice([4, 4, 4, 2, 0])
        values = [_value(rng, t.root, t) if rng.random() > 0.2 else None for t in types[:arity]]
        low, high = serialize_binary_row(values, types[:arity]), serialize_binary_row(values, types[:arity])
        counts = [rng.randint(0, 9) if rng.random() > 0.1 else None for _ in range(rng.choice([4, 4, 1, 0]))]
        cut = i % 31 == 5 and arity == 4
        if cut:
            low = low[:30]  # a row whose fixed part does not fit its bytes
        lows.append(low if arity or counts else b"\x00" * 12)
        highs.append(high)
        nulls.append(counts)
        cells = {}
        for at, col in enumerate(("ts", "n", "s", "ltz")):
            width = min(4, max(arity, len(counts)))
            count = counts[at] if at < len(counts) else None
            cells[col] = (None, None, count) if at >= width else \
                (decode_binary_field(low, at, types[at]) if not cut else "cut",
                 decode_binary_field(high, at, types[at]), count)
        cells["gone"], cells["unknown"] = (None, None, 100 + i), (None, None, None)
        want.append(cells)
    stats = pa.StructArray.from_arrays(
        [pa.array(lows, pa.binary()), pa.array(highs, pa.binary()), pa.array(nulls, pa.list_(pa.int64()))],
        ["_MIN_VALUES", "_MAX_VALUES", "_NULL_COUNTS"])
    chunked = pa.chunked_array([stats.slice(0, 300), stats.slice(300, 250), stats.slice(550)])
    order = np.array(rng.sample(range(900), 900), np.int64)  # file k is row order[k] of the stats
    got = FileStats(900)
    slots = (("ts", 0), ("n", 1), ("s", 2), ("ltz", 3), ("gone", LACKS), ("unknown", None))
    alone = _decode_group(np.arange(900), slots, types, StatsBytes(chunked, order),
                          np.array([100 + r for r in order.tolist()], np.int64), got)
    cut = {k for k, r in enumerate(order.tolist()) if len(lows[r]) == 30}
    empty = {k for k, r in enumerate(order.tolist()) if lows[r] == b"\x00" * 12 and nulls[r] == []}
    assert set(alone.tolist()) == cut | empty and cut and empty
    regular = [k for k in range(900) if k not in cut | empty]
    assert got.cells(regular) == [want[order[k]] for k in regular]
    for col, dtype in (("ts", types[0]), ("ltz", types[3]), ("n", types[1])):
        lows_json, highs_json, counts = got.json_column(col, regular, dtype)
        assert lows_json == to_json_values(dtype, [want[order[k]][col][0] for k in regular])
        assert counts == [want[order[k]][col][2] for k in regular]
    got.put(regular[0], {"ts": (None, None, 3)})
    assert got.cells(regular[:2])[0] == {"ts": (None, None, 3)}
    assert got.column("n", regular[:2])[3] == [False, True]


def test_sparse_reads_as_the_list_it_stands_for_sparse_or_dense():
    """A ``Sparse`` of a default with some values set reads, iterates and slices as the list it
    stands for, set by a few files (a dict) or by most (it turns into a list past DENSE)."""
    from indexcore.scan.decision_columns import DENSE, Sparse

    n = 1000
    for share in (0, 3, int(n * DENSE) + 5, n):
        want = [None] * n
        got = Sparse(None, n)
        for i in range(0, n, max(1, n // share) if share else n + 1)[:share]:
            want[i] = got[i] = ("x", i)
        got[-1] = want[-1] = "last"
        assert list(got) == want and [got[i] for i in range(n)] == want and got[5:40:3] == want[5:40:3]
        assert len(got) == n and got[-2] == want[-2]
        assert (got.dense is not None) == (sum(v is not None for v in want) > n * DENSE)
    with pytest.raises(IndexError):
        Sparse(None, 3)[3] = 1
