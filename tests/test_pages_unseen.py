"""Every page over Paimon-written warehouses the project has never seen, and over damaged copies.

Tables: every table of ``../shared/conformance/warehouses/{parquet,mixed,orc}`` and of the
external paimon-cpp / paimon-rust data (see its README). Per page one AppTest walks the tables
(the sidebar's warehouse and table are switched between runs, as a user does). Each run must end
without an exception, and a page that lists the files it could not use must name every file
indexcore itself reports as unusable for that page: file indexes with an error (missing
``.index``, unreadable, unknown kind), deletion-vector files that are gone, unreadable manifests.

Damaged copies (in tmp): a corrupt ``.index``, a deleted ``.index``, a deleted DV file and
truncated manifests, each on a copy of ``pk_with_bitmap_dv``: no traceback anywhere, every page
that reads the damaged part says so (``TOLD``; the Spark page runs nothing until asked), and the
pages that list unusable files name the damaged one.

Run time: every table (~130) x 11 pages took 230 s on the shared 2-core machine, so by default
every 2nd table of each warehouse (sorted names: deterministic) is opened, plus every damaged
copy; ``INDEXCORE_UNSEEN_SAMPLE=1`` opens them all (N: every Nth).
"""

from __future__ import annotations

import glob
import os
import posixpath
import shutil
from pathlib import Path

import pytest
from test_app import APP, _served_through_app

from indexcore import open_warehouse
from indexcore.frames.table import problems_frame
from indexcore.frames.what_if import FILE_INDEX_TYPES
from indexcore.views import view
from indexcore.views.common import to_frame

PAGES = ["warehouse", "table", "bitmap", "bloom", "range", "deletion_vectors", "hash_index", "global_indexes",
         "what_if", "advisor", "spark"]
# page -> the file-index kinds whose unusable files it lists ("dv": deletion-vector files)
LISTS = {"table": (*FILE_INDEX_TYPES, "dv"), "bitmap": ("bitmap",), "bloom": ("bloom-filter",),
         "range": ("range-bitmap", "bsi"), "deletion_vectors": ("dv",), "what_if": FILE_INDEX_TYPES}
ROOTS = ["warehouses/parquet", "warehouses/mixed", "warehouses/orc", "external/paimon-cpp/parquet",
         "external/paimon-cpp/orc", "external/paimon-cpp/avro", "external/paimon-rust/pkvector",
         "external/paimon-rust/datafusion"]
DAMAGE = ["corrupt_index", "missing_index", "missing_dv", "truncated_manifest"]
# page -> the damaged copies it must say something about (default: every one)
TOLD = {"spark": (), "hash_index": ("truncated_manifest",), "global_indexes": ("truncated_manifest",),
        "bitmap": ("corrupt_index", "missing_index", "truncated_manifest"),
        "bloom": ("corrupt_index", "missing_index", "truncated_manifest"),
        "range": ("corrupt_index", "missing_index", "truncated_manifest")}
# page -> the damaged copies whose broken part it must list
BREAKS = {"table": DAMAGE,
          "bitmap": ("corrupt_index", "missing_index", "truncated_manifest"),
          "bloom": ("truncated_manifest",), "range": ("truncated_manifest",),
          "deletion_vectors": ("missing_dv", "truncated_manifest"),
          "what_if": ("corrupt_index", "missing_index", "truncated_manifest")}


def _every_nth(names: list[str]) -> list[str]:
    step = int(os.environ.get("INDEXCORE_UNSEEN_SAMPLE", "2") or 1)
    return names[::step] if step > 1 else names


@pytest.fixture(scope="module")
def unseen(conformance: Path, tmp_path_factory) -> list[tuple[str, str]]:
    """(warehouse root, table) for every unseen table, then the damaged copies."""
    out = []
    for rel in ROOTS:
        root = conformance / rel
        if root.is_dir():
            out += [(str(root), name) for name in _every_nth(sorted(open_warehouse(str(root)).tables()))]
    damaged = _damaged(conformance, tmp_path_factory.mktemp("damaged"))
    out += [(damaged, f"{d}.pk_with_bitmap_dv") for d in DAMAGE]
    mp = pytest.MonkeyPatch()
    _served_through_app(mp)
    mp.setenv("INDEXCORE_ALLOWED_ROOTS", ",".join(dict.fromkeys(root for root, _ in out)))
    mp.setenv("INDEXCORE_WAREHOUSE", out[0][0])
    yield out
    mp.undo()


def _damaged(conformance: Path, tmp: Path) -> str:
    """Four copies of pk_with_bitmap_dv, each broken one way (the live file's parts)."""
    src = conformance / "warehouses" / "parquet" / "pk_with_bitmap_dv.db"
    for d in DAMAGE:
        shutil.copytree(src, tmp / f"{d}.db")
    wh = open_warehouse(str(tmp))

    def live(db: str):
        return wh.table(f"{db}.pk_with_bitmap_dv").plan().files[0]

    Path(live("corrupt_index").index_path).write_bytes(b"not a file index" * 8)
    os.remove(live("missing_index").index_path)
    os.remove(live("missing_dv").dv_file_path)
    for manifest in glob.glob(str(tmp / "truncated_manifest.db" / "pk_with_bitmap_dv" / "manifest" / "manifest-*")):
        if "manifest-list" not in manifest:
            data = Path(manifest).read_bytes()
            Path(manifest).write_bytes(data[: len(data) // 2])
    return str(tmp)


def _expected(root: str, name: str, page: str) -> set[str]:
    """The file names indexcore itself reports as unusable for ``page`` (not via the page helpers)."""
    table = open_warehouse(root).table(name)
    problems = problems_frame(table)
    want = {posixpath.basename(p) for p, s in zip(problems["path"], problems["structure"], strict=True)
            if s != "file index"}
    kinds = LISTS[page]
    if "dv" in kinds:
        want |= {posixpath.basename(lf.path) for lf in table.plan().files
                 if lf.dv_file_path and not table.storage.exists(lf.dv_file_path)}
    if kinds == ("dv",):
        return want
    indexes = to_frame(view(table, "file_indexes"))  # text as text: None, not a category NaN
    for _, row in indexes.iterrows():
        unknown = row["index_type"] is not None and row["index_type"] not in FILE_INDEX_TYPES
        failed = row["error"] is not None and (row["index_type"] is None or row["index_type"] in kinds)
        if unknown or failed:
            want.add(row["file_name"])
    return want


def _listed(at) -> set[str]:
    return {n for d in at.dataframe if "why" in d.value and "file_name" in d.value for n in d.value["file_name"]}


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_over_unseen_and_damaged_tables(unseen, page):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["spark_master"] = "local[1]"
    at.switch_page(f"pages/{page}.py").run()
    failures, current = [], unseen[0][0]
    for root, name in unseen:
        where = f"{page} on {root} {name}"
        if root != current:  # another warehouse, typed in the sidebar as a user does
            at.text_input(key="warehouse_url").set_value(root).run()
            current = root
        if at.exception:
            failures.append(f"{where} (opening the warehouse): {[e.value[:300] for e in at.exception]}")
            continue
        at.selectbox(key="table").select(name).run()
        if at.exception:
            failures.append(f"{where}: {[e.value[:300] for e in at.exception]}")
            continue
        if at.session_state["selection"].table != name:
            failures.append(f"{where}: the sidebar did not pick the table")
            continue
        damage = name.split(".")[0] if root == unseen[-1][0] else None
        if damage and page == "advisor":  # the advisor reports problems once it has run
            at.button(key="advisor_run").click().run()
        if damage in TOLD.get(page, DAMAGE) and not [*at.warning, *at.error, *at.info]:
            failures.append(f"{where}: damaged table but no message")
        if page in LISTS:
            want = _expected(root, name, page)
            if damage in BREAKS.get(page, ()) and not want:
                failures.append(f"{where}: indexcore reports nothing unusable on a damaged table")
            missing = want - _listed(at)
            if missing:
                failures.append(f"{where}: unusable files not listed: {sorted(missing)}")
    assert not failures, "\n".join(failures)
