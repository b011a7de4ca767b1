"""Merge engines of primary-key tables: the rows a batch read returns for records sharing a key.

Records of one partition/bucket arrive as one Arrow table with the value columns plus
``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and two ordering columns added by the reader
(``_LEVEL``, ``_FILE_ORDER``). Records of a key are ordered as Paimon orders them: by the
``sequence.field`` columns (nulls first), then the sequence number, then newer files last.
"""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import UnsupportedError
from indexcore.paimon.options import CoreOptions

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
LEVEL = "_LEVEL"
FILE_ORDER = "_FILE_ORDER"
POSITION = "_POSITION"
ORDER_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND, LEVEL, FILE_ORDER, POSITION)

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
RETRACT_KINDS = (UPDATE_BEFORE, DELETE)


def _order_key(value: Any) -> tuple:
    """Nulls first, then the value itself (floats: NaN last, like Java's compareTo)."""
    if value is None:
        return (0, 0)
    if isinstance(value, float) and value != value:
        return (2, 0)
    return (1, value)


def _sorted_groups(records: pa.Table, key_names: list[str], seq_fields: list[str]) -> list[list[int]]:
    """Row indices grouped by primary key, each group in merge order (oldest first)."""
    keys = list(zip(*(records.column(k).to_pylist() for k in key_names), strict=True)) \
        if key_names else [()] * records.num_rows
    seqs = [records.column(f).to_pylist() for f in seq_fields]
    seq_no = records.column(SEQUENCE_NUMBER).to_pylist()
    level = records.column(LEVEL).to_pylist()
    order = records.column(FILE_ORDER).to_pylist()
    pos = records.column(POSITION).to_pylist()
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    out = []
    for idx in groups.values():
        idx.sort(key=lambda i: (tuple(_order_key(s[i]) for s in seqs), seq_no[i], -level[i], order[i], pos[i]))
        out.append(idx)
    return out


def survivors(records: pa.Table, key_names: list[str], seq_fields: list[str], first: bool,
              ignore_delete: bool) -> pa.Array | None:
    """The rows (ascending indices) a deduplicate (``first`` False) or first-row merge keeps, on
    columns: the records sorted by key, then in merge order as :func:`_sorted_groups` orders
    them; per key the last record unless it retracts (deduplicate), or the first (first-row) or
    last (deduplicate ignoring deletes) record that does not retract. None where Arrow's order
    may differ from Python's (floating-point keys or sequence fields: NaN) or Arrow cannot sort
    a column (nested types): the caller merges in Python."""
    n = records.num_rows
    if any(pa.types.is_floating(records.schema.field(c).type) for c in [*key_names, *seq_fields]):
        return None
    order = [(c, "ascending") for c in [*key_names, *seq_fields, SEQUENCE_NUMBER]]
    order += [(LEVEL, "descending"), (FILE_ORDER, "ascending"), (POSITION, "ascending")]
    try:
        try:
            idx = pc.sort_indices(records, sort_keys=[(c, o, "at_start") for c, o in order])
        except (TypeError, ValueError):  # pyarrow before 25: one null placement for every key
            idx = pc.sort_indices(records, sort_keys=order, null_placement="at_start")
        start = np.zeros(n, dtype=bool)
        start[:1] = True
        for k in key_names:  # a new key where any key column differs from the row before (null equals null)
            col = records.column(k).take(idx)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            a, b = col.slice(1), col.slice(0, max(0, n - 1))
            differs = pc.not_equal(a, b)
            if col.null_count:
                differs = pc.if_else(pc.is_null(differs), pc.xor(pc.is_null(a), pc.is_null(b)), differs)
            start[1:] |= differs.to_numpy(zero_copy_only=False)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    kinds = records.column(VALUE_KIND).take(idx).to_numpy(zero_copy_only=False)
    keep = ~np.isin(kinds, RETRACT_KINDS)
    group = np.cumsum(start)
    if not first and not ignore_delete:  # the last record of each key, unless it retracts
        last = np.append(start[1:], True)
        picked = last & keep
    else:  # the first (or last) record of each key that does not retract
        at = np.flatnonzero(keep)
        g = group[at]
        edge = np.ones(len(at), dtype=bool)
        if first:
            edge[1:] = g[1:] != g[:-1]
        else:
            edge[:-1] = g[1:] != g[:-1]
        picked = np.zeros(n, dtype=bool)
        picked[at[edge]] = True
    return pa.array(np.sort(idx.to_numpy()[picked]), pa.int64())


def merge_records(records: pa.Table, key_names: list[str], value_names: list[str],
                  options: CoreOptions) -> pa.Table:
    """The merged rows (``value_names`` columns) of one bucket, per the table's merge engine."""
    engine = options.merge_engine
    ignore_delete = options.ignore_delete
    seq_fields = [s for s in options.sequence_fields if s in records.column_names]
    if engine in ("deduplicate", "first-row"):
        taken = survivors(records, key_names, seq_fields, engine == "first-row", ignore_delete)
        if taken is not None:
            return records.select(value_names).take(taken)
    kinds = records.column(VALUE_KIND).to_pylist()
    groups = _sorted_groups(records, key_names, seq_fields)
    values = records.select(value_names)
    if engine == "deduplicate":
        take = []
        for idx in groups:
            live = [i for i in idx if kinds[i] not in RETRACT_KINDS] if ignore_delete else idx
            if live and kinds[live[-1]] not in RETRACT_KINDS:
                take.append(live[-1])
        return values.take(pa.array(sorted(take), pa.int64()))
    if engine == "first-row":
        take = []
        for idx in groups:
            live = [i for i in idx if kinds[i] not in RETRACT_KINDS]
            if live:
                take.append(live[0])
        return values.take(pa.array(sorted(take), pa.int64()))
    if engine == "partial-update":
        return _partial_update(values, groups, kinds, key_names, options, ignore_delete)
    if engine == "aggregation":
        return _aggregate(values, groups, kinds, key_names, options, ignore_delete)
    raise UnsupportedError(f"merge engine {engine!r} is not supported")


def _partial_update(values: pa.Table, groups: list[list[int]], kinds: list[int], key_names: list[str],
                    options: CoreOptions, ignore_delete: bool) -> pa.Table:
    """Non-null fields of later records overwrite earlier ones; each column gathered by index."""
    remove_on_delete = options.partial_update_remove_record_on_delete
    columns = {name: values.column(name).to_pylist() for name in values.column_names}
    sources: dict[str, list[int | None]] = {name: [] for name in values.column_names}
    for idx in groups:
        current: dict[str, int | None] | None = None
        for i in idx:
            if kinds[i] in RETRACT_KINDS:
                if remove_on_delete and not ignore_delete:
                    current = None
                continue
            if current is None:
                current = dict.fromkeys(values.column_names)
            for name in values.column_names:
                if name in key_names or columns[name][i] is not None:
                    current[name] = i
        if current is not None:
            for name in values.column_names:
                sources[name].append(current[name])
    arrays = [values.column(n).take(pa.array(sources[n], pa.int64())) for n in values.column_names]
    return pa.table(arrays, schema=values.schema)


def _agg(fn: str, acc: Any, value: Any, first: bool) -> Any:
    if fn in ("last_value",):
        return value
    if fn in ("last_non_null_value", ""):
        return acc if value is None else value
    if fn == "first_value":
        return value if first else acc
    if fn == "first_non_null_value":
        return value if acc is None else acc
    if value is None:
        return acc
    if acc is None:
        return 1 if fn == "count" else value
    if fn == "sum":
        return acc + value
    if fn == "product":
        return acc * value
    if fn == "max":
        return max(acc, value)
    if fn == "min":
        return min(acc, value)
    if fn == "count":
        return acc + 1
    if fn == "bool_and":
        return acc and value
    if fn == "bool_or":
        return acc or value
    raise UnsupportedError(f"aggregate function {fn!r} is not supported")


def _aggregate(values: pa.Table, groups: list[list[int]], kinds: list[int], key_names: list[str],
               options: CoreOptions, ignore_delete: bool) -> pa.Table:
    """Fields folded with ``fields.<name>.aggregate-function`` (default ``last_non_null_value``)."""
    remove_on_delete = options.aggregation_remove_record_on_delete
    names = values.column_names
    fns = {n: options.aggregate_function(n) for n in names}
    columns = {n: values.column(n).to_pylist() for n in names}
    out: dict[str, list] = {n: [] for n in names}
    for idx in groups:
        acc: dict[str, Any] | None = None
        for i in idx:
            if kinds[i] in RETRACT_KINDS:
                if remove_on_delete and not ignore_delete:
                    acc = None
                continue
            first = acc is None
            if acc is None:
                acc = dict.fromkeys(names)
            for n in names:
                v = columns[n][i]
                acc[n] = v if n in key_names else _agg(fns[n], acc[n], v, first)
        if acc is not None:
            for n in names:
                out[n].append(acc[n])
    arrays = []
    for field in values.schema:
        data = out[field.name]
        if pa.types.is_decimal(field.type):
            q = decimal.Decimal(1).scaleb(-field.type.scale)
            data = [None if v is None else decimal.Decimal(v).quantize(q) for v in data]
        arrays.append(pa.array(data, type=field.type))
    return pa.table(arrays, schema=values.schema)
