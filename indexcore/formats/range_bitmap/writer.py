"""Writes a range-bitmap index byte for byte as Paimon's ``RangeBitmapFileIndex`` writer does."""

from __future__ import annotations

import array
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from indexcore.errors import UnsupportedError
from indexcore.formats import bulk
from indexcore.formats.base import FileIndexWriter, parse_memory_size
from indexcore.formats.range_bitmap.bit_slice import serialize_bsi
from indexcore.formats.range_bitmap.dictionary import serialize_dictionary, serialize_fixed_dictionary
from indexcore.formats.range_bitmap.keys import NAN32, NAN64, VERSION, key_codec
from indexcore.formats.range_bitmap.reader import RangeBitmapReader
from indexcore.types import DataType

CHUNK_SIZE = "chunk-size"


class RangeBitmapWriter(FileIndexWriter):
    """Builds range-bitmap bytes the way Paimon's ``RangeBitmap.Appender`` lays them out.

    Fixed-width keys are kept as int64 raw-key segments with validity masks (``write``
    buffers single rows) and coded with numpy; string keys go to a dictionary of row lists.
    """

    index_type = "range-bitmap"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        super().__init__(dtype, options)
        self.codec = key_codec(dtype)
        self.chunk_size = parse_memory_size(self.options.get(CHUNK_SIZE, self.codec.default_chunk_size))
        if self.chunk_size >= 1 << 31:  # Paimon casts it to a Java int: it would wrap
            raise UnsupportedError(f"range-bitmap option chunk-size={self.options[CHUNK_SIZE]!r} must be "
                                   "below 2 GiB")
        self._keys: dict[Any, tuple[Any, list[int]]] = {}
        self._pending: list[Any] = []
        self._raws: list[np.ndarray] = []
        self._valid: list[np.ndarray] = []
        self._rid = 0
        self._built: tuple | None = None

    def write(self, value: Any) -> None:
        self._built = None
        if self.codec.fmt is not None:
            self._pending.append(None if value is None else self.codec.to_raw(value))
        elif value is not None:
            raw = self.codec.to_raw(value)
            entry = self._keys.get(raw)
            if entry is None:
                self._keys[raw] = (raw, [self._rid])
            else:
                entry[1].append(self._rid)
        self._rid += 1

    def write_batch(self, values: Sequence[Any]) -> None:
        self._built = None
        if self.codec.fmt is None:
            super().write_batch(values)
            return
        to_raw = self.codec.to_raw
        self._pending.extend(None if v is None else to_raw(v) for v in values)
        self._rid += len(values)

    def accepts_arrow(self, arrow_type: Any) -> bool:
        r = self.dtype.root
        if self.codec.fmt is None:
            return bulk.is_string_type(arrow_type)
        if r == "BOOLEAN":
            return pa.types.is_boolean(arrow_type)
        return bulk.long_key_type(self.dtype, arrow_type) or bulk.is_float_type(self.dtype, arrow_type)

    def write_arrow(self, array: Any) -> None:
        self._built = None
        if not self.accepts_arrow(array.type):
            super().write_arrow(array)
        array = bulk.as_array(array)
        if self.codec.fmt is None:
            self.write_batch(bulk.utf8_values(array))
            return
        self._flush()
        r = self.dtype.root
        valid = bulk.valid_mask(array)
        filled = array.fill_null(False if r == "BOOLEAN" else 0) if array.null_count else array
        if r == "BOOLEAN":
            raws = filled.to_numpy(zero_copy_only=False).astype(np.int64)
        elif r == "FLOAT":
            raws = filled.to_numpy(zero_copy_only=False).astype(np.float32).view(np.int32).astype(np.int64)
        elif r == "DOUBLE":
            raws = filled.to_numpy(zero_copy_only=False).astype(np.float64).view(np.int64)
        else:
            raws = bulk.long_keys(self.dtype, array)
        self._raws.append(raws)
        self._valid.append(valid)
        self._rid += len(array)

    def _flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            try:
                raws = np.array([0 if v is None else v for v in pending], dtype=object).astype(np.int64)
            except OverflowError as exc:
                raise UnsupportedError("range-bitmap key out of range for its type") from exc
            self._raws.append(raws)
            self._valid.append(np.array([v is not None for v in pending], dtype=bool))

    @property
    def empty(self) -> bool:
        return self._rid == 0

    def _fixed_entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distinct raw keys in Paimon's order, non-null rows, each such row's code)."""
        self._flush()
        raws = np.concatenate(self._raws) if self._raws else np.zeros(0, dtype=np.int64)
        valid = np.concatenate(self._valid) if self._valid else np.zeros(0, dtype=bool)
        rows = np.flatnonzero(valid)
        raws = raws[rows]
        _, first, codes = np.unique(self._order(raws), return_index=True, return_inverse=True)
        return raws[first], rows, codes.reshape(-1).astype(np.int64)

    def _order(self, raws: np.ndarray) -> np.ndarray:
        """The order keys (Paimon's comparator) of non-null raw keys, refused when out of range."""
        width = self.codec.width * 8
        bulk.check_long_range(raws, -(1 << (width - 1)), (1 << (width - 1)) - 1,
                              f"range-bitmap {self.dtype.sql()}")
        if self.dtype.root not in ("FLOAT", "DOUBLE"):
            return raws
        mag = np.int64((1 << (width - 1)) - 1)
        inf, nan = (0x7F800000, NAN32) if width == 32 else (0x7FF0000000000000, NAN64)
        return np.where((raws & mag) > inf, np.int64(nan), np.where(raws >= 0, raws, raws ^ mag))

    @classmethod
    def many(cls, dtype: DataType, options: dict[str, str] | None, arrays: Sequence[Any]) -> list[RangeBitmapWriter] | None:
        """One writer per Arrow column of ``arrays`` (e.g. one column of many small files), each
        as if it alone were written with :meth:`write_arrow`, their parts computed together:
        one array operation over every file instead of a dozen per file (the same bytes,
        tests/test_writer_many.py). None where they cannot be (string keys, a type the writer
        does not take as Arrow, mixed types, a key out of range): write them one by one."""
        writers = [cls(dtype, options) for _ in arrays]
        probe = cls(dtype, options)
        arrays = [bulk.as_array(a) for a in arrays]
        if (not arrays or probe.codec.fmt is None or len({a.type for a in arrays}) != 1
                or not probe.accepts_arrow(arrays[0].type)):
            return None
        probe.write_arrow(pa.concat_arrays(arrays))  # each row's raw key, as each file's writer takes it
        raws, valid = probe._raws[0], probe._valid[0]
        lengths = np.array([len(a) for a in arrays], dtype=np.int64)
        rows = np.flatnonzero(valid)
        file_of = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)[rows]
        local = rows - (np.cumsum(lengths) - lengths)[file_of]
        raws = raws[rows]
        try:
            order = probe._order(raws)
        except UnsupportedError:
            return None
        # a stable sort by (file, order key): the first row of each (file, key) run is the one
        # np.unique keeps per file (its first occurrence); runs are numbered within their file
        perm = np.lexsort((order, file_of))
        f_sorted, o_sorted = file_of[perm], order[perm]
        new = np.ones(len(perm), dtype=bool)
        new[1:] = (f_sorted[1:] != f_sorted[:-1]) | (o_sorted[1:] != o_sorted[:-1])
        run = np.cumsum(new) - 1
        distinct = raws[perm[new]]
        run_bounds = bulk.file_bounds(f_sorted[new], len(arrays))
        codes = np.empty(len(perm), dtype=np.int64)
        codes[perm] = run - run_bounds[:-1][f_sorted]
        cards = np.diff(run_bounds).tolist()
        counts = [max((c - 1).bit_length(), 1) if c else 64 for c in cards]
        slices = bulk.bit_slices_by_file(local, file_of, codes, counts)
        bounds = bulk.file_bounds(file_of, len(arrays))
        ids = np.ascontiguousarray(local, dtype=np.uint32)
        for f, w in enumerate(writers):
            lo, hi = bounds[f], bounds[f + 1]
            w._rid = int(lengths[f])
            w._built = (distinct[run_bounds[f]:run_bounds[f + 1]], BitMap(array.array("I", ids[lo:hi].tobytes())),
                        slices[f], ids[lo:hi], codes[lo:hi])
        return writers

    def _string_entries(self) -> tuple[list, np.ndarray, np.ndarray]:
        entries = [self._keys[o] for o in sorted(self._keys)]
        rows = [r for _, rs in entries for r in rs]
        codes = [c for c, (_, rs) in enumerate(entries) for _ in rs]
        order = np.argsort(np.array(rows, dtype=np.int64), kind="stable")
        return ([raw for raw, _ in entries], np.array(rows, dtype=np.int64)[order],
                np.array(codes, dtype=np.int64)[order])

    def _parts(self) -> tuple:
        """(distinct raw keys in Paimon's order, the non-null rows, the code slices, those rows and
        their codes as arrays): what both the blob and :meth:`reader` are made of, computed once
        (a writer written to no more)."""
        if self._built is None:
            if self.codec.fmt is None:
                distinct, rows, codes = self._string_entries()
            else:
                distinct, rows, codes = self._fixed_entries()
            cardinality = len(distinct)
            n_slices = max((cardinality - 1).bit_length(), 1) if cardinality else 64
            self._built = (distinct, bulk.bitmap_of(rows), bulk.bit_slices(rows, codes, n_slices),
                           np.ascontiguousarray(rows, dtype=np.uint32), np.asarray(codes, dtype=np.int64))
        return self._built

    def serialized_bytes(self) -> bytes:
        codec = self.codec
        distinct, ebm, slices, _, _ = self._parts()
        if codec.fmt is None:
            dictionary = serialize_dictionary(codec, distinct, self.chunk_size)
        else:
            dictionary = serialize_fixed_dictionary(codec, distinct, self.chunk_size)
        cardinality = len(distinct)
        bsi = serialize_bsi(ebm, slices)
        head = [struct.pack(">bii", VERSION, self._rid, cardinality)]
        if cardinality:
            head += [codec.encode(distinct[0]), codec.encode(distinct[-1])]
        head.append(struct.pack(">i", len(dictionary)))
        header = b"".join(head)
        return struct.pack(">i", len(header)) + header + dictionary + bsi

    def reader(self) -> RangeBitmapReader:
        """A reader over what was written, answering every predicate as one over
        :meth:`serialized_bytes` does (tests/test_writer_readers.py), without parsing them."""
        distinct, ebm, slices, rows, codes = self._parts()
        keys = distinct.tolist() if isinstance(distinct, np.ndarray) else list(distinct)
        return RangeBitmapReader.of_parts(self.dtype, self._rid, keys, ebm, slices, rows, codes)
