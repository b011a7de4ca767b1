"""Process settings: the ``INDEXCORE_*`` variables read by one rule, and the collector thresholds
the app and CLI raise (raised, never lowered, and not on import)."""

from __future__ import annotations

import gc
import subprocess
import sys

from indexcore.config import GC_THRESHOLDS, Settings, settings, tune_gc, variable


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


def test_settings_read_the_environment_each_call_by_one_rule(monkeypatch):
    assert settings({}) == Settings()
    monkeypatch.setenv("INDEXCORE_PLAN_CACHE", "3")
    assert settings().plan_cache == 3  # a changed variable is seen by the next call
    given = {"INDEXCORE_CONCURRENCY": "-4", "INDEXCORE_READAHEAD": "lots", "INDEXCORE_CACHE_BYTES": "",
             "INDEXCORE_SPARK_CONNECT_TIMEOUT": "2.5", "INDEXCORE_SPARK_MASTERS": "local[*], sc://h:*,",
             "INDEXCORE_ALLOWED_PROTOCOLS": "file:memory, s3"}
    got = settings(given)
    assert (got.concurrency, got.readahead, got.cache_bytes) == (0, Settings.readahead, Settings.cache_bytes)
    assert got.spark_connect_timeout == 2.5 and got.spark_masters == ("local[*]", "sc://h:*")
    assert got.allowed_protocols == ("file", "memory", "s3")
    assert variable("spark_masters") == "INDEXCORE_SPARK_MASTERS"
