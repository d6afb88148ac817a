"""A small thread-safe LRU cache with hit/miss counters (profiles by content hash, adapter plans)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    size: int
    maxsize: int


class _Pending:
    """A value being built by one thread, waited for by the others that asked for the same key."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None


class LruCache(Generic[V]):
    """get_or_create() builds a missing value once: other threads asking for the same key meanwhile
    wait for that build (a reference analysed after its upload is not analysed again by the
    Generate that follows); a failed build is not cached, and each waiter gets its error."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._pending: dict[Hashable, _Pending] = {}
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def get_or_create(self, key: Hashable, create: Callable[[], V]) -> V:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self._hits += 1
                return self._items[key]
            pending = self._pending.get(key)
            builder = pending is None
            if builder:
                pending = self._pending[key] = _Pending()
                self._misses += 1
            else:
                self._hits += 1
        assert pending is not None
        if not builder:
            pending.done.wait()
            if pending.error is not None:
                raise pending.error
            return pending.value  # type: ignore[return-value]
        try:
            value = create()
        except BaseException as exc:
            pending.error = exc
            raise
        else:
            pending.value = value
            with self._lock:
                self._items[key] = value
                self._items.move_to_end(key)
                while len(self._items) > self.maxsize:
                    self._items.popitem(last=False)
            return value
        finally:
            with self._lock:
                self._pending.pop(key, None)
            pending.done.set()

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._items), self.maxsize)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._hits = 0
            self._misses = 0
