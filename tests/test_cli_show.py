"""``show`` over the views, ``--tag`` / ``$branch_`` on table commands, the output formats and the
``indexcore`` console script, run as a user would."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import indexcore
from indexcore.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _json(capsys, *args: str):
    code, out, err = _run(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_show_file_indexes_agrees_with_files_everywhere(conformance, capsys):
    checked = 0
    for root in sorted(p for p in (conformance / "warehouses").iterdir() if p.is_dir()):
        for name in indexcore.open_warehouse(str(root)).tables():
            shown = _json(capsys, "show", str(root), f"{name}$file_indexes")
            assert shown["columns"][:3] == ["partition", "bucket", "file_path"]
            files = _json(capsys, "files", str(root), name)["files"]
            from_show: dict[str, dict] = {}
            for r in shown["rows"]:
                cols = from_show.setdefault(r["file_path"], {})
                if r["column_name"] is not None:
                    cols.setdefault(r["column_name"], []).append(r["index_type"])
            from_files = {f["path"]: f["index"]["columns"] for f in files if f["index"] is not None}
            assert from_show == from_files, (root.name, name)
            for f in files:
                if f["index"] is not None:
                    storage = {r["storage_type"] for r in shown["rows"] if r["file_path"] == f["path"]}
                    assert storage == {"EMBEDDED" if f["index"]["embedded"] else "FILE"}
            checked += len(from_files)
    assert checked > 20


def test_show_formats(conformance, capsys):
    root = str(conformance / "warehouses" / "parquet")
    name = "pk_with_bitmap_dv.pk_with_bitmap_dv"
    shown = _json(capsys, "show", root, f"{name}$table_indexes")
    (row,) = shown["rows"]
    assert row["index_type"] == "DELETION_VECTORS" and row["dv_ranges"][0]["_CARDINALITY"] == 2
    code, out, _ = _run(capsys, "show", root, f"{name}$snapshots", "--format", "csv")
    records = list(csv.DictReader(io.StringIO(out)))
    table = indexcore.open_warehouse(root).table(name)
    assert [int(r["snapshot_id"]) for r in records] == table.snapshot_ids()
    assert records[0]["commit_time"].startswith("20")
    code, out, _ = _run(capsys, "show", root, f"{name}$files", "--snapshot", "1")
    assert code == 0 and out.splitlines()[0].split()[:3] == ["partition", "bucket", "file_path"]
    assert len(out.splitlines()) == 2 + len(table.plan(1).files)
    code, out, _ = _run(capsys, "files", root, name, "--format", "csv")
    assert next(csv.reader(io.StringIO(out)))[:3] == ["path", "partition", "bucket"]


def test_show_errors_are_messages(conformance, capsys):
    root = str(conformance / "warehouses" / "parquet")
    for target in ("pk_with_bitmap_dv.pk_with_bitmap_dv$nope", "pk_with_bitmap_dv.pk_with_bitmap_dv",
                   "pk_with_bitmap_dv.pk_with_bitmap_dv$branch_none$files"):
        code, out, err = _run(capsys, "show", root, target)
        assert code == 2 and err.startswith("error: ") and "Traceback" not in err and not out


def test_tag_and_branch_on_table_commands(tagged_warehouse, capsys):
    root, name = str(tagged_warehouse), "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"
    by_tag = _json(capsys, "files", root, name, "--tag", "v2")
    by_id = _json(capsys, "files", root, name, "--snapshot", "2")
    assert by_tag == by_id and by_tag["snapshot"] == 2
    shown = _json(capsys, "show", root, f"{name}$tags")
    assert [(r["tag_name"], r["snapshot_id"]) for r in shown["rows"]] == [("v2", 2)]
    assert _json(capsys, "show", root, f"{name}$files", "--tag", "v2")["rows"] == \
        _json(capsys, "show", root, f"{name}$files", "--snapshot", "2")["rows"]
    code, _, err = _run(capsys, "files", root, name, "--tag", "v2", "--snapshot", "2")
    assert code == 2 and "one of" in err
    code, _, err = _run(capsys, "files", root, name, "--tag", "nope")
    assert code == 2 and "no tag" in err

    branched = "append_table_with_rt_branch.append_table_with_rt_branch"
    main_rows = _json(capsys, "rows", root, branched)["rows"]
    rt_rows = _json(capsys, "rows", root, f"{branched}$branch_rt")["rows"]
    wh = indexcore.open_warehouse(root)
    assert len(rt_rows) == wh.table(f"{branched}$branch_rt").snapshot().total_record_count
    assert sorted(map(str, main_rows)) != sorted(map(str, rt_rows))  # main reads its own data first
    assert _json(capsys, "show", root, f"{branched}$branch_rt$options")["rows"] != \
        _json(capsys, "show", root, f"{branched}$options")["rows"]
    assert [r["branch_name"] for r in _json(capsys, "show", root, f"{branched}$branches")["rows"]] == ["rt"]


def test_console_script_works_like_python_m(conformance):
    script = shutil.which("indexcore")
    if script is None:
        pytest.skip("the indexcore console script is not installed (pip install -e .)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    args = ["show", str(conformance / "warehouses" / "parquet"), "pk_with_bitmap_dv.pk_with_bitmap_dv$files",
            "--format", "json"]
    by_script = subprocess.run([script, *args], capture_output=True, text=True, env=env, timeout=120)
    by_module = subprocess.run([sys.executable, "-m", "indexcore", *args], capture_output=True, text=True,
                               env=env, timeout=120, cwd=ROOT)
    assert by_script.returncode == by_module.returncode == 0, by_script.stderr
    assert json.loads(by_script.stdout) == json.loads(by_module.stdout)
    assert json.loads(by_script.stdout)["rows"][0]["deletion_vector_cardinality"] == 2
    usage = subprocess.run([script, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert usage.returncode == 0 and "show" in usage.stdout
    bad = subprocess.run([script, "show", "/nonexistent/wh", "a.b$files"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
