"""The LRU's batch calls (issue 30, item 5): ``put_many`` leaves the map, its weight and the values
it evicts (in order) exactly as the same ``put`` calls one by one would, taking the lock once;
``replace=False`` keeps a held value as ``get``-then-``put`` did."""

from __future__ import annotations

import random
import threading

from indexcore.cache import LRU


class _CountingLock:
    """A lock that counts how often it is taken."""

    def __init__(self):
        self.taken = 0
        self._lock = threading.Lock()

    def __enter__(self):
        self.taken += 1
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)


def _state(lru: LRU) -> tuple:
    return list(lru._items.items()), lru.weight


def test_put_many_equals_puts_one_by_one() -> None:
    rng = random.Random(7)
    for trial in range(300):
        budget = rng.randint(1, 40)
        gone_one, gone_many = [], []
        one = LRU(budget, evicted=lambda k, v, gone=gone_one: gone.append((k, v)))
        many = LRU(budget, evicted=lambda k, v, gone=gone_many: gone.append((k, v)))
        history = [(("old", k), k, rng.randint(1, 9) if trial % 2 else 1) for k in range(rng.randint(0, 6))]
        for lru in (one, many):  # the same history before the batch
            for key, value, weight in history:
                lru.put(key, value, weight)
        gone_one.clear()
        gone_many.clear()
        batch = [(rng.choice([("old", rng.randint(0, 6)), ("new", rng.randint(0, 12))]), rng.random(),
                  rng.randint(1, 15)) for _ in range(rng.randint(0, 12))]
        replace = trial % 3 != 0
        for key, value, weight in batch:
            if replace or one.get(key) is None:
                one.put(key, value, weight)
        many.put_many(batch, replace=replace)
        assert _state(many) == _state(one), (trial, batch)
        assert gone_many == gone_one, trial


def test_put_many_takes_the_lock_once() -> None:
    lru = LRU(1000)
    lru._lock = _CountingLock()
    lru.put_many([(k, str(k), 1) for k in range(500)])
    assert lru._lock.taken == 1
    assert [lru.peek(k, "-") for k in (499, 0, 1000, 7)] == ["499", "0", "-", "7"]
    lru.put_many([(0, "new", 1), (1000, "x", 1)], replace=False)  # 0 kept as it was, made recent
    assert lru.peek(0) == "0" and list(lru._items)[-2:] == [0, 1000] and lru.weight == 501
