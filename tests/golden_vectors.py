"""Reading the golden single-index vectors (``../shared/conformance/golden/single``) in tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexcore.expr import Leaf
from indexcore.formats.base import REMAIN, SKIP, BitmapResult
from indexcore.types import from_json, parse_type

SINGLE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "golden" / "single"


def vector_ids(pattern: str) -> list[str]:
    """Ids of the vectors whose JSON file matches ``pattern`` (none when the data is absent)."""
    return sorted(p.stem for p in SINGLE.glob(pattern)) if SINGLE.is_dir() else []


def normalize(result) -> object:
    """REMAIN, SKIP (an empty bitmap is SKIP), or the sorted rows."""
    if result is REMAIN or result == "REMAIN":
        return "REMAIN"
    if result is SKIP or result == "SKIP":
        return "SKIP"
    rows = list(result.bitmap) if isinstance(result, BitmapResult) else list(result)
    return rows if rows else "SKIP"


def load(golden: Path, vid: str):
    """(vector JSON, column type, blob bytes) of one vector."""
    vec = json.loads((golden / "single" / f"{vid}.json").read_text())
    dtype = parse_type(vec["column"]["type"])
    return vec, dtype, (golden / "single" / vec["bin_file"]).read_bytes()


def pick(golden: Path, *candidates: str) -> str:
    """The first of ``candidates`` present in this golden subset; skip when none is."""
    for vid in candidates:
        if (golden / "single" / f"{vid}.json").is_file():
            return vid
    pytest.skip(f"none of {candidates} is in this golden subset")


def leaf_of(dtype, pred) -> Leaf:
    """A golden leaf predicate with its literals as internal values."""
    raws = pred.get("literals_raw") or [None] * len(pred["literals"])
    return Leaf(pred["op"], pred["field"], tuple(from_json(dtype, v, r) for v, r in zip(pred["literals"], raws, strict=True)))


def values_of(vec, dtype) -> list:
    """The column's values in row order, as internal values."""
    raws = vec.get("values_raw") or [None] * len(vec["values"])
    return [from_json(dtype, v, r) for v, r in zip(vec["values"], raws, strict=True)]
