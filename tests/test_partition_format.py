"""One partition format everywhere (:func:`indexcore.paimon.layout.format_partition`): the views,
the explain's per-file frame and CLI table, the column statistics and the Spark audit chart write
``demo.daily_events``' DATE partition the same way, ``{2024-06-01}`` (epoch day 19875 by
construction), never ``day=19875`` or ``day=2024-06-01``; an unpartitioned table's chart says so
instead of ``{}``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import indexcore
from indexcore.analysis.audit import audit_file, audit_table, health_frames
from indexcore.cli import main
from indexcore.frames import table as table_frames
from indexcore.frames import what_if
from indexcore.paimon.layout import format_partition
from indexcore.types import parse_type
from indexcore.views import view

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"


@pytest.fixture(scope="module")
def wh():
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    return indexcore.open_warehouse(str(SAMPLE))


def _day(lf) -> str:
    return "{" + (dt.date(1970, 1, 1) + dt.timedelta(days=lf.partition[0])).isoformat() + "}"


def test_format_partition_writes_paimon_cast_text():
    assert format_partition((19875, None), [parse_type("DATE"), parse_type("INT")]) == "{2024-06-01, null}"
    assert format_partition((), []) == "{}"
    assert format_partition((1e7,), [parse_type("DOUBLE")]) == "{1.0E7}"  # Java's Double.toString


def test_every_output_writes_a_partition_the_same_way(wh, capsys):
    table = wh.table("demo.daily_events")
    files = table.plan().files
    want = {lf.file.file_name: _day(lf) for lf in files}
    assert len(set(want.values())) > 1 and all(v.startswith("{2024-") for v in want.values())

    listed = view(table, "files").to_pandas()
    assert dict(zip(listed["file_name"], listed["partition"], strict=True)) == want
    explained = what_if.explain_frames(table, "country = 'US'")["files"]
    assert dict(zip(explained["file"], explained["partition"], strict=True)) == want
    stats = table_frames.file_stats_frame(table, columns=("country",))
    assert dict(zip(stats["file_name"], stats["partition"], strict=True)) == want
    assert main(["explain", str(SAMPLE), "demo.daily_events", "--where", "country = 'US'", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {Path(f["path"]).name: f["partition_text"] for f in out["files"]} == want
    assert main(["explain", str(SAMPLE), "demo.daily_events", "--where", "country = 'US'", "--format", "csv"]) == 0
    text = capsys.readouterr().out
    assert "day=" not in text and all(v in text for v in want.values())


def _audit_run(table) -> dict:
    """An audit run as the Spark page keeps it, audited in this process (the Spark job runs the same
    per-file and table checks in tasks)."""
    plan = table.plan()
    findings = [f for lf in plan.files for f in audit_file(table, lf, plan)] + audit_table(table, plan)
    result = {"table": table.name, "snapshot": plan.snapshot.id, "files_audited": len(plan.files),
              "checks_passed": sum(1 for f in findings if f.severity == "OK"),
              "findings": [f.to_dict() for f in findings if f.severity != "OK"],
              "health": {k: v.to_dict("records") for k, v in health_frames(findings).items()}}
    return {"run": 1, "job": "audit", "table": table.name, "snapshot": plan.snapshot.id, "where": None, "master": "local[1]",
            "started": "00:00:00", "seconds": 1.0, "ok": True, "error": None, "details": None, "result": result}


def _axis_labels(at) -> set[str]:
    labels = set()
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for trace in spec["data"]:
            labels |= {str(x) for x in trace.get("x", [])}
    return labels


@pytest.mark.parametrize("name", ["demo.faulty", "demo.daily_events"])
def test_spark_audit_chart_names_partitions_in_the_one_format(wh, name, monkeypatch):
    from streamlit.testing.v1 import AppTest
    from test_app import APP, _served_through_app

    _served_through_app(monkeypatch)
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    table = wh.table(name)
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["table"] = name
    at.session_state["spark_runs"] = [_audit_run(table)]
    at.switch_page("pages/spark.py").run()
    assert not at.exception, [e.value for e in at.exception]
    labels = _axis_labels(at)
    assert labels, "the audit chart is drawn"
    assert not any("{}" in x for x in labels), labels
    if table.schema().partition_keys:
        days = {_day(lf) for lf in table.plan().files}
        assert {x.split(" / ")[0] for x in labels if " / " in x or x.startswith("{")} <= days
        assert any(x.startswith(tuple(days)) for x in labels), labels
    else:
        assert any(x.startswith("(unpartitioned)") for x in labels), labels
