"""The collector thresholds the app and CLI raise: raised, never lowered, and not on import."""

from __future__ import annotations

import gc
import subprocess
import sys

from indexcore.config import GC_THRESHOLDS, tune_gc


def test_importing_indexcore_leaves_the_collector_alone():
    code = "import gc; before = gc.get_threshold(); import indexcore, indexcore.views; print(gc.get_threshold() == before)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_tune_gc_raises_and_never_lowers():
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert tune_gc() == (700, 10, 10)
        assert gc.get_threshold() == GC_THRESHOLDS
        gc.set_threshold(10**6, 10, 1000)
        tune_gc()
        assert gc.get_threshold() == (10**6, GC_THRESHOLDS[1], 1000)
    finally:
        gc.set_threshold(*before)
