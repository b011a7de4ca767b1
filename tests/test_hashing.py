"""The string/binary bloom-filter hash against xxHash64 values computed by Paimon."""

from __future__ import annotations

import csv
from pathlib import Path

from indexcore.formats.bloom import hash_function, string_hash
from indexcore.types import parse_type


def test_xxhash64_csv(conformance: Path) -> None:
    with open(conformance / "hashing" / "xxhash64.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) >= 1000
    string = hash_function(parse_type("STRING"))
    binary = hash_function(parse_type("BYTES"))
    bad = []
    for text, hexdigest in rows:
        want = int(hexdigest, 16)
        got = string(text) & 0xFFFFFFFFFFFFFFFF
        if got != want or binary(text.encode("utf-8")) != string_hash(text):
            bad.append(text)
    print(f"xxhash64: {len(rows) - len(bad)}/{len(rows)} agree")
    assert not bad
