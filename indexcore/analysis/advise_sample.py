"""The advisor's sampling rule: figures about a sample of files that cannot overclaim.

A candidate index can only change what a query does to the files it still reaches after
partition, bucket, level and statistics pruning (its *population*; the files today's indexes
skip stay skipped). So, per query:

* the sample is drawn from that population only, stratified by partition (one file per
  partition at least while the sample has room, the rest proportional to the partition's
  files; past as many partitions as sampled files, one stratum). Within a stratum the files
  with the smallest key (a hash of their file name and the seed) are taken, so queries over the
  same files measure the same files and a candidate is built once for all of them;
* each figure (files, rows and data bytes skipped) is the stratified (Horvitz-Thompson)
  estimate, capped by what the query reads today, with an approximate 95% interval: Wilson's
  score interval on the skipped share of the population with a finite-population correction,
  its bound next to 0 or 1 the Poisson one when the sample saw 1 to 3 such files (exact, a
  single value, when every file of the population was measured).

:data:`EXACT_FILES`: a query reaching at most this many files is measured on all of them by
default (``--sample`` unset); past it, :data:`DEFAULT_SAMPLE` files. Why 100: measuring a
candidate on a file reads that file's column and runs the index writer (about 1-2 ms of CPU for
a few-hundred-row Parquet file here), 5-10 times what explain spends deciding the file, so the
advisor stays near its floor (the explains it cannot avoid; ``bench/bench_advise.py``) only if
it measures about a tenth of the files a query reaches on large tables; 100 files bound the 95%
interval of a share to at most +/- 9.8 points (less with the finite-population correction) and
the interval is printed beside every sampled figure. ``--sample 0`` measures every file.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Queries reaching at most this many files are measured exactly by default (see the module docstring).
EXACT_FILES = 100
#: Files per query measured by default past :data:`EXACT_FILES`.
DEFAULT_SAMPLE = 100
#: The normal quantile of the two-sided 95% intervals.
Z95 = 1.959964


def file_key(path: str, seed: int) -> float:
    """A file's place in every sample of a given ``seed``: uniform in [0, 1), fixed by its file
    name (unique in a table: Paimon names data files by UUID), not by where the warehouse lies,
    so a copy of a table (another directory, a bucket) is sampled alike."""
    name = path[path.rfind("/") + 1:]  # posixpath.basename, without its per-call set-up (a key per reached file)
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2 ** 64


def draw(paths: Sequence[str], strata: Sequence[Any], n: int | None, seed: int = 0,
         keys: dict[str, float] | None = None) -> list[tuple[int, float]]:
    """(index into ``paths``, weight) of the sampled files: ``n`` of them stratified by ``strata``
    (one key per file, e.g. its partition), all with weight 1 when ``n`` is None or covers them.
    ``keys``: the callers' cache of :func:`file_key` per path (the same for every query)."""
    total = len(paths)
    if n is None or n >= total:
        return [(i, 1.0) for i in range(total)]
    if n <= 0:
        return []
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    if len(groups) > n:  # more partitions than files to measure: one stratum
        groups = {None: list(range(total))}
    strata_keys = list(groups)
    take = {k: 1 for k in strata_keys}
    room = n - len(strata_keys)
    spare = {k: len(groups[k]) - 1 for k in strata_keys}
    capacity = sum(spare.values())
    if room > 0 and capacity > 0:
        shares = {k: room * spare[k] / capacity for k in strata_keys}
        for k in strata_keys:
            take[k] += int(shares[k])
        left = n - sum(take.values())
        for k in sorted(strata_keys, key=lambda k: (-(shares[k] - int(shares[k])), str(k)))[:max(left, 0)]:
            take[k] += 1
    cache = {} if keys is None else keys

    def key_of(i: int) -> float:
        path = paths[i]
        if path not in cache:
            cache[path] = file_key(path, seed)
        return cache[path]

    out: list[tuple[int, float]] = []
    for k in strata_keys:
        members = groups[k]
        m = min(take[k], len(members))
        chosen = sorted(members, key=key_of)[:m]
        out.extend((i, len(members) / m) for i in chosen)
    return sorted(out)


def _poisson_low(k: int) -> float:
    """The one-sided 97.5% lower bound of a Poisson mean from ``k`` events: the ``lam`` with
    P(Poisson(lam) >= k) = 0.025 (bisection)."""
    lo, hi = 0.0, float(k)
    for _ in range(60):
        lam = (lo + hi) / 2
        below = sum(math.exp(-lam) * lam ** i / math.factorial(i) for i in range(k))  # P(X <= k - 1)
        lo, hi = (lam, hi) if below > 0.975 else (lo, lam)
    return lo


#: Poisson lower bounds for 1, 2 and 3 events (0.0253, 0.2422, 0.6187)
_FEW = tuple(_poisson_low(k) for k in (1, 2, 3))


def wilson(share: float, n: int, population: int) -> tuple[float, float]:
    """The approximate 95% interval of a share estimated from ``n`` of ``population`` files:
    Wilson's score interval, whose bound next to 0 (or 1) covers too little when the sample saw
    only 1 to 3 such files (1 skipped file in 100 sampled when 22 of 18,589 skip: Wilson's lower
    bound is 33 files and misses the truth 11% of the time); there the bound is the Poisson one
    (Brown, Cai and DasGupta's modification, 2001), which is wider."""
    if n >= population or n <= 0:
        return (share, share) if n > 0 else (0.0, 1.0)
    n_eff = n * (population - 1) / (population - n)  # the finite-population correction
    z2 = Z95 * Z95
    centre = (share + z2 / (2 * n_eff)) / (1 + z2 / n_eff)
    half = Z95 * math.sqrt(share * (1 - share) / n_eff + z2 / (4 * n_eff * n_eff)) / (1 + z2 / n_eff)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    seen, missed = share * n_eff, (1 - share) * n_eff  # files (or their weight) on each side
    if 0 < seen < 3.5:
        low = min(low, _FEW[min(3, max(1, round(seen))) - 1] / n_eff)
    if 0 < missed < 3.5:
        high = max(high, 1 - _FEW[min(3, max(1, round(missed))) - 1] / n_eff)
    return min(share, low), max(share, high)


@dataclass(frozen=True)
class Estimate:
    """A figure about a population of files, measured on ``sample`` of its ``population`` files:
    ``value`` with its interval [``low``, ``high``] (all equal when measured on every file)."""

    value: float
    low: float
    high: float
    sample: int
    population: int

    @property
    def exact(self) -> bool:
        return self.sample >= self.population

    def __add__(self, other: Estimate) -> Estimate:
        """The sum of two figures; its interval adds the bounds (no independence assumed)."""
        return Estimate(self.value + other.value, self.low + other.low, self.high + other.high,
                        self.sample + other.sample, self.population + other.population)

    def scaled(self, factor: float) -> Estimate:
        return Estimate(self.value * factor, self.low * factor, self.high * factor, self.sample, self.population)

    def to_json(self, digits: int = 0) -> dict[str, Any]:
        def r(x: float) -> float | int:
            return round(x) if digits == 0 else round(x, digits)

        out: dict[str, Any] = {"value": r(self.value), "sample_files": self.sample, "of_files": self.population}
        if not self.exact:
            out["interval_95"] = [r(self.low), r(self.high)]
        return out

    def interval_text(self) -> str:
        """``exact``, or ``low-high (n of N files)``: the interval and the sample beside the figure."""
        if self.exact:
            return "exact"
        return f"{round(self.low):,}-{round(self.high):,} ({self.sample:,} of {self.population:,} files)"


ZERO = Estimate(0.0, 0.0, 0.0, 0, 0)


def ratio_total(found: Sequence[float], sizes: Sequence[float], size_total: float, population: int) -> Estimate:
    """The total of ``found`` over a population of files from a simple random sample of
    ``len(found)`` of its ``population`` files: the ratio estimator (``found`` per unit of
    ``sizes``, e.g. matching rows per row) times the population's known ``size_total``, with an
    approximate 95% interval (the ratio's variance with the finite-population correction),
    never below what the sample itself found nor above ``size_total``. Exact on every file."""
    n = len(found)
    seen = float(sum(found))
    if n >= population:
        return Estimate(seen, seen, seen, n, population)
    measured = float(sum(sizes))
    if n == 0 or measured <= 0:
        return Estimate(seen, seen, max(seen, float(size_total)), n, population)
    ratio = seen / measured
    value = ratio * size_total
    if n < 2:
        return Estimate(value, seen, max(seen, float(size_total)), n, population)
    mean_size = measured / n
    residuals = [x - ratio * y for x, y in zip(found, sizes, strict=True)]
    mean_residual = sum(residuals) / n
    s2 = sum((r - mean_residual) ** 2 for r in residuals) / (n - 1)
    half = Z95 * math.sqrt((1 - n / population) * s2 / (n * mean_size * mean_size)) * size_total
    return Estimate(value, max(seen, value - half), min(float(size_total), value + half), n, population)


def estimate(weights: Sequence[float], values: Sequence[float], total: float, cap: float, n: int,
             population: int) -> Estimate:
    """The stratified estimate of a sum over the population from the sampled ``values`` (each
    with its ``weight``), as a share of ``total`` (the population's known sum of the quantity)
    with Wilson's interval, capped by ``cap`` (what the query reads today)."""
    if population == 0 or total <= 0:
        return Estimate(0.0, 0.0, 0.0, n, population)
    point = sum([w * v for w, v in zip(weights, values, strict=True)])  # a list: quicker than a generator, same sum
    share = min(max(point / total, 0.0), 1.0)
    low, high = wilson(share, n, population)
    return Estimate(min(share * total, cap), min(low * total, cap), min(high * total, cap), n, population)
