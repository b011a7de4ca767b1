"""BTree global index lookups against the floor of reading the blocks they need.

Writes a BTree global index (our writer, byte-compatible with Paimon's) over 200,000 rows of
an INT column with ~50,000 distinct keys into a temp file, then times, on a fresh reader each
time (cold) and on one open reader (warm):
  floor: reading exactly the bytes the lookup needs (footer, index block, the data blocks
         holding the keys) through the same ByteSource, without decoding anything;
  ours:  ``BTreeIndexReader`` opening the file and answering the leaf (decode, CRC, row ids).
for a point lookup (``c = k``) and a range lookup (``c BETWEEN lo AND hi``, ~5% of the keys).
Prints the ratios ours / floor.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexcore.expr import Leaf  # noqa: E402
from indexcore.formats.btree_index import FOOTER_LENGTH, TRAILER_LENGTH, BTreeIndexReader, write_btree_index  # noqa: E402
from indexcore.io import open_file  # noqa: E402
from indexcore.types import parse_type  # noqa: E402

ROWS, KEYS, REPEAT = 200_000, 50_000, 30
INT = parse_type("INT")


def best(fn, repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def blocks_needed(reader: BTreeIndexReader, lo: int, hi: int) -> list[tuple[int, int]]:
    """The data block handles whose key range meets [lo, hi] (what the lookup must read)."""
    out, prev = [], None
    for (off, size), last in zip(reader._handles, reader._last_orders, strict=True):
        if last >= lo and (prev is None or prev <= hi):
            out.append((off, size))
        prev = last
    return out


def main() -> None:
    rng = random.Random(7)
    pairs = [(rng.randrange(KEYS), rid) for rid in range(ROWS)]
    data, _ = write_btree_index(INT, pairs)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "btree-global-index.index")
        Path(path).write_bytes(data)
        probe = BTreeIndexReader(open_file(path), INT)
        point, lo, hi = 12_345, 20_000, 20_000 + KEYS // 20
        print(f"BTree global index: {ROWS:,} rows, {KEYS:,} keys, {len(data):,} bytes, "
              f"{probe.block_count} data blocks")
        for name, leaf, (a, b) in (("point", Leaf("equal", "c", (point,)), (point, point)),
                                   ("range", Leaf("between", "c", (lo, hi)), (lo, hi))):
            handles = blocks_needed(probe, a, b)
            footer = probe.footer

            def floor(handles=handles, footer=footer) -> None:
                src = open_file(path)
                src.read(src.size - FOOTER_LENGTH, FOOTER_LENGTH)
                src.read(footer.index_offset, footer.index_size + TRAILER_LENGTH)
                for off, size in handles:
                    src.read(off, size + TRAILER_LENGTH)

            def cold(leaf=leaf) -> None:
                BTreeIndexReader(open_file(path), INT).visit(leaf)

            warm_reader = BTreeIndexReader(open_file(path), INT)

            def warm(leaf=leaf, reader=warm_reader) -> None:
                reader._blocks.clear()  # re-read and decode the data blocks, keep the open index block
                reader.visit(leaf)

            want = {rid for key, rid in pairs if a <= key <= b}
            assert set(probe.visit(leaf)) == want
            f, c, w = best(floor), best(cold), best(warm)
            print(f"{name:5s}: {len(want):6,} rows from {len(handles)} block(s); floor {f * 1e3:.3f} ms, "
                  f"cold {c * 1e3:.3f} ms ({c / f:.1f}x floor), warm {w * 1e3:.3f} ms ({w / f:.1f}x floor)")


if __name__ == "__main__":
    main()
