"""Every warehouse command on every table Paimon wrote (and on the sample): none may crash.

Each command must exit 0 with JSON, listing unreadable parts under ``problems``; ``rows``
must agree with the snapshot's record count where nothing was merged away, and
``explain --verify`` must never report a dropped matching row on sound tables.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from indexcore.cli import main
from indexcore.warehouse.catalog import Warehouse

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"


def _run(*args: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*args, "--format", "json"])
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else {}


def _tables(conformance: Path) -> list[tuple[str, str]]:
    out = []
    for root in (conformance / "warehouses" / "parquet", conformance / "warehouses" / "mixed"):
        out += [(str(root), name) for name in Warehouse(str(root)).tables()]
    if SAMPLE.is_dir():
        out += [(str(SAMPLE), name) for name in Warehouse(str(SAMPLE)).tables()]
    return out


@pytest.fixture(scope="module")
def tables(conformance) -> list[tuple[str, str]]:
    found = _tables(conformance)
    assert len(found) >= 40
    return found


def test_every_command_answers_on_every_table(tables):
    failures = []
    for root, name in tables:
        for cmd in (["tables", root], ["snapshots", root, name], ["files", root, name],
                    ["rows", root, name, "--limit", "5"], ["bucket-index", root, name]):
            code, payload = _run(*cmd)
            if code != 0 or not payload:
                failures.append((name, cmd[0], code))
    assert failures == []


def test_explain_verify_never_drops_a_matching_row(tables):
    """A predicate on the first column of each table; the faulty sample table only reports."""
    checked = 0
    for root, name in tables:
        table = Warehouse(root).table(name)
        field = table.schema().fields[0]
        if field.type.is_nested:
            continue
        code, payload = _run("explain", root, name, "--where", f"{field.name} IS NOT NULL", "--verify")
        assert code == 0, name
        assert payload["violations"] == [], name
        if name != "demo.faulty":
            for f in payload["files"]:
                assert f["matching_rows"] <= f["rows_after_dv"], (name, f["path"])
        checked += 1
    assert checked >= 40


def test_rows_match_the_snapshot_record_count_for_append_tables(tables):
    """Append tables without deletion vectors: every live row is returned."""
    checked = 0
    for root, name in tables:
        table = Warehouse(root).table(name)
        schema, snap = table.schema(), table.snapshot()
        if snap is None or schema.primary_keys or table.options.get("deletion-vectors.enabled") == "true":
            continue
        if table.options.get("scan.fallback-branch") or table.options.get("data-evolution.enabled") == "true":
            continue
        plan = table.plan()
        if plan.problems:
            continue
        code, payload = _run("rows", root, name)
        assert code == 0, name
        assert len(payload["rows"]) == sum(f.file.row_count for f in plan.files), name
        checked += 1
    assert checked >= 10


def test_as_of_time_travels_to_the_snapshot_live_then(conformance):
    """``--as-of`` picks the latest snapshot committed at or before the time, on any command."""
    root = str(conformance / "warehouses" / "parquet")
    for name in Warehouse(root).tables():
        snaps = Warehouse(root).table(name).snapshots()
        if len(snaps) >= 2 and snaps[0].time_millis < snaps[1].time_millis:
            break
    else:
        pytest.skip("no table with two snapshots at different times")
    first, second = snaps[0], snaps[1]
    code, by_id = _run("files", root, name, "--snapshot", str(first.id))
    code_t, by_time = _run("files", root, name, "--as-of", str(second.time_millis - 1))
    assert (code, code_t) == (0, 0)
    assert by_time["snapshot"] == first.id
    assert sorted(f["path"] for f in by_time["files"]) == sorted(f["path"] for f in by_id["files"])
    code, _ = _run("files", root, name, "--as-of", str(first.time_millis - 1))
    assert code == 2
    code, _ = _run("files", root, name, "--as-of", "not a time")
    assert code == 2
