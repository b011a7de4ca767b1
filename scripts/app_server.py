"""A live ``streamlit run app.py`` of this tree, for the tests' ``streamlit_server`` fixture and
``bench/bench_app.py``'s memory run: one start, one health wait, one stop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class ServerDidNotStart(RuntimeError):
    """The server exited, or ``/_stcore/health`` did not answer in time; the message holds its output's tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The caller's environment with this tree first on PYTHONPATH and no ``INDEXCORE_ALLOWED_ROOTS``,
    then ``env`` (a ``None`` value removes a variable)."""
    merged = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    merged.pop("INDEXCORE_ALLOWED_ROOTS", None)
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@contextmanager
def served(env: Mapping[str, str | None] | None = None, args: Sequence[str] = (), port: int | None = None,
           timeout: float = 60.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``(url, process)`` of ``streamlit run app.py``, headless on 127.0.0.1 (a free port unless
    ``port``), once ``/_stcore/health`` answers; terminated and waited for on exit. The environment
    is ``server_env(env)``; ``args`` go after Streamlit's own flags. The server's output goes to a
    file (a pipe nobody reads would stall it) whose tail a failed start reports."""
    port = free_port() if port is None else port
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none", *args],
            cwd=ROOT, env=server_env(env), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        tail = log.read().decode(errors="replace")[-2000:]
                        how = f"exited with {proc.returncode}" if proc.poll() is not None else f"no health in {timeout:g}s"
                        raise ServerDidNotStart(f"streamlit did not start ({how}): {tail}") from None
                    time.sleep(0.3)
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)  # a server running Spark takes its time to stop
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
