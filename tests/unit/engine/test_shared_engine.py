"""The app's process-wide engine: one per process, synthesis below the web server's CPU priority, every submission named."""

import subprocess
import sys

from tests.support.paths import REPO

PROBE = """
import os, threading
from tts_app.catalog.shared_engine import ENGINE_NICENESS, close_engine, get_engine
engine = get_engine()
assert get_engine() is engine
from tts_app.engine import ClientMissing, SpeechParams
try:
    engine.submit("Nobody asks.")
    raise SystemExit("the served engine took work that names no client")
except ClientMissing:
    pass
audio = engine.submit("Priority check.", SpeechParams(client="addr:127.0.0.1")).result(timeout=60)
worker = next(t for t in threading.enumerate() if t.name == "tts-engine")
tasks = [int(t) for t in os.listdir("/proc/self/task")]
niceness = {tid: os.getpriority(os.PRIO_PROCESS, tid) for tid in tasks}
main = niceness[threading.main_thread().native_id]
print(len(audio), ENGINE_NICENESS, main, niceness[worker.native_id], sum(n == main + ENGINE_NICENESS for n in niceness.values()))
close_engine()
"""


def test_engine_threads_run_below_the_servers_priority():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    samples, step, main, worker, lowered = (int(x) for x in out.stdout.split())
    assert samples > 0 and step > 0
    assert worker == main + step  # the engine's worker thread
    assert lowered >= 3  # and the model's compute threads, started from it
