"""``diff`` and ``check`` on the sample warehouse's own snapshot history.

``demo.orders`` (primary key, 4 buckets, deletion vectors): snapshot 2 holds the first batch
compacted; batches 2 and 3 update and delete mostly in bucket 0, some in bucket 1. ``demo.faulty``
has one corrupt and one missing ``.index`` file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexcore.analysis.check import check, parse_rules
from indexcore.analysis.diff import diff, pruning
from indexcore.analysis.workload import parse_workload
from indexcore.cli import main
from indexcore.errors import PredicateError
from indexcore.frames.deletion_vectors import dv_by_bucket
from indexcore.views import view
from indexcore.warehouse import Warehouse
from indexcore.warehouse.data import read_table

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_warehouse")


@pytest.fixture(scope="module")
def orders():
    return Warehouse(SAMPLE).table("demo.orders")


def test_diff_orders_history(orders):
    out = diff(orders, 2, 6, parse_workload("status = 'NEW'\ncustomer = 'cust-00042'"))
    before = {lf.path for lf in orders.plan(2).files}
    after = {lf.path for lf in orders.plan(6).files}
    assert out["summary"]["added"] == len(after - before) > 0
    assert out["summary"]["removed"] == len(before - after)
    assert out["summary"]["records_to"] == sum(lf.file.row_count for lf in orders.plan(6).files)
    # live rows are what a read returns: the table read row by row (deletion vectors, level 0 skipped)
    assert out["summary"]["rows_to"] == read_table(orders, 6).num_rows < out["summary"]["records_to"]
    assert out["summary"]["rows_from"] == read_table(orders, 2).num_rows and out["summary"]["rows_exact"]
    # DV growth per bucket equals the deleted rows the DV frames hold at both snapshots
    now = dv_by_bucket(view(orders, "deletion_vectors", 6).to_pandas()).set_index("bucket")["deleted"].to_dict()
    growth = {d["bucket"]: d["growth"] for d in out["deletion_vectors"]}
    assert growth == {b: int(n) for b, n in now.items() if n}
    assert growth[0] > growth[1] > 0 and 2 not in growth and 3 not in growth
    assert out["index_changes"] == [] and out["missing_configured_indexes"] == []
    assert out["bucket_balance"]["to"]["max_over_mean"] >= out["bucket_balance"]["from"]["max_over_mean"]
    q1 = out["queries"][0]
    assert q1["from"] == pruning(orders, "status = 'NEW'", 2)
    assert q1["to"]["files"] == len(after)


def test_diff_cli_and_unknown_snapshot(capsys):
    assert main(["diff", SAMPLE, "demo.events", "--from", "1", "--to", "3", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["removed"] == [] and out["summary"]["added"] == out["summary"]["files_to"] - out["summary"]["files_from"]
    assert main(["diff", SAMPLE, "demo.events", "--from", "99"]) == 2
    assert "snapshot 99" in capsys.readouterr().err


def test_check_rules_pass_and_fail(orders, tmp_path):
    wl = tmp_path / "w.sql"
    wl.write_text("-- name: new\nstatus = 'NEW';\n")
    rules = parse_rules("configured-indexes\n"
                        "dv-density max=0.9   # bucket 0 is about half deleted\n"
                        "bloom-fpp max=0.5\n"
                        f"pruning snapshot=2 query=new workload={wl.name}\n", str(tmp_path))
    report = check(orders, rules)
    assert report["passed"], report
    density = max(dv_by_bucket(view(orders, "deletion_vectors").to_pandas())["density"])
    report = check(orders, parse_rules(f"dv-density max={density / 2}"))
    assert not report["passed"]
    (failure,) = report["rules"][0]["failures"]
    assert failure["bucket"] == 0 and failure["density"] == pytest.approx(density, abs=1e-6)
    # at snapshot 2 nothing was deleted yet
    assert check(orders, parse_rules(f"dv-density max={density / 2}"), snapshot_id=2)["passed"]
    # JSON rules, and a rule that cannot run fails with its error while the others still run
    report = check(orders, parse_rules(json.dumps({"rules": [
        {"rule": "pruning", "snapshot": 2, "where": "nosuch = 1"}, {"rule": "configured-indexes"}]})))
    assert not report["passed"] and "nosuch" in report["rules"][0]["error"] and report["rules"][1]["passed"]
    with pytest.raises(PredicateError):
        parse_rules("no-such-rule")


def test_check_cli_exit_codes(tmp_path, capsys):
    rules = tmp_path / "rules.txt"
    rules.write_text("configured-indexes\n")
    assert main(["check", SAMPLE, "demo.events", "--rules", str(rules)]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    assert main(["check", SAMPLE, "demo.faulty", "--rules", str(rules)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert len(report["rules"][0]["failures"]) == 2  # the corrupt and the missing .index
    assert main(["check", SAMPLE, "demo.events", "--rules", str(tmp_path / "none.txt")]) == 2
