"""AppTest of the Spark page on the sample warehouse: errors in plain sight, false positives
blamed only on an index that could have skipped the file (issue 14)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from advise_json import without_seconds
from test_app import APP, _served_through_app
from test_page_range import sample  # noqa: F401 - the sample warehouse

from indexcore.frames.text import md

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def workers_import_this_tree(monkeypatch):
    """The sample warehouse served through app.py; Spark workers import this checkout's code."""
    _served_through_app(monkeypatch)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def _needs_spark() -> None:
    """Skip (saying why) where PySpark or Java is missing."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")


def _spark_page(sql: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["table"] = "demo.events"
    at.session_state["spark_master"] = "local[1]"
    at.switch_page("pages/spark.py").run()
    at.text_input(key="spark_sql").set_value(sql)
    at.button(key="spark_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_failed_run_shows_its_error_expanded():
    """A bad predicate is refused on the page before any Spark job starts (no status box, no JVM):
    the message is an st.error and its details sit in an expander that is open."""
    at = _spark_page("no_such_column = 1")
    assert any(md("no_such_column") in e.value and "failed" in e.value for e in at.error), [e.value for e in at.error]
    details = [x for x in at.expander if x.label == "Error details"]
    assert details and details[0].proto.expanded
    assert any("no_such_column" in c.value and "before Spark started" in c.value for c in details[0].code)
    assert not at.status, [s.label for s in at.status]  # no Spark run was started


@pytest.mark.spark
@pytest.mark.slow
def test_false_positives_not_blamed_on_bitmap():
    """``country = 'NZ' OR user_id = 42``: user_id has no index, so the rows read are no bitmap's fault."""
    _needs_spark()
    from indexcore.spark.jobs.evaluate import NO_USABLE_INDEX

    at = _spark_page("country = 'NZ' OR user_id = 42")
    runs = at.session_state["spark_runs"]
    assert len(runs) == 1 and runs[0]["ok"], runs
    fp = next(d.value for d in at.dataframe if "false_positive_rows" in d.value)
    assert list(fp["index"]) == [NO_USABLE_INDEX]
    assert int(fp["false_positive_rows"].iloc[0]) == runs[0]["result"]["rows_after_dv"] - runs[0]["result"][
        "matching_rows"] > 0
    assert any("could have skipped" in c.value for c in at.caption)


@pytest.mark.spark
@pytest.mark.slow
def test_metadata_jobs_show_what_one_process_finds():
    """Explain, plan, census and health run on Spark from the page; what the page shows equals the
    same work in one process."""
    _needs_spark()
    from streamlit.testing.v1 import AppTest

    from indexcore import open_warehouse
    from indexcore.analysis.health import table_health
    from indexcore.scan.explainer import explain
    from indexcore.views.census import file_indexes

    table = open_warehouse(str(ROOT / "sample_warehouse")).table("demo.events")
    sql = "country = 'NZ'"
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["table"] = "demo.events"
    at.session_state["spark_master"] = "local[1]"
    at.switch_page("pages/spark.py").run()
    for job in ("explain", "plan", "census", "health"):
        at.radio(key="spark_job").set_value(job).run()
        if job == "explain":
            at.text_input(key="spark_sql").set_value(sql)
        at.button(key="spark_run").click().run()
        assert not at.exception, [e.value for e in at.exception]
        run = at.session_state["spark_runs"][-1]
        assert run["ok"] and run["job"] == job, run
        metrics = {m.label: m.value for m in at.metric}
        if job == "explain":
            assert run["result"]["funnel"] == explain(table, sql).to_json()["funnel"]
            assert int(metrics["Files read"]) == run["result"]["funnel"]["read"]["files"]
        elif job == "plan":
            assert metrics["Live files"] == f"{len(table.plan().files):,}"
        elif job == "census":
            assert metrics["Index entries"] == f"{file_indexes(table).num_rows:,}"
        else:
            assert int(metrics["Health score"]) == table_health(table).score


def _routed_to_spark(monkeypatch, page: str):
    """An AppTest of ``pages/<page>.py`` on demo.events with every table past the operator's file
    count (its metadata work routed to Spark ``local[1]``), run once; tables opened afresh (nothing
    kept by an earlier test of this process)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("INDEXCORE_SPARK_METADATA_FILES", "1")
    monkeypatch.setenv("INDEXCORE_SPARK_MASTER", "local[1]")
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["table"] = "demo.events"
    at.switch_page(f"pages/{page}.py").run()
    return at


@pytest.mark.spark
@pytest.mark.slow
def test_census_on_spark_past_the_operators_file_count(monkeypatch):
    """With ``INDEXCORE_SPARK_METADATA_FILES`` at or below the table's live files, a page reads the
    snapshot's index heads on Spark (a status says so) and renders on that census."""
    _needs_spark()

    at = _routed_to_spark(monkeypatch, "bitmap")
    assert not at.exception, [e.value for e in at.exception]
    labels = [s.label for s in at.status]
    assert any("on Spark" in label and "failed" not in label for label in labels), labels
    assert not at.error, [e.value for e in at.error]


def test_a_bad_partition_is_refused_before_spark():
    """Explain's partition input is checked like the predicate: a key that is not a partition key is
    an error on the page, and no Spark run starts."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["table"] = "demo.events"
    at.session_state["spark_master"] = "local[1]"
    at.switch_page("pages/spark.py").run()
    at.radio(key="spark_job").set_value("explain").run()
    at.text_input(key="spark_partition").set_value("nope=1")
    at.button(key="spark_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("not a partition key" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.status, [s.label for s in at.status]


@pytest.mark.spark
@pytest.mark.slow
def test_explain_job_takes_partition_bucket_and_verify():
    """The explain job's partition, bucket, verify and all-files inputs reach the tasks: what the
    page shows equals explain in one process with the same options."""
    _needs_spark()
    from streamlit.testing.v1 import AppTest

    from indexcore import open_warehouse
    from indexcore.scan.explainer import explain

    table = open_warehouse(str(ROOT / "sample_warehouse")).table("demo.events")
    sql, partition = "country = 'NZ' OR user_id = 7", "dt=2024-06-02"
    bucket = explain(table, sql, partition=partition).files[0].bucket
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["table"] = "demo.events"
    at.session_state["spark_master"] = "local[1]"
    at.switch_page("pages/spark.py").run()
    at.radio(key="spark_job").set_value("explain").run()
    at.text_input(key="spark_sql").set_value(sql)
    at.text_input(key="spark_partition").set_value(partition)
    at.number_input(key="spark_bucket").set_value(bucket)
    at.checkbox(key="spark_verify").check()
    at.checkbox(key="spark_all_files").check()
    at.button(key="spark_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = at.session_state["spark_runs"][-1]
    assert run["ok"], run
    assert run["partition"] == partition and run["bucket"] == bucket and run["verify"] and run["all_files"]
    want = explain(table, sql, partition=partition, bucket=bucket, verify=True, all_files=True).to_json()
    got = run["result"]
    assert {k: got[k] for k in ("files", "funnel", "violations")} == {k: want[k] for k in ("files", "funnel",
                                                                                         "violations")}
    assert got["files"] and all(f["partition"] == {"dt": "2024-06-02"} and f["bucket"] == bucket
                                for f in got["files"])
    assert all("matching_rows" in f for f in got["files"])  # verified in the tasks
    assert any("Verified against the data" in s.value for s in [*at.success, *at.error]), \
        [s.value for s in [*at.success, *at.error]]


@pytest.mark.spark
@pytest.mark.slow
def test_health_and_explain_on_spark_past_the_operators_file_count(monkeypatch):
    """Past ``INDEXCORE_SPARK_METADATA_FILES`` the Table page's health and the What-if page's explain
    run in Spark tasks (a status and a caption say so) and show what one process finds."""
    _needs_spark()

    from indexcore import open_warehouse
    from indexcore.analysis.health import table_health
    from indexcore.scan.explainer import explain

    table = open_warehouse(str(ROOT / "sample_warehouse")).table("demo.events")
    at = _routed_to_spark(monkeypatch, "table")
    assert not at.exception, [e.value for e in at.exception]
    labels = [s.label for s in at.status]
    assert any("health" in label and "ran on Spark" in label for label in labels), labels
    assert any("Health measured in Spark tasks" in c.value for c in at.caption), [c.value for c in at.caption]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Health"] == f"{table_health(table).score}/100"

    sql = "country = 'NZ'"
    at.switch_page("pages/what_if.py").run()
    at.text_input(key="whatif_sql").set_value(sql).run()
    assert not at.exception, [e.value for e in at.exception]
    labels = [s.label for s in at.status]
    assert any("Explaining" in label and "ran on Spark" in label for label in labels), labels
    assert any("Explained in Spark tasks" in c.value for c in at.caption), [c.value for c in at.caption]
    want = explain(table, sql).funnel["read"]
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Files read"]) == want["files"]
    assert metrics["Rows read (after index and DV)"] == f"{want['rows']:,}"
    assert not at.error, [e.value for e in at.error]


@pytest.mark.spark
@pytest.mark.slow
def test_advisor_explains_on_spark_past_the_operators_file_count(monkeypatch):
    """Past ``INDEXCORE_SPARK_METADATA_FILES`` the Advisor page explains the workload's queries in one
    Spark job (a status and a caption say so) and its advice equals the one-process advice."""
    _needs_spark()

    from indexcore import open_warehouse
    from indexcore.analysis.advise import advise

    workload = "country = 'NZ';\ncountry = 'NZ' OR user_id = 7;\n"
    at = _routed_to_spark(monkeypatch, "advisor")
    at.text_area(key="advisor_workload").set_value(workload)
    at.button(key="advisor_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    labels = [s.label for s in at.status]
    assert any("workload's queries" in label and "ran on Spark" in label for label in labels), labels
    assert any("explained in Spark tasks" in c.value for c in at.caption), [c.value for c in at.caption]
    assert any("planned in Spark tasks" in c.value for c in at.caption), [c.value for c in at.caption]
    got = at.session_state["advisor_result"]
    want = advise(open_warehouse(str(ROOT / "sample_warehouse")).table("demo.events"), workload)
    assert [r.funnel for r in got.runs] == [r.funnel for r in want.runs]
    assert got.statements == want.statements
    assert without_seconds(got.to_json(details=True)) == without_seconds(want.to_json(details=True))


def _shown(at) -> tuple:
    """What a page run showed: its metrics, its tables, its warnings and its health items."""
    return ({m.label: m.value for m in at.metric}, [d.value.reset_index(drop=True) for d in at.dataframe],
            [w.value for w in at.warning], [s.value for s in at.subheader])


@pytest.mark.spark
@pytest.mark.slow
def test_warehouse_health_on_spark_past_the_operators_file_count(monkeypatch):
    """Past ``INDEXCORE_SPARK_METADATA_FILES`` the Warehouse page measures every table's health in
    Spark tasks (a status and a caption say so) and shows what the page shows in one process:
    the same metrics, tables, warnings and headings."""
    _needs_spark()
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    at = _routed_to_spark(monkeypatch, "warehouse")
    assert not at.exception, [e.value for e in at.exception]
    labels = [s.label for s in at.status]
    assert any("health of" in label and "ran on Spark" in label for label in labels), labels
    assert any("measured in Spark tasks" in c.value for c in at.caption), [c.value for c in at.caption]
    routed = _shown(at)

    monkeypatch.setenv("INDEXCORE_SPARK_METADATA_FILES", "0")  # in this process (the default)
    st.cache_resource.clear()
    here = AppTest.from_file(APP, default_timeout=300)
    here.session_state["table"] = "demo.events"
    here.switch_page("pages/warehouse.py").run()
    assert not here.exception, [e.value for e in here.exception]
    assert not here.status and not any("Spark" in c.value for c in here.caption)
    want = _shown(here)
    assert routed[0] == want[0] and routed[2:] == want[2:]
    assert len(routed[1]) == len(want[1]) and want[1]
    for got, expected in zip(routed[1], want[1], strict=True):
        assert got.equals(expected), (got, expected)
