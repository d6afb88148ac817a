"""A small most-recently-used cache of built objects (analysed voices, voice states) by key."""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class LRUCache(Generic[T]):
    """Objects by key, the most recent ``size`` kept; ``get`` builds what is missing."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._items: OrderedDict[str, T] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str, build: Callable[[], T]) -> T:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        item = build()
        self._items[key] = item
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return item
