"""Frames of the Bitmap page: the most frequent values, what a point lookup finds and reads per
file, and the same bitmap rebuilt as V1 and V2."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from indexcore.analysis.advise_sample import Estimate, ratio_total
from indexcore.errors import IndexCoreError
from indexcore.expr import parse_where
from indexcore.formats.bitmap.keys import KeyCodec
from indexcore.formats.bitmap.lookup import BitmapLookup
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.formats.bitmap.writer import BitmapWriter
from indexcore.formats.registry import page_kinds
from indexcore.io import BytesSource
from indexcore.views.blob_bytes import blob_of_row, census_blob_bytes, file_columns
from indexcore.views.census import census_carrying, census_rows_of, snapshot_census
from indexcore.views.census_blobs import iter_file_indexes
from indexcore.views.census_rows import values_of
from indexcore.views.common import file_cols, partition_types
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.table_manifests import gc_paused

BITMAP_TYPES = page_kinds("bitmap")  # the kinds the Bitmap page explains


def top_values(values: pd.DataFrame, n: int = 20) -> pd.DataFrame:
    """Aggregate a ``$bitmap_values`` frame over files: the ``n`` most frequent values (most rows
    first, then by value), with their rows and the files holding them. Summed over the values'
    codes with numpy, the top ``n`` picked by a heap: pandas' groupby with ``nunique`` took 10 ms of
    a cold Bitmap page at 10k files, twice (the default lookup asks for the top value too)."""
    if values.empty:
        return pd.DataFrame(columns=["value", "cardinality", "files"])
    codes, names = pd.factorize(values["value"].to_numpy(), sort=False)
    if (codes < 0).any():  # a missing value (not in a $bitmap_values frame): groupby's own rules
        agg = values.groupby("value", as_index=False).agg(cardinality=("cardinality", "sum"),
                                                           files=("file_name", "nunique"))
        return agg.sort_values(["cardinality", "value"], ascending=[False, True]).head(n).reset_index(drop=True)
    cards = np.zeros(len(names), np.int64)
    np.add.at(cards, codes, values["cardinality"].to_numpy(np.int64))
    files, _ = pd.factorize(values["file_name"].to_numpy(), sort=False)
    width = int(files.max()) + 1
    pairs = np.sort(codes.astype(np.int64) * width + files)  # (value, file) pairs, each distinct one once:
    distinct = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]  # sorted, not numpy's hashed unique
    holders = np.bincount(distinct // width, minlength=len(names))
    top = heapq.nsmallest(n, range(len(names)), key=lambda i: (-cards[i], names[i]))
    return pd.DataFrame({"value": names[top].astype(object) if top else np.array([], object),
                         "cardinality": cards[top], "files": holders[top].astype(np.int64)})


def sample_halves(files) -> tuple[set[str], set[str]]:
    """A decoded sample's files in two halves (sorted names, taken alternately; data file names
    are random, so each half is a random sample too)."""
    names = sorted(set(files))
    return set(names[0::2]), set(names[1::2])


def default_lookup(values: pd.DataFrame, files, sampled: bool) -> tuple[str, set[str] | None]:
    """The point lookup a column starts from: its most frequent value (``$bitmap_values`` of the
    decoded ``files``) as a SQL literal, ``NULL`` when there is none. Sampled, the value is picked
    on the first of :func:`sample_halves` and the second half comes back: the files its estimate is
    made on. Picked and estimated on the same files, the sample's most frequent value overstates
    its total and its interval misses the truth (of ten values each in 30% of 600 files, the top one
    of a 100-file sample was in 43% of it: 25,800 rows estimated, 20,459 to 31,141, for 18,000)."""
    held = None
    if sampled:
        pick, held = sample_halves(files)
        values = values[values["file_name"].isin(pick)]
    top = top_values(values, 1)
    first = top["value"].iloc[0] if not top.empty else "NULL"
    return (first if first == "NULL" else "'" + first.replace("'", "''") + "'"), held


def bitmap_lookup(table, column: str, value_text: str, snapshot_id: int | None = None,
                  sample: int | None = None) -> pd.DataFrame:
    """Per file (``sample``: that many files): the rows a point lookup ``column = value`` finds
    and the bytes it reads. Looked up on each blob's bytes
    (:class:`~indexcore.formats.bitmap.lookup.BitmapLookup`, one per file schema); a blob that
    leaves is read by its reader, which answers the same or names what is wrong."""
    census = census_rows_of(snapshot_census(table, snapshot_id, None, sample), ["bitmap"], column)
    with gc_paused():  # thousands of acyclic lookups and cells: no collector passes over them
        return _lookup(table, census, column, value_text, snapshot_id)


def _lookup(table, census, column: str, value_text: str, snapshot_id: int | None) -> pd.DataFrame:
    """:func:`bitmap_lookup` of the census rows ``census``."""
    blobs, types, _names = census_blob_bytes(table, census, snapshot_id)
    c = {name: values_of(census[name]) for name in ("column_name", "is_empty", "error", "schema_id",
                                                     "index_size_in_bytes")}
    null = value_text.strip().upper() == "NULL"
    literals: dict[int, Any] = {}  # per file schema: the value as that schema's column type
    lookups: dict[int, BitmapLookup | None] = {}  # per file schema, when its type is looked up on the bytes
    by_reader = None
    at, cells = [], []
    for i, data in enumerate(blobs):
        if c["error"][i] is not None or c["column_name"][i] is None or c["is_empty"][i]:
            continue  # no reader (or an empty one): no row, as before
        schema_id = c["schema_id"][i]
        got = None
        if data is not None:
            if schema_id not in lookups:
                literal = None if null else _literal(table, literals, schema_id, column, value_text)
                try:
                    lookups[schema_id] = BitmapLookup(KeyCodec(types[i]), [literal])
                except (IndexCoreError, ValueError, TypeError, OverflowError):
                    lookups[schema_id] = None  # the reader raises it, or looks it up (boolean keys)
            lookup = lookups[schema_id]
            got = lookup.rows(data, "") if lookup is not None else None
        if got is not None:
            _row_count, found, used = got
            version, matching = data[0], len(found)
        else:
            by_reader = by_reader or blob_of_row(table, census, snapshot_id)
            blob = by_reader.blob(i)
            if blob.reader is None:
                continue
            literal = None if null else _literal(table, literals, blob.file.file.schema_id, column, value_text,
                                                 blob.file)
            found = blob.reader.null_bitmap() if literal is None else blob.reader.bitmap_for(literal)
            version, matching, used = blob.reader.version, len(found), blob.reader.lookup_bytes(literal)
        at.append(i)
        cells.append((version, matching, used, c["index_size_in_bytes"][i]))
    files = [a.to_pylist() for a in file_columns(table, census, at)]
    return pd.DataFrame([(*f, *v) for *f, v in zip(*files, cells, strict=True)],
                        columns=["file_name", "partition", "bucket", "row_count", "version", "matching_rows",
                                 "lookup_bytes", "index_size"])


def _literal(table, literals: dict[int, Any], schema_id: int, column: str, value_text: str,
             lf: LiveFile | None = None) -> Any:
    """``value_text`` as the column's value in schema ``schema_id`` (that of ``lf`` when given,
    which names the file if the schema is missing); parsed once per schema."""
    if schema_id not in literals:
        schema = table.file_schema(lf) if lf is not None else table.schema_or_latest(schema_id)
        row_type = schema.row_type()
        literals[schema_id] = parse_where(f"{_quote(column)} = {value_text}", row_type).literals[0]
    return literals[schema_id]


def matching_rows_estimate(lookup: pd.DataFrame, census: pa.Table, column: str, sampled: bool) -> Estimate:
    """Matching rows of a point lookup (:func:`bitmap_lookup`) over every file carrying
    ``column``'s bitmap (``census``: the ``$file_indexes`` view in Arrow): the sum when every such
    file was decoded, else the ratio estimate from the sampled files (matching rows per row, times
    the rows of all carrying files) with its 95% interval and sample size."""
    carrying, rows = census_carrying(census, BITMAP_TYPES, column)  # each carrying file once
    carrying_rows = float(rows)
    found = lookup["matching_rows"].astype(float).tolist()
    if not sampled:
        return ratio_total(found, found, sum(found), len(found))
    return ratio_total(found, lookup["row_count"].astype(float).tolist(), carrying_rows, max(carrying, len(found)))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


LAYOUT_MAX_FILES = 100


def bitmap_layout_compare(table, column: str, snapshot_id: int | None = None,
                          index_block_size: str = "16kb", max_files: int | None = LAYOUT_MAX_FILES) -> pd.DataFrame:
    """The same bitmap rebuilt in memory as V1 and as V2: total size, head size and point-lookup
    bytes of the most frequent value, per file (never written anywhere); the first
    ``max_files`` files holding that bitmap (None: all), as rebuilding costs a pass per row."""
    types = partition_types(table)
    rows = []
    rebuilt_files = 0
    for blob in iter_file_indexes(table, snapshot_id, ["bitmap"], column):
        if blob.reader is None or blob.empty:
            continue
        if max_files is not None and rebuilt_files >= max_files:
            break
        rebuilt_files += 1
        reader = blob.reader
        n = reader.row_count
        values: list[Any] = [None] * n
        for value, _card in reader.dictionary():
            for r in reader.bitmap_for(value):
                if r < n:
                    values[r] = value
        dictionary = list(reader.dictionary())
        frequent = max(dictionary, key=lambda vc: vc[1])[0] if dictionary else None
        for version in (1, 2):
            writer = BitmapWriter(blob.dtype, {"version": str(version), "index-block-size": index_block_size})
            for v in values:
                writer.write(v)
            rebuilt = BitmapReader(blob.dtype, BytesSource(writer.serialized_bytes()), {})
            rows.append({**file_cols(blob.file, types, table.caches.labels), "layout": f"V{version}",
                         "actual": version == reader.version, "size": rebuilt.source.size,
                         "head_bytes": rebuilt.meta.head_size,
                         "lookup_bytes": rebuilt.lookup_bytes(frequent) if frequent is not None else None})
    return pd.DataFrame(rows, columns=["file_name", "partition", "bucket", "row_count", "layout", "actual",
                                       "size", "head_bytes", "lookup_bytes"])
