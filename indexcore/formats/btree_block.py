"""The blocks of Paimon's SST files (BTree global index), decoded with numpy.

A block is ``entries | trailer-of-block``: each entry ``var(len key) key var(len value) value``,
then either ``record size (4) | 0`` (ALIGNED: every entry has the same size) or
``position (4) x n | n (4) | 1`` (UNALIGNED). :func:`entry_starts` reads where each entry starts
from that trailer, so a lookup binary searches over the entries decoding only the keys it
compares; :func:`block_row_ids` decodes the row ids of a run of data entries (each value
``var(count) var(row id) x count``) in one numpy pass, checking every entry as it goes.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

from indexcore.errors import CorruptFileError
from indexcore.formats.global_index import read_var
from indexcore.types import DataType

ALIGNED, UNALIGNED = 0, 1


def entry_starts(block: bytes, name: str, structure: str, offset: int) -> np.ndarray:
    """Where each entry of an uncompressed SST block starts, and (last item) where the entries end."""
    if len(block) < 5:
        raise CorruptFileError("block too short for its layout byte", file=name, structure=structure,
                               offset=offset)
    kind, number = block[-1], int.from_bytes(block[-5:-1], "little")
    if kind == ALIGNED:
        end = len(block) - 5
        if number <= 0 or end % number:
            raise CorruptFileError(f"aligned record size {number} does not divide {end} bytes", file=name,
                                   structure=structure, offset=offset + end)
        return np.arange(0, end + 1, number, dtype=np.int64)
    if kind != UNALIGNED:
        raise CorruptFileError(f"unknown block layout byte {kind}", file=name, structure=structure,
                               offset=offset + len(block) - 1)
    end = len(block) - 5 - 4 * number
    if end < 0:
        raise CorruptFileError(f"{number} record positions do not fit the block", file=name, structure=structure,
                               offset=offset)
    starts = np.empty(number + 1, np.int64)
    starts[:number] = np.frombuffer(block, "<u4", number, end)
    starts[number] = end
    if number and (starts[0] != 0 or (np.diff(starts) <= 0).any()):
        bad = 0 if starts[0] != 0 else int(np.flatnonzero(np.diff(starts) <= 0)[0]) + 1
        raise CorruptFileError(f"record position {bad} ({int(starts[bad])}) is out of order or past the "
                               f"entries ({end} bytes)", file=name, structure=structure, offset=offset + end + 4 * bad)
    if not number and end:
        raise CorruptFileError(f"block says 0 records, holds {end} bytes", file=name, structure=structure,
                               offset=offset)
    return starts


def parse_block(block: bytes, name: str, structure: str, offset: int) -> list[tuple[bytes, bytes]]:
    """Every ``(key, value)`` of one uncompressed SST block, in order."""
    starts = entry_starts(block, name, structure, offset).tolist()
    entries = []
    for pos, nxt in zip(starts, starts[1:], strict=False):
        n, pos = read_var(block, pos, name, structure, offset)
        key, pos = block[pos:pos + n], pos + n
        n, pos = read_var(block, pos, name, structure, offset)
        value, pos = block[pos:pos + n], pos + n
        if pos != nxt:
            raise CorruptFileError(f"entry ends at {pos}, the next starts at {nxt}", file=name, structure=structure,
                                   offset=offset + min(pos, nxt))
        entries.append((bytes(key), bytes(value)))
    return entries


class DataBlock(NamedTuple):
    """One uncompressed data block, where each entry starts (the last item: where they end), its
    offset in the file (for errors) and whether its keys are in order (binary search needs it;
    some test writers wrote keys out of order, and those blocks are scanned whole)."""

    data: bytes
    starts: np.ndarray
    offset: int
    ordered: bool = True

    @property
    def size(self) -> int:
        return len(self.starts) - 1


def _vars_at(buf: np.ndarray, pos: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The var ints starting at each of ``pos`` and the positions after them; None when one runs
    past ``end`` or past 63 bits."""
    if len(pos) and int(pos.max()) >= end:
        return None
    first = buf[pos]
    if not (first & 0x80).any():  # the usual case: every one fits one byte
        return first.astype(np.int64), pos + 1
    value, nxt = np.zeros(len(pos), np.int64), pos.copy()
    live = np.ones(len(pos), np.bool_)
    for shift in range(0, 63, 7):
        at = nxt[live]
        if int(at.max()) >= end:
            return None
        b = buf[at].astype(np.int64)
        value[live] |= (b & 0x7F) << shift
        nxt[live] = at + 1
        live[live] = b >= 0x80
        if not live.any():
            return value, nxt
    return None


_FIXED_KEYS = {"TINYINT": "<i1", "SMALLINT": "<i2", "INT": "<i4", "BIGINT": "<i8", "DATE": "<i4", "TIME": "<i4"}
_BYTE_ORDERED = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
#: Key bytes compared at once when checking byte-ordered keys (longer ties go to Python).
_PREFIX = 64


def keys_in_order(data: bytes, starts: np.ndarray, dtype: DataType, codec: Any) -> bool:
    """Whether a block's keys never decrease, checked on the key bytes with numpy where the type
    allows (fixed-width numbers, floats without NaN, byte-ordered strings), else key by key."""
    n = len(starts) - 1
    if n < 2:
        return True
    buf = np.frombuffer(data, np.uint8)
    found = _vars_at(buf, starts[:-1], int(starts[-1]))
    if found is None or (found[0] + found[1] > starts[1:]).any():
        return False  # malformed: the whole-block path reports it
    klen, kstart = found
    root = dtype.root
    fmt = _FIXED_KEYS.get(root) or ({"FLOAT": "<i4", "DOUBLE": "<i8"}.get(root))
    if root == "DECIMAL" and (dtype.precision or 10) <= 18:
        fmt = "<i8"
    if fmt is not None:
        width = int(fmt[2])
        if (klen != width).any():
            return False
        keys = buf[kstart[:, None] + np.arange(width)].copy().view(fmt).ravel()
        if root in ("FLOAT", "DOUBLE"):
            bits = 8 * width - 1
            magnitude = keys & ((1 << bits) - 1)
            if (magnitude > (0x7F800000 if width == 4 else 0x7FF0000000000000)).any():
                return False  # NaN: Java's Float.compare order, key by key
            keys = keys ^ ((keys >> bits) & ((1 << bits) - 1))  # IEEE bits -> a signed order
        return bool((keys[1:] >= keys[:-1]).all())
    if root in _BYTE_ORDERED:
        width = max(1, min(int(klen.max()), _PREFIX))
        cols = np.arange(width)
        at = np.minimum(kstart[:, None] + cols, len(buf) - 1)
        prefix = np.where(cols < klen[:, None], buf[at], 0).astype(np.int16)
        differ = prefix[1:] != prefix[:-1]
        first = differ.argmax(axis=1)
        rows = np.arange(n - 1)
        if (differ[rows, first] & (prefix[1:][rows, first] < prefix[:-1][rows, first])).any():
            return False
        tied = np.flatnonzero(~differ.any(axis=1))
        short = (klen[tied] <= width) & (klen[tied + 1] <= width)
        if (klen[tied[short]] > klen[tied[short] + 1]).any():
            return False
        return all(data[kstart[i]:kstart[i] + klen[i]] <= data[kstart[i + 1]:kstart[i + 1] + klen[i + 1]]
                   for i in tied[~short].tolist())
    try:
        orders = [codec.order(codec.decode(data[a:a + b])) for a, b in zip(kstart.tolist(), klen.tolist(), strict=True)]
    except (struct.error, ValueError, ArithmeticError):  # a key that does not decode is reported where it is used
        return False
    return all(x <= y for x, y in zip(orders, orders[1:], strict=False))


def _var_stream(stream: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every var int of a byte stream made only of var ints, and where each one ends.

    Var ints are low 7 bits first, so each is rebuilt from its last byte down (Horner), one
    numpy pass per byte of the longest one."""
    last = np.flatnonzero(stream < 0x80)
    if len(last) == len(stream):
        return stream.astype(np.uint64), last
    lengths = np.diff(last, prepend=-1)
    longest = int(lengths.max(initial=0))
    if longest > 9:
        raise ValueError("overlong var-length int")
    value = (stream[last] & 0x7F).astype(np.uint64)
    for k in range(1, longest):
        low = (stream[np.maximum(last - k, 0)] & 0x7F).astype(np.uint64)
        value = np.where(lengths > k, (value << np.uint64(7)) | low, value)
    return value, last


#: Up to this many entries are decoded one by one, not with numpy.
_FEW = 4


def _entry_row_ids(block: DataBlock, i: int, name: str) -> list[int]:
    """The row ids of entry ``i`` (checked to fill the entry exactly)."""
    data, structure = block.data, "btree data block"
    pos, nxt = int(block.starts[i]), int(block.starts[i + 1])
    n, pos = read_var(data, pos, name, structure, block.offset)
    n, pos = read_var(data, pos + n, name, structure, block.offset)
    end = pos + n
    if end != nxt or not n:
        raise CorruptFileError(f"entry {i} does not end where the next starts", file=name, structure=structure,
                               offset=block.offset + int(block.starts[i]))
    count, pos = read_var(data, pos, name, structure, block.offset)
    ids = []
    for _ in range(count):
        rid, pos = read_var(data, pos, name, structure, block.offset)
        ids.append(rid)
    if pos != end:
        raise CorruptFileError(f"entry {i}: row id count does not match its row ids", file=name,
                               structure=structure, offset=block.offset + int(block.starts[i]))
    return ids


def block_row_ids(block: DataBlock, a: int, b: int, name: str = "<memory>",
                  select: np.ndarray | None = None) -> np.ndarray:
    """The row ids of entries ``a`` up to ``b`` of a data block (those where ``select`` is true,
    when given), decoded in one numpy pass.

    Each entry is ``var(len key) key var(len value) var(count) var(row id) x count``; the entry
    must end where the next starts and its count must equal the var ints that follow it.
    """
    structure = "btree data block"
    if a >= b:
        return np.empty(0, np.uint64)
    starts = block.starts
    if b - a <= _FEW and select is None:  # a point lookup: numpy's per-call cost would dominate
        return np.array([rid for i in range(a, b) for rid in _entry_row_ids(block, i, name)], np.uint64)
    buf = np.frombuffer(block.data, np.uint8)
    end = int(starts[-1])
    found = _vars_at(buf, starts[a:b], end)
    if found is not None:
        klen, after = found
        found = _vars_at(buf, after + klen, end)
    if found is None:
        raise CorruptFileError("truncated or overlong var-length int", file=name, structure=structure,
                               offset=block.offset + int(starts[a]))
    vlen, vstart = found
    bad = np.flatnonzero((vstart + vlen != starts[a + 1:b + 1]) | (vlen == 0))
    if len(bad):
        i = int(bad[0])
        raise CorruptFileError(f"entry {a + i} does not end where the next starts", file=name, structure=structure,
                               offset=block.offset + int(starts[a + i]))
    # the values' bytes, gathered: value i's bytes are stream[value_start[i]:value_start[i + 1]]
    value_start = np.zeros(b - a + 1, np.int64)
    np.cumsum(vlen, out=value_start[1:])
    total = int(value_start[-1])
    stream = buf[np.repeat(vstart - value_start[:-1], vlen) + np.arange(total)]
    try:
        ints, last = _var_stream(stream)
    except ValueError as exc:
        raise CorruptFileError(str(exc), file=name, structure=structure, offset=block.offset + int(starts[a])) from None
    # each value is var(count) then count row ids: the counts say where each value's var ints
    # begin; they must end exactly at the value's last byte
    per_value = np.zeros(b - a + 1, np.int64)
    counts = _vars_at(stream, value_start[:-1], total)
    if counts is not None:
        np.cumsum(counts[0] + 1, out=per_value[1:])
    if counts is None or per_value[-1] != len(last) or (last[per_value[1:] - 1] != value_start[1:] - 1).any():
        i = 0 if counts is None or per_value[-1] < 1 else int(np.argmax(
            (per_value[1:] > len(last)) | (last[np.minimum(per_value[1:], len(last)) - 1] != value_start[1:] - 1)))
        raise CorruptFileError(f"entry {a + i}: row id count does not match its row ids", file=name,
                               structure=structure, offset=block.offset + int(starts[a + i]))
    count_at = per_value[:-1]
    per_value = np.diff(per_value)
    keep = np.ones(len(ints), np.bool_)
    keep[count_at] = False
    if select is not None:
        keep &= np.repeat(select, per_value)
    return ints[keep]


def block_keys_and_counts(block: DataBlock, name: str = "<memory>") -> tuple[list[bytes], np.ndarray]:
    """Every entry's key bytes and row-id count (the first var int of its value), found with numpy
    from the entry starts; the row ids themselves are not decoded."""
    structure = "btree data block"
    if not block.size:
        return [], np.empty(0, np.int64)
    buf = np.frombuffer(block.data, np.uint8)
    starts = block.starts
    end = int(starts[-1])
    found = _vars_at(buf, starts[:-1], end)
    counts = None
    if found is not None:
        klen, kstart = found
        found = _vars_at(buf, kstart + klen, end)
        if found is not None and not (found[0] + found[1] != starts[1:]).any():
            counts = _vars_at(buf, found[1], end)
    if counts is None:
        raise CorruptFileError("entries do not end where the next ones start", file=name, structure=structure,
                               offset=block.offset)
    data = block.data
    keys = [data[a:a + n] for a, n in zip(kstart.tolist(), klen.tolist(), strict=True)]
    return keys, counts[0]
