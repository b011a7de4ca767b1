"""pypaimon 2.1 (its own venv, ``.venv-pypaimon``) reads every table of the sample warehouse."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import indexcore
from indexcore.warehouse.data import read_table

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv-pypaimon" / "bin" / "python"
SAMPLE = ROOT / "sample_warehouse"

SCRIPT = r"""
import json, sys
from pypaimon import CatalogFactory
catalog = CatalogFactory.create({"warehouse": sys.argv[1]})
out = {}
for name in sys.argv[2:]:
    try:
        table = catalog.get_table(name)
        builder = table.new_read_builder()
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        out[name] = {"rows": rows.num_rows}
    except Exception as exc:
        out[name] = {"error": repr(exc)[:500]}
print(json.dumps(out))
"""


def test_pypaimon_reads_sample_warehouse():
    if not VENV_PYTHON.exists():
        pytest.skip("pypaimon venv missing: python -m venv .venv-pypaimon && "
                    ".venv-pypaimon/bin/pip install 'pypaimon==2.1.*' (scripts/install.sh test does it)")
    if not SAMPLE.is_dir():
        pytest.skip(f"no sample warehouse at {SAMPLE}; build it with: python -m indexcore sample build sample_warehouse")
    wh = indexcore.open_warehouse(str(SAMPLE))
    names = wh.tables()
    assert len(names) >= 4
    proc = subprocess.run([str(VENV_PYTHON), "-c", SCRIPT, str(SAMPLE), *names], capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = {name: read_table(wh.table(name)).num_rows for name in names}
    assert {n: result[n].get("rows", result[n].get("error")) for n in names} == ours
