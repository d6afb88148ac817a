"""Issue 24 item 11 and issue 26 item 8: hostile inputs do not persist into start-up, and the page
says when the model will be ready.

The warm-up shape log keeps only normal text-stage shapes from successful runs, at most
TTS_APP_SHAPE_LOG_MAX of them, and a restart replays only the few most common: after a session
of hostile lengths, the restarted server's idle memory stays within 50 MB of the first start's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(300.0)


def test_the_page_says_when_the_model_will_be_ready(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tts_app.web.ui.speak.loading_status as status
    from tts_app.catalog import load_time

    monkeypatch.setenv("TTS_APP_CACHE_DIR", str(tmp_path))
    (tmp_path / "load_seconds.txt").write_text("40.0\n")
    load_time.loading_began()
    monkeypatch.setattr(status, "engine_loaded", lambda: False)
    text, timer = status.loading_status("Ready.")
    assert text.startswith("Model loading… ready in ~") and " s " in text and timer.active
    assert 30 <= int(text.split("~")[1].split()[0]) <= 40
    assert status.loading_status("**Done:** 2 lines")[0] == status.gr.skip()  # a run's own status is left alone
    monkeypatch.setattr(status, "engine_loaded", lambda: True)
    text, timer = status.loading_status(text)
    assert text == "Ready." and not timer.active
    load_time.loading_ended()
    assert float((tmp_path / "load_seconds.txt").read_text()) < 40


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _idle_rss_mb(base: str, pid: int) -> float:
    """The server's RSS once ready and settled: the model loaded, one request served, then the
    RSS read until it stops falling (the idle trimmer gives freed memory back after a few seconds)."""
    deadline = time.monotonic() + 300
    while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the model did not load"
        time.sleep(0.5)
    reply = httpx.post(f"{base}/v1/audio/speech", json={"model": "tts-1", "input": "Ready now.", "response_format": "wav", "stream": False}, timeout=TIMEOUT)
    assert reply.status_code == 200
    readings = [_rss_mb(pid)]
    while len(readings) < 7 or min(readings[-6:]) < min(readings[:-6]) - 1:  # 3 s without a new low
        time.sleep(0.5)
        readings.append(_rss_mb(pid))
        assert len(readings) < 120, readings
    return min(readings)


def _hostile_lengths(base: str) -> None:
    """First sentences of many lengths at the slowest speeds, each once (the text stage's flow meets up to
    ~3,000 frames): streamed, read until the first audio, when the first chunk's text stage has run."""
    with httpx.Client(timeout=TIMEOUT) as client:
        for words in range(2, 24):
            for speed in (0.25, 0.35, 0.5):
                body = {"model": "tts-1", "input": "banana " * words, "speed": speed, "response_format": "pcm"}
                with client.stream("POST", f"{base}/v1/audio/speech", json=body) as reply:
                    assert reply.status_code == 200
                    next(reply.iter_bytes())


def test_a_hostile_session_does_not_grow_the_next_start(tmp_path: Path, artifacts_dir: Path) -> None:
    env = {"TTS_APP_CACHE_DIR": str(tmp_path / "cache")}
    with serve_app(artifacts_dir / "warm_restart_1.log", env) as (base, process):
        first = _idle_rss_mb(base, process.pid)
        _hostile_lengths(base)
    logs = list((tmp_path / "cache").rglob("shapes.jsonl"))
    lines = len(logs[0].read_text().splitlines()) if logs else 0
    with serve_app(artifacts_dir / "warm_restart_2.log", env) as (base, process):
        second = _idle_rss_mb(base, process.pid)
    (artifacts_dir / "warm_restart.txt").write_text(f"idle RSS first start {first:.0f} MB, after a hostile session and a restart {second:.0f} MB; shape log {lines} lines\n")
    assert lines <= int(os.environ.get("TTS_APP_SHAPE_LOG_MAX", "64"))  # old code: 102 lines here
    assert second - first <= 50, (first, second, lines)
