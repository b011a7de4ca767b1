"""``python -m indexcore dv`` / ``inspect`` run as a user would, against Paimon-written files."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from indexcore.formats.hash_index import write_hash_index

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "indexcore", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def run_json(*args: str):
    proc = run_cli(*args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_dv_command_on_conformance_files(conformance):
    folder = conformance / "deletion_vectors"
    expected = json.loads((folder / "expected.json").read_text())["files"]
    for name, want in expected.items():
        got = run_json("dv", str(folder / name))
        assert got == {"version": want["version"], "bitmap": want["bitmap"],
                       "entries": [{"offset": e["offset"], "cardinality": e["cardinality"],
                                    "positions": e["deleted"]} for e in want["entries"]]}


def test_dv_command_on_golden_file(golden):
    manifest = json.loads((golden / "dv_manifest.json").read_text())
    for item in manifest["dv_files"]:
        meta = json.loads((golden / item["json"]).read_text())
        got = run_json("dv", str(golden / item["file"]))
        assert got["version"] == meta["version_byte"]
        assert got["bitmap"] == ("64" if meta["bitmap64"] else "32")
        assert len(got["entries"]) == len(meta["deletion_vectors"])
        for entry, exp in zip(got["entries"], meta["deletion_vectors"], strict=True):
            assert entry["offset"] == exp["offset"]
            assert entry["cardinality"] == exp["cardinality"] == len(entry["positions"])
            digest = hashlib.sha256(np.asarray(entry["positions"], dtype="<u8").tobytes()).hexdigest()
            assert digest == exp["positions_sha256"]


def test_inspect_detects_each_kind(golden, conformance, tmp_path):
    meta = json.loads((golden / "container" / "container_a.json").read_text())
    got = run_json("inspect", str(golden / "container" / "container_a.index"))
    assert got["kind"] == "file-index"
    assert got["head_length"] == meta["head_length"] and got["file_size"] == meta["file_size"]
    assert [(c["name"], [(i["index_type"], i["offset"], i["length"], i["empty"]) for i in c["indexes"]])
            for c in got["columns"]] == [
        (c["name"], [(i["index_type"], i["offset"], i["length"], i["empty"]) for i in c["indexes"]])
        for c in meta["columns"]]

    dv = run_json("inspect", str(conformance / "deletion_vectors" / "dvindex-64"))
    assert dv["kind"] == "deletion-vectors"
    assert dv["summary"]["bitmap"] == "64" and dv["summary"]["entries"] == 2
    assert [(e["offset"], e["length"], e["cardinality"]) for e in dv["entries"]] == [(1, 44, 2), (45, 42, 1)]

    hashes = tmp_path / "index-hash-0"
    hashes.write_bytes(write_hash_index([5, -9, 5, 123456789]))
    got = run_json("inspect", str(hashes))
    assert got["kind"] == "hash-index"
    assert got["summary"] == {"count": 4, "distinct": 3, "duplicates": 1, "min": -9, "max": 123456789}


def test_inspect_container_with_schema_summarises_blobs(golden):
    meta = json.loads((golden / "container" / "container_a.json").read_text())
    row_type = [f for f in meta["row_type"] if f["name"] in ("category", "empty_idx")]
    got = run_json("inspect", str(golden / "container" / "container_a.index"), "--schema", json.dumps(row_type))
    by_column = {(i["column"], i["index_type"]): i for i in got["indexes"]}
    assert isinstance(by_column[("category", "bitmap")]["summary"], dict)
    assert by_column[("id", "bloom-filter")]["summary"] == "no type given in --schema"
    assert by_column[("empty_idx", "bitmap")]["empty"] is True


@pytest.mark.parametrize("case", ["missing", "crc", "unknown"])
def test_errors_exit_2_without_traceback(conformance, tmp_path, case):
    if case == "missing":
        path = tmp_path / "nope"
    elif case == "crc":
        data = bytearray((conformance / "deletion_vectors" / "dvindex-32").read_bytes())
        data[-1] ^= 0xFF
        path = tmp_path / "dv-bad-crc"
        path.write_bytes(bytes(data))
    else:
        path = tmp_path / "odd"
        path.write_bytes(b"\x07\x00\x00\x00\x00")
    for command in ("dv", "inspect"):
        proc = run_cli(command, str(path))
        if case == "unknown" and command == "dv":
            assert "magic" in proc.stderr or "version" in proc.stderr
        assert proc.returncode == 2, proc.stdout
        assert "Traceback" not in proc.stderr
        assert proc.stderr.startswith("error: ") and str(path) in proc.stderr
        if case == "crc":
            assert "CRC" in proc.stderr and "at byte 59" in proc.stderr
