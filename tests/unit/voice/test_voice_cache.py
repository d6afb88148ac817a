"""The profile cache builds a missing value once, however many threads ask for it meanwhile."""

from __future__ import annotations

import threading
import time

import pytest

from tts_app.voice.cache import LruCache

WAIT_S = 30.0  # a deadline for a hang, not a timing: the threads are synchronised on the cache's state


def _until_waiting(cache: LruCache, waiters: int) -> int:
    """Hold a build until ``waiters`` other threads asked for its key (the cache counts each as a hit
    before it waits), or WAIT_S passed; returns how many had asked."""
    deadline = time.monotonic() + WAIT_S
    while cache.info().hits < waiters and time.monotonic() < deadline:
        time.sleep(0.005)
    return cache.info().hits


def test_concurrent_requests_for_one_key_share_one_build() -> None:
    cache: LruCache[int] = LruCache(maxsize=4)
    builds: list[int] = []
    waiting_at_the_end: list[int] = []

    def build() -> int:
        builds.append(1)
        waiting_at_the_end.append(_until_waiting(cache, 3))
        return 42

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_create("clip", build))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    # The three others asked while the one build ran (so they waited for it), and did not build.
    assert waiting_at_the_end == [3]
    assert results == [42] * 4 and len(builds) == 1
    assert cache.info().misses == 1 and cache.info().hits == 3


def test_a_failed_build_is_not_cached_and_every_waiter_sees_it() -> None:
    cache: LruCache[int] = LruCache(maxsize=4)
    waiting_at_the_end: list[int] = []

    def fail() -> int:
        waiting_at_the_end.append(_until_waiting(cache, 2))
        raise ValueError("not a voice")

    errors: list[str] = []

    def ask() -> None:
        try:
            cache.get_or_create("bad", fail)
        except ValueError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert waiting_at_the_end == [2]  # one failed build, seen by the two that waited for it
    assert errors == ["not a voice"] * 3
    assert cache.get_or_create("bad", lambda: 7) == 7  # built again, and this time it works
    with pytest.raises(KeyError):
        cache.get_or_create("other", lambda: {}["missing"])
