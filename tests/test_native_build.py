"""The three optional C extensions (setup.py) build from this checkout: where a C compiler is
present, each is importable. They share ``indexcore/_native/buffers.h``; a build that cannot find
it fails quietly (``optional=True``) and their own tests then skip, so this test says so instead."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from indexcore.formats import bsi, head_batch
from indexcore.warehouse import avro_columns


def test_each_extension_is_built_where_a_compiler_is():
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not shutil.which(compiler) or not headers.is_file():
        pytest.skip(f"no C compiler ({compiler}) or no {headers}: the extensions are optional")
    built = {"warehouse/_avro_columns": avro_columns.AVAILABLE, "formats/_roaring_rows": bsi.NATIVE,
             "formats/_container_heads": head_batch.NATIVE}
    missing = [name for name, ok in built.items() if not ok]
    assert not missing, f"not built: {missing} (pip install -e . or python3 setup.py build_ext --inplace)"
