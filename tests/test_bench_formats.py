"""The format benches run in the suite (``--quick``), so none can rot: each must finish, check its
answers against its floor's, and print its ratios (and MET / NOT MET where issue 30 sets a goal).
Timings themselves are not asserted: this machine's load decides them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import oracles  # noqa: E402


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--quick", *args], capture_output=True,
                         text=True, timeout=900, cwd=ROOT, env=env)
    assert res.returncode == 0, res.stderr[-3000:] + res.stdout[-2000:]
    return res.stdout


@pytest.mark.parametrize("script,args,lines", [
    ("bench_global_index.py", (), [r"point: .*ours/floor \d+\.\d+x, goal 3x: (MET|NOT MET)",
                                   r"range: .*ours/floor \d+\.\d+x, goal 3x: (MET|NOT MET)"]),
    ("bench_bloom.py", ("--no-java",), [r"INT: ", r"STRING: ", r"might_contain .*ours/floor .*goal 5x: (MET|NOT MET)"]),
    ("bench_bitmap.py", ("--no-java",), [r"V1: ", r"V2: ", r"memory +floor .*cold .*reopen .*goal 3x \(cold\): (MET|NOT MET)",
                                         r"file +floor .*goal 2x \(cold\): (MET|NOT MET)"]),
    ("bench_range_bitmap.py", (), [r"pyroaring deserialize floor: .* ratio \d+\.\d+x", r"between +\d"]),
])
def test_format_bench_quick_prints_its_ratios(conformance, script, args, lines) -> None:
    out = _run(script, *args)
    for pattern in lines:
        assert re.search(pattern, out), (pattern, out)
    if " MET" in out:
        assert re.search(r"^overall: (MET|NOT MET)$", out, re.M), out


@pytest.mark.skipif(oracles.java_skip_reason() is not None, reason=oracles.java_skip_reason() or "")
@pytest.mark.parametrize("script", ["bench_bloom.py", "bench_bitmap.py"])
def test_format_bench_quick_measures_paimon_java(conformance, script) -> None:
    """With the Java harness present, the bloom and bitmap benches time Paimon Java on the same
    ``.index`` file in the same run and print ours / Java."""
    out = _run(script)
    assert re.search(r"ours/Java \d+\.\d+x", out), out
