"""The shared ``streamlit_server`` fixture (tests/conftest.py): it serves the app until the block
ends, stops the server on exit, and a server that cannot start fails the test with its output."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"
pytestmark = pytest.mark.slow


def test_serves_until_the_block_ends(streamlit_server):
    with streamlit_server({"INDEXCORE_WAREHOUSE": str(SAMPLE)}) as url:
        assert urllib.request.urlopen(f"{url}/_stcore/health", timeout=10).read() == b"ok"
    with pytest.raises(OSError):  # terminated and waited for: nothing listens on the port any more
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)


def test_a_server_that_cannot_start_fails_with_its_output(streamlit_server):
    with (pytest.raises(pytest.fail.Exception, match=r"(?s)streamlit did not start .exited with 2.*no_such_flag"),
          streamlit_server(args=["--server.no_such_flag", "1"])):
        pass
