"""The one least-recently-used map of indexcore, bounded by total weight; every cache uses it.

Plans and decoded manifests are kept so a page's frames share one plan per snapshot, but a
server browsing many snapshots of a 50,000-file table must not keep them all: past
``max_weight`` (entries, bytes, rows: any weight the caller gives) the least recently used go.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import pyarrow as pa

_ABSENT = object()


def release_unused() -> None:
    """Give the memory a large build freed back to the OS: Arrow's pool, then (glibc) the C heap.

    A plan's manifest decode and a census walk free most of what they allocate, but glibc keeps
    freed heap pages: after a 100,000-file plan the process held about 0.7 KiB per live file more
    than the plan's buffers, and after the census about 0.4 KiB more, until ``malloc_trim``.
    Called once per large build (a plan, a kept view, a page's frame), not per file; a no-op for
    the C heap without glibc. Thread-safe (glibc locks each arena it trims)."""
    pa.default_memory_pool().release_unused()
    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # no process handle to look symbols up in (Windows)
        return
    if trim is not None:
        trim(0)


class LRU:
    """``key -> value`` with a weight per value; the least recently used leave past ``max_weight``.

    One value heavier than the whole budget is still kept (alone), so a caller always gets back
    what it just stored. Thread-safe: sessions of one server share tables. ``evicted(key, value)``
    is told of each value pushed out (under the map's lock), for an owner that indexes its keys.
    """

    def __init__(self, max_weight: int, evicted: Callable[[Hashable, Any], None] | None = None):
        self.max_weight = max(int(max_weight), 1)
        self._evicted = evicted
        self.weight = 0
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.RLock] = {}  # key -> held while one caller builds it

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return default
            self._items.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: Any, weight: int = 1) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            self._items[key] = (value, weight)
            self.weight += weight
            self._evict()

    def _evict(self) -> None:
        """The least recently used leave until the weight is within the budget (one always stays);
        the lock held."""
        while self.weight > self.max_weight and len(self._items) > 1:
            gone, (value, w) = self._items.popitem(last=False)
            self.weight -= w
            if self._evicted is not None:
                self._evicted(gone, value)

    def put_many(self, items: Iterable[tuple[Hashable, Any, int]], replace: bool = True) -> None:
        """:meth:`put` of each ``(key, value, weight)`` under one taking of the lock (a page keeping
        thousands of readers took it twice per reader). ``replace=False``: a key already held keeps
        its value and is made recently used (as a :meth:`get` that finds it before a ``put``)."""
        held = self._items
        with self._lock:
            for key, value, weight in items:
                old = held.get(key)
                if old is not None:
                    if not replace:
                        held.move_to_end(key)
                        continue
                    del held[key]
                    self.weight -= old[1]
                held[key] = (value, weight)
                self.weight += weight
                self._evict()  # after each, as put: a key pushed out is not held for the next

    def get_or_build(self, key: Hashable, build: Callable[[], Any], weight: Callable[[Any], int] | None = None) -> Any:
        """The value under ``key``, else ``build()`` kept under it (weighed by ``weight(value)``, 1
        without). Built once however many threads ask at the same time: the others wait for the
        first and share its value (20 sessions opening one snapshot keep one plan, not 20)."""
        hit = self.get(key, _ABSENT)
        if hit is not _ABSENT:
            return hit
        with self._lock:
            building = self._building.setdefault(key, threading.RLock())  # re-entered: built again, as before
        try:
            with building:
                hit = self.get(key, _ABSENT)  # built meanwhile by the thread this one waited for
                if hit is _ABSENT:
                    hit = build()
                    self.put(key, hit, max(int(weight(hit)), 1) if weight else 1)
        finally:
            with self._lock:
                if self._building.get(key) is building:  # a waiter holds its own reference
                    del self._building[key]
        return hit

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The value without making it recently used."""
        hit = self._items.get(key)
        return default if hit is None else hit[0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.weight = 0


def frames_weight(values: Iterable[Any], sample_rows: int = 1024) -> int:
    """The bytes a cache weighs a result's frames at: pandas' deep memory count, estimated.

    Numeric columns and the index are counted exactly (``memory_usage(deep=False)``); the Python
    objects of object columns (paths, decisions, min/max text) are counted deep on an evenly spaced
    sample of about ``sample_rows`` rows and scaled to the frame, and exactly below twice that (a
    What-if explain of 9,104 files: 17 object columns counted deep took 19 ms, about a tenth of
    its page's own work). An estimate for a budget, not a bound: one long text among short ones
    outside the sample is not seen. Values without ``memory_usage`` (text, dicts) weigh nothing."""
    total = 0
    for frame in values:
        if not hasattr(frame, "memory_usage"):
            continue
        rows = len(frame)
        if rows <= 2 * sample_rows:
            total += int(frame.memory_usage(deep=True).sum())
            continue
        objects = [i for i, dtype in enumerate(frame.dtypes) if dtype.kind == "O"]  # Python objects, by position
        total += int(frame.memory_usage(deep=False).sum())
        if objects:
            sample = frame.iloc[::rows // sample_rows, objects]
            deep = sample.memory_usage(deep=True, index=False).sum() - sample.memory_usage(deep=False, index=False).sum()
            total += int(deep * rows / len(sample))
    return total
