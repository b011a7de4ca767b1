"""The weight the What-if page keeps an explain result at, against pandas' own deep memory count."""

import random

import numpy as np
import pandas as pd

from indexcore.cache import frames_weight


def _pandas(frames) -> int:
    return sum(int(f.memory_usage(deep=True).sum()) for f in frames if hasattr(f, "memory_usage"))


def _files(rows: int, seed: int = 7) -> pd.DataFrame:
    """A frame shaped as an explain's per-file frame: paths of varied length, few decisions, gaps."""
    rng = random.Random(seed)
    return pd.DataFrame({
        "path": [f"/warehouse/db/t/dt={rng.randrange(400)}/bucket-{rng.randrange(8)}/data-{'x' * rng.randrange(10, 90)}"
                 for _ in range(rows)],
        "decision": [rng.choice(["REMAIN", "SKIP", None]) for _ in range(rows)],
        "min": [rng.choice([None, "é" * rng.randrange(1, 16), "a" * rng.randrange(1, 16)]) for _ in range(rows)],
        "rows": np.arange(rows, dtype=np.int64),
        "nulls": pd.array([None if i % 5 else i for i in range(rows)], dtype="Int64"),
    })


def test_small_frames_weigh_exactly_what_pandas_counts():
    frames = [_files(2048), _files(3), _files(0), "SELECT 1", {"why": 1}, True]
    assert frames_weight(frames) == _pandas(frames)


def test_large_frames_estimate_pandas_count_from_a_sample():
    for rows, seed in ((2049, 1), (9104, 2), (50_000, 3)):
        frames = [_files(rows, seed), _files(5, seed)]
        exact = _pandas(frames)
        assert abs(frames_weight(frames) - exact) <= 0.02 * exact, (rows, frames_weight(frames), exact)


def test_numeric_frames_are_counted_exactly_at_any_size():
    frame = pd.DataFrame({"a": np.arange(100_000), "b": np.ones(100_000), "c": pd.array(range(100_000), dtype="Int64")})
    assert frames_weight([frame]) == _pandas([frame])
