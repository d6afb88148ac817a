"""Run 500 requests through a fresh engine; print its threads, RSS and Python-heap traces as JSON.

Used by tests/unit/engine/test_engine_real.py in a subprocess, so the figures belong to the engine
alone and not to whatever other tests left in the pytest process.
"""

import json
import sys
import threading
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root, for tts_app

from tts_app.engine import Engine  # noqa: E402
from tts_app.backends.params import SpeechParams  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    with Engine(max_batch_size=16) as engine:
        # Warm-up at the same load as below (bursts of 50 fill the batch).
        for h in [engine.submit(f"Warm up number {i}.", SpeechParams(seed=i)) for i in range(50)]:
            h.result(timeout=60)
        threads0, rss0 = threading.active_count(), rss_mb()
        tracemalloc.start()  # Python objects and NumPy buffers: where a retained request would show
        trace, heap = [], []
        for start in range(0, 500, 50):
            hs = [engine.submit(f"Request number {i}.", SpeechParams(seed=i)) for i in range(start, start + 50)]
            for h in hs:
                h.result(timeout=60)
            trace.append(rss_mb() - rss0)
            heap.append(tracemalloc.get_traced_memory()[0] / 2**20)
        threads1 = threading.active_count()
    print(json.dumps({"threads_before": threads0, "threads_after": threads1, "rss_start_mb": rss0, "rss_growth_mb": trace,
                      "python_heap_mb": heap}))


if __name__ == "__main__":
    main()
