"""A fresh server under many requests: the output store stays under its cap, memory comes back when idle.

One server process for the module (its own Gradio folder and a small store cap), so the
figures belong to these requests alone. Kept lean for CI: short lines, a few minutes.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tts_app.assets import BUILTIN_VOICES_DIR
from tests.support.app_server import serve_app
from tts_app.storage.file_sizes import folder_bytes

pytestmark = pytest.mark.slow

STORE_CAP_BYTES = 1_500_000
SWEEP_EVERY_S = 1.0
WORKERS = 8
# Request counts scale with TTS_APP_SOAK_SCALE (default 1: 300 store calls, 60 + 600 soak requests);
# a smaller scale only for a machine too busy to run the whole soak (say so when you report it).
SCALE = float(os.environ.get("TTS_APP_SOAK_SCALE", "1"))


def _scaled(count: int) -> int:
    return max(10, round(count * SCALE))
CLIP = BUILTIN_VOICES_DIR / "f5_ref_en.wav"
TIMEOUT = httpx.Timeout(180.0)


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[tuple[str, int, Path, Path]]:
    gradio_dir = tmp_path_factory.mktemp("gradio")
    env = {
        "GRADIO_TEMP_DIR": str(gradio_dir),
        "TTS_APP_OUTPUT_MAX_BYTES": str(STORE_CAP_BYTES),
        "TTS_APP_OUTPUT_SWEEP_S": str(SWEEP_EVERY_S),
        "TTS_APP_IDLE_SESSION_S": "3",  # API sessions are forgotten 3 s after their last use (default 300)
    }
    log_path = artifacts_dir / "soak_server.log"
    with serve_app(log_path, env) as (base, process):
        yield base, process.pid, gradio_dir, log_path


IDLE_SESSION_S = 3.0  # TTS_APP_IDLE_SESSION_S above
FORGET_DEADLINE_S = 120.0  # a hang, not a timing: the sweeper runs every 5 s


def _wait_sessions_forgotten(log_path: Path, since: float) -> None:
    """Until the sweeper logs that it forgot sessions at least IDLE_SESSION_S after ``since`` (wall clock):
    every session used before ``since`` is gone then, and the sweep has given memory back (it trims first)."""
    deadline = time.monotonic() + FORGET_DEADLINE_S
    while True:
        for line in log_path.read_text(errors="replace").splitlines():
            if "forgot " in line and "finished sessions" in line:
                stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                if stamp >= since + IDLE_SESSION_S:
                    return
        assert time.monotonic() < deadline, f"no session sweep logged within {FORGET_DEADLINE_S:.0f} s; see {log_path}"
        time.sleep(0.5)


def _call(client: httpx.Client, base: str, api_name: str, data: list) -> str:
    event_id = client.post(f"{base}/gradio_api/call/{api_name}", json={"data": data}).json()["event_id"]
    text = client.get(f"{base}/gradio_api/call/{api_name}/{event_id}").text
    assert "event: complete" in text, text[-400:]
    return text


def _generate(client: httpx.Client, base: str, n: int, voice: dict | None = None) -> str:
    mode = "Upload or record" if voice else "Model's own voice"
    text = f"Line {n}.\nAnother {n}." if n % 3 == 0 else f"Request {n}."
    return _call(client, base, "generate", [text, mode, "lj_female_us", voice, 1.0, 1.0, n, n % 2 == 0, "", True, "piper-joe-medium"])


def _run_many(count: int, job: Callable[[httpx.Client, int], None]) -> None:
    local = threading.local()

    def one(n: int) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=TIMEOUT)
        job(local.client, n)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, range(count)))


def test_300_calls_keep_the_output_store_under_its_cap(fresh_server: tuple[str, int, Path]) -> None:
    base, _pid, gradio_dir, _log = fresh_server
    store = gradio_dir / "tts_app_outputs"
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(folder_bytes(store))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _run_many(_scaled(300), lambda client, n: _generate(client, base, n))
    finally:
        done.set()
        sampler.join()
    time.sleep(3 * SWEEP_EVERY_S)
    settled = folder_bytes(store)
    assert settled <= STORE_CAP_BYTES, settled
    # Between two sweeps (1 s or 8 files) the store may pass its cap by what was written meanwhile.
    assert max(samples) <= 2 * STORE_CAP_BYTES, max(samples)
    assert max(samples) > STORE_CAP_BYTES // 2, "the calls should have written enough to need sweeping"
    # Outputs are served from the store itself: no second copy elsewhere in Gradio's folder
    # (the built-in voice's preview clip is copied there once, and is not an output).
    # os.walk skips a folder the server's sweep removes mid-walk (rglob raised FileNotFoundError there).
    copies = [Path(folder) / name for folder, dirs, names in os.walk(gradio_dir)
              if Path(folder) != store and store not in Path(folder).parents
              for name in names if name.endswith(".wav") and name.startswith(("line-", "all-lines"))]  # fmt: skip
    assert not copies, copies[:5]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _mixed_job(base: str, upload_every: int) -> Callable[[httpx.Client, int], None]:
    """UI endpoints (generate, reference report with a fresh upload, A/B) and the API (streamed and whole)."""
    clip = CLIP.read_bytes()

    def job(client: httpx.Client, n: int) -> None:
        kind = n % 5
        if kind == 0:
            reply = client.post(f"{base}/v1/audio/speech", json={"model": "tts-1", "input": f"Request {n}.", "stream": False, "seed": n})
            assert reply.status_code == 200
        elif kind == 1:
            with client.stream("POST", f"{base}/v1/audio/speech", json={"model": "tts-1", "input": f"Streamed request {n}."}) as reply:
                assert reply.status_code == 200 and sum(len(c) for c in reply.iter_bytes()) > 1000
        elif kind == 2 and n % upload_every == 2:
            path = client.post(f"{base}/gradio_api/upload", files={"files": (f"clip{n}.wav", clip)}).json()[0]
            voice = {"path": path, "meta": {"_type": "gradio.FileData"}}
            _call(client, base, "reference_report", ["Upload or record", None, voice, ""])
            _generate(client, base, n, voice)
        elif kind == 3:
            _call(client, base, "ab_render", [f"Pair {n}.", True, "piper-joe-medium", "lj_female_us", 1.0, n, 1.0,
                                              "piper-joe-medium", "lj_female_us", 1.0, n + 1, 1.0])
        else:
            _generate(client, base, n)

    return job


def test_memory_comes_back_after_600_mixed_requests(fresh_server: tuple[str, int, Path], artifacts_dir: Path) -> None:
    base, pid, _gradio_dir, log_path = fresh_server
    job = _mixed_job(base, upload_every=10)
    _run_many(_scaled(60), job)  # warm-up: every kind of request, caches filled
    _wait_sessions_forgotten(log_path, time.time())
    warm = _rss_mb(pid)
    trace = []
    block = _scaled(100)
    for start in range(0, 6 * block, block):
        _run_many(block, lambda client, n, s=start: job(client, s + n))
        trace.append(round(_rss_mb(pid) - warm, 1))
    _wait_sessions_forgotten(log_path, time.time())  # idle: sessions forgotten, memory given back to the system
    idle = _rss_mb(pid)
    figures = {"requests": 6 * block, "rss_after_warmup_mb": round(warm, 1), "rss_after_idle_mb": round(idle, 1),
               "growth_during_mb": trace}
    (artifacts_dir / "soak_rss.json").write_text(json.dumps(figures, indent=2))
    assert idle - warm < 150, figures

