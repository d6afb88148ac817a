"""The profile cache builds a missing value once, however many threads ask for it meanwhile."""

from __future__ import annotations

import threading
import time

import pytest

from tts_app.voice.cache import LruCache


def test_concurrent_requests_for_one_key_share_one_build() -> None:
    cache: LruCache[int] = LruCache(maxsize=4)
    builds: list[int] = []
    release = threading.Event()

    def build() -> int:
        builds.append(1)
        release.wait(5)
        return 42

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_create("clip", build))) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # all four are in: one building, three waiting
    release.set()
    for thread in threads:
        thread.join(5)
    assert results == [42] * 4 and len(builds) == 1
    assert cache.info().misses == 1 and cache.info().hits == 3


def test_a_failed_build_is_not_cached_and_every_waiter_sees_it() -> None:
    cache: LruCache[int] = LruCache(maxsize=4)
    release = threading.Event()

    def fail() -> int:
        release.wait(5)
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
    time.sleep(0.2)
    release.set()
    for thread in threads:
        thread.join(5)
    assert errors == ["not a voice"] * 3
    assert cache.get_or_create("bad", lambda: 7) == 7  # built again, and this time it works
    with pytest.raises(KeyError):
        cache.get_or_create("other", lambda: {}["missing"])
