"""Manifest lists, manifests and index manifests; BinaryRow partitions and stats.

Manifest files are Avro (fastavro), ORC or Parquet (pyarrow), per the table's
``manifest.format``. Every format version since Paimon 0.9 is read: newer fields are
optional and looked up with ``dict.get``. Partition values, keys and min/max stats are
Paimon ``BinaryRow`` bytes, decoded lazily by :mod:`indexcore.formats.binary_row`.
"""

from __future__ import annotations

import io
import threading
import zlib
from collections.abc import Callable, Sequence

import fastavro
import fastavro.read

try:
    from fastavro._read import read_long as _read_long
except ImportError:  # a pure-Python fastavro build
    from fastavro._read_py import read_long as _read_long

from indexcore.errors import CorruptFileError, IndexCoreError
from indexcore.formats.binary_row import binary_row_arity, decode_binary_field, decode_binary_row
from indexcore.types import DataType
from indexcore.warehouse.model import (
    ADD,
    DELETE,
    DataFileMeta,
    DeletionVectorRange,
    GlobalIndexMeta,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

KINDS = {0: ADD, 1: DELETE}
_new = object.__new__
_setattr = object.__setattr__


_zstd_local = threading.local()
# what one manifest file may inflate to: this many times its stored size (or the floor)
INFLATE_RATIO = 256
INFLATE_FLOOR = 64 << 20
AVRO_CODECS = ("null", "deflate", "zstandard", "snappy")


class _Budget:
    """How many more bytes the Avro blocks of the file being read may inflate to."""

    def __init__(self, stored: int, name: str):
        self.left = max(INFLATE_FLOOR, INFLATE_RATIO * stored)
        self.limit = self.left
        self.name = name

    def take(self, chunk: int) -> None:
        self.left -= chunk
        if self.left < 0:
            raise CorruptFileError(f"manifest inflates past {self.limit:,} bytes ({INFLATE_RATIO}x its "
                                   "stored size): a damaged or hostile file", file=self.name,
                                   structure="avro block")


def _budget() -> _Budget:
    budget = getattr(_zstd_local, "budget", None)
    return budget if budget is not None else _Budget(0, "<avro>")


def _inflate(chunks) -> io.BytesIO:
    """Join decompressed chunks while the file's inflation budget lasts."""
    budget = _budget()
    out = io.BytesIO()
    for chunk in chunks:
        budget.take(len(chunk))
        out.write(chunk)
    out.seek(0)
    return out


def _zstd_block(fo) -> io.BytesIO:
    """One zstd-compressed Avro block (a single frame, possibly without a content size).

    The decompression context is reused per thread: building one costs more than
    decompressing a small manifest block. Output is read in pieces under the file's budget,
    never sized by what a frame header claims.
    """
    dctx = getattr(_zstd_local, "dctx", None)
    if dctx is None:
        import zstandard  # optional codec, loaded only for zstd-compressed manifests

        dctx = _zstd_local.dctx = zstandard.ZstdDecompressor()
    data = fo.read(_read_long(fo))
    reader = dctx.stream_reader(io.BytesIO(data))
    return _inflate(iter(lambda: reader.read(1 << 20), b""))


def _deflate_block(fo) -> io.BytesIO:
    """One raw-deflate Avro block, inflated in pieces under the file's budget."""
    data = fo.read(_read_long(fo))
    inflater = zlib.decompressobj(-15)

    def pieces():
        nonlocal data
        while data:
            yield inflater.decompress(data, 1 << 20)
            data = inflater.unconsumed_tail
            if inflater.eof:
                return
    return _inflate(pieces())


def _install_zstd() -> None:
    """fastavro wants ``backports.zstd`` for Paimon's default zstd codec; use ``zstandard``.

    Both readers Paimon's codecs use here are bounded ones.
    """
    fastavro.read.BLOCK_READERS["zstandard"] = _zstd_block
    fastavro.read.BLOCK_READERS["deflate"] = _deflate_block


_install_zstd()


def read_records(data: bytes, fmt: str, name: str) -> list[dict]:
    """All records of a manifest-like file as dicts keyed by Paimon's ``_FIELD`` names.

    Decompression is capped at :data:`INFLATE_RATIO` times the file's size.
    """
    fmt = (fmt or "avro").lower()
    try:
        if fmt == "avro":
            _zstd_local.budget = _Budget(len(data), name)
            try:
                reader = fastavro.reader(io.BytesIO(data))
                if reader.codec not in AVRO_CODECS:
                    raise CorruptFileError(f"Avro codec {reader.codec!r} is not one Paimon writes", file=name,
                                           structure="avro header")
                return list(reader)
            finally:
                _zstd_local.budget = None
        return read_arrow_manifest(data, fmt, name).to_pylist()
    except CorruptFileError:
        raise
    except Exception as exc:  # fastavro/pyarrow raise many kinds on bad bytes
        raise CorruptFileError(f"cannot decode {fmt} manifest: {exc}", file=name,
                               structure=f"{fmt} manifest", offset=0) from exc


def read_arrow_manifest(data: bytes, fmt: str, name: str):
    """A Parquet or ORC manifest-like file as an Arrow table (its footer's sizes checked first)."""
    import pyarrow as pa  # heavy, needed only for Parquet/ORC manifests (Avro is the default)

    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq  # heavy: only Parquet manifests

            source = pq.ParquetFile(pa.BufferReader(data))
            _check_inflated(sum(source.metadata.row_group(i).total_byte_size
                                for i in range(source.metadata.num_row_groups)), len(data), name)
            return source.read()
        if fmt == "orc":
            import pyarrow.orc as po  # heavy: only ORC manifests

            return po.ORCFile(pa.BufferReader(data)).read()
    except CorruptFileError:
        raise
    except Exception as exc:  # pyarrow raises many kinds on bad bytes
        raise CorruptFileError(f"cannot decode {fmt} manifest: {exc}", file=name,
                               structure=f"{fmt} manifest", offset=0) from exc
    raise CorruptFileError(f"unknown manifest format {fmt!r}", file=name, structure="manifest")


def _check_inflated(size: int, stored: int, name: str) -> None:
    limit = max(INFLATE_FLOOR, INFLATE_RATIO * stored)
    if size > limit:
        raise CorruptFileError(f"manifest declares {size:,} uncompressed bytes, over {limit:,} "
                               f"({INFLATE_RATIO}x its stored size)", file=name, structure="parquet footer")


# ---------------------------------------------------------------------------------------------
# BinaryRow stats and keys, decoded on first use


class LazyStats(SimpleStats):
    """SimpleStats decoded from BinaryRow bytes on first access (planning stays cheap)."""

    def __init__(self, raw_min: bytes | None, raw_max: bytes | None, null_counts: Sequence | None,
                 types: Callable[[], Sequence[DataType]] | Sequence[DataType]):
        _setattr(self, "__dict__", {"_raw": (raw_min, raw_max, null_counts), "_types": types,
                                    "_decoded": None})

    def __reduce__(self):
        """Pickled (for a Spark task) as its raw bytes and resolved field types, still undecoded."""
        raw_min, raw_max, nulls = self.__dict__["_raw"]
        return LazyStats, (raw_min, raw_max, nulls, _resolved(self.__dict__["_types"]))

    def _layout(self) -> tuple:
        """(min bytes, max bytes, null counts, the field types the stats cover): types past both
        the row's arity and the null counts are not the stats'. The types are worked out once per
        file and kept alone (the bytes and counts are the file's own: no copy of them is kept)."""
        raw_min, raw_max, nulls = self.__dict__["_raw"]
        nulls = nulls or ()
        types = self.__dict__.get("_shape")
        if types is None:
            types = self.__dict__["_types"]
            types = types() if callable(types) else types
            n = max(binary_row_arity(raw_min), len(nulls))
            # the shared tuple of types as it is when the stats cover all of them (the common case)
            types = types if type(types) is tuple and n >= len(types) else tuple(types)[:n]
            self.__dict__["_shape"] = types
        return raw_min, raw_max, nulls, types

    def _decode(self) -> tuple:
        decoded = self.__dict__["_decoded"]
        if decoded is None:
            raw_min, raw_max, nulls, types = self._layout()
            decoded = (decode_binary_row(raw_min, types, "stats min values"),
                       decode_binary_row(raw_max, types, "stats max values"), tuple(nulls))
            self.__dict__["_decoded"] = decoded
        return decoded

    def value_at(self, i: int) -> tuple:
        """(min, max, null count) of layout field ``i``, decoding that field alone (as Paimon's
        ``BinaryRow`` reads one field) unless the whole row is decoded already."""
        if self.__dict__["_decoded"] is not None:
            return super().value_at(i)
        d = self.__dict__
        memo = d.get("_fields")  # (i, value) for the one field asked so far, a dict past it
        hit = None if memo is None else memo.get(i) if type(memo) is dict else memo[1] if memo[0] == i else None
        if hit is None:
            raw_min, raw_max, nulls, types = self._layout()
            null_count = nulls[i] if i < len(nulls) else None
            if i >= len(types):
                hit = (None, None, null_count)
            else:
                hit = (decode_binary_field(raw_min, i, types[i], "stats min values"),
                       decode_binary_field(raw_max, i, types[i], "stats max values"), null_count)
            if memo is None:  # a pair: a one-column predicate's files keep no dict each (224 bytes)
                d["_fields"] = (i, hit)
            elif type(memo) is dict:
                memo[i] = hit
            else:
                d["_fields"] = {memo[0]: memo[1], i: hit}
        return hit

    @property
    def min_values(self) -> tuple:  # type: ignore[override]
        return self._decode()[0]

    @property
    def max_values(self) -> tuple:  # type: ignore[override]
        return self._decode()[1]

    @property
    def null_counts(self) -> tuple:  # type: ignore[override]
        return self._decode()[2]

    @property
    def raw(self) -> tuple:
        """(min BinaryRow bytes, max BinaryRow bytes, null counts) as stored."""
        return self.__dict__["_raw"]

    def __repr__(self) -> str:
        return f"SimpleStats(min_values={self.min_values!r}, max_values={self.max_values!r}, " \
               f"null_counts={self.null_counts!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SimpleStats):
            return NotImplemented
        return (self.min_values, self.max_values, self.null_counts) == \
            (other.min_values, other.max_values, other.null_counts)

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------------
# Records -> model


_LIST_FIELDS = {"_FILE_NAME": str, "_FILE_SIZE": int, "_NUM_ADDED_FILES": int, "_NUM_DELETED_FILES": int,
                "_SCHEMA_ID": int}
_ENTRY_FIELDS = {"_KIND": int, "_PARTITION": bytes, "_BUCKET": int, "_TOTAL_BUCKETS": int, "_FILE": dict}
_FILE_FIELDS = {"_FILE_NAME": str, "_FILE_SIZE": int, "_ROW_COUNT": int, "_MIN_KEY": bytes, "_MAX_KEY": bytes,
                "_KEY_STATS": dict, "_VALUE_STATS": dict, "_MIN_SEQUENCE_NUMBER": int,
                "_MAX_SEQUENCE_NUMBER": int, "_SCHEMA_ID": int, "_LEVEL": int}
_INDEX_FIELDS = {"_KIND": int, "_PARTITION": bytes, "_BUCKET": int, "_INDEX_TYPE": str, "_FILE_NAME": str,
                 "_FILE_SIZE": int, "_ROW_COUNT": int}
_STATS_FIELDS = {"_MIN_VALUES": bytes, "_MAX_VALUES": bytes}
_NON_NEGATIVE = ("_FILE_SIZE", "_ROW_COUNT", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES", "_SCHEMA_ID", "_LEVEL")
MANIFEST_LIST, MANIFEST_ENTRY, INDEX_MANIFEST_ENTRY = "manifest list", "manifest entry", "index manifest entry"


def check_record(rec: object, structure: str, name: str, index: int) -> None:
    """A manifest-like record has every field Paimon requires, with its type and a known kind.

    Raises CorruptFileError naming the file, the record and the field (a bit flip in the Avro
    schema renames a field; an unknown ``_KIND`` would otherwise drop an entry silently).
    """
    def bad(field: str, why: str) -> CorruptFileError:
        return CorruptFileError(f"{structure} {index}: field {field} {why}", file=name,
                                structure=f"{structure} {field}")

    if not isinstance(rec, dict):
        raise bad("-", "is not a record")
    required = {MANIFEST_LIST: _LIST_FIELDS, MANIFEST_ENTRY: _ENTRY_FIELDS,
                INDEX_MANIFEST_ENTRY: _INDEX_FIELDS}[structure]
    _check_fields(rec, required, bad, "")
    if structure != MANIFEST_LIST and rec["_KIND"] not in KINDS:
        raise bad("_KIND", f"is {rec['_KIND']}, not one Paimon writes (0 ADD, 1 DELETE)")
    if structure == MANIFEST_ENTRY:
        f = rec["_FILE"]
        _check_fields(f, _FILE_FIELDS, bad, "_FILE.")
        for stats in ("_KEY_STATS", "_VALUE_STATS"):
            _check_fields(f[stats], _STATS_FIELDS, bad, f"_FILE.{stats}.")
    elif structure == MANIFEST_LIST and rec.get("_PARTITION_STATS") is not None:
        _check_fields(rec["_PARTITION_STATS"], _STATS_FIELDS, bad, "_PARTITION_STATS.")


def entry_ok(rec: dict) -> bool:
    """The quick test of :func:`check_record` for a manifest entry (10,000s per plan)."""
    try:
        f = rec["_FILE"]
        k, v = f["_KEY_STATS"], f["_VALUE_STATS"]
        return (rec["_KIND"] in KINDS and type(rec["_PARTITION"]) is bytes and type(rec["_BUCKET"]) is int
                and type(rec["_TOTAL_BUCKETS"]) is int
                and type(f["_FILE_NAME"]) is str and type(f["_FILE_SIZE"]) is int and f["_FILE_SIZE"] >= 0
                and type(f["_ROW_COUNT"]) is int and f["_ROW_COUNT"] >= 0 and type(f["_MIN_KEY"]) is bytes
                and type(f["_MAX_KEY"]) is bytes and type(f["_MIN_SEQUENCE_NUMBER"]) is int
                and type(f["_MAX_SEQUENCE_NUMBER"]) is int and type(f["_SCHEMA_ID"]) is int
                and f["_SCHEMA_ID"] >= 0 and type(f["_LEVEL"]) is int and f["_LEVEL"] >= 0
                and type(k["_MIN_VALUES"]) is bytes and type(k["_MAX_VALUES"]) is bytes
                and type(v["_MIN_VALUES"]) is bytes and type(v["_MAX_VALUES"]) is bytes)
    except (KeyError, TypeError):
        return False


def _check_fields(rec: object, required: dict, bad: Callable, prefix: str) -> None:
    if not isinstance(rec, dict):
        raise bad(prefix.rstrip(".") or "-", "is not a record")
    for field, kind in required.items():
        value = rec.get(field)
        if value is None:
            raise bad(prefix + field, "is missing")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise bad(prefix + field, f"must be {kind.__name__}, not {type(value).__name__}")
        if field in _NON_NEGATIVE and value < 0:
            raise bad(prefix + field, f"must not be negative: {value}")


def manifest_file_meta(rec: dict, partition_types: Sequence[DataType]) -> ManifestFileMeta:
    stats = rec.get("_PARTITION_STATS")
    part = None
    if stats is not None:
        part = LazyStats(stats.get("_MIN_VALUES"), stats.get("_MAX_VALUES"), stats.get("_NULL_COUNTS"),
                         partition_types)
    return ManifestFileMeta(
        file_name=rec["_FILE_NAME"], file_size=rec["_FILE_SIZE"],
        num_added_files=rec["_NUM_ADDED_FILES"], num_deleted_files=rec["_NUM_DELETED_FILES"],
        partition_stats=part, schema_id=rec["_SCHEMA_ID"],
        min_bucket=rec.get("_MIN_BUCKET"), max_bucket=rec.get("_MAX_BUCKET"),
        min_level=rec.get("_MIN_LEVEL"), max_level=rec.get("_MAX_LEVEL"),
        min_row_id=rec.get("_MIN_ROW_ID"), max_row_id=rec.get("_MAX_ROW_ID"))



_EMPTY_ROW_LEN = 12  # arity 0: 4-byte arity + 8-byte null bitset
EMPTY_STATS = SimpleStats((), (), ())


class StatsTypes:
    """Per-table memo of the field types stats decode with, one list per layout, worked out on
    first use (a schema id never changes, so neither do the types of its layouts)."""

    def __init__(self, key_types: Callable[[int], Sequence[DataType]],
                 value_types: Callable[[int, tuple | None, tuple | None], Sequence[DataType]]):
        self._key_types, self._value_types = key_types, value_types
        self._keys: dict = {}
        self._values: dict = {}

    def key(self, schema_id: int) -> Callable[[], Sequence[DataType]]:
        fn = self._keys.get(schema_id)
        if fn is None:
            fn = self._keys[schema_id] = _once(lambda: self._key_types(schema_id))
        return fn

    def value(self, schema_id: int, cols: tuple | None, write_cols: tuple | None) -> Callable:
        k = (schema_id, cols, write_cols)
        fn = self._values.get(k)
        if fn is None:
            fn = self._values[k] = _once(lambda: self._value_types(schema_id, cols, write_cols))
        return fn


def _once(build: Callable[[], Sequence[DataType]]) -> Callable[[], tuple[DataType, ...]]:
    """``build`` called on the first call only; later calls return its result (as a tuple).
    A call that raises is not remembered (the next one tries again)."""
    memo: list[tuple[DataType, ...]] = []

    def types() -> tuple[DataType, ...]:
        if not memo:
            memo.append(tuple(build()))
        return memo[0]

    return types


def _stats(rec: dict, types: Callable) -> SimpleStats:
    lo = rec["_MIN_VALUES"]
    nulls = rec.get("_NULL_COUNTS")
    if not nulls and len(lo) <= _EMPTY_ROW_LEN:
        return EMPTY_STATS
    stats = _new(LazyStats)  # what LazyStats.__init__ does, minus the call overhead
    _setattr(stats, "__dict__", {"_raw": (lo, rec["_MAX_VALUES"], nulls), "_types": types,
                                 "_decoded": None})
    return stats


def file_stats(rec: dict, types: Callable[[], Sequence[DataType]]) -> SimpleStats:
    """A ``_KEY_STATS`` / ``_VALUE_STATS`` record as :class:`SimpleStats`, decoded on first use
    (``types``: :meth:`StatsTypes.key` or :meth:`StatsTypes.value` of its file)."""
    return _stats(rec, types)


def lazy_key(raw: bytes, types: Callable[[], Sequence[DataType]]) -> Sequence:
    """A ``_MIN_KEY`` / ``_MAX_KEY`` BinaryRow as the sequence of its values, decoded on first use."""
    return _LazyKey(raw, types)


def data_file_meta(f: dict, types: StatsTypes) -> DataFileMeta:
    """A ``_FILE`` record as :class:`DataFileMeta`; stats and keys stay bytes until read.

    Runs once per manifest entry (10,000s per plan), so it fills the frozen instance's
    ``__dict__`` in one go instead of going through the dataclass ``__init__``.
    """
    get = f.get
    schema_id = f["_SCHEMA_ID"]
    cols = get("_VALUE_STATS_COLS")
    if cols is not None:
        cols = tuple(cols)
    write_cols = get("_WRITE_COLS")
    if write_cols is not None:
        write_cols = tuple(write_cols)
    created = get("_CREATION_TIME")
    if created is not None and getattr(created, "tzinfo", None) is not None:
        created = created.replace(tzinfo=None)
    min_key = f["_MIN_KEY"]
    max_key = f["_MAX_KEY"]
    key_stats = f["_KEY_STATS"]
    if len(min_key) <= _EMPTY_ROW_LEN and len(max_key) <= _EMPTY_ROW_LEN:
        min_key = max_key = ()
        if len(key_stats["_MIN_VALUES"]) <= _EMPTY_ROW_LEN and not key_stats.get("_NULL_COUNTS"):
            key_stats = EMPTY_STATS
        else:
            key_stats = _stats(key_stats, types.key(schema_id))
    else:
        kt = types.key(schema_id)
        min_key, max_key = _LazyKey(min_key, kt), _LazyKey(max_key, kt)
        key_stats = _stats(key_stats, kt)
    extra = get("_EXTRA_FILES")
    meta = _new(DataFileMeta)
    _setattr(meta, "__dict__", {
        "file_name": f["_FILE_NAME"], "file_size": f["_FILE_SIZE"], "row_count": f["_ROW_COUNT"],
        "min_key": min_key, "max_key": max_key, "key_stats": key_stats,
        "value_stats": _stats(f["_VALUE_STATS"], types.value(schema_id, cols, write_cols)),
        "min_sequence_number": f["_MIN_SEQUENCE_NUMBER"],
        "max_sequence_number": f["_MAX_SEQUENCE_NUMBER"],
        "schema_id": schema_id, "level": f["_LEVEL"], "extra_files": tuple(extra) if extra else (),
        "creation_time": created, "delete_row_count": get("_DELETE_ROW_COUNT"),
        "embedded_index": get("_EMBEDDED_FILE_INDEX"), "file_source": get("_FILE_SOURCE"),
        "value_stats_cols": cols, "external_path": get("_EXTERNAL_PATH"),
        "first_row_id": get("_FIRST_ROW_ID"), "write_cols": write_cols})
    return meta


class _FailingTypes:
    """Field types that could not be resolved when lazy stats were pickled: raises the same error
    where the stats are decoded, as in the process that planned them."""

    def __init__(self, exc: IndexCoreError):
        self.message, self.file, self.structure = exc.message, exc.file, exc.structure

    def __call__(self):
        raise IndexCoreError(self.message, file=self.file, structure=self.structure)


def _resolved(types) -> tuple | _FailingTypes:
    """Lazy field types (a memo of the table) as a picklable tuple."""
    try:
        return tuple(types() if callable(types) else types)
    except IndexCoreError as exc:
        return _FailingTypes(exc)


class _LazyKey(Sequence):
    """min/max key of a PK data file: a sequence decoded from BinaryRow bytes on first use."""

    __slots__ = ("raw", "_types", "_values")

    def __init__(self, raw: bytes | None, types: Callable[[], Sequence[DataType]]):
        self.raw = raw
        self._types = types
        self._values: tuple | None = None

    def __reduce__(self):
        """Pickled (for a Spark task) as its raw bytes and resolved key types, still undecoded."""
        return _LazyKey, (self.raw, _resolved(self._types))

    @property
    def values(self) -> tuple:
        if self._values is None:
            if binary_row_arity(self.raw) == 0:
                self._values = ()
            else:
                types = self._types
                types = list(types() if callable(types) else types)[:binary_row_arity(self.raw)]
                self._values = decode_binary_row(self.raw, types, "data file key")
        return self._values

    def __iter__(self):
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, item):
        return self.values[item]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _LazyKey | tuple | list):
            return self.values == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.values)

    def __repr__(self) -> str:
        return repr(self.values)


def index_manifest_entry(rec: dict, partition: tuple) -> IndexManifestEntry:
    ranges = rec.get("_DELETIONS_VECTORS_RANGES")
    dv = None
    if ranges is not None:
        dv = tuple(DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY"))
                   for r in ranges if r is not None)
    meta = IndexFileMeta(
        index_type=rec["_INDEX_TYPE"], file_name=rec["_FILE_NAME"], file_size=rec["_FILE_SIZE"],
        row_count=rec["_ROW_COUNT"], dv_ranges=dv, external_path=rec.get("_EXTERNAL_PATH"),
        global_index_meta=global_index_meta(rec.get("_GLOBAL_INDEX")))
    return IndexManifestEntry(KINDS.get(rec["_KIND"], str(rec["_KIND"])), partition, rec["_BUCKET"], meta)


def global_index_meta(rec: dict | None) -> GlobalIndexMeta | None:
    """The ``_GLOBAL_INDEX`` record (None for DV and hash index entries)."""
    if rec is None:
        return None
    extra = rec.get("_EXTRA_FIELD_IDS")
    return GlobalIndexMeta(rec["_ROW_RANGE_START"], rec["_ROW_RANGE_END"], rec["_INDEX_FIELD_ID"],
                           tuple(extra) if extra is not None else None, rec.get("_INDEX_META"),
                           rec.get("_SOURCE_META"))
