"""``$files``' ``file_format``: the text after each name's last dot, lower-cased, found by one suffix
test per distinct extension (:func:`indexcore.views.system._file_format`), not a regex per name.

Truth by construction: names made here with known extensions (few and many distinct, upper case,
none, a trailing dot, a newline, non-ASCII, nulls), judged by the text after the last dot as
Paimon's ``DataFilePathFactory.formatIdentifier`` takes it; and on every table of the sample, the
conformance warehouses and the 10k bench table, each file's ``DataFileMeta.file_format`` (the
object model's, one name at a time)."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from indexcore.errors import IndexCoreError
from indexcore.views import view
from indexcore.views.system import _FORMAT_PASSES, _file_format, _file_format_regex
from indexcore.warehouse import Warehouse

ROOT = Path(__file__).resolve().parent.parent
ODD = ["a.b.c", "noext", "x.", ".hidden", "Ä.ÄÖ", "a.PaRqUeT", "", ".", "a..b", "dir.x/file", "é.é",
       "a.1234567", "a.12345678", "a\n.b", "a.b\nc", "d.ORC", "d.orc", None]


def _truth(name: str | None) -> str | None:
    """What Paimon's formatIdentifier gives (the text after the last dot), lower-cased; "" without a dot."""
    if name is None:
        return None
    _head, dot, ext = name.rpartition(".")
    return ext.lower() if dot else ""


def test_made_names_give_the_text_after_their_last_dot():
    rng = random.Random(29)
    pool = ODD + [f"f{i}.E{i}" for i in range(3 * _FORMAT_PASSES)]  # more extensions than suffix passes
    for _ in range(400):
        names = [rng.choice(pool) for _ in range(rng.randint(0, 40))]
        array = pa.array(names, pa.string())
        want = [_truth(n) for n in names]
        assert _file_format(array).to_pylist() == want, names
        assert _file_format_regex(array).to_pylist() == want, names
        if len(names) > 3:  # an array that is a slice of a larger one (offsets not from 0)
            assert _file_format(array.slice(2)).to_pylist() == want[2:]
            assert _file_format(pa.chunked_array([array.slice(0, 2), array.slice(2)])).to_pylist() == want


def test_a_million_names_of_two_formats_take_two_suffix_tests():
    names = pa.array([f"data-{i:08x}-{i}.{'ORC' if i % 50 == 0 else 'parquet'}" for i in range(1_000_000)])
    got = _file_format(names)
    assert got.type == pa.string() and len(got) == len(names)
    assert got.value_counts().to_pylist() == [{"values": "orc", "counts": 20_000},
                                              {"values": "parquet", "counts": 980_000}]
    assert got.equals(_file_format_regex(names))


def _roots() -> list[Path]:
    return [ROOT / "sample_warehouse",
            *(ROOT.parent / "shared" / "conformance" / "warehouses" / f for f in ("parquet", "orc", "mixed")),
            Path("/tmp/indexcore-bench/large-10000")]


def test_files_view_format_is_each_files_own():
    checked = 0
    for root in _roots():
        if not root.is_dir():
            continue
        wh = Warehouse(str(root))
        for name in wh.tables():
            try:
                table = wh.table(name)
                listing = view(table, "files", stats=False)
                live = table.plan().files
            except IndexCoreError:  # a table that cannot be read has no listing to compare
                continue
            want = {lf.path: lf.file.file_format for lf in live}
            got = dict(zip(listing["file_path"].to_pylist(), listing["file_format"].to_pylist(), strict=True))
            assert got == want, name
            checked += bool(want)
    if not checked:
        pytest.skip("no warehouse with files found")
    assert checked >= 5
