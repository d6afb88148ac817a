"""Issue 24 item 11 and issue 26 item 8: hostile inputs do not persist into start-up, and the page
says when the model will be ready.

The warm-up shape log keeps only normal text-stage shapes from successful runs, at most
TTS_APP_SHAPE_LOG_MAX of them, and a restart replays only the few most common: after a session
of hostile lengths, the restarted server's idle memory stays within 7 % of the first start's (50 MB).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests.support.app_server import serve_app
from tts_app.web.memory_trim import TRIMMED

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(300.0)


def test_the_page_says_when_the_model_will_be_ready(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tts_app.web.ui.speak.loading_status as status
    from tts_app.catalog import load_time

    now = [1000.0]  # the load's clock, moved by hand: the estimate and the record follow it exactly
    monkeypatch.setattr(load_time, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setenv("TTS_APP_CACHE_DIR", str(tmp_path))
    (tmp_path / "load_seconds.txt").write_text("40.0\n")  # the last start took 40 s
    load_time.loading_began()
    monkeypatch.setattr(status, "engine_loaded", lambda: False)
    now[0] += 5.0
    text, timer = status.loading_status("Ready.")
    assert text.startswith("Model loading… ready in ~35 s ") and timer.active, text
    assert status.loading_status("**Done:** 2 lines")[0] == status.gr.skip()  # a run's own status is left alone
    monkeypatch.setattr(status, "engine_loaded", lambda: True)
    text, timer = status.loading_status(text)
    assert text == "Ready." and not timer.active
    now[0] += 7.0
    load_time.loading_ended()
    assert (tmp_path / "load_seconds.txt").read_text() == "12.0\n"  # this start's 12 s, for the next one


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _trims(log: Path) -> int:
    """How many idle trims the server has logged (memory_trim.IdleTrimmer, at DEBUG)."""
    return log.read_text(errors="replace").count(TRIMMED)


def _rollup(pid: int) -> str:
    """The process's smaps_rollup in short: resident memory, anonymous (heap, arrays) and file-backed (libraries, mapped blobs)."""
    mb = {k: int(v.split()[0]) / 1024 for k, _, v in (ln.partition(":") for ln in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])}
    return f"Rss {mb['Rss']:.0f} MB = anonymous {mb['Anonymous']:.0f} + file-backed {mb['Rss'] - mb['Anonymous']:.0f}"


def _idle_rss_mb(base: str, pid: int, log: Path) -> tuple[float, str]:
    """The server's RSS once ready and settled, and its smaps_rollup summary then: the model loaded,
    one request served, the idle trimmer's trim that follows it logged, then the RSS read until it
    has not fallen for 3 s.

    Waiting for the trim is what makes two starts comparable: it comes 3 to 6 s after the last
    request (its thread checks every 3 s), and until then RSS is 50 to 120 MB above its trimmed
    level (803-890 MB before, 754-773 after, measured). A reading that stopped after 3 s without
    a new low caught one start trimmed and the other not: 772 and 846 MB in a failed run, where
    the settled restart idles 10 to 18 MB below the first start.
    """
    deadline = time.monotonic() + 300
    while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the model did not load"
        time.sleep(0.5)
    reply = httpx.post(f"{base}/v1/audio/speech", json={"model": "tts-1", "input": "Ready now.", "response_format": "wav", "stream": False}, timeout=TIMEOUT)
    assert reply.status_code == 200
    # One more request after the reply: the trimmer trims once per idle spell, so if its trim fell
    # while the speech was served, only new activity brings the trim after it.
    assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
    trims = _trims(log)
    while _trims(log) == trims:
        assert time.monotonic() < deadline, "the idle trimmer never ran"
        time.sleep(0.2)
    readings = [_rss_mb(pid)]
    while len(readings) < 7 or min(readings[-6:]) < min(readings[:-6]) - 1:  # 3 s without a new low
        time.sleep(0.5)
        readings.append(_rss_mb(pid))
        assert len(readings) < 120, readings
    return min(readings), _rollup(pid)


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
    env = {"TTS_APP_CACHE_DIR": str(tmp_path / "cache"), "LOG_LEVEL": "DEBUG"}  # DEBUG: the idle trimmer's line
    logs = [artifacts_dir / "warm_restart_1.log", artifacts_dir / "warm_restart_2.log"]
    with serve_app(logs[0], env) as (base, process):
        first, first_rollup = _idle_rss_mb(base, process.pid, logs[0])
        _hostile_lengths(base)
    shape_logs = list((tmp_path / "cache").rglob("shapes.jsonl"))
    lines = len(shape_logs[0].read_text().splitlines()) if shape_logs else 0
    with serve_app(logs[1], env) as (base, process):
        second, second_rollup = _idle_rss_mb(base, process.pid, logs[1])
    (artifacts_dir / "warm_restart.txt").write_text(
        f"idle RSS first start {first:.0f} MB, after a hostile session and a restart {second:.0f} MB; shape log {lines} lines\n"
        f"first start: {first_rollup}\nrestart: {second_rollup}\n"
    )
    assert lines <= int(os.environ.get("TTS_APP_SHAPE_LOG_MAX", "64"))  # old code: 102 lines here
    # The mechanism, read from the restart's log: it replayed at most $TTS_APP_WARM_LOGGED_SHAPES logged shapes.
    warmed = re.findall(r"warmed \d+ streamed and (\d+) of (\d+) logged shapes", logs[1].read_text(errors="replace"))
    assert warmed and all(int(done) <= int(os.environ.get("TTS_APP_WARM_LOGGED_SHAPES", "0")) for done, _ in warmed), warmed
    # Its effect, against the first start of this run (issue 24's bound, 50 MB on a ~750 MB idle server: 7 %).
    assert second <= 1.07 * first, (first, second, lines, first_rollup, second_rollup)
