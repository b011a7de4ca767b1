"""Vectorized helpers the file-index writers share for ``write_batch`` / ``write_arrow``.

They turn a whole column into numpy arrays of index keys once, so a writer groups, hashes and
slices rows with array operations instead of one Python call per row. Keys follow
:func:`indexcore.types.to_long` (DATE days, TIME millis, TIMESTAMP millis if p <= 3 else
micros) and Java's float bits, exactly as the row-by-row ``write`` computes them.
"""

from __future__ import annotations

import array as _array
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from indexcore.errors import UnsupportedError
from indexcore.types import INTEGER_ROOTS, TIMESTAMP_ROOTS, DataType

_FLOAT_NAN_BITS = 0x7FC00000
_DOUBLE_NAN_BITS = 0x7FF8000000000000
# per-unit divisors to epoch millis and epoch micros (floor), and the seconds multipliers
_TO_MILLIS = {"ms": 1, "us": 1_000, "ns": 1_000_000}
_TO_MICROS = {"us": 1, "ns": 1_000}


def bitmap_of(rows: np.ndarray) -> BitMap:
    """A BitMap of row ids (non-negative, below 2^32) given as a numpy array."""
    return BitMap(_array.array("I", np.ascontiguousarray(rows, dtype=np.uint32).tobytes()))


#: :func:`bit_slices` takes every slice's bits in one array operation up to this many (rows x slices).
_SLICES_AT_ONCE = 1 << 16


def bit_slices(rows: np.ndarray, values: np.ndarray, count: int) -> list[BitMap]:
    """Slice ``i`` (``i < count``): the ``rows`` whose non-negative int64 ``values`` have bit ``i``
    set. A small file's slices are cut in one array operation (half the time of one per slice,
    whose fixed cost dominates there); a large one's slice by slice (bounded memory)."""
    if len(rows) * count > _SLICES_AT_ONCE:
        return [bitmap_of(rows[(values >> i) & 1 == 1]) for i in range(count)]
    bits = ((values[None, :] >> np.arange(count, dtype=np.int64)[:, None]) & 1).astype(bool)
    ids = np.ascontiguousarray(rows, dtype=np.uint32)
    return [BitMap(_array.array("I", ids[bits[i]].tobytes())) for i in range(count)]


def file_bounds(file_of: np.ndarray, files: int) -> np.ndarray:
    """Where each file's run starts in ``file_of`` (file numbers, ascending), and its end: ``files + 1`` bounds."""
    return np.searchsorted(file_of, np.arange(files + 1, dtype=np.int64))


def bit_slices_by_file(rows: np.ndarray, file_of: np.ndarray, values: np.ndarray,
                       counts: Sequence[int]) -> list[list[BitMap]]:
    """:func:`bit_slices` of many files at once: per file ``f``, its ``counts[f]`` slices of the
    rows (numbered within the file) that are ``f``'s in ``file_of`` (ascending). One array
    operation per slice for all files, instead of a dozen per file."""
    files = len(counts)
    ids = np.ascontiguousarray(rows, dtype=np.uint32)
    out: list[list[BitMap]] = [[] for _ in range(files)]
    for i in range(max(counts, default=0)):
        at = np.flatnonzero((values >> i) & 1)
        picked = ids[at]
        bounds = file_bounds(file_of[at], files)
        for f in range(files):
            if counts[f] > i:
                out[f].append(BitMap(_array.array("I", picked[bounds[f]:bounds[f + 1]].tobytes())))
    return out


def as_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous Arrow array for a column."""
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def valid_mask(array: pa.Array) -> np.ndarray:
    """True for the non-null rows."""
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return pc.is_valid(array).to_numpy(zero_copy_only=False)


def long_key_type(dtype: DataType, arrow_type: pa.DataType) -> bool:
    """Whether :func:`long_keys` converts this Arrow type for this column type."""
    r = dtype.root
    if r in INTEGER_ROOTS:
        return pa.types.is_integer(arrow_type) and not pa.types.is_uint64(arrow_type)
    if r == "DATE":
        return pa.types.is_date32(arrow_type) or pa.types.is_int32(arrow_type)
    if r == "TIME":
        return (pa.types.is_time32(arrow_type) and arrow_type.unit == "ms") or pa.types.is_int32(arrow_type)
    if r in TIMESTAMP_ROOTS:
        return pa.types.is_timestamp(arrow_type) and arrow_type.unit in ("s", "ms", "us", "ns")
    return False


def long_keys(dtype: DataType, array: pa.Array) -> np.ndarray:
    """The int64 index key of every row (nulls hold 0); see :func:`long_key_type`."""
    t = array.type
    if pa.types.is_timestamp(t):
        raw = _int64(array.cast(pa.int64()))
        micros = (dtype.precision or 0) > 3
        if t.unit == "s":
            return raw * (1_000_000 if micros else 1_000)
        if micros:
            return raw * 1_000 if t.unit == "ms" else raw // _TO_MICROS[t.unit]
        return raw // _TO_MILLIS[t.unit]
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        array = array.cast(pa.int32())
    return _int64(array)


def _int64(array: pa.Array) -> np.ndarray:
    """Integer Arrow values as int64, nulls as 0."""
    if array.null_count:
        array = array.fill_null(0)
    return array.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def float_bit_keys(array: pa.Array, width: int) -> np.ndarray:
    """Java ``floatToIntBits`` / ``doubleToLongBits`` (NaN canonical) as signed int64; nulls 0."""
    if array.null_count:
        array = array.fill_null(0)
    values = array.to_numpy(zero_copy_only=False)
    if width == 32:
        bits = values.astype(np.float32).view(np.int32).astype(np.int64)
        bits[np.isnan(values)] = _FLOAT_NAN_BITS
        return bits
    bits = values.astype(np.float64).view(np.int64).copy()
    bits[np.isnan(values)] = _DOUBLE_NAN_BITS
    return bits


def is_float_type(dtype: DataType, arrow_type: pa.DataType) -> bool:
    """FLOAT takes float32 columns, DOUBLE float32 or float64 (both widen exactly)."""
    if dtype.root == "FLOAT":
        return pa.types.is_float32(arrow_type)
    if dtype.root == "DOUBLE":
        return pa.types.is_float32(arrow_type) or pa.types.is_float64(arrow_type)
    return False


def is_string_type(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def utf8_values(array: pa.Array) -> list:
    """String values as UTF-8 ``bytes`` (None for nulls) without decoding to ``str``."""
    target = pa.large_binary() if pa.types.is_large_string(array.type) else pa.binary()
    return array.cast(target).to_pylist()


def first_seen_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, codes)``: the distinct keys in first-seen order and each row's code."""
    distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return distinct[order], rank[inverse.reshape(-1)]


def group_rows(codes: np.ndarray, rows: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """The rows of each code 0..n_groups-1, each in row order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=n_groups))[:-1]
    return np.split(rows[order], bounds)


def check_long_range(keys: np.ndarray, low: int, high: int, what: str) -> None:
    """Refuse keys that do not fit the index's fixed-width key (as Java's cast cannot happen)."""
    if len(keys) and (int(keys.min()) < low or int(keys.max()) > high):
        raise UnsupportedError(f"{what}: key out of range [{low}, {high}]")
