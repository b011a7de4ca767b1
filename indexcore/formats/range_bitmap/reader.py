"""Reads a range-bitmap index (Paimon's ``RangeBitmapFileIndex`` reader): header, then dictionary and
slices only when a predicate needs them."""

from __future__ import annotations

from typing import Any

from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.base import REMAIN, BitmapResult, FileIndexReader, FileIndexResult
from indexcore.formats.range_bitmap.bit_slice import BitSliceIndexBitmap
from indexcore.formats.range_bitmap.dictionary import ChunkedDictionary, SortedKeys
from indexcore.formats.range_bitmap.keys import VERSION, key_codec, read_header
from indexcore.io import ByteSource
from indexcore.types import DataType, to_json_value

# ---------------------------------------------------------------------------------------
# Reader.


class RangeBitmapReader(FileIndexReader):
    """Reads one range-bitmap blob (``source`` holds exactly the blob, starting at byte 0)."""

    index_type = "range-bitmap"

    def __init__(self, dtype: DataType, source: ByteSource, options: dict[str, str] | None = None):
        self.dtype, self.source = dtype, source
        self.codec = key_codec(dtype)
        cur, self.dictionary_offset = read_header(source, 0, "range-bitmap header", 13)
        self.version = cur.i8()
        if self.version > VERSION:
            raise UnsupportedError(f"range-bitmap version {self.version} is newer than {VERSION}",
                                   file=source.name, structure="range-bitmap header", offset=4)
        self.row_count = cur.length("row count")
        self.cardinality = cur.i32()
        self.min_raw = self.max_raw = None
        if self.cardinality > 0:
            self.min_raw, self.max_raw = self.codec.read(cur), self.codec.read(cur)
            self._min, self._max = self.codec.order(self.min_raw), self.codec.order(self.max_raw)
            if self._min > self._max:
                cur.fail("min key is greater than max key")
        self.dictionary_length = cur.length("dictionary length")
        self.bsi_offset = self.dictionary_offset + self.dictionary_length
        if self.bsi_offset > source.size:
            raise CorruptFileError(f"dictionary of {self.dictionary_length} bytes does not fit",
                                   file=source.name, structure="range-bitmap header", offset=4 + cur.pos - 4)
        self._dictionary: ChunkedDictionary | None = None
        self._bsi: BitSliceIndexBitmap | None = None

    @classmethod
    def of_parts(cls, dtype: DataType, row_count: int, keys: list, ebm: BitMap, slices: list[BitMap],
                 rows: Any = None, codes: Any = None) -> RangeBitmapReader:
        """A reader over a writer's parts, not its bytes (no source): ``keys`` the distinct raw
        keys in Paimon's order (a row's code is its key's place), ``ebm`` the non-null rows,
        ``slices`` the codes' bits (``rows`` and ``codes``: the same as arrays, compared
        directly). It answers as a reader of the serialized parts does."""
        self = cls.__new__(cls)
        self.dtype, self.source = dtype, None
        self.codec = codec = key_codec(dtype)
        self.version, self.row_count, self.cardinality = VERSION, row_count, len(keys)
        self.min_raw = self.max_raw = None
        if keys:
            self.min_raw, self.max_raw = keys[0], keys[-1]
            self._min, self._max = codec.order(self.min_raw), codec.order(self.max_raw)
        self.dictionary_offset = self.dictionary_length = self.bsi_offset = 0
        self._dictionary = SortedKeys([codec.order(k) for k in keys])
        self._bsi = BitSliceIndexBitmap.of_bitmaps(ebm, slices, rows, codes)
        return self

    # -- lazily opened parts

    @property
    def dictionary(self) -> ChunkedDictionary:
        if self._dictionary is None:
            self._dictionary = ChunkedDictionary(self.source, self.dictionary_offset, self.codec)
        return self._dictionary

    @property
    def bsi(self) -> BitSliceIndexBitmap:
        if self._bsi is None:
            self._bsi = BitSliceIndexBitmap(self.source, self.bsi_offset)
        return self._bsi

    # -- Paimon's RangeBitmap operations, on order keys

    def _not_null(self) -> BitMap:
        return BitMap() if self.cardinality <= 0 else BitMap(self.bsi.ebm())

    def _null(self, found: BitMap | None = None) -> BitMap:
        if self.cardinality <= 0:
            return BitMap(range(self.row_count))
        if found is not None and not found:
            return found
        nulls = self.bsi.ebm().flip(0, self.row_count)
        if found is not None:
            nulls &= found
        return nulls

    def _not(self, bitmap: BitMap) -> BitMap:
        return BitMap() if self.cardinality <= 0 else self.bsi.ebm() - bitmap

    def _eq(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key == self._min and key == self._max:
            return self._not_null()
        if key < self._min or key > self._max:
            return BitMap()
        code = self.dictionary.find(key)
        return BitMap() if code < 0 else self.bsi.eq(code)

    def _gte(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key <= self._min:
            return self._not_null()
        if key > self._max:
            return BitMap()
        code = self.dictionary.find(key)
        return self.bsi.gte(-code - 1 if code < 0 else code)

    def _gt(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key < self._min:
            return self._not_null()
        if key >= self._max:
            return BitMap()
        code = self.dictionary.find(key)
        return self.bsi.gte(-code - 1) if code < 0 else self.bsi.gt(code)

    def _lte(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key >= self._max:
            return self._not_null()
        if key < self._min:
            return BitMap()
        return self._not(self._gt(key))

    def _lt(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key > self._max:
            return self._not_null()
        if key <= self._min:
            return BitMap()
        return self._not(self._gte(key))

    def _key(self, literal: Any) -> Any:
        return self.codec.order_of_value(literal)

    def _in(self, literals: list) -> BitMap:
        out = BitMap()
        if self.cardinality > 0:
            for lit in literals:
                if lit is not None:
                    out |= self._eq(self._key(lit))
        return out

    # -- FileIndexReader visits

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(self._null())

    def visit_is_not_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null())

    def visit_equal(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._eq(self._key(literal)))

    def visit_not_equal(self, literal: Any) -> FileIndexResult:
        if literal is None:
            return REMAIN
        if self.cardinality <= 0:
            return BitmapResult(BitMap())
        return BitmapResult(self._not(self._eq(self._key(literal))))

    def visit_in(self, literals: list) -> FileIndexResult:
        return BitmapResult(self._in(literals))

    def visit_not_in(self, literals: list) -> FileIndexResult:
        if self.cardinality <= 0:
            return BitmapResult(BitMap())
        return BitmapResult(self._not(self._in(literals)))

    def visit_less_than(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._lt(self._key(literal)))

    def visit_less_or_equal(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._lte(self._key(literal)))

    def visit_greater_than(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._gt(self._key(literal)))

    def visit_greater_or_equal(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._gte(self._key(literal)))

    def visit_between(self, low: Any, high: Any) -> FileIndexResult:
        if low is None or high is None:
            return REMAIN
        found = self._gte(self._key(low))
        found &= self._lte(self._key(high))
        return BitmapResult(found)

    def visit_top_n(self, k: int, ascending: bool, nulls_first: bool, strict: bool = True,
                    incoming: FileIndexResult = REMAIN) -> FileIndexResult:
        """Paimon's ``FileIndexPredicate.evaluateTopN`` + ``RangeBitmap.topK/bottomK``.

        ``strict=False`` (more than one sort key) keeps every row tied with the k-th.
        """
        if not incoming.remain():
            return incoming
        found = incoming.bitmap if isinstance(incoming, BitmapResult) else None
        if found is not None and len(found) <= k:
            return incoming
        if self.cardinality <= 0:
            return BitmapResult(BitMap(range(self.row_count)))
        if not nulls_first:
            bitmap = self.bsi.top_k(k, found, strict, largest=not ascending)
            n = len(bitmap)
            if n >= k:
                return BitmapResult(bitmap)
            nulls = self._null(found)
            return BitmapResult(bitmap | (nulls[0:k - n] if strict else nulls))
        bitmap = self._null(found)
        n = len(bitmap)
        if n >= k:
            return BitmapResult(bitmap[0:k] if strict else bitmap)
        return BitmapResult(bitmap | self.bsi.top_k(k - n, found, strict, largest=not ascending))

    # -- explorer figures

    def _display(self, raw: Any) -> Any:
        return to_json_value(self.dtype, self.codec.to_value(raw)) if raw is not None else None

    def summary(self, top_values: bool = True) -> dict:
        """Header facts, nulls, chunks and slices; with ``top_values`` also the most frequent keys
        (every slice decoded: the costly part, which a per-file census leaves out)."""
        out: dict[str, Any] = {
            "index_type": self.index_type, "version": self.version, "row_count": self.row_count,
            "dictionary_size": max(self.cardinality, 0), "min": self._display(self.min_raw),
            "max": self._display(self.max_raw), "size_bytes": self.source.size,
            "dictionary_bytes": self.dictionary_length,
        }
        non_null = self._not_null()
        out["null_count"] = self.row_count - len(non_null)
        dictionary = self.dictionary
        out["chunk_count"] = dictionary.size
        out["chunk_key_counts"] = dictionary.chunk_key_counts()
        out["slice_count"] = self.bsi.slice_count
        out["bsi_bytes"] = self.bsi.end - self.bsi_offset
        if top_values:
            out["top_values"] = self._top_values(non_null) if self.cardinality > 0 else []
        return out

    def _top_values(self, non_null: BitMap, limit: int = 20) -> list[dict]:
        """The most frequent keys, from every row's code rebuilt out of the slices."""
        import numpy as np

        rows = np.frombuffer(non_null.to_array(), dtype=np.uint32)
        rows = rows[rows < self.row_count]
        # Sized by rows that really exist, never by a length declared in the file.
        codes = np.zeros(int(rows.max()) + 1 if len(rows) else 0, dtype=np.int64)
        for i, sl in enumerate(self.bsi.load_all()):
            idx = np.frombuffer(sl.to_array(), dtype=np.uint32)
            codes[idx[idx < len(codes)]] |= 1 << i
        counts = np.bincount(codes[rows], minlength=0)
        top = np.argsort(-counts, kind="stable")[:limit]
        return [{"value": self._display(self.dictionary.raw_key(int(c))), "cardinality": int(counts[c])}
                for c in top if counts[c] > 0 and c < self.cardinality]


