"""A manifest decoded in a fork() child of a process that decoded with polars: polars' thread pool
does not survive fork (its ``to_arrow`` waited forever in a forked fuzz case), so the child takes
the fastavro path and gets the same columns."""

from __future__ import annotations

import os
import pickle
import select
import time
from pathlib import Path

import pytest

import indexcore

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"


def test_a_forked_child_plans_as_its_parent_does():
    pytest.importorskip("polars")
    table = indexcore.open_warehouse(str(SAMPLE)).table("demo.events")
    parent = table.plan_columns().files  # polars' pool is started here
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh table (no cache), planned again
        try:
            os.close(read_fd)
            files = indexcore.open_warehouse(str(SAMPLE)).table("demo.events").plan_columns().files
            os.write(write_fd, pickle.dumps(files.to_pydict()))
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks, deadline = [], time.monotonic() + 120
    while True:  # the child's answer, or its hang: read until it closes the pipe or the bound passes
        ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung decoding a manifest")
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert pickle.loads(b"".join(chunks)) == parent.to_pydict()
