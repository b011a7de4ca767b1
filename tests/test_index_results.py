"""Explain's index results as columns (indexcore.scan.index_results): every file's result reads
back equal to the one set, whatever its kind and row positions; the frame's texts, the skips and
the Arrow form Spark ships agree with the objects; the memory is what the columns hold."""

import pickle
import random

from pyroaring import BitMap

from indexcore.formats.base import REMAIN, SKIP, BitmapResult
from indexcore.scan.index_results import BITMAP, IndexResults, result_kind
from indexcore.scan.records import frame_text


def _results(seed: int, n: int, wide: bool) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.randrange(5)
        if kind == 0:
            out.append(None)
        elif kind == 1:
            out.append(REMAIN)
        elif kind == 2:
            out.append(SKIP)
        else:
            top = 2**32 - 1 if wide and rng.random() < 0.1 else 1000
            out.append(BitmapResult(BitMap(rng.randrange(top) for _ in range(rng.randrange(0 if kind == 3 else 1, 12)))))
    return out


def test_results_read_back_as_set():
    for wide in (False, True):
        given = _results(7, 3000, wide)
        got = IndexResults.of(given)
        assert list(got) == given
        assert [type(r) for r in got] == [type(r) for r in given]
        assert got[-1] == given[-1] and got[5:9] == given[5:9]
        assert got.texts().tolist() == [frame_text(r) for r in given]
        assert got.skips().tolist() == [r is not None and not r.remain() for r in given]
        assert got.sizes().tolist() == [len(r.bitmap) if isinstance(r, BitmapResult) else 0 for r in given]
        assert (got.kinds == BITMAP).tolist() == [isinstance(r, BitmapResult) for r in given]
        assert got.kinds.tolist() == [result_kind(r) for r in given]
        assert got._rows.typecode == ("I" if wide else "H")


def test_results_set_again_arrow_concat_and_pickle():
    given = _results(11, 500, False)
    got = IndexResults(len(given))
    for i in reversed(range(len(given))):  # out of order, and some set twice
        got[i] = BitmapResult(BitMap([70_000]))
        got[i] = given[i]
    assert list(got) == given
    kinds, rows = got.to_arrow()
    assert rows.type.value_type.bit_width == 32 and rows.null_count == sum(
        not isinstance(r, BitmapResult) for r in given)
    assert list(IndexResults.of_arrow(kinds, rows)) == given
    wide = _results(12, 300, True)
    joined = IndexResults.concat([IndexResults.of(given), IndexResults.of(wide), IndexResults(3)])
    assert list(joined) == given + wide + [None] * 3
    assert list(pickle.loads(pickle.dumps(joined))) == given + wide + [None] * 3
    assert list(IndexResults.concat([])) == [] and IndexResults.of(got) is got


def test_results_memory_is_the_columns():
    """20,000 bitmaps of 8 rows: 13 bytes a file and 2 a row, not an object per file."""
    given = [BitmapResult(BitMap(range(i % 50, i % 50 + 8))) for i in range(20_000)]
    got = IndexResults.of(given)
    held = got.kinds.nbytes + got._starts.nbytes + got._sizes.nbytes + got._rows.itemsize * len(got._rows)
    assert held == 20_000 * (13 + 2 * 8)
