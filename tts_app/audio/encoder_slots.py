"""ffmpeg encoder slots: a few for the whole server, and at most a share of them per visitor.

An AAC or Opus body is encoded by an ffmpeg process (~20 MB) that lives as long as the body
streams, so a client that never reads holds its process for the whole reply. One global pool
let one address's eight unread requests refuse every other visitor; now one visitor holds at
most ``PER_CLIENT`` of the ``TOTAL`` slots (its next request gets a 429 for itself only), and a
slot is taken when audio starts flowing, never while a request waits in the engine's queue.
"""

from __future__ import annotations

import threading
from collections import Counter

TOTAL = 8  # ffmpeg processes at once; more get EncoderBusy, not a fork bomb
PER_CLIENT = 2  # one visitor's share: four visitors' floods are needed to fill the pool
SHARE_RETRY_AFTER_S = 5  # a streamed reply of a few sentences is over by then


class EncoderBusy(RuntimeError):
    """Every ffmpeg encoder slot is taken; the client should retry (503)."""

    retry_after_s: float = 1.0


class EncoderShareFull(EncoderBusy):
    """This client holds its share of the slots already (429, for this client only)."""

    retry_after_s = float(SHARE_RETRY_AFTER_S)


class EncoderSlots:
    """``total`` slots, at most ``per_client`` held under one client key."""

    def __init__(self, total: int = TOTAL, per_client: int = PER_CLIENT) -> None:
        self.total, self.per_client = total, per_client
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        """EncoderShareFull when ``client`` holds its share now (a cheap refusal before queueing)."""
        with self._lock:
            if self._held[client] >= self.per_client:
                raise EncoderShareFull(f"you have {self._held[client]} audio encodes running, the limit per client; retry once one ends")

    def take(self, client: str) -> None:
        """One slot for ``client``; EncoderShareFull (its share is held) or EncoderBusy (all are)."""
        with self._lock:
            if self._held[client] >= self.per_client:
                raise EncoderShareFull(f"you have {self._held[client]} audio encodes running, the limit per client; retry once one ends")
            if sum(self._held.values()) >= self.total:
                raise EncoderBusy("too many audio encodes at once; retry shortly")
            self._held[client] += 1

    def give(self, client: str) -> None:
        with self._lock:
            self._held[client] -= 1
            if self._held[client] <= 0:
                del self._held[client]  # no key left behind per visitor ever seen

    def held(self, client: str | None = None) -> int:
        """Slots held by ``client``, or by everyone."""
        with self._lock:
            return self._held[client] if client is not None else sum(self._held.values())


SLOTS = EncoderSlots()
