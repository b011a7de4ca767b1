"""Shared fixtures: where the conformance data lives (a skip when it is absent), every census the
test warehouses give, an AppTest opened on one page of the app, and ``streamlit run app.py``
served on a free port."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

from indexcore.views import view

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import app_server  # noqa: E402
from warehouse_tables import CONFORMANCE, every_table, warehouse_roots  # noqa: E402


@pytest.fixture(scope="session")
def conformance() -> Path:
    """``../shared/conformance``; tests that need it skip with a reason when it is absent."""
    if not CONFORMANCE.is_dir():
        pytest.skip(f"conformance data not found at {CONFORMANCE} (it lives in ../shared beside the repo)")
    return CONFORMANCE


def _part(conformance: Path, name: str, what: str) -> Path:
    """A folder of the conformance data; the test skips with a reason when it is absent."""
    path = conformance / name
    if not path.is_dir():
        pytest.skip(f"{what} not found at {path}")
    return path


@pytest.fixture(scope="session")
def every_census() -> list[tuple[str, pa.Table]]:
    """Every census we can read: ``("warehouse:table", file_indexes census)`` for each table of the
    sample warehouse, the conformance warehouses and the 10k bench sample when bench_app.py has
    built it (:func:`warehouse_tables.warehouse_roots`), for tests that group census rows and
    compare with Arrow. A table whose census cannot be made has none to compare and is left out;
    the fixture skips, with where it looked, when no census has a row."""
    roots = warehouse_roots(bench=True)
    found = []
    for root, table in every_table(roots):
        try:
            census = view(table, "file_indexes")
        except Exception:  # noqa: BLE001 - a table that cannot be read has no census to compare
            continue
        found.append((f"{root.name}:{table.name}", census))
    if not any(census.num_rows for _, census in found):
        pytest.skip(f"no census with a row in {', '.join(str(r) for r in roots)}")
    return found


@pytest.fixture(scope="session")
def golden(conformance: Path) -> Path:
    return _part(conformance, "golden", "golden vectors")


@pytest.fixture()
def tagged_warehouse(tmp_path: Path, conformance: Path) -> Path:
    """A scratch copy of two conformance tables: ``pk_table_scan_and_read_dv`` with a tag ``v2``
    on its snapshot 2, and ``append_table_with_rt_branch`` with its branch ``rt``."""
    import shutil

    src = conformance / "warehouses" / "parquet"
    for db in ("pk_table_scan_and_read_dv", "append_table_with_rt_branch"):
        shutil.copytree(src / f"{db}.db", tmp_path / f"{db}.db")
    table = tmp_path / "pk_table_scan_and_read_dv.db" / "pk_table_scan_and_read_dv"
    (table / "tag").mkdir()
    shutil.copy(table / "snapshot" / "snapshot-2", table / "tag" / "tag-v2")
    return tmp_path


@pytest.fixture(scope="session")
def external(conformance: Path) -> Path:
    """``../shared/conformance/external``: tables and index files from paimon-cpp and paimon-rust."""
    return _part(conformance, "external", "external Paimon test data")


@pytest.fixture
def open_page(monkeypatch):
    """``open_page(page, table=None, warehouse=None, timeout=120, tab=None)``: an AppTest of ``app.py``
    with the sidebar's ``warehouse`` and ``table`` picked, switched to ``pages/<page>.py`` and run
    through app.py's navigation as a live server does; fails the test on any exception. ``tab``:
    the Table page's tab to open (its tabs are lazy: only the open one runs)."""
    from streamlit.testing.v1 import AppTest
    from test_app import APP, _served_through_app

    _served_through_app(monkeypatch)

    def open_(page: str, table: str | None = None, warehouse: str | Path | None = None,
              timeout: int = 120, tab: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=timeout)
        if warehouse is not None:
            at.session_state["warehouse_url"] = str(warehouse)
        if table is not None:
            at.session_state["table"] = table
        if tab is not None:
            at.session_state["table_tab"] = tab
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return open_


@contextmanager
def _served(env: Mapping[str, str | None] | None = None, args: Sequence[str] = (), port: int | None = None,
            timeout: float = 60.0) -> Iterator[str]:
    """The URL of ``scripts/app_server.served`` (``streamlit run app.py`` of this tree, its
    environment without ``INDEXCORE_ALLOWED_ROOTS``, then ``env``); a failed start fails the test
    with the server's output."""
    try:
        with app_server.served(env, args, port, timeout) as (url, _):
            yield url
    except app_server.ServerDidNotStart as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def streamlit_server():
    """``with streamlit_server(env=None, args=(), port=None, timeout=60) as url``: a live server of
    ``app.py`` (see ``_served``); session-scoped so module fixtures may use it too."""
    return _served


@pytest.fixture(scope="session")
def free_port():
    """``free_port()``: a port for a test that must name it before the server starts (a redirect URI)."""
    return app_server.free_port
