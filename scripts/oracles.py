"""The live oracles of issue 26: Paimon Java (one warm JVM answering JSON lines) and paimon-rust.

Both are fetched by ``scripts/install.sh test``: the Paimon bundle jar into ``.oracles/`` and
pypaimon-rust into ``.venv-rust``. ``java_skip_reason()`` / ``rust_skip_reason()`` say why one
is unusable (tests skip with that reason). indexcore itself is driven through its CLI, in
process (``python -m indexcore ... --format json``), so these scripts depend on nothing inside
the package but its command line.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JAR = Path(os.environ.get("INDEXCORE_PAIMON_JAR", ROOT / ".oracles" / "paimon-bundle.jar"))
JAVA_SRC = ROOT / "tools" / "java"
BUILD = ROOT / "build" / "oracle"
RUST_PY = ROOT / ".venv-rust" / "bin" / "python"
RUST_DRIVER = Path(__file__).resolve().parent / "rust_oracle.py"


def java_skip_reason() -> str | None:
    if not JAR.is_file():
        return f"Paimon Java jar absent ({JAR}); run scripts/install.sh test"
    if shutil.which("javac") is None or shutil.which("java") is None:
        return "java/javac (17) not on PATH"
    return None


def rust_skip_reason() -> str | None:
    if not RUST_PY.is_file():
        return f"pypaimon-rust venv absent ({RUST_PY}); run scripts/install.sh test"
    return None


def compile_java() -> Path:
    """javac the oracle sources against the jar into build/oracle (only when a source is newer)."""
    sources = sorted(JAVA_SRC.glob("*.java"))
    stamp = BUILD / ".stamp"
    newest = max(p.stat().st_mtime for p in [*sources, JAR])
    if stamp.is_file() and stamp.stat().st_mtime >= newest:
        return BUILD
    BUILD.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-d", str(BUILD), "-cp", str(JAR), *map(str, sources)],
                   check=True, capture_output=True, text=True)
    stamp.touch()
    return BUILD


class _JsonLines:
    """A child process answering one JSON line per request line, on stdin/stdout."""

    proc: subprocess.Popen

    def _exchange(self, request: dict) -> str:
        """The answer line ('' when the process is gone)."""
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            return self.proc.stdout.readline()
        except BrokenPipeError:
            return ""

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        if self.proc.poll() is None:
            self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class JavaOracle(_JsonLines):
    """One JVM running tools/java/PaimonOracle; ``ask(request)`` -> answer dict."""

    def __init__(self, tmp: str | None = None):
        build = compile_java()
        self.tmp = tmp or tempfile.mkdtemp(prefix="oracle-io-")
        self.proc = subprocess.Popen(
            ["java", "-Xmx768m", "-XX:+UseSerialGC", "-cp", f"{build}{os.pathsep}{JAR}", "PaimonOracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def ask(self, request: dict) -> dict:
        line = self._exchange({"tmp": self.tmp, **request})
        if not line:
            raise RuntimeError("the Java oracle exited")
        return json.loads(line)


class RustOracle(_JsonLines):
    """pypaimon-rust in its own interpreter (scripts/rust_oracle.py), JSON lines both ways."""

    def __init__(self):
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen([str(RUST_PY), str(RUST_DRIVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def ask(self, request: dict) -> dict:
        """The answer; {"ok": False, "crashed": True} when the process died on it (then restarted)."""
        line = self._exchange(request)
        if not line:
            self.close()
            self.start()
            return {"ok": False, "crashed": True}
        return json.loads(line)


def indexcore_cli(*args: str) -> dict:
    """``python -m indexcore ARGS --format json`` in this process; the parsed JSON (or {"error"})."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["indexcore", *args, "--format", "json"]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_module("indexcore", run_name="__main__", alter_sys=False)
    except SystemExit as exc:
        code = exc.code or 0
    finally:
        sys.argv = argv
    text = out.getvalue()
    if code:
        return {"error": (err.getvalue() or text).strip()[-2000:], "exit": code}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"error": f"not JSON: {text[:500]!r} {err.getvalue()[-500:]}"}
