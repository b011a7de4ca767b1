"""Paired timing of several subjects against one anchor, for benches that report "X times the anchor".

Why this shape (issue 30: a margin that a quiet machine reproduces):

* **Rounds with the anchor bracketing every subject.** The runs go anchor, subjects (one each),
  anchor, subjects, anchor, ...: ``rounds`` rounds cost ``rounds + 1`` anchor runs, not one per
  subject per round, and each subject's ratio in a round is its time over the mean of the two
  anchor runs around that round. A slow spell of the machine (another job starting, a build)
  then weighs on both sides of a ratio, whichever end of the round it falls in; a subject is
  never always before, or always after, its anchor.
* **The subjects' order rotates** by one each round, so no subject always runs first after the
  anchor or last before it.
* **The figure is the median over rounds** of those ratios, printed with the median's
  distribution-free interval (order statistics: no assumption about the ratios' distribution)
  and the number of rounds, so a reader sees whether 1.9 against a 2.0 goal is settled.
* **The OS page cache is filled before every round** (:func:`warm_page_cache`: every file under
  the warehouse read once), so a run right after other disk work (a fresh clone, a build) does
  not time the disk for whichever side reads more files; it costs one read of files already
  cached after the first round.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path


def warm_page_cache(root: str | Path) -> dict:
    """Read every file under ``root`` once, so the OS page cache holds them (as far as memory
    allows); its file and byte counts and the seconds it took (long when the files came from disk)."""
    t0 = time.perf_counter()
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb", buffering=0) as fh:
                    while chunk := fh.read(1 << 20):
                        size += len(chunk)
            except OSError:
                continue  # a file removed or unreadable: nothing to cache
            files += 1
    return {"files": files, "bytes": size, "seconds": time.perf_counter() - t0}


def schedule(subjects: Sequence[str], rounds: int) -> list[list[str]]:
    """The subjects' order in each round: rotated by one per round."""
    n = len(subjects)
    return [[subjects[(r + i) % n] for i in range(n)] for r in range(rounds)] if n else []


def bracketed_ratios(anchors: Sequence[float], subject: Sequence[float]) -> list[float]:
    """A subject's ratio in each round to the mean of the anchor runs before and after the round
    (``anchors`` has one more entry than ``subject``); rounds where either side failed (NaN) or
    the anchor is 0 are left out."""
    out = []
    for r, value in enumerate(subject):
        anchor = (anchors[r] + anchors[r + 1]) / 2
        if value == value and anchor == anchor and anchor > 0:
            out.append(value / anchor)
    return out


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """The order-statistic interval for the median of ``values``: the narrowest pair
    (k-th least, k-th most) whose coverage is at least ``confidence`` under any continuous
    distribution, and that coverage (below ``confidence`` when there are too few values: then it is
    least .. most)."""
    xs = sorted(values)
    n = len(xs)
    if not n:
        return math.nan, math.nan, 0.0

    def coverage(k: int) -> float:  # P(x(k) <= median <= x(n-k+1)) = 1 - 2 P(Binomial(n, 1/2) < k)
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= confidence:
        k += 1
    return xs[k - 1], xs[n - k], coverage(k)


def summary(ratios: Sequence[float]) -> dict:
    """Median, its interval (and the interval's coverage), least, most and count of paired ratios."""
    if not ratios:
        nan = math.nan
        return {"median": nan, "lo": nan, "hi": nan, "coverage": 0.0, "least": nan, "most": nan, "n": 0}
    lo, hi, cov = median_interval(ratios)
    return {"median": statistics.median(ratios), "lo": lo, "hi": hi, "coverage": cov,
            "least": min(ratios), "most": max(ratios), "n": len(ratios)}


def verdict(s: dict, goal: float) -> str:
    """MET / NOT MET on the median, and whether the median's interval settles it."""
    if not s["n"]:
        return "NOT MET (no runs)"
    met = s["median"] <= goal
    if s["coverage"] < 0.9:
        return f"{'MET' if met else 'NOT MET'} ({s['n']} rounds: too few for an interval of the median)"
    settled = s["hi"] <= goal if met else s["lo"] > goal
    return (f"{'MET' if met else 'NOT MET'} ({'settled' if settled else 'not settled'}: the median's "
            f"{s['coverage']:.0%} interval {s['lo']:.2f}..{s['hi']:.2f} {'is on one side of' if settled else 'spans'} "
            f"{goal:g}x)")
