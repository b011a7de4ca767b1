"""The one least-recently-used map of indexcore, bounded by total weight; every cache uses it.

Plans and decoded manifests are kept so a page's frames share one plan per snapshot, but a
server browsing many snapshots of a 50,000-file table must not keep them all: past
``max_weight`` (entries, bytes, rows: any weight the caller gives) the least recently used go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


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
            while self.weight > self.max_weight and len(self._items) > 1:
                gone, (value, w) = self._items.popitem(last=False)
                self.weight -= w
                if self._evicted is not None:
                    self._evicted(gone, value)

    def peek(self, key: Hashable, default: Any = None) -> Any:
        """The value without making it recently used."""
        hit = self._items.get(key)
        return default if hit is None else hit[0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.weight = 0
