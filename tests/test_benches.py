"""Every script in bench/ runs: its ``--quick`` mode, in a fresh process with this checkout's
code, must end without an error (so a bench cannot rot while the code under it changes).

Quick modes prove a bench runs on a small input; they measure nothing and assert no goal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py"))
# run by tests/test_differential.py::test_bench_java_quick_prints_ratios (with the Java oracle's checks)
ELSEWHERE = {"bench_java.py"}
SPARK = {"bench_audit.py", "bench_spark_metadata.py", "bench_write.py"}
TIMEOUT_S = 900


def test_every_bench_has_a_quick_mode():
    """The list below is every script of bench/, and each one takes ``--quick``."""
    assert SCRIPTS, "no bench scripts found"
    missing = [name for name in SCRIPTS if "--quick" not in (BENCH / name).read_text()]
    assert not missing, f"bench scripts without a --quick mode: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("script", [pytest.param(name, marks=[pytest.mark.spark] if name in SPARK else [])
                                    for name in SCRIPTS if name not in ELSEWHERE])
def test_bench_quick_runs(script):
    if script in SPARK:
        pytest.importorskip("pyspark")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("INDEXCORE_ALLOWED_ROOTS", None)
    res = subprocess.run([sys.executable, str(BENCH / script), "--quick"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert res.returncode == 0, f"{script} --quick failed:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    assert res.stdout.strip(), f"{script} --quick printed nothing"


def test_bench_scale_measures_concurrent_sessions():
    """``bench_scale.py --session DIR --concurrent 3`` (what ``--sessions ... --concurrent N`` runs
    per warehouse) plans, reads ``$files`` and the census in three threads over one warehouse and
    prints the memory figures, on the sample warehouse's events table."""
    import json

    import indexcore

    sample = ROOT / "sample_warehouse"
    if not (sample / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("INDEXCORE_ALLOWED_ROOTS", None)
    res = subprocess.run([sys.executable, str(BENCH / "bench_scale.py"), "--session", str(sample), "--table",
                          "demo.events", "--concurrent", "3"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    files = len(indexcore.open_warehouse(str(sample)).table("demo.events").plan().files)
    assert got["sessions"] == 3 and got["live_files"] == files
    assert got["peak_mib"] >= got["rss_mib"] > got["base_mib"] > 0 and got["kib_per_file"] > 0


def test_bench_scale_growth_table_extrapolates_each_component(capsys):
    """The growth table's slope and 1,000,000-file figure, from two made-up sizes whose components
    grow by a known amount per file (plan 1 KiB, frames 0.5 KiB; the census 2 KiB per file over a
    head cache that stays at its cap, so 2 KiB per added file is the census's, not the cache's)."""
    sys.path.insert(0, str(BENCH))
    import bench_scale

    def result(files: int, heads: int) -> dict:
        per_file = {"plan": 1.0, "census": 2.0, "files_frame": 0.5, "census_frame": 0.5, "dv_frame": 0.0,
                    "health": 0.0, "stats": 0.0}
        components = {k: v * files for k, v in per_file.items()}
        components["census"] += heads
        return {"live_files": files, "components_kib": components, "head_cache_kib": heads, "base_mib": 100.0}

    bench_scale._growth([result(10_000, 64 * 1024), result(100_000, 64 * 1024)])
    out = capsys.readouterr().out
    rows = {line[:30].strip(): line[30:].split() for line in out.splitlines() if line[:30].strip() in
            bench_scale.LABELS.values() or line.startswith("total")}
    assert "EXTRAPOLATED" in out
    assert rows["plan (Arrow)"][2] == "1.00" and float(rows["plan (Arrow)"][3]) == pytest.approx(0.95, abs=0.01)
    census = rows["census (Arrow, heads capped)"]
    assert census[2] == "2.00"  # the capped head cache adds nothing per file
    assert float(census[3]) == pytest.approx((2.0 * 1_000_000 + 64 * 1024) / 2**20, abs=0.01)
    assert rows["total"][2] == "4.00"


@pytest.mark.slow
def test_bench_scale_server_says_each_pages_peak_and_the_load():
    """``bench_scale.py --server DIR`` on the bundled sample (a real app server and Chromium, two
    pages, two sessions): the one session's RSS and peak after each page, in page order, never
    falling peaks, the last page's figures those of the phase, and the load the phase ran under."""
    import json

    if not Path("/usr/bin/chromium").exists():
        pytest.skip("no Chromium at /usr/bin/chromium")
    pytest.importorskip("playwright")
    sys.path.insert(0, str(BENCH))
    import bench_scale

    out = bench_scale.server(str(ROOT / "sample_warehouse"), 2, pages=("bitmap", "range"), timeout_s=600)
    one = out["one_session"]
    assert list(one["pages"]) == ["bitmap", "range"] and one["exceptions"] == 0
    peaks = [v["peak_mib"] for v in one["pages"].values()]
    assert peaks == sorted(peaks) and peaks[-1] <= one["peak_mib"]
    assert all(v["rss_mib"] <= v["peak_mib"] for v in one["pages"].values())
    assert one["load"] >= 0 and out["2_sessions"]["load"] >= 0
    json.dumps(out)  # what --server prints


def test_bench_planning_judges_its_goal_only_at_50000_files():
    """bench_planning prints MET / NOT MET against issue 30's 3x at 50,000 files on the median of its
    interleaved (floor, ours) pairs, and judges no other size (--quick's 2,000 files measure nothing)."""
    sys.path.insert(0, str(BENCH))
    import bench_planning

    assert bench_planning.verdict(2.99, 50_000).endswith(": MET")
    assert bench_planning.verdict(3.01, 50_000).endswith(": NOT MET")
    assert "not judged at 2,000" in bench_planning.verdict(1.0, 2_000)
    # judged on the median of the paired ratios, not on one lucky or unlucky pair
    assert bench_planning.ratio_line([2.0, 4.0, 2.5], 50_000) == \
        "2.50x median of 3 pairs (spread 2.00 .. 4.00); goal <= 3x: MET"
    assert bench_planning.ratio_line([3.5, 1.0, 3.2], 50_000).endswith(": NOT MET")


def test_bench_app_pairs_pages_with_the_plan_runs_around_each_round(tmp_path):
    """bench_app's rounds (bench/paired.py): every page once per round in an order rotated by one,
    each round's ratio against the mean of the plan runs before and after it, the median's interval
    from order statistics with its exact binomial coverage, and the verdict on the median saying
    whether that interval settles it; the page-cache warm-up reads every file under the warehouse."""
    sys.path.insert(0, str(BENCH))
    import paired

    assert paired.schedule(["a", "b", "c"], 4) == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    # plan runs 1, 3, 2 bracket two rounds: anchors 2 and 2.5; a failed run (NaN) is left out
    assert paired.bracketed_ratios([1.0, 3.0, 2.0], [4.0, 5.0]) == [2.0, 2.0]
    assert paired.bracketed_ratios([1.0, 3.0, 2.0], [float("nan"), 5.0]) == [2.0]
    # n = 9: the 2nd least .. 2nd most, coverage 1 - 2 * (1 + 9) / 512; n = 5: least .. most, 1 - 2 / 32
    lo, hi, cov = paired.median_interval([9, 1, 8, 2, 7, 3, 6, 4, 5])
    assert (lo, hi) == (2, 8) and cov == pytest.approx(1 - 20 / 512)
    lo, hi, cov = paired.median_interval([5, 1, 4, 2, 3])
    assert (lo, hi) == (1, 5) and cov == pytest.approx(1 - 2 / 32)
    settled = paired.summary([1.7, 1.8, 1.9, 1.8, 1.85, 1.75, 1.8, 1.9, 1.7])
    assert settled["median"] == 1.8 and paired.verdict(settled, 2.0).startswith("MET (settled")
    close = paired.summary([1.7, 2.2, 1.9, 2.1, 1.95, 1.75, 2.05, 1.9, 1.8])
    assert paired.verdict(close, 2.0).startswith("MET (not settled")
    assert paired.verdict(paired.summary([2.5, 2.6, 2.4, 2.7, 2.55]), 2.0).startswith("NOT MET (settled")
    assert paired.verdict(paired.summary([2.5, 2.6, 2.4]), 2.0) == \
        "NOT MET (3 rounds: too few for an interval of the median)"
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.index").write_bytes(b"1" * 3000)
    (tmp_path / "y").write_bytes(b"22")
    warmed = paired.warm_page_cache(tmp_path)
    assert (warmed["files"], warmed["bytes"]) == (2, 3002)


def test_bench_app_server_links_carry_the_what_if_predicate_only_there():
    """``--where``: the What-if page's link carries the predicate (URL-encoded, as the app reads its
    ``where``); every other page's link only its table."""
    import urllib.parse

    sys.path.insert(0, str(BENCH))
    import bench_app

    sql = "country = 'FR' AND amount > 10"
    link = bench_app._page_url("http://h:1", "what_if", sql)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    assert query == {"table": [bench_app.PAGES["what_if"]], "where": [sql]}
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(bench_app._page_url("http://h:1", "bitmap", sql)).query) == \
        {"table": [bench_app.PAGES["bitmap"]]}
    assert "where" not in bench_app._page_url("http://h:1", "what_if", None)
