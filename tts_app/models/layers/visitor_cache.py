"""Built objects (a clip's voice state) cached per visitor: each visitor's own, least recently used out, bounded in
entries and bytes per visitor and in bytes for all together.

A visitor never sees another's entries (the key includes who asked), so B cannot use, or time, A's clip. A visitor
over its own bounds evicts only its own oldest entries; when all visitors together are over ``total_bytes``, the
entries go from whoever holds the most bytes, oldest first: one visitor's uploads cannot push out everyone else's.

An entry is built outside the lock, and only once: a second caller asking for the same visitor's key while it is
being built waits for that build (a clip's voice state prepared when the page got the clip is awaited by the
Generate that follows, not computed again beside it). ``building(visitor)`` says how many of a visitor's builds are
under way, so that work started ahead of time can be kept to one at a time per visitor.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable, Generic, Hashable, Optional, TypeVar

T = TypeVar("T")


class VisitorCache(Generic[T]):
    def __init__(self, size_of: Callable[[T], int], entries: int = 4, visitor_bytes: int = 64 << 20,
                 total_bytes: int = 256 << 20) -> None:
        self.size_of, self.entries, self.visitor_bytes, self.total_bytes = size_of, entries, visitor_bytes, total_bytes
        self._by_visitor: dict[Optional[str], OrderedDict[Hashable, tuple[T, int]]] = {}
        self._lock = threading.Lock()
        self._building: dict[tuple[Optional[str], Hashable], Future[T]] = {}

    def get(self, visitor: Optional[str], key: Hashable, build: Callable[[], T]) -> T:
        """``visitor``'s entry for ``key``, built (outside the lock) when missing, then the bounds kept; a build of the
        same entry already under way is waited for (its exception raised here too)."""
        with self._lock:
            found = self._find(visitor, key)
            if found is not None:
                return found
            pending = self._building.get((visitor, key))
            if pending is None:
                mine: Future[T] = Future()
                self._building[(visitor, key)] = mine
        if pending is not None:
            return pending.result()
        try:
            item = build()
        except BaseException as exc:
            with self._lock:
                del self._building[(visitor, key)]
            mine.set_exception(exc)
            raise
        size = int(self.size_of(item))
        with self._lock:
            del self._building[(visitor, key)]
            own = self._by_visitor.setdefault(visitor, OrderedDict())
            own[key] = (item, size)
            own.move_to_end(key)
            while len(own) > self.entries or (len(own) > 1 and sum(s for _, s in own.values()) > self.visitor_bytes):
                own.popitem(last=False)
            self._shrink()
        mine.set_result(item)
        return item

    def peek(self, visitor: Optional[str], key: Hashable) -> Optional[T]:
        """``visitor``'s entry for ``key`` when it is built (made the most recent), else None; never builds."""
        with self._lock:
            return self._find(visitor, key)

    def building(self, visitor: Optional[str]) -> int:
        """How many of ``visitor``'s entries are being built now."""
        with self._lock:
            return sum(1 for v, _ in self._building if v == visitor)

    def _find(self, visitor: Optional[str], key: Hashable) -> Optional[T]:
        own = self._by_visitor.get(visitor)
        if own is None or key not in own:
            return None
        own.move_to_end(key)
        return own[key][0]

    def _shrink(self) -> None:
        totals = {v: sum(s for _, s in d.values()) for v, d in self._by_visitor.items()}
        while sum(totals.values()) > self.total_bytes:
            largest = max(totals, key=totals.__getitem__)
            _, (_, size) = self._by_visitor[largest].popitem(last=False)
            totals[largest] -= size
            if not self._by_visitor[largest]:
                del self._by_visitor[largest], totals[largest]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(d) for d in self._by_visitor.values())

    def keys(self, visitor: Optional[str]) -> list[Hashable]:
        """``visitor``'s keys, oldest first (tests and the page's own listing only)."""
        with self._lock:
            return list(self._by_visitor.get(visitor, ()))

    def nbytes(self) -> int:
        with self._lock:
            return sum(s for d in self._by_visitor.values() for _, s in d.values())
