"""Index-manifest files that cannot be used (issue 14): HASH index files of a dynamic-bucket table
and global index files, each damaged on a scratch copy (one deleted, one corrupt, one holding
another number of hashes than its manifest says). :func:`health.unusable_index_files`, the
table's health and the Hash index / Global indexes pages must name exactly those files, with
the reason, and the pages keep rendering the rest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import indexcore
from indexcore.analysis import health as H
from indexcore.formats.hash_index import write_hash_index
from indexcore.warehouse.global_index import global_index_files

SAMPLE_USERS = Path(__file__).resolve().parent.parent / "sample_warehouse" / "demo.db" / "users"
BTREE = "append_with_btree_with_partition"
VECTOR = "pk_vector_ivf_flat"


def _listed(at) -> dict[str, str]:
    """File name -> reason of the page's list of files it could not use."""
    frames = [d.value for d in at.dataframe if "why" in d.value and "file_name" in d.value]
    assert len(frames) == 1, [list(d.value.columns) for d in at.dataframe]
    return dict(zip(frames[0]["file_name"], frames[0]["why"], strict=True))


def _reasons(frame) -> dict[str, str]:
    return dict(zip(frame["file_name"], frame["why"], strict=True))


@pytest.fixture
def users(tmp_path, monkeypatch) -> Path:
    """A scratch warehouse holding the sample's dynamic-bucket table ``demo.users``."""
    if not SAMPLE_USERS.is_dir():
        pytest.skip("sample_warehouse/ has no demo.users")
    shutil.copytree(SAMPLE_USERS, tmp_path / "demo.db" / "users")
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(tmp_path))
    return tmp_path


def test_hash_index_files_missing_corrupt_and_miscounted(users, open_page):
    table = indexcore.open_warehouse(str(users)).table("demo.users")
    entries = sorted((e for es in table.plan().hash_indexes.values() for e in es), key=lambda e: e.index_file.file_name)
    assert len(entries) >= 4 and table.schema().bucket == -1
    assert H.unusable_index_files(table).empty, "an intact copy has nothing unusable"
    gone, corrupt, miscounted = entries[:3]
    path = {e.index_file.file_name: Path(table.index_file_path(e, table.partition_dir(e.partition))) for e in entries}
    path[gone.index_file.file_name].unlink()
    path[corrupt.index_file.file_name].write_bytes(b"\x00\x01\x02\x03\x04")  # not whole 4-byte hashes
    path[miscounted.index_file.file_name].write_bytes(write_hash_index([7, 8]))
    want = {gone.index_file.file_name: H.MISSING_HASH, corrupt.index_file.file_name: H.UNREADABLE_HASH,
            miscounted.index_file.file_name: H.HASH_ROWS}

    table = indexcore.open_warehouse(str(users)).table("demo.users")
    bad = H.unusable_index_files(table)
    assert _reasons(bad) == want
    assert set(bad["index_type"]) == {"HASH"}
    errors = dict(zip(bad["file_name"], bad["error"], strict=True))
    assert errors[gone.index_file.file_name].startswith("file not found")
    assert "size 5 is not a multiple of 4" in errors[corrupt.index_file.file_name]
    assert errors[miscounted.index_file.file_name] == \
        f"holds 2 hashes, the index manifest says {miscounted.index_file.row_count}"
    assert H.unusable_index_files(table, kinds=(H.GLOBAL_INDEX,)).empty

    health = H.table_health(table)
    assert _reasons(health.unusable_frame) == want
    hash_items = [i for i in health.items if i.kind == "unusable-files"]
    assert {i.page for i in hash_items} == {H.PAGE_HASH} and sum(i.files for i in hash_items) == 3

    at = open_page("hash_index", "demo.users", warehouse=users)
    assert _listed(at) == want
    assert "3 file(s) could not be used" in " ".join(w.value for w in at.warning)
    assert {m.label for m in at.metric} >= {"Buckets", "Keys"}, "the rest of the page still renders"
    assert not [e.value for e in at.error]


@pytest.fixture
def global_tables(tmp_path, monkeypatch, external) -> Path:
    """A scratch warehouse with a BTree-indexed table (paimon-cpp) and a vector-indexed one (paimon-rust)."""
    sources = [external / "paimon-cpp" / "orc" / f"{BTREE}.db", external / "paimon-rust" / "pkvector" / "default.db"]
    for src in sources:
        if not src.is_dir():
            pytest.skip(f"{src} not found")
        shutil.copytree(src, tmp_path / src.name)
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(tmp_path))
    return tmp_path


def test_global_index_files_missing_and_corrupt(global_tables, open_page):
    wh = indexcore.open_warehouse(str(global_tables))
    btree, vector = wh.table(f"{BTREE}.{BTREE}"), wh.table(f"default.{VECTOR}")
    assert H.unusable_index_files(btree).empty and H.unusable_index_files(vector).empty
    files = sorted(global_index_files(btree), key=lambda g: g.entry.index_file.file_name)
    gone, corrupt = files[0], files[1]
    Path(gone.path).unlink()
    Path(corrupt.path).write_bytes(b"not a btree index file" * 4)
    (vector_file,) = global_index_files(vector)
    Path(vector_file.path).unlink()

    wh = indexcore.open_warehouse(str(global_tables))
    btree, vector = wh.table(f"{BTREE}.{BTREE}"), wh.table(f"default.{VECTOR}")
    want = {gone.entry.index_file.file_name: H.MISSING_GLOBAL, corrupt.entry.index_file.file_name: H.UNREADABLE_GLOBAL}
    bad = H.unusable_index_files(btree)
    assert _reasons(bad) == want
    assert set(bad["index_type"]) == {"btree"}
    assert list(bad["column_name"]) == [g.field.name for g in (gone, corrupt)]
    assert bad["error"].iloc[0].startswith("file not found") and not bad["error"].iloc[1].startswith("file not found")
    assert H.unusable_index_files(btree, kinds=("HASH",)).empty
    assert _reasons(H.unusable_index_files(vector)) == {vector_file.entry.index_file.file_name: H.MISSING_GLOBAL}
    items = [i for i in H.table_health(btree).items if i.kind == "unusable-files"]
    assert {i.page for i in items} == {H.PAGE_GLOBAL} and sum(i.files for i in items) == 2

    at = open_page("global_indexes", f"{BTREE}.{BTREE}", warehouse=global_tables)
    assert _listed(at) == want
    assert "2 file(s) could not be used" in " ".join(w.value for w in at.warning)
    assert {m.label: m.value for m in at.metric}["Index files"] == str(len(files)), "the rest still renders"
    picker = at.selectbox(key="global_index_file")
    assert set(picker.options).isdisjoint(want) and len(picker.options) == len(files) - 2
    assert not [e.value for e in at.error]

    at.selectbox(key="table").select(f"default.{VECTOR}").run()
    assert not at.exception
    assert _listed(at) == {vector_file.entry.index_file.file_name: H.MISSING_GLOBAL}


def test_unreadable_index_manifest_is_listed_on_both_pages(users, open_page):
    """A truncated index manifest hides every HASH and global index file: both pages name it."""
    table = indexcore.open_warehouse(str(users)).table("demo.users")
    name = table.plan().snapshot.index_manifest
    manifest = users / "demo.db" / "users" / "manifest" / name
    data = manifest.read_bytes()
    manifest.write_bytes(data[: len(data) // 2])
    want = {name: "unreadable index manifest"}
    for page in ("hash_index", "global_indexes"):
        at = open_page(page, "demo.users", warehouse=users)
        assert _listed(at) == want, page
        assert not [e.value for e in at.error], page
