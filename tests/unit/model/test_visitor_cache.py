"""The per-visitor cache of built objects (a Pocket TTS clip's voice state): LRU, bounded per visitor in entries and
bytes and for all visitors in bytes; a visitor never gets another's entry, and one visitor's flood evicts its own."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from tts_app.models.layers.visitor_cache import VisitorCache


def _cache(**bounds) -> tuple[VisitorCache, list]:
    built = []

    def size_of(item) -> int:
        return item.size
    cache = VisitorCache(size_of, **bounds)
    return cache, built


def _build(built: list, name: str, size: int = 10):
    def make():
        built.append(name)
        return SimpleNamespace(name=name, size=size)
    return make


def test_a_visitor_gets_its_own_entry_and_never_anothers() -> None:
    cache, built = _cache()
    a = cache.get("A", "clip", _build(built, "A's"))
    assert cache.get("A", "clip", _build(built, "again")) is a and built == ["A's"]
    b = cache.get("B", "clip", _build(built, "B's"))  # the same clip's key: B's own state, built for B
    assert b is not a and built == ["A's", "B's"] and cache.keys("B") == ["clip"]


def test_a_visitors_bounds_evict_its_own_oldest() -> None:
    cache, built = _cache(entries=3, visitor_bytes=100, total_bytes=10_000)
    cache.get("A", "a1", _build(built, "a1"))
    for i in range(5):
        cache.get("B", f"b{i}", _build(built, f"b{i}"))
    assert cache.keys("B") == ["b2", "b3", "b4"] and cache.keys("A") == ["a1"]
    cache.get("B", "b2", _build(built, "x"))  # used: now the most recent
    cache.get("B", "big", _build(built, "big", size=95))  # over B's 100 bytes: B's oldest go
    assert cache.keys("B") == ["big"] and cache.keys("A") == ["a1"]


def test_a_flood_over_the_total_evicts_the_flooder_first() -> None:
    cache, built = _cache(entries=100, visitor_bytes=1_000, total_bytes=300)
    for v in ("A", "B"):
        cache.get(v, "mine", _build(built, v, size=50))
    for i in range(20):
        cache.get("F", f"f{i}", _build(built, f"f{i}", size=40))
    assert cache.keys("A") == ["mine"] and cache.keys("B") == ["mine"]
    assert cache.nbytes() <= 300 and len(cache.keys("F")) == 5


@pytest.mark.parametrize("visitors", [1, 50])
def test_the_total_stays_bounded(visitors: int) -> None:
    cache, built = _cache(entries=4, visitor_bytes=64, total_bytes=500)
    rng = np.random.default_rng(0)
    for i in range(2000):
        cache.get(f"v{rng.integers(visitors)}", f"k{i}", _build(built, str(i), size=int(rng.integers(1, 60))))
        assert cache.nbytes() <= 500


def test_a_build_under_way_is_waited_for_not_repeated() -> None:
    """A second ask for the same visitor's key while it is built gets that build's entry (the page's build, awaited
    by the Generate after it); another visitor's ask builds its own; a failed build is raised to both, then retried."""
    cache, built = _cache()
    go, started = threading.Event(), threading.Event()

    def held():
        started.set()
        assert go.wait(60)
        return _build(built, "held")()
    got: list = []
    first = threading.Thread(target=lambda: got.append(cache.get("A", "clip", held)))
    first.start()
    assert started.wait(60)
    assert cache.building("A") == 1 and cache.building("B") == 0 and cache.peek("A", "clip") is None
    second = threading.Thread(target=lambda: got.append(cache.get("A", "clip", _build(built, "again"))))
    second.start()
    b = cache.get("B", "clip", _build(built, "B's"))
    go.set()
    first.join(60)
    second.join(60)
    assert built == ["B's", "held"] and got[0] is got[1] and got[0] is not b and cache.building("A") == 0
    assert cache.peek("A", "clip") is got[0]

    def fails():
        raise ValueError("not a clip")
    with pytest.raises(ValueError, match="not a clip"):
        cache.get("A", "bad", fails)
    assert cache.building("A") == 0 and cache.get("A", "bad", _build(built, "retried")).name == "retried"
