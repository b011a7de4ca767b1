"""Paimon's bloom-filter file index (``BloomFilterFileIndex`` over ``BloomFilter64``).

Blob layout: the number of hash functions as a big-endian i32, then the bit set bytes (bit
``i`` is bit ``i & 7`` of byte ``i >> 3``). Keys are hashed to 64 bits by Paimon's
``FastHash``: xxHash64 (seed 0) of the UTF-8 bytes for strings and of the bytes for binary,
Thomas Wang's 64-bit integer mix for numeric, date, time and timestamp keys. The k probe
positions come from double hashing of the two 32-bit halves, as ``BloomFilter64`` does.

Only ``equal`` (and ``in``, an OR of equals) can answer SKIP; everything else is REMAIN.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats import bulk
from indexcore.formats.base import REMAIN, SKIP, FileIndexReader, FileIndexResult, FileIndexWriter
from indexcore.formats.column_values import VALUE_COVERAGE, ColumnValues, Disagreement, show
from indexcore.io import ByteSource
from indexcore.types import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    DataType,
    timestamp_key,
)

DEFAULT_ITEMS = 1_000_000
MAX_INT = 2**31 - 1  # Java int
DEFAULT_FPP = 0.1
HEADER_SIZE = 4
# A bit set at most this large is read with the header in one request; a larger one is read
# one probed byte at a time, so a lookup costs a handful of bytes instead of the whole filter.
WHOLE_READ_LIMIT = 4096
# No real filter has more hash functions than this (fpp 1e-30 needs about 100).
MAX_HASH_FUNCTIONS = 65_535

_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1
_FLOAT_NAN_BITS = 0x7FC00000
_DOUBLE_NAN_BITS = 0x7FF8000000000000
# probe positions computed at once in write_batch / write_arrow (bounds the temporary arrays)
_PROBES_PER_STEP = 1 << 22
# filters up to this many bits set probes through a temporary bool-per-bit mask
_MASK_LIMIT = 1 << 26


def _signed64(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >> 63 else x


def _signed32(x: int) -> int:
    x &= _MASK32
    return x - (1 << 32) if x >> 31 else x


_SIGN64 = 1 << 63


def long_hash(key: int) -> int:
    """Paimon's ``getLongHash``: Thomas Wang's 64-bit mix in Java long arithmetic (signed result).

    Each shift-and-add step is one multiply, wrapped to a signed long (Python's ``>>`` on a
    negative int is Java's arithmetic ``>>``): a lookup's hash is most of its cost."""
    k = ((int(key) * 2097151 - 1 + _SIGN64) & _MASK64) - _SIGN64  # ~key + (key << 21)
    k ^= k >> 24
    k = ((k * 265 + _SIGN64) & _MASK64) - _SIGN64  # key + (key << 3) + (key << 8)
    k ^= k >> 14
    k = ((k * 21 + _SIGN64) & _MASK64) - _SIGN64  # key + (key << 2) + (key << 4)
    k ^= k >> 28
    return ((k * 2147483649 + _SIGN64) & _MASK64) - _SIGN64  # key + (key << 31)


def string_hash(data: bytes | str) -> int:
    """xxHash64 (seed 0) of the UTF-8 bytes, as Paimon hashes strings and binary (signed)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    h = xxhash.xxh64_intdigest(data)
    return h - (1 << 64) if h >> 63 else h


def _float_key(value: float) -> int:
    """Java ``Float.floatToIntBits`` widened to long: every NaN becomes the canonical NaN."""
    if math.isnan(value):
        return _FLOAT_NAN_BITS
    return struct.unpack(">i", struct.pack(">f", value))[0]


def _double_key(value: float) -> int:
    """Java ``Double.doubleToLongBits``: every NaN becomes the canonical NaN."""
    if math.isnan(value):
        return _DOUBLE_NAN_BITS
    return struct.unpack(">q", struct.pack(">d", value))[0]


def hash_function(dtype: DataType) -> Callable[[Any], int]:
    """Paimon's ``FastHash`` for a column type: internal value -> signed 64-bit hash."""
    if dtype.root in STRING_ROOTS or dtype.root in BINARY_ROOTS:
        return string_hash
    key = _long_key_function(dtype)
    return long_hash if key is int else lambda v: long_hash(key(v))


def _long_key_function(dtype: DataType) -> Callable[[Any], int]:
    """The long that ``FastHash`` mixes for a numeric, date, time or timestamp value."""
    r = dtype.root
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME"):
        return int
    if r == "FLOAT":
        return _float_key
    if r == "DOUBLE":
        return _double_key
    if r in TIMESTAMP_ROOTS:
        return lambda v: timestamp_key(dtype, v)
    raise UnsupportedError(f"bloom-filter index does not support type {dtype.sql()}")


def long_hash_array(keys: np.ndarray) -> np.ndarray:
    """:func:`long_hash` of an int64 array (numpy int64 wraps as Java's long does)."""
    key = keys.astype(np.int64, copy=True)
    key = ~key + (key << 21)
    key ^= key >> 24
    key = key + (key << 3) + (key << 8)
    key ^= key >> 14
    key = key + (key << 2) + (key << 4)
    key ^= key >> 28
    return key + (key << 31)


def xxh64_array(data: Sequence[bytes]) -> np.ndarray:
    """xxHash64 (seed 0) of each byte string, as signed int64."""
    return np.fromiter(map(xxhash.xxh64_intdigest, data), np.uint64, count=len(data)).view(np.int64)


def hash_values(dtype: DataType, values: Sequence[Any]) -> np.ndarray:
    """:func:`hash_function` over many non-null internal values, as signed int64."""
    if dtype.root in STRING_ROOTS or dtype.root in BINARY_ROOTS:
        return xxh64_array([v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v for v in values])
    key = _long_key_function(dtype)
    return long_hash_array(np.fromiter((key(v) for v in values), dtype=np.int64, count=len(values)))


def probe_positions_array(hashes: np.ndarray, num_hash_functions: int, num_bits: int) -> np.ndarray:
    """:func:`probe_positions` for many hashes: a (num_hash_functions, len(hashes)) array."""
    hash1 = hashes.astype(np.int32).astype(np.int64)
    hash2 = (hashes >> 32).astype(np.int32).astype(np.int64)
    i = np.arange(1, num_hash_functions + 1, dtype=np.int64)[:, None]
    combined = (hash1[None, :] + i * hash2[None, :]).astype(np.int32)
    combined = np.where(combined < 0, ~combined, combined).astype(np.int64)
    return combined % num_bits


def probe_positions(hash64: int, num_hash_functions: int, num_bits: int) -> Iterable[int]:
    """The bit positions ``BloomFilter64`` sets / tests for one hash, in probe order."""
    hash1 = _signed32(hash64)
    hash2 = _signed32(hash64 >> 32)
    for i in range(1, num_hash_functions + 1):
        combined = _signed32(hash1 + i * hash2)
        if combined < 0:
            combined = ~combined
        yield combined % num_bits


def blob_contains_hash(blob: bytes | memoryview, hash64: int, name: str = "<memory>") -> bool:
    """``BloomFilter64.testHash`` straight on a bloom-filter blob (header and bit set): no reader.

    The k probe positions are computed inline and the test stops at the first clear bit. A blob
    without a bit set or with an impossible number of hash functions is a CorruptFileError."""
    num_bits = (len(blob) - HEADER_SIZE) * 8
    k = int.from_bytes(blob[:HEADER_SIZE], "big", signed=True)
    if num_bits <= 0 or not 1 <= k <= MAX_HASH_FUNCTIONS:
        raise CorruptFileError(f"bloom filter blob of {len(blob)} bytes with {k} hash functions",
                               file=name, structure="bloom-filter header", offset=0)
    hash1, hash2 = hash64 & _MASK32, (hash64 >> 32) & _MASK32
    combined = hash1
    for _ in range(k):
        combined = (combined + hash2) & _MASK32  # hash1 + i * hash2 as a Java int
        pos = (_MASK32 - combined if combined >> 31 else combined) % num_bits  # ~x when negative
        if not (blob[HEADER_SIZE + (pos >> 3)] >> (pos & 7)) & 1:
            return False
    return True


def might_contain(blob: bytes | memoryview, value: Any, dtype: DataType, name: str = "<memory>") -> bool:
    """Whether a bloom-filter blob may hold ``value`` (an internal, non-null value of ``dtype``),
    hashed and tested on the bytes, without building a reader. For many tests on one column,
    hash with :func:`hash_function` once and call :func:`blob_contains_hash`."""
    return blob_contains_hash(blob, hash_function(dtype)(value), name)


def optimal_bits(items: int, fpp: float) -> int:
    """``BloomFilter64(items, fpp)``'s bit count: -n ln p / ln2^2, truncated, then rounded up to
    the next multiple of 8 (a whole byte more when already a multiple)."""
    if items <= 0:
        raise ValueError("items must be positive")
    if not 0.0 < fpp < 1.0:
        raise ValueError("fpp must be in (0, 1)")
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    nb = min(nb, 2**31 - 1)
    return nb + (8 - nb % 8)


def optimal_hash_functions(items: int, num_bits: int) -> int:
    """``max(1, round(m / n * ln 2))`` with Java's ``Math.round`` (half up)."""
    return max(1, math.floor(num_bits / items * math.log(2) + 0.5))


def items_for_fpp(estimated_items: float, target_fpp: float) -> dict:
    """The ``items`` setting that meets ``target_fpp`` for this many distinct keys, and its cost."""
    items = max(1, math.ceil(estimated_items))
    bits = optimal_bits(items, target_fpp)
    return {"items": items, "fpp": target_fpp, "num_bits": bits, "bytes": bits // 8 + HEADER_SIZE,
            "num_hash_functions": optimal_hash_functions(items, bits)}


def _parse_number(options: dict[str, str], key: str, default: float, kind: type = int) -> Any:
    """The option ``key`` as ``kind`` (int or float), ``default`` when absent."""
    value = options.get(key)
    if value is None:
        return default
    try:
        return kind(str(value).strip())
    except ValueError as exc:
        what = "an integer" if kind is int else "a number"
        raise UnsupportedError(f"bloom-filter option {key}={value!r} is not {what}") from exc


def estimate_items(num_bits: int, bits_set: int, num_hash_functions: int) -> float:
    """Swamidass & Baldi: n ≈ -m/k · ln(1 - X/m); infinite when every bit is set."""
    if bits_set >= num_bits:
        return math.inf
    return -num_bits / num_hash_functions * math.log(1.0 - bits_set / num_bits)


class BloomFilterReader(FileIndexReader):
    """Answers ``equal``/``in`` from a bloom-filter blob; reads only the header and probed bytes."""

    index_type = "bloom-filter"

    def __init__(self, dtype: DataType, source: ByteSource, options: dict[str, str] | None = None):
        self.dtype = dtype
        self.source = source
        self.options = dict(options or {})
        self._hash = hash_function(dtype)
        self._k: int | None = None
        self._bits: bytes | None = None
        self._blob: bytes | None = None  # header and bit set, when read whole
        self._bytes: dict[int, int] = {}

    @property
    def num_bits(self) -> int:
        return (self.source.size - HEADER_SIZE) * 8

    @property
    def num_hash_functions(self) -> int:
        if self._k is None:
            self._load_header()
        return self._k

    def _load_header(self) -> None:
        size = self.source.size
        if size <= HEADER_SIZE:
            raise CorruptFileError(f"bloom filter blob of {size} bytes has no bit set",
                                   file=self.source.name, structure="bloom-filter header", offset=0)
        if size - HEADER_SIZE <= WHOLE_READ_LIMIT:
            data = self._blob = self.source.read(0, size, "bloom-filter")
            self._bits = data[HEADER_SIZE:]
        else:
            data = self.source.read(0, HEADER_SIZE, "bloom-filter header")
        k = int.from_bytes(data[:HEADER_SIZE], "big", signed=True)
        if not 1 <= k <= MAX_HASH_FUNCTIONS:
            raise CorruptFileError(f"impossible number of hash functions {k}",
                                   file=self.source.name, structure="bloom-filter header", offset=0)
        self._k = k

    def _byte(self, index: int) -> int:
        if self._bits is not None:
            return self._bits[index]
        b = self._bytes.get(index)
        if b is None:
            b = self.source.read(HEADER_SIZE + index, 1, "bloom-filter bit set")[0]
            self._bytes[index] = b
        return b

    def bit_set(self) -> bytes:
        """The whole bit set (read once, then cached)."""
        if self._k is None:
            self._load_header()
        if self._bits is None:
            self._bits = self.source.read(HEADER_SIZE, self.source.size - HEADER_SIZE, "bloom-filter bit set")
        return self._bits

    def test_hash(self, hash64: int) -> bool:
        """``BloomFilter64.testHash``: false as soon as one probed bit is clear."""
        if self._blob is not None:
            return blob_contains_hash(self._blob, hash64, self.source.name)
        positions = probe_positions(hash64, self.num_hash_functions, self.num_bits)
        return all((self._byte(pos >> 3) >> (pos & 7)) & 1 for pos in positions)

    def might_contain(self, value: Any) -> bool:
        if self._k is None:
            self._load_header()
        return self.test_hash(self._hash(value))

    def visit_equal(self, literal: Any) -> FileIndexResult:
        if literal is None:
            return REMAIN
        return REMAIN if self.might_contain(literal) else SKIP

    def visit_in(self, literals: list[Any]) -> FileIndexResult:
        result: FileIndexResult | None = None
        for literal in literals:
            one = self.visit_equal(literal)
            result = one if result is None else result.or_(one)
        return REMAIN if result is None else result

    def summary(self) -> dict:
        """Fill and capacity figures: popcount, estimated distinct keys and their false-positive rate."""
        bits = self.bit_set()
        m = len(bits) * 8
        k = self.num_hash_functions
        x = int.from_bytes(bits, "little").bit_count()
        fill = x / m
        est = estimate_items(m, x, k)
        out = {
            "index_type": self.index_type,
            "size_bytes": self.source.size,
            "num_bits": m,
            "bits_set": x,
            "fill_ratio": fill,
            "num_hash_functions": k,
            "estimated_items": est,
            "estimated_fpp": fill ** k,
        }
        if "items" in self.options or "fpp" in self.options:
            items = _parse_number(self.options, "items", DEFAULT_ITEMS)
            fpp = _parse_number(self.options, "fpp", DEFAULT_FPP, float)
            out["configured_items"] = items
            out["configured_fpp"] = fpp
            out["configured_num_bits"] = optimal_bits(items, fpp)
        return out


class BloomFilterWriter(FileIndexWriter):
    """Builds the same bytes as Paimon's ``BloomFilterFileIndex.Writer`` (nulls are not added)."""

    index_type = "bloom-filter"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        super().__init__(dtype, options)
        self.items = _parse_number(self.options, "items", DEFAULT_ITEMS)
        self.fpp = _parse_number(self.options, "fpp", DEFAULT_FPP, float)
        if not 0 < self.items <= MAX_INT:  # Paimon reads items as a Java int
            raise UnsupportedError(f"bloom-filter option items={self.items} must be a positive 32-bit integer "
                                   f"(1..{MAX_INT})")
        if not 0.0 < self.fpp < 1.0:
            raise UnsupportedError(f"bloom-filter option fpp={self.fpp} must be between 0 and 1")
        self._hash = hash_function(dtype)
        self.num_bits = optimal_bits(self.items, self.fpp)
        self.num_hash_functions = optimal_hash_functions(self.items, self.num_bits)
        self._bits = bytearray(self.num_bits // 8)
        self._written = 0

    def write(self, value: Any) -> None:
        self._written += 1
        if value is None:
            return
        bits = self._bits
        for pos in probe_positions(self._hash(value), self.num_hash_functions, self.num_bits):
            bits[pos >> 3] |= 1 << (pos & 7)

    def write_batch(self, values: Sequence[Any]) -> None:
        """Hash every non-null value, then set all probe bits with array operations."""
        self._written += len(values)
        self._add_hashes(hash_values(self.dtype, [v for v in values if v is not None]))

    def accepts_arrow(self, arrow_type: Any) -> bool:
        r = self.dtype.root
        if r in STRING_ROOTS:
            return bulk.is_string_type(arrow_type)
        return bulk.long_key_type(self.dtype, arrow_type) or bulk.is_float_type(self.dtype, arrow_type)

    def write_arrow(self, array: Any) -> None:
        """Hash a whole Arrow column: strings by xxHash64 of their UTF-8 bytes, numbers with numpy."""
        if not self.accepts_arrow(array.type):
            super().write_arrow(array)
        array = bulk.as_array(array)
        self._written += len(array)
        if self.dtype.root in STRING_ROOTS:
            self._add_hashes(xxh64_array(bulk.utf8_values(array.drop_null())))
            return
        if self.dtype.root in ("FLOAT", "DOUBLE"):
            keys = bulk.float_bit_keys(array, 32 if self.dtype.root == "FLOAT" else 64)
        else:
            keys = bulk.long_keys(self.dtype, array)
        if array.null_count:
            keys = keys[bulk.valid_mask(array)]
        self._add_hashes(long_hash_array(keys))

    def _add_hashes(self, hashes: np.ndarray) -> None:
        """Set the ``BloomFilter64`` probe bits of many signed 64-bit hashes."""
        bits = np.frombuffer(self._bits, dtype=np.uint8)
        k = self.num_hash_functions
        step = max(1, _PROBES_PER_STEP // k)
        for start in range(0, len(hashes), step):
            pos = probe_positions_array(hashes[start:start + step], k, self.num_bits).ravel()
            if self.num_bits <= _MASK_LIMIT:
                mask = np.zeros(self.num_bits, dtype=bool)
                mask[pos] = True
                bits |= np.packbits(mask, bitorder="little")
            else:
                np.bitwise_or.at(bits, pos >> 3, (1 << (pos & 7)).astype(np.uint8))

    @classmethod
    def many(cls, dtype: DataType, options: dict[str, str] | None, arrays: Sequence[Any]) -> list[BloomFilterWriter] | None:
        """One writer per Arrow column of ``arrays`` (one column of many small files), each holding
        the bits :meth:`write_arrow` of that column alone sets: every row hashed in one pass, the
        probe bits of all files set in one (files x bits) mask (the same bytes,
        tests/test_writer_many.py). None for mixed or non-Arrow types, or when that mask would
        pass :data:`_MASK_LIMIT` bits (large filters: write them one by one)."""
        writers = [cls(dtype, options) for _ in arrays]
        arrays = [bulk.as_array(a) for a in arrays]
        if (not arrays or len({a.type for a in arrays}) != 1 or not writers[0].accepts_arrow(arrays[0].type)
                or len(arrays) * writers[0].num_bits > _MASK_LIMIT):
            return None
        big = pa.concat_arrays(arrays)
        lengths = np.array([len(a) for a in arrays], dtype=np.int64)
        file_of = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)
        if big.null_count:
            file_of = file_of[bulk.valid_mask(big)]
        if dtype.root in STRING_ROOTS:
            hashes = xxh64_array(bulk.utf8_values(big.drop_null()))
        else:
            keys = (bulk.float_bit_keys(big, 32 if dtype.root == "FLOAT" else 64)
                    if dtype.root in ("FLOAT", "DOUBLE") else bulk.long_keys(dtype, big))
            hashes = long_hash_array(keys[bulk.valid_mask(big)] if big.null_count else keys)
        first = writers[0]
        k, num_bits = first.num_hash_functions, first.num_bits
        mask = np.zeros((len(arrays), num_bits), dtype=bool)
        step = max(1, _PROBES_PER_STEP // k)
        for start in range(0, len(hashes), step):
            pos = probe_positions_array(hashes[start:start + step], k, num_bits)
            mask[np.broadcast_to(file_of[start:start + step], pos.shape), pos] = True
        packed = np.packbits(mask, axis=1, bitorder="little")
        for w, bits, n in zip(writers, packed, lengths.tolist(), strict=True):
            w._bits, w._written = bytearray(bits.tobytes()), n
        return writers

    def serialized_bytes(self) -> bytes:
        return self.num_hash_functions.to_bytes(4, "big", signed=True) + bytes(self._bits)

    @property
    def empty(self) -> bool:
        return self._written == 0


# ---------------------------------------------------------------------------------------
# Audit: no false negative for any distinct non-null value of the column.

_LONG_KEYED_ROOTS = (*INTEGER_ROOTS, "DATE", "TIME")  # hashed as their integer value


def distinct_hashes(col: ColumnValues) -> np.ndarray:
    """``FastHash`` of each distinct value of ``col``: strings and binaries hashed from their bytes,
    integers in numpy, other types one distinct value at a time."""
    dictionary = col.encoding[0]
    root = col.dtype.root
    if dictionary is not None and (root in STRING_ROOTS or root in BINARY_ROOTS):
        raw = dictionary.cast(pa.large_binary()).to_pylist()
        return xxh64_array(raw)
    if dictionary is not None and root in _LONG_KEYED_ROOTS and pa.types.is_integer(dictionary.type):
        return long_hash_array(dictionary.to_numpy(zero_copy_only=False).astype(np.int64))
    return hash_values(col.dtype, col.distinct)


def contains_hashes(bit_set: bytes, num_hash_functions: int, hashes: np.ndarray) -> np.ndarray:
    """``BloomFilter64.testHash`` for many hashes at once: True where every probed bit is set."""
    bits = np.frombuffer(bit_set, dtype=np.uint8)
    pos = probe_positions_array(hashes, num_hash_functions, len(bits) * 8)
    return ((bits[pos >> 3] >> (pos & 7)) & 1).astype(bool).all(axis=0)


def audit_bloom_filter(reader: BloomFilterReader, col: ColumnValues, n: int) -> Iterator[Disagreement]:
    """The distinct values the filter answers 'absent' for (probed all at once)."""
    if not col.distinct_count():
        return
    found = contains_hashes(reader.bit_set(), reader.num_hash_functions, distinct_hashes(col))
    misses = col.distinct_values(np.flatnonzero(~found).tolist())
    if misses:
        yield Disagreement(VALUE_COVERAGE, f"bloom filter answers 'absent' for {len(misses)} values in the data",
                           show(col.dtype, misses))
