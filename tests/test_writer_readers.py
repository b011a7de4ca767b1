"""A writer's own reader (``FileIndexWriter.reader()``, built from its parts, no bytes parsed)
answers every predicate exactly as a reader of its serialized bytes does, and building it
changes no byte: range-bitmap, BSI and bitmap over random columns with nulls (the bulk tests' cases:
every type, chunk sizes that split the dictionary), literals present, absent, between and
beyond the stored keys. The blob reader is the truth: it is checked against Paimon's bytes
(tests/test_range_bitmap.py, tests/test_bsi.py, the golden vectors)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from test_writer_bulk import _SETTINGS, _case, arrow_column

from indexcore.formats.base import REMAIN, BitmapResult
from indexcore.formats.registry import new_writer, open_reader
from indexcore.io import BytesSource
from indexcore.types import Timestamp
from indexcore.write.datafile import internal_values


def _answer(result):
    if result is REMAIN or not isinstance(result, BitmapResult):
        return ("remain", result.remain())
    return ("rows", list(result.bitmap))


_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "DATE": 32, "TIME": 32, "BIGINT": 64}


def _literals(values: list, dtype) -> list:
    """Stored values, their neighbours and values beyond them (None too)."""
    present = [v for v in values if v is not None]
    out: list = [None] + present[:8]
    r = dtype.root
    for v in present[:4]:
        if isinstance(v, bool):
            out.append(not v)
        elif isinstance(v, int):  # within the type: a literal out of its range is refused before any index
            bits = _INT_BITS.get(r, 64)
            out += [n for n in (v - 1, v + 1) if -(1 << (bits - 1)) <= n < 1 << (bits - 1)]
        elif isinstance(v, float):
            out += [v / 2 if math.isfinite(v) else 0.0, -v]
        elif isinstance(v, Timestamp):
            out += [Timestamp(v.millis - 1, v.nanos), Timestamp(v.millis + 1, v.nanos)]
        elif isinstance(v, str):
            out += [v + "a", v[:-1]]
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME"):
        out += [0, -100, 100, -9, 9]
    elif r in ("FLOAT", "DOUBLE"):
        out += [0.0, -0.0, math.nan, math.inf, -math.inf, 1e30]
    elif r == "BOOLEAN":
        out += [True, False]
    elif r in ("CHAR", "VARCHAR"):
        out += ["", "a", "zz", "é"]
    elif r.startswith("TIMESTAMP"):
        out += [Timestamp(0, 0), Timestamp(-(1 << 40), 0), Timestamp(1 << 40, 0)]
    return out


def _visits(reader, literals: list) -> list:
    """Every visit a workload's predicates make, on every literal and pair of literals."""
    out = [reader.visit_is_null(), reader.visit_is_not_null()]
    for lit in literals:
        out += [reader.visit_equal(lit), reader.visit_not_equal(lit), reader.visit_less_than(lit),
                reader.visit_less_or_equal(lit), reader.visit_greater_than(lit), reader.visit_greater_or_equal(lit)]
    for lo, hi in zip(literals, literals[1:] + literals[:1], strict=True):
        out += [reader.visit_between(lo, hi), reader.visit_in([lo, hi]), reader.visit_not_in([lo, hi])]
    return [_answer(r) for r in out]


def _check(index_type: str, case) -> None:
    dtype, options, rows, _ = case
    column = arrow_column(rows, dtype)
    values = internal_values(column, dtype)
    fresh = new_writer(index_type, dtype, options)
    fresh.write_batch(values)
    expected = fresh.serialized_bytes()
    writer = new_writer(index_type, dtype, options)
    if writer.accepts_arrow(column.type):
        writer.write_arrow(column)
    else:
        writer.write_batch(values)
    own = writer.reader()  # built before the bytes: the same bytes after it
    assert writer.serialized_bytes() == expected
    blob = open_reader(index_type, dtype, BytesSource(expected, name="blob"), dict(options))
    literals = _literals(values, dtype)
    assert _visits(own, literals) == _visits(blob, literals)
    assert own.row_count == blob.row_count
    if index_type == "range-bitmap":
        for k in (1, 3, len(values) + 1):
            for ascending in (True, False):
                for nulls_first in (True, False):
                    for strict in (True, False):
                        assert _answer(own.visit_top_n(k, ascending, nulls_first, strict)) == \
                            _answer(blob.visit_top_n(k, ascending, nulls_first, strict))


@_SETTINGS
@given(_case("range-bitmap"))
def test_range_bitmap_writer_reader(case) -> None:
    _check("range-bitmap", case)


@_SETTINGS
@given(_case("bsi"))
def test_bsi_writer_reader(case) -> None:
    _check("bsi", case)


@given(st.lists(st.one_of(st.none(), st.integers(-3000, 3000)), min_size=0, max_size=400),
       st.sampled_from([{}, {"chunk-size": "16b"}, {"chunk-size": "0b"}]))
@_SETTINGS
def test_range_bitmap_many_keys_many_chunks(values, options) -> None:
    """Hundreds of keys in many chunks: ``find`` on the writer's sorted keys lands where the
    chunked dictionary's search does, present or absent, at every chunk boundary."""
    from indexcore.types import parse_type

    dtype = parse_type("INT")
    _check("range-bitmap", (dtype, options, values, (0, 0)))


@_SETTINGS
@given(_case("bitmap"))
def test_bitmap_writer_reader(case) -> None:
    """Both versions, blocks split small, strings, floats (NaN, -0.0), booleans, timestamps."""
    _check("bitmap", case)


def test_bitmap_at_the_edge_of_its_type() -> None:
    """The largest and smallest BIGINT and INT stored: their neighbours beyond the type are not
    literals (SQL refuses them), the ones inside are asked (hypothesis found a max+1 literal)."""
    from indexcore.types import parse_type

    for name, bits in (("BIGINT", 64), ("INT", 32)):
        top, bottom = (1 << (bits - 1)) - 1, -(1 << (bits - 1))
        _check("bitmap", (parse_type(name), {}, [top, bottom, None, 0], (0, 0)))


def test_bloom_writer_has_no_own_reader() -> None:
    """A bloom filter's answers are its bits: its bytes are read."""
    from indexcore.types import parse_type

    w = new_writer("bloom-filter", parse_type("INT"), {"items": "10"})
    w.write_batch([1, 2, None])
    assert w.reader() is None
