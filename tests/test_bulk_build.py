"""The bulk sample build at scale (issue 29): a driver that holds nothing per file, the value
stats of a task's files in one aggregation, and a build that SIGTERM/SIGINT stop cleanly (its
worker processes gone, no partial table where readers look, an earlier build's tables kept).

Truth: the per-file statistics Arrow computes on each group alone; the kernel's process table
(``/proc``) for the workers; file bytes for "kept unchanged"."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from indexcore.errors import UnsupportedError
from indexcore.types import parse_type
from indexcore.write import TableWriter, make_schema
from indexcore.write.bulk_sample import STAGING
from indexcore.write.datafile import (
    build_file_index_container,
    build_file_index_containers,
    group_value_stats,
    internal_values,
)
from indexcore.write.task import write_task_rows

ROOT = Path(__file__).resolve().parent.parent


def _tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    for d, _, names in sorted(os.walk(path)):
        for name in sorted(names):
            p = os.path.join(d, name)
            h.update(os.path.relpath(p, path).encode())
            h.update(Path(p).read_bytes())
    return h.hexdigest()


# ------------------------------------------------------------------ value stats per task


def test_group_value_stats_equal_each_group_alone():
    """Every type the sample and the writer tests use, with nulls, all-null groups, long strings
    (truncated to 16), NaN (done per group), against Arrow's min/max of each group alone."""
    rng = np.random.default_rng(4)
    n = 400
    cols = [("s", "STRING"), ("b", "BIGINT"), ("i", "INT"), ("d", "DOUBLE"), ("t", "TIMESTAMP(3)"),
            ("u", "TIMESTAMP(6)"), ("day", "DATE"), ("ok", "BOOLEAN"), ("dec", "DECIMAL(10, 2)"),
            ("bin", "BYTES")]
    schema = make_schema(cols)
    words = ["a", "zz", "x" * 20 + "\u00e9", "m" * 17, "\U0001f600" * 18, ""]
    null = rng.random(n) < 0.2
    table = pa.table({
        "s": pa.array([None if z else words[k] for z, k in zip(null, rng.integers(0, len(words), n), strict=True)]),
        "b": pa.array(rng.integers(-(2**62), 2**62, n), mask=null),
        "i": pa.array(rng.integers(-1000, 1000, n).astype(np.int32)),
        "d": pa.array(np.where(rng.random(n) < 0.05, np.nan, rng.random(n))),
        "t": pa.array(rng.integers(0, 2**40, n), pa.timestamp("ms")),
        "u": pa.array(rng.integers(0, 2**50, n), pa.timestamp("us"), mask=null),
        "day": pa.array(rng.integers(0, 30000, n).astype(np.int32), pa.date32()),
        "ok": pa.array(rng.random(n) < 0.5, mask=null),
        "dec": pa.array([None if z else __import__("decimal").Decimal(int(v)) / 100
                         for z, v in zip(null, rng.integers(-10**6, 10**6, n), strict=True)], pa.decimal128(10, 2)),
        "bin": pa.array([b"x"] * n),
    })
    all_null = np.flatnonzero(null)[:3]  # the last group: its nullable columns all null
    order = np.concatenate([rng.permutation(np.setdiff1d(np.arange(n), all_null)), all_null])
    groups = [order[:1], order[1:50], order[50:51], order[51:300], order[300:-3], order[-3:]]
    got = group_value_stats(table, groups, schema)
    for group, stats in zip(groups, got, strict=True):
        part = table.take(pa.array(group))
        for j, (name, sql) in enumerate(cols):
            column, dtype = part.column(name), parse_type(sql)
            nulls = column.null_count
            if name == "bin" or nulls == len(column):
                want = (None, None)
            else:
                mm = pc.min_max(column)
                lo = pa.array([mm["min"].as_py()], column.type)
                hi = pa.array([mm["max"].as_py()], column.type)
                want = (internal_values(lo, dtype)[0], internal_values(hi, dtype)[0])
                if name == "s":
                    cut = want[1][:16]
                    want = (want[0][:16], want[1] if len(want[1]) <= 16 else cut[:-1] + chr(ord(cut[-1]) + 1))
            assert (stats.min_values[j], stats.max_values[j], stats.null_counts[j]) == (*want, nulls), name


# ------------------------------------------------------------------ index containers per task


def test_a_tasks_index_containers_equal_each_file_alone():
    """Every kind the sample builds (bloom on strings, bitmap on strings and on a BIGINT, range-
    bitmap on a timestamp, BSI on an INT) and a bloom on a DATE, two indexes on one column, with
    nulls, one-row files and a file whose container goes over the manifest threshold: each file's
    container built with the task's others is the one its own writers (one per file) build."""
    schema = make_schema(
        [("e", "STRING"), ("u", "BIGINT"), ("c", "STRING"), ("t", "TIMESTAMP(3)"), ("a", "INT"), ("d", "DATE")],
        options={"file-index.bloom-filter.columns": "e,d", "file-index.bloom-filter.e.items": "50",
                 "file-index.bloom-filter.d.items": "20",
                 "file-index.bitmap.columns": "c,u", "file-index.range-bitmap.columns": "t",
                 "file-index.bsi.columns": "a,u"})
    rng = np.random.default_rng(7)
    tables = []
    for n in (1, 5, 40, 1, 300, 12):
        null = rng.random(n) < 0.15
        tables.append(pa.table({
            "e": pa.array([None if z else f"e{k}" for z, k in zip(null, rng.integers(0, 10**6, n), strict=True)]),
            "u": pa.array(rng.integers(-50, 50, n), mask=null),
            "c": pa.array([None if z else ["US", "DE", "NZ", "\u00e9"][k]
                           for z, k in zip(rng.random(n) < 0.1, rng.integers(0, 4, n), strict=True)]),
            "t": pa.array(rng.integers(1_717_200_000_000, 1_717_300_000_000, n), pa.timestamp("ms"), mask=null),
            "a": pa.array(rng.integers(-500, 5000, n).astype(np.int32)),
            "d": pa.array(rng.integers(0, 30000, n).astype(np.int32), pa.date32())}))
    together = build_file_index_containers(tables, schema)
    alone = [build_file_index_container(t, schema) for t in tables]
    assert together == alone
    assert max(len(c) for c in alone) > 2048 and min(len(c) for c in alone) < 2048


# ------------------------------------------------------------------ a commit beside the next batch


@pytest.mark.parametrize("options", [{}, {"row-tracking.enabled": "true"}], ids=["plain", "row-tracking"])
def test_a_snapshot_written_while_the_next_batch_is_written_has_the_same_bytes(tmp_path, options):
    """commit_later (bookkeeping now, the snapshot after the next batch's files are written, as
    the bulk build overlaps them) against commit after each batch: the same tree, byte for byte."""
    schema = make_schema([("p", "INT"), ("k", "BIGINT"), ("v", "STRING")], partition_keys=["p"],
                         options={"bucket": "2", "bucket-key": "k", "file-index.bloom-filter.columns": "v",
                                  **options})
    rng = np.random.default_rng(5)
    batches = [pa.table({"p": pa.array(rng.integers(0, 3, 40).astype(np.int32)), "k": pa.array(rng.integers(0, 10**6, 40)),
                         "v": pa.array([f"v{x}" for x in rng.integers(0, 99, 40)])}) for _ in range(4)]
    at_once = TableWriter.create(str(tmp_path / "at-once"), "db.t", schema, seed=3, keep_files=False)
    for rows in batches:
        at_once.write(rows)
    later = TableWriter.create(str(tmp_path / "later"), "db.t", schema, seed=3, keep_files=False)
    write_snapshot = None
    for rows in batches:
        spec = later.next_task_spec()
        files = write_task_rows(spec, later.prepare_batch(rows), 0)
        if write_snapshot is not None:
            write_snapshot()
        write_snapshot = later.commit_later(files)
        with pytest.raises(RuntimeError, match="not written yet"):
            later.commit_later(files)
    assert write_snapshot() == [4]
    with pytest.raises(RuntimeError, match="written already"):
        write_snapshot()
    assert _tree_digest(tmp_path / "at-once") == _tree_digest(tmp_path / "later")
    assert (later.snapshot_id, later.total_records) == (at_once.snapshot_id, at_once.total_records) == (4, 160)


def test_a_table_with_deletion_vectors_commits_at_once(tmp_path):
    """Its COMPACT snapshot reads the state the APPEND one leaves: commit_later writes both now."""
    schema = make_schema([("k", "BIGINT"), ("v", "STRING")], primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    writer = TableWriter.create(str(tmp_path), "db.t", schema, seed=3)
    spec = writer.next_task_spec()
    files = write_task_rows(spec, writer.prepare_batch(pa.table({"k": [1, 2], "v": ["a", "b"]})), 0)
    write_snapshot = writer.commit_later(files)
    assert writer.snapshot_id == 2 and write_snapshot() == [1, 2]


# ------------------------------------------------------------------ nothing kept per file


def test_an_append_writer_that_counts_writes_the_same_bytes(tmp_path):
    schema = make_schema([("p", "INT"), ("k", "BIGINT"), ("v", "STRING")], partition_keys=["p"],
                         options={"bucket": "2", "bucket-key": "k", "file-index.bloom-filter.columns": "v"})
    rng = np.random.default_rng(1)
    writers = [TableWriter.create(str(tmp_path / name), "db.t", schema, seed=3, keep_files=keep)
               for name, keep in (("kept", True), ("counted", False))]
    for _ in range(4):
        rows = pa.table({"p": pa.array(rng.integers(0, 3, 50).astype(np.int32)),
                         "k": pa.array(rng.integers(0, 10**6, 50)),
                         "v": pa.array([f"v{x}" for x in rng.integers(0, 99, 50)])})
        for w in writers:
            w.write(rows)
    kept, counted = writers
    assert _tree_digest(tmp_path / "kept") == _tree_digest(tmp_path / "counted")
    assert counted.live_file_counts() == {k: len(v) for k, v in kept.live_files().items()}
    assert sum(counted.live_file_counts().values()) > 8
    assert all(not b.files for b in counted._buckets.values())  # no DataFileMeta held
    with pytest.raises(UnsupportedError, match="live_file_counts"):
        counted.live_files()
    pk = make_schema([("k", "BIGINT")], primary_keys=["k"], options={"bucket": "1"})
    with pytest.raises(UnsupportedError, match="primary-key"):
        TableWriter.create(str(tmp_path / "pk"), "db.t", pk, keep_files=False)


# ------------------------------------------------------------------ stopping a build


def _children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (from /proc; zombies count as gone)."""
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(what: str, ready, timeout: float):
    """Poll until ``ready()`` is truthy (the state, not a fixed time); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_workers_and_leaves_no_partial_table(tmp_path, signum):
    """A build stopped by SIGTERM or SIGINT mid-way: the driver exits 128+signal, every process it
    started is gone, no partial table is in ``large.db`` and an earlier build's tables (SIGTERM
    case) are there byte for byte; the next build replaces them."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def build(files: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "indexcore", "sample", "build", str(tmp_path), "--scale",
                                 "large", "--files", str(files), "--workers", "2", "--format", "json"],
                                env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    earlier = None
    if signum == signal.SIGTERM:
        first = build(200)
        assert first.wait(timeout=600) == 0, first.stderr.read()[-2000:]
        earlier = _tree_digest(tmp_path / "large.db")
    proc = build(30_000)
    staging = tmp_path / STAGING

    def writing() -> set[int] | None:
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        workers = _children(proc.pid)
        started = staging.is_dir() and any(name.endswith(".parquet") for _, _, names in os.walk(staging)
                                           for name in names)
        return workers if started and len(workers) >= 2 else None

    started = _wait_for("the workers writing data files", writing, 600)
    proc.send_signal(signum)
    assert proc.wait(timeout=120) == 128 + signum, proc.stderr.read()[-2000:]
    _wait_for("every process the driver started to end", lambda: not any(_alive(p) for p in started), 60)
    assert not staging.exists()
    if earlier is None:
        assert not (tmp_path / "large.db").exists() or not os.listdir(tmp_path / "large.db")
    else:
        assert _tree_digest(tmp_path / "large.db") == earlier
        again = build(300)
        assert again.wait(timeout=600) == 0, again.stderr.read()[-2000:]
        assert _tree_digest(tmp_path / "large.db") != earlier and not staging.exists()
