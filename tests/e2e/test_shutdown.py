"""A stop signal while a stream is open: the stream ends cleanly at once and the server exits without tracebacks."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app

pytestmark = pytest.mark.slow

LONG_TEXT = " ".join(["This sentence is long so the stream lasts well past the stop signal."] * 15)
# The whole text spoken is over a minute; at 0.2 s a word (a brisk reader) it is still 39 s of 16-bit 22,050 Hz.
WHOLE_TEXT_BYTES_AT_LEAST = int(0.2 * len(LONG_TEXT.split()) * 22050 * 2)


def test_sigterm_ends_open_streams_cleanly(artifacts_dir: Path) -> None:
    log_path = artifacts_dir / "shutdown_server.log"
    with serve_app(log_path) as (base, process):
        # A page's heartbeat stream is open too: it must end at the signal, not be cancelled after the grace.
        page = threading.Thread(target=_hold_heartbeat, args=(base,), daemon=True)
        page.start()
        with httpx.Client(timeout=httpx.Timeout(120.0)) as client:
            with client.stream("POST", f"{base}/v1/audio/speech", json={"model": "tts-1", "input": LONG_TEXT, "response_format": "pcm"}) as reply:
                assert reply.status_code == 200
                chunks = reply.iter_bytes()
                received = len(next(chunks))  # audio is flowing
                process.send_signal(signal.SIGTERM)
                for chunk in chunks:  # a cut connection would raise here (incomplete chunked body)
                    received += len(chunk)
        # Ended at the signal, not at the text's end: well under the audio the whole text makes. (Bytes,
        # not seconds: a loaded machine slows both; uvicorn's grace running out is caught in the log below.)
        assert 0 < received < WHOLE_TEXT_BYTES_AT_LEAST / 2, received
        assert received % 2 == 0  # whole 16-bit samples
        assert process.wait(timeout=15) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once shut down
        page.join(timeout=10)
        assert not page.is_alive(), "the heartbeat stream stayed open"
    log = log_path.read_text(errors="replace")
    assert "Traceback" not in log and "graceful shutdown exceeded" not in log, log[-3000:]


def _hold_heartbeat(base: str) -> None:
    try:
        with httpx.stream("GET", f"{base}/gradio_api/heartbeat/shutdowntest1", timeout=httpx.Timeout(60.0)) as reply:
            for _ in reply.iter_bytes():
                pass
    except httpx.HTTPError:
        pass  # cut: the assertion on the log tells

