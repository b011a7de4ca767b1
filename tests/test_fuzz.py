"""Damaged inputs: truncated, bit-flipped and extended golden files fail only with IndexCoreError.

Every kind of golden input is mutated (a sample of single-index blobs of each configuration, the
file-index containers, the deletion-vector files); opening it, evaluating predicates and top-N on
it, summarising it and scanning DV files must either work or raise an IndexCoreError, and must
finish promptly (an alarm turns a hang into a failure).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexcore.errors import IndexCoreError
from indexcore.expr import predicate_from_json
from indexcore.formats.container import read_container
from indexcore.formats.deletion_vector import scan_deletion_vector_file
from indexcore.io import BytesSource
from indexcore.scan import FileIndexPredicate
from indexcore.types import parse_type

CONFORMANCE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance"
GOLDEN = CONFORMANCE / "golden"
HANG_SECONDS = 10
MEMORY_HEADROOM = 1 << 30  # more than any golden input needs, far less than a bogus length

FUZZ = settings(max_examples=150, deadline=3000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


def _sample_vectors() -> list[str]:
    """Per index configuration: the first vector of a few telling datasets (nulls, single values, edges)."""
    manifest = GOLDEN / "single_manifest.json"
    if not manifest.is_file():
        return []
    vectors = json.loads(manifest.read_text(encoding="utf-8"))["vectors"]
    picked = []
    for config in sorted({v["config_id"] for v in vectors}):
        for dataset in ("unique", "edge", "single_null", "somenull"):
            found = [v["id"] for v in vectors if v["config_id"] == config and v["dataset"] == dataset
                     and v["bin_size"] <= 16_000]
            if found:
                picked.append(sorted(found)[0])
    return picked


SAMPLE = _sample_vectors()


def _address_space() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@contextmanager
def no_hang(what: str) -> Iterator[None]:
    """Fail instead of hanging (an alarm) or swamping memory (an address-space cap, on Linux).

    A length or count read from damaged bytes must never be allocated: with the cap, such an
    allocation raises MemoryError, which is not an IndexCoreError and so fails the test.
    """
    def fire(*_: object) -> None:
        raise TimeoutError(f"{what} did not finish in {HANG_SECONDS} s")
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    used = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if used is not None:
        cap = used + MEMORY_HEADROOM
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        if used is not None:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """The original bytes truncated, with bytes flipped, extended, or several of these at once."""
    data = bytearray(original)
    kinds = draw(st.lists(st.sampled_from(["truncate", "flip", "extend", "zero_word"]), min_size=1, max_size=3))
    for kind in kinds:
        if kind == "truncate":
            data = data[:draw(st.integers(0, max(len(data) - 1, 0)))]
        elif kind == "flip" and data:
            for _ in range(draw(st.integers(1, 8))):
                at = draw(st.integers(0, len(data) - 1))
                data[at] ^= draw(st.integers(1, 255))
        elif kind == "zero_word" and len(data) >= 4:
            # lengths and counts are 4-byte words: make one huge, negative or zero
            at = draw(st.integers(0, len(data) - 4))
            data[at:at + 4] = draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00",
                                                    b"\x80\x00\x00\x00", b"\x00\x01\x00\x00"]))
        else:
            data += draw(st.binary(min_size=1, max_size=64))
    return bytes(data)


def _tolerates(action: Callable[[], object], what: str) -> None:
    with no_hang(what), suppress(IndexCoreError):
        action()


def _single_exercise(meta: dict) -> Callable[[bytes], None]:
    return _fuzz_script().single_exercise(meta)


@pytest.mark.parametrize("vid", SAMPLE)
def test_single_blob_mutations(golden: Path, vid: str) -> None:
    meta = json.loads((golden / "single" / f"{vid}.json").read_text(encoding="utf-8"))
    original = (golden / "single" / meta["bin_file"]).read_bytes()
    run = _single_exercise(meta)
    run(original)  # the intact blob works

    @FUZZ
    @given(data=mutated(original))
    def check(data: bytes) -> None:
        _tolerates(lambda: run(data), vid)

    check()


@pytest.mark.parametrize("vid", [v for v in SAMPLE if "__unique" in v])
def test_single_blob_every_truncation(golden: Path, vid: str) -> None:
    """Each prefix of the blob (a short file) is refused cleanly or still answers."""
    meta = json.loads((golden / "single" / f"{vid}.json").read_text(encoding="utf-8"))
    original = (golden / "single" / meta["bin_file"]).read_bytes()
    run = _single_exercise(meta)
    step = max(1, len(original) // 400)
    for cut in range(0, len(original), step):
        _tolerates(lambda cut=cut: run(original[:cut]), f"{vid}[:{cut}]")


def _container_exercise(meta: dict) -> Callable[[bytes], None]:
    row_type = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    options = {(c["name"], ix["index_type"]): ix["options"] for c in meta["columns"] for ix in c["indexes"]}
    predicates = [predicate_from_json(p["predicate"], row_type) for p in meta["predicates"]]

    def run(data: bytes) -> None:
        container = read_container(BytesSource(data, name=meta["id"]))
        container.summary()
        evaluator = FileIndexPredicate(container, row_type, lambda col, typ: options.get((col, typ)))
        for pred in predicates:
            evaluator.evaluate(pred)
        for case in meta["topn"]:
            evaluator.evaluate_top_n(case["field"], case["k"], case["direction"] == "ASC", case["nulls"] == "FIRST")
    return run


@pytest.mark.parametrize("cid", ["container_a", "container_empty"])
def test_container_mutations(golden: Path, cid: str) -> None:
    meta = json.loads((golden / "container" / f"{cid}.json").read_text(encoding="utf-8"))
    original = (golden / "container" / meta["file"]).read_bytes()
    run = _container_exercise(meta)
    run(original)

    @FUZZ
    @given(data=mutated(original))
    def check(data: bytes) -> None:
        _tolerates(lambda: run(data), cid)

    check()


def test_container_head_every_truncation(golden: Path) -> None:
    meta = json.loads((golden / "container" / "container_a.json").read_text(encoding="utf-8"))
    original = (golden / "container" / meta["file"]).read_bytes()
    run = _container_exercise(meta)
    for cut in [*range(0, meta["head_length"] + 8), *range(meta["head_length"] + 8, len(original), 997)]:
        _tolerates(lambda cut=cut: run(original[:cut]), f"container_a[:{cut}]")


def _dv_files() -> list[str]:
    names = ["golden/dv/dv_bitmap32.index"]
    names += [f"deletion_vectors/{p.name}" for p in sorted((CONFORMANCE / "deletion_vectors").glob("dvindex-*"))]
    return names


def _scan(data: bytes, name: str) -> None:
    dv_file = scan_deletion_vector_file(BytesSource(data, name=name))
    dv_file.summary()
    for entry in dv_file.entries:
        entry.dv.summary()


@pytest.mark.parametrize("rel", _dv_files())
def test_deletion_vector_file_mutations(conformance: Path, rel: str) -> None:
    path = conformance / rel
    if not path.is_file():
        pytest.skip(f"{path} is not in this copy of the conformance data")
    original = path.read_bytes()
    _scan(original, rel)
    assert scan_deletion_vector_file(original).entries, "the intact file has deletion vectors"

    @FUZZ
    @given(data=mutated(original))
    def check(data: bytes) -> None:
        _tolerates(lambda: _scan(data, rel), rel)
        _tolerates(lambda: scan_deletion_vector_file(data), rel + " (bytes)")

    check()
    for cut in range(len(original) if len(original) < 4096 else 0):
        _tolerates(lambda cut=cut: _scan(original[:cut], rel), f"{rel}[:{cut}]")


def _fuzz_script():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "fuzz.py"
    spec = importlib.util.spec_from_file_location("indexcore_fuzz_script", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_structure_aware_fuzz_run(conformance: Path) -> None:
    """A bounded, seeded run of ``scripts/fuzz.py``: every kind of file mutated, each case in a
    forked child under a 1 GiB address-space cap and a time limit; no case may end in a
    traceback, a hang or a blow-up (``INDEXCORE_FUZZ_CASES`` changes the count)."""
    fuzz = _fuzz_script()
    count = int(os.environ.get("INDEXCORE_FUZZ_CASES", "240"))
    counts, bad = fuzz.fuzz(count, seed=13, timeout=60.0)
    assert sum(counts.values()) == count
    assert counts["clean error"] > 0 and counts["answer"] > 0, counts
    assert not bad, "\n".join(f"{r['outcome']}: {what}: {r.get('detail')}" for what, r in bad)


def test_sql_text_fuzz_run() -> None:
    """A bounded, seeded run of the script's ``sql`` kind: hostile ``--where`` text (deep nesting,
    long IN lists and chains, extreme numbers, NaN casts, broken quotes, odd characters, spliced
    tokens, unknown columns and functions, wrong-typed literals) through ``explain`` on the sample
    tables and ``probe`` on golden blobs; only clean errors and answers
    (``INDEXCORE_FUZZ_SQL_CASES`` changes the count)."""
    fuzz = _fuzz_script()
    if not any(s.kind == "sql" for s in fuzz.all_seeds()):
        pytest.skip("neither sample_warehouse/ nor the golden blobs are here")
    count = int(os.environ.get("INDEXCORE_FUZZ_SQL_CASES", "120"))
    counts, bad = fuzz.fuzz(count, seed=13, timeout=60.0, kinds={"sql"})
    assert sum(counts.values()) == count
    assert counts["clean error"] > 0 and counts["answer"] > 0, counts
    assert not bad, "\n".join(f"{r['outcome']}: {what}: {r.get('detail')}" for what, r in bad)
