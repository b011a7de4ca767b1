"""End-to-end conformance: every golden predicate and top-N, evaluated as Paimon's FileIndexPredicate.

Single vectors are evaluated through a one-column evaluator over the blob (what Paimon did with
a one-column container); the containers through the real ``.index`` file. A failure names the
vector and every predicate id whose result differs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyroaring import BitMap

from indexcore.expr import Leaf, predicate_from_json
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexResult
from indexcore.formats.container import read_container
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.io import BytesSource, open_file
from indexcore.scan import FileIndexPredicate, blob_predicate, evaluate_blob
from indexcore.types import parse_type

GOLDEN = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "golden"


def _vector_ids() -> list[str]:
    manifest = GOLDEN / "single_manifest.json"
    if not manifest.is_file():
        return []
    return [v["id"] for v in json.loads(manifest.read_text(encoding="utf-8"))["vectors"]]


VECTOR_IDS = _vector_ids()


def _need_format(index_type: str) -> None:
    if index_type not in FILE_INDEX_TYPES:
        pytest.skip(f"{index_type} is not decoded by indexcore yet")


def normalize(result: object) -> object:
    """Golden or our result as "REMAIN", "SKIP" or a sorted row list; [] is SKIP (as Paimon says)."""
    if isinstance(result, FileIndexResult):
        if isinstance(result, BitmapResult):
            rows = list(result.bitmap)
            return rows if rows else "SKIP"
        return result.to_json()
    if isinstance(result, list):
        return sorted(result) if result else "SKIP"
    return result


def exact(result: FileIndexResult) -> object:
    """Our result in the golden encoding, keeping an empty bitmap as []."""
    return list(result.bitmap) if isinstance(result, BitmapResult) else result.to_json()


def _golden_incoming(value: object) -> FileIndexResult:
    if value == "REMAIN":
        return REMAIN
    if value == "SKIP":
        return SKIP
    return BitmapResult(BitMap(value))


def _load_vector(vid: str) -> tuple[dict, bytes]:
    meta = json.loads((GOLDEN / "single" / f"{vid}.json").read_text(encoding="utf-8"))
    return meta, (GOLDEN / "single" / meta["bin_file"]).read_bytes()


@pytest.mark.parametrize("vid", VECTOR_IDS)
def test_single_vector(golden: Path, vid: str) -> None:
    meta, blob = _load_vector(vid)
    _need_format(meta["index_type"])
    dtype = parse_type(meta["column"]["type"])
    schema = {meta["column"]["name"]: dtype}
    evaluator = blob_predicate(meta["index_type"], dtype, BytesSource(blob, name=vid), meta["options"])
    wrong, kind_wrong = [], []
    for case in meta["predicates"]:
        pred = predicate_from_json(case["predicate"], schema)
        got = evaluator.evaluate(pred)
        if normalize(got) != normalize(case["result"]):
            wrong.append(f"{case['id']}: ours {str(normalize(got))[:80]} != paimon {str(case['result'])[:80]}")
        elif exact(got) != case["result"]:
            kind_wrong.append(f"{case['id']}: ours {exact(got)!r:.40} vs paimon {case['result']!r:.40}")
        assert got.remain() == case["remain"] or normalize(got) != normalize(case["result"])
    assert not wrong, f"{vid}: {len(wrong)} of {len(meta['predicates'])} predicates differ:\n" + "\n".join(wrong)
    # a single index answers exactly as Paimon's reader did: SKIP and an empty bitmap are kept apart
    assert not kind_wrong, f"{vid}: SKIP vs [] differ:\n" + "\n".join(kind_wrong)


def test_single_vector_evaluate_blob_matches(golden: Path) -> None:
    """``evaluate_blob`` (the one-shot form) agrees with golden on one vector of each index type."""
    picked: dict[str, str] = {}
    for vid in VECTOR_IDS:
        meta, _ = _load_vector(vid)
        picked.setdefault(meta["index_type"], vid)
    assert set(picked) == set(FILE_INDEX_TYPES)
    checked = 0
    for vid in picked.values():
        meta, blob = _load_vector(vid)
        _need_format(meta["index_type"])
        dtype = parse_type(meta["column"]["type"])
        for case in meta["predicates"]:
            pred = predicate_from_json(case["predicate"], {"c": dtype})
            got = evaluate_blob(meta["index_type"], dtype, BytesSource(blob), pred, meta["options"])
            assert normalize(got) == normalize(case["result"]), (vid, case["id"])
            checked += 1
    assert checked > 50


def _topn_vector_ids() -> list[str]:
    return [v for v in VECTOR_IDS if v.startswith("range_bitmap")]


@pytest.mark.parametrize("vid", _topn_vector_ids())
def test_single_vector_top_n(golden: Path, vid: str) -> None:
    meta, blob = _load_vector(vid)
    _need_format(meta["index_type"])
    topn = meta.get("topn")
    if not topn or not topn.get("cases"):
        pytest.skip(f"{vid} has no top-N cases")
    dtype = parse_type(meta["column"]["type"])
    evaluator = blob_predicate(meta["index_type"], dtype, BytesSource(blob, name=vid), meta["options"])
    incoming_filter = None
    if topn.get("filter"):
        incoming_filter = evaluator.evaluate(predicate_from_json(topn["filter"]["predicate"], {"c": dtype}))
        assert normalize(incoming_filter) == normalize(topn["filter"]["result"])
    wrong = []
    for i, case in enumerate(topn["cases"]):
        incoming = REMAIN if case["input"] == "REMAIN" else incoming_filter
        got = evaluator.evaluate_top_n("c", case["k"], case["direction"] == "ASC", case["nulls"] == "FIRST",
                                       case["strict"], incoming)
        if normalize(got) != normalize(case["result"]):
            wrong.append(f"case {i} {case['direction']} nulls {case['nulls']} k={case['k']} strict={case['strict']}"
                         f" input={case['input']}: ours {str(normalize(got))[:60]} != {str(case['result'])[:60]}")
    assert not wrong, f"{vid}: top-N differs:\n" + "\n".join(wrong)


# ---------------------------------------------------------------------------------------
# Containers: the whole .index file, several columns and several indexes per column.


def _container(golden: Path, cid: str) -> tuple[dict, FileIndexPredicate]:
    meta = json.loads((golden / "container" / f"{cid}.json").read_text(encoding="utf-8"))
    for col in meta["columns"]:
        for ix in col["indexes"]:
            _need_format(ix["index_type"])
    row_type = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    options = {(c["name"], ix["index_type"]): ix["options"] for c in meta["columns"] for ix in c["indexes"]}
    container = read_container(open_file(str(golden / "container" / meta["file"])))
    return meta, FileIndexPredicate(container, row_type, lambda col, typ: options.get((col, typ)))


def _container_cases() -> list[tuple[str, str]]:
    out = []
    for cid in ("container_a", "container_empty"):
        path = GOLDEN / "container" / f"{cid}.json"
        if path.is_file():
            out += [(cid, p["id"]) for p in json.loads(path.read_text(encoding="utf-8"))["predicates"]]
    return out


@pytest.mark.parametrize(("cid", "pid"), _container_cases())
def test_container_predicate(golden: Path, cid: str, pid: str) -> None:
    meta, evaluator = _container(golden, cid)
    row_type = dict(evaluator.row_type)
    case = next(p for p in meta["predicates"] if p["id"] == pid)
    got = evaluator.evaluate(predicate_from_json(case["predicate"], row_type))
    # several indexes on one column: Paimon's HashSet order decides between SKIP and [], treat them equal
    assert normalize(got) == normalize(case["result"]), f"{cid}/{pid}"
    assert got.remain() == case["remain"]


def test_container_a_all_predicates_agree(golden: Path) -> None:
    meta, evaluator = _container(golden, "container_a")
    agree = sum(normalize(evaluator.evaluate(predicate_from_json(p["predicate"], evaluator.row_type)))
                == normalize(p["result"]) for p in meta["predicates"])
    assert agree == len(meta["predicates"]) == 27


def test_container_a_top_n(golden: Path) -> None:
    meta, evaluator = _container(golden, "container_a")
    by_id = {p["id"]: p for p in meta["predicates"]}
    assert meta["topn"], "container_a has top-N cases"
    for case in meta["topn"]:
        if case["input"] == "REMAIN":
            incoming = REMAIN
        else:
            pred = by_id[case["input"]["predicate_id"]]
            incoming = evaluator.evaluate(predicate_from_json(pred["predicate"], evaluator.row_type))
            assert normalize(incoming) == normalize(pred["result"])
        got = evaluator.evaluate_top_n(case["field"], case["k"], case["direction"] == "ASC",
                                       case["nulls"] == "FIRST", True, incoming)
        assert normalize(got) == normalize(case["result"]), case["id"]
    # the golden incoming bitmap gives the same answer as ours
    case = next(c for c in meta["topn"] if c["input"] != "REMAIN")
    golden_in = _golden_incoming(by_id[case["input"]["predicate_id"]]["result"])
    got = evaluator.evaluate_top_n(case["field"], case["k"], case["direction"] == "ASC",
                                   case["nulls"] == "FIRST", True, golden_in)
    assert normalize(got) == normalize(case["result"])


def test_container_column_rules(golden: Path) -> None:
    """Unindexed columns REMAIN; the empty-index entry SKIPs equality; a SKIP input short-circuits."""
    meta, evaluator = _container(golden, "container_a")
    assert evaluator.readers("unindexed") == []
    assert evaluator.evaluate(Leaf("equal", "unindexed", (5,))) is REMAIN
    assert evaluator.evaluate(Leaf("equal", "empty_idx", (5,))) is SKIP
    assert evaluator.evaluate(None) is REMAIN
    # a column that is in neither the file nor the row type cannot filter
    assert evaluator.evaluate(Leaf("equal", "no_such_column", (5,))) is REMAIN
    # the incoming result is ANDed in, as Paimon's evaluate(predicate, input)
    present = evaluator.evaluate(Leaf("equal", "name", ("user_7",)))
    assert normalize(present) == [17]
    assert evaluator.evaluate(Leaf("equal", "name", ("user_7",)), SKIP).remain() is False
    # NULL literals reach the indexes as FileIndexPredicate passes them: the bitmap answers a NULL
    # with its null rows (Paimon's getInListResultBitmap); the statistics and row filter drop them
    null_rows = normalize(evaluator.evaluate(Leaf("isNull", "name")))
    assert null_rows, "container_a's name column holds NULLs"
    assert normalize(evaluator.evaluate(Leaf("equal", "name", (None,)))) == null_rows
    assert normalize(evaluator.evaluate(Leaf("in", "name", ("user_7", None)))) == sorted({17, *null_rows})
    assert meta["row_count"] == 1000


def test_container_empty_file(golden: Path) -> None:
    meta, evaluator = _container(golden, "container_empty")
    assert evaluator.container.head.entries == ()
    for p in meta["predicates"]:
        assert evaluator.evaluate(predicate_from_json(p["predicate"], evaluator.row_type)) is REMAIN
    assert evaluator.evaluate_top_n("x", 3) is REMAIN


# ---------------------------------------------------------------------------------------
# The standalone bitmap blobs of conformance/file_index.


@pytest.mark.parametrize("name", ["bitmap-index-v1", "bitmap-index-v2"])
def test_conformance_bitmap_blobs(conformance: Path, name: str) -> None:
    _need_format("bitmap")
    expected = json.loads((conformance / "file_index" / "expected.json").read_text(encoding="utf-8"))
    vector = next(v for v in expected["vectors"] if v["file"] == name)
    dtype = parse_type(vector["column_type"])
    source = open_file(str(conformance / "file_index" / name))
    for value, rows in expected["equal"].items():
        got = evaluate_blob(vector["index_type"], dtype, source, Leaf("equal", "c", (value,)))
        assert normalize(got) == rows, (name, value)
    got = evaluate_blob("bitmap", dtype, source, Leaf("in", "c", tuple(expected["equal"])))
    assert normalize(got) == sorted(r for rows in expected["equal"].values() for r in rows)
    assert evaluate_blob("bitmap", dtype, source, Leaf("equal", "c", ("not-a-value",))).remain() is False


def test_golden_counts(golden: Path) -> None:
    """Every predicate of every vector in the manifest agrees with Paimon: counted, all of them."""
    assert len(VECTOR_IDS) == len(list((golden / "single").glob("*.bin")))
    total = agree = 0
    for vid in VECTOR_IDS:
        meta, blob = _load_vector(vid)
        _need_format(meta["index_type"])
        dtype = parse_type(meta["column"]["type"])
        evaluator = blob_predicate(meta["index_type"], dtype, BytesSource(blob, name=vid), meta["options"])
        for case in meta["predicates"]:
            got = evaluator.evaluate(predicate_from_json(case["predicate"], {"c": dtype}))
            total += 1
            agree += normalize(got) == normalize(case["result"])
    assert total > 20000
    assert agree == total, f"{total - agree} of {total} golden predicates differ"
