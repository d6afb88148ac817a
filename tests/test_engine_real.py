"""The engine on the embedded model: concurrency parity, streaming parity, resource use."""

import resource
import threading

import numpy as np
import pytest

from tts_app.engine import Engine


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.fixture(scope="module")
def engine(piper_backend):
    e = Engine(piper_backend, max_batch_size=16, max_wait_ms=10)
    yield e
    e.close()


@pytest.fixture(scope="module")
def solo_engine(piper_backend):
    e = Engine(piper_backend, max_batch_size=1, max_wait_ms=0)
    yield e
    e.close()


def test_32_concurrent_submitters_get_their_solo_audio(engine, solo_engine, sentences):
    jobs = [(c, r) for c in range(32) for r in range(4)]
    results: dict = {}

    def client(c: int) -> None:
        for r in range(4):
            text = sentences[(c + r) % len(sentences)]
            h = engine.submit(text, seed=c * 10 + r)
            results[(c, r)] = (text, np.concatenate(list(h)) if r % 2 else h.result(timeout=120), h.metrics)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert set(results) == set(jobs)
    assert max(max(m.batch_sizes) for _, _, m in results.values()) > 1
    for (c, r), (text, audio, _) in list(results.items())[::8]:  # every 8th against a solo run
        solo = solo_engine.submit(text, seed=c * 10 + r).result(timeout=60)
        assert solo.shape == audio.shape
        assert np.abs(solo - audio).max() <= 1e-4


def test_no_growth_of_threads_or_memory_over_500_requests(engine):
    """Memory settles to a plateau (allocator pools sized by the batch) and then stays flat."""
    # Warm-up at the same load as below (bursts of 50 fill the batch).
    for h in [engine.submit(f"Warm up number {i}.", seed=i) for i in range(50)]:
        h.result(timeout=60)
    threads0, rss0 = threading.active_count(), _rss_mb()
    rss_after_burst = []
    for start in range(0, 500, 50):
        hs = [engine.submit(f"Request number {i}.", seed=i) for i in range(start, start + 50)]
        for h in hs:
            h.result(timeout=60)
        rss_after_burst.append(_rss_mb())
    assert threading.active_count() == threads0
    # A leak grows with every request; a pool stops growing. Compare the last 350 requests.
    late_growth = rss_after_burst[-1] - rss_after_burst[2]
    trace = ", ".join(f"{r - rss0:+.0f}" for r in rss_after_burst)
    assert late_growth < 25, f"RSS grew {late_growth:.1f} MB over the last 350 requests (MB after each 50: {trace})"
    assert rss_after_burst[-1] - rss0 < 400, f"RSS grew {rss_after_burst[-1] - rss0:.1f} MB (MB after each 50: {trace})"
