"""Partition folders: written by indexcore.write, read back by our reader and by pypaimon.

Every partition key type, with ``partition.legacy-name`` true (Paimon's default: a DATE is its
epoch day) and false (cast to STRING: ``2024-01-01``), NULL and blank values in the default
partition, and strings that need Paimon's path escaping.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pytest
from test_pypaimon_interop import pypaimon_read

import indexcore
from indexcore.paimon.layout import escape_path_name, partition_text, unescape_path_name
from indexcore.paimon.options import CoreOptions, OptionError
from indexcore.types import Timestamp, parse_type
from indexcore.warehouse.data import read_table
from indexcore.write import TableWriter, make_schema

# (Paimon type, Arrow type, values of the key column incl. NULL, folder names legacy / non-legacy)
CASES = {
    "date": ("DATE", pa.date32(), [dt.date(2024, 1, 1), dt.date(1969, 12, 31), None],
             {"k=19723", "k=-1", "k=__DEFAULT_PARTITION__"},
             {"k=2024-01-01", "k=1969-12-31", "k=__DEFAULT_PARTITION__"}),
    "timestamp": ("TIMESTAMP(3)", pa.timestamp("ms"),
                  [dt.datetime(2024, 1, 1, 10, 0), dt.datetime(2024, 1, 1, 10, 0, 5, 120_000), None],
                  {"k=2024-01-01T10%3A00", "k=2024-01-01T10%3A00%3A05.120", "k=__DEFAULT_PARTITION__"},
                  {"k=2024-01-01 10%3A00%3A00.000", "k=2024-01-01 10%3A00%3A05.120", "k=__DEFAULT_PARTITION__"}),
    "decimal": ("DECIMAL(10, 2)", pa.decimal128(10, 2), [Decimal("12.50"), Decimal("-0.05"), None],
                {"k=12.50", "k=-0.05", "k=__DEFAULT_PARTITION__"},
                {"k=12.50", "k=-0.05", "k=__DEFAULT_PARTITION__"}),
    "string": ("STRING", pa.string(), ["a/b=c%d", "new york", "zürich{1}", " ", None],
               {"k=a%2Fb%3Dc%25d", "k=new york", "k=zürich%7B1%7D", "k=__DEFAULT_PARTITION__"},
               {"k=a%2Fb%3Dc%25d", "k=new york", "k=zürich%7B1%7D", "k=__DEFAULT_PARTITION__"}),
    "int": ("INT", pa.int32(), [7, -3, None], {"k=7", "k=-3", "k=__DEFAULT_PARTITION__"},
            {"k=7", "k=-3", "k=__DEFAULT_PARTITION__"}),
    "boolean": ("BOOLEAN", pa.bool_(), [True, False, None],
                {"k=true", "k=false", "k=__DEFAULT_PARTITION__"},
                {"k=true", "k=false", "k=__DEFAULT_PARTITION__"}),
}


def _write(root: str, name: str, case: str, legacy: bool) -> pa.Table:
    ptype, atype, values, _, _ = CASES[case]
    schema = make_schema([("k", ptype), ("id", "INT"), ("v", "STRING")], partition_keys=["k"],
                         options={"bucket": "-1", "partition.legacy-name": str(legacy).lower()})
    rows = pa.table({"k": pa.array([values[i % len(values)] for i in range(12)], atype),
                     "id": pa.array(range(12), pa.int32()),
                     "v": pa.array([f"v{i}" for i in range(12)])})
    writer = TableWriter.create(root, name, schema, seed=1)
    writer.write(rows)
    return rows


def _folders(root: str, name: str) -> set[str]:
    db, table = name.split(".")
    path = os.path.join(root, f"{db}.db", table)
    return {d for d in os.listdir(path) if d.startswith("k=")}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """Every case written twice (legacy-name true and false) into one warehouse."""
    root = str(tmp_path_factory.mktemp("partitions"))
    out = {}
    for case in CASES:
        for legacy in (True, False):
            name = f"p.{case}_{'legacy' if legacy else 'cast'}"
            out[name] = (case, legacy, _write(root, name, case, legacy))
    return {"root": root, "tables": out}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("legacy", [True, False])
def test_folders_follow_paimon(written, case, legacy):
    name = f"p.{case}_{'legacy' if legacy else 'cast'}"
    expected = CASES[case][3] if legacy else CASES[case][4]
    assert _folders(written["root"], name) == expected


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("legacy", [True, False])
def test_our_reader_reads_every_row_back(written, case, legacy):
    name = f"p.{case}_{'legacy' if legacy else 'cast'}"
    rows = written["tables"][name][2]
    problems: list = []
    table = indexcore.open_warehouse(written["root"]).table(name)
    got = read_table(table, problems=problems)
    assert problems == []
    expect = sorted(zip(rows.column("id").to_pylist(), rows.column("k").to_pylist(), strict=True))
    got_pairs = sorted(zip(got.column("id").to_pylist(), got.column("k").to_pylist(), strict=True))
    assert got_pairs == expect
    for lf in table.plan().files:
        assert os.path.exists(lf.path)


def test_pypaimon_reads_every_case(written):
    names = sorted(written["tables"])
    result = pypaimon_read(written["root"], names, ["id", "k"])
    for name in names:
        rows = written["tables"][name][2]
        expect = sorted([str(i), str(k)] for i, k in zip(rows.column("id").to_pylist(),
                                                          rows.column("k").to_pylist(), strict=True))
        assert result[name].get("values") == expect, (name, result[name].get("error"))


def test_partition_text_matches_paimon_casts():
    ts = parse_type("TIMESTAMP(6)")
    t = Timestamp(1_704_103_200_000, 123_000)  # 2024-01-01 10:00:00.000123
    assert partition_text(ts, t, True) == "2024-01-01T10:00:00.000123"
    assert partition_text(ts, t, False) == "2024-01-01 10:00:00.000123"
    assert partition_text(parse_type("TIMESTAMP(0)"), Timestamp(1_704_103_200_000), False) == "2024-01-01 10:00:00"
    assert partition_text(parse_type("TIME(3)"), 36_000_100, True) == "36000100"
    assert partition_text(parse_type("TIME(3)"), 36_000_100, False) == "10:00:00.1"
    assert partition_text(parse_type("DOUBLE"), 1e7, True) == "1.0E7"
    assert partition_text(parse_type("DOUBLE"), 0.5, False) == "0.5"
    assert partition_text(parse_type("FLOAT"), 0.1, True) == "0.1"
    assert partition_text(parse_type("BIGINT"), None, True) is None


def test_escaping_round_trips():
    text = "a/b=c%d\x01{x}[y]^'\"#*:?\\ ü"
    escaped = escape_path_name(text)
    assert "/" not in escaped and "=" not in escaped and " ü" in escaped
    assert unescape_path_name(escaped) == text


def test_malformed_options_are_reported_and_refused(tmp_path):
    core = CoreOptions.parse({"bucket": "four", "partition.legacy-name": "yes"})
    assert core.bucket == -1 and core.partition_legacy_name is True
    assert [k for k, _ in core.problems] == ["bucket", "partition.legacy-name"]
    schema = make_schema([("a", "INT")], options={"bucket": "four"})
    with pytest.raises(OptionError, match="bucket"):
        TableWriter.create(str(tmp_path), "d.t", schema)
    assert not os.path.exists(tmp_path / "d.db")
