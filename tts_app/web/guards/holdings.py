"""Who holds the most: the rule every capped table shares when it is full.

A full table (session bindings, open connections) must never refuse a newcomer: a new entry from a
holder with fewer than the heaviest takes the place of the heaviest holder's oldest entry, and only a
holder with as many as anyone is refused. ``Holdings`` keeps each holder's entries oldest first and
the holders in buckets by how many they hold, so the heaviest is found in constant time. Not
thread-safe: its owner holds its own lock (or runs on one event loop).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable


class Holdings:
    """Entries by holder, oldest (or least recently used) first."""

    def __init__(self) -> None:
        self._entries: dict[str, OrderedDict[Hashable, None]] = {}
        self._holding: dict[int, set[str]] = {}  # n -> the holders of n entries
        self._top = 0  # the most any holder holds

    def count(self, holder: str) -> int:
        return len(self._entries.get(holder, ()))

    def add(self, holder: str, entry: Hashable) -> None:
        held = self.count(holder)
        self._entries.setdefault(holder, OrderedDict())[entry] = None
        self._move(holder, held, held + 1)

    def remove(self, holder: str, entry: Hashable) -> None:
        mine = self._entries.get(holder)
        if mine is None or entry not in mine:
            return
        del mine[entry]
        self._move(holder, len(mine) + 1, len(mine))
        if not mine:
            del self._entries[holder]  # no key left behind per holder ever seen

    def touch(self, holder: str, entry: Hashable) -> None:
        """``entry`` was used: it is its holder's newest."""
        self._entries[holder].move_to_end(entry)

    def heaviest(self, newcomer: str) -> tuple[str, Hashable] | None:
        """For a full table: the (holder, oldest entry) to give up its place to ``newcomer``, or None when
        ``newcomer`` holds as many as anyone (it is the one to refuse)."""
        if self.count(newcomer) >= self._top:
            return None
        holder = next(iter(self._holding[self._top]))
        return holder, next(iter(self._entries[holder]))

    def _move(self, holder: str, was: int, now: int) -> None:
        if was:
            bucket = self._holding[was]
            bucket.discard(holder)
            if not bucket:
                del self._holding[was]
        if now:
            self._holding.setdefault(now, set()).add(holder)
        self._top = max(self._top, now)
        while self._top and self._top not in self._holding:
            self._top -= 1
