"""A page run is one visitor's, and only while someone listens; development routes are off (issue 32, items 4 and 8).

Through the real server (python app.py, the embedded voice), driven as a stranger drives it: page
events through ``/gradio_api/queue/join`` with a made-up session hash, results read (or not) from
``/gradio_api/queue/data``, a heartbeat held (or not), another visitor from another address.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.app_server import serve_app
from tts_app.models.available import EMBEDDED_ID

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(120.0)
LINE = ("The quick brown fox jumps over the lazy dog, and then it runs far away into the woods. " * 23)[:2000]
PAGE_TEXT = "\n".join([LINE] * 50)  # the page's most: 50 lines of 2,000 characters
SLOTS, SHARE = 16, 0.25  # the server's TTS_APP_ENGINE_SLOTS (set below: 50 lines must overflow it) and TTS_APP_CLIENT_SHARE's default
ABANDONED = "a page run nobody listens to"  # the run watchdog's log line


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[tuple[str, Path]]:
    log = artifacts_dir / "page_runs_server.log"
    with serve_app(log, {"TTS_APP_MAX_QUEUE_WAIT_S": "20", "TTS_APP_ENGINE_SLOTS": str(SLOTS)}) as (base, _process):
        _wait_for(lambda: httpx.get(f"{base}/readyz", timeout=10).status_code == 200, 300, "the model to load")
        yield base, log


def _wait_for(check: Callable[[], Any], deadline_s: float, what: str) -> Any:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what} after {deadline_s:.0f} s")


def _engine_rows(base: str) -> tuple[int, int]:
    """(rows being made, requests queued) in the engines, from /metrics."""
    figures = {"tts_admitted_streams": 0.0, "tts_queue_depth": 0.0}
    for family in text_string_to_metric_families(httpx.get(f"{base}/metrics", timeout=10).text):
        for sample in family.samples:
            if sample.name in figures:
                figures[sample.name] += sample.value
    return int(figures["tts_admitted_streams"]), int(figures["tts_queue_depth"])


def _idle(base: str) -> bool:
    return _engine_rows(base) == (0, 0)


def _generate_data(text: str) -> list[Any]:
    """The Speak tab's inputs: text, mode, voice, clip, strength, speed, seed, stream, history, clip text, normalise, model, live."""
    return [text, "Model's own voice", None, None, 1.0, 1.0, 0, False, None, "", True, EMBEDDED_ID, False]


def _fn_index(base: str, api_name: str) -> int:
    dependencies = httpx.get(f"{base}/config", timeout=TIMEOUT).json()["dependencies"]
    return next(dep["id"] for dep in dependencies if dep["api_name"] == api_name)


def _join(base: str, session: str, text: str) -> str:
    """Send the page's Generate click and return at once (the connection closes; nothing is read)."""
    body = {"data": _generate_data(text), "fn_index": _fn_index(base, "generate"), "session_hash": session,
            "event_data": None, "trigger_id": None}
    reply = httpx.post(f"{base}/gradio_api/queue/join", json=body, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()["event_id"]


@contextmanager
def _heartbeat(base: str, session: str) -> Iterator[None]:
    """Hold ``session``'s heartbeat open, as its page does from the moment it loads."""
    with httpx.stream("GET", f"{base}/gradio_api/heartbeat/{session}", timeout=TIMEOUT) as stream:
        assert stream.status_code == 200
        beats = stream.iter_lines()  # kept: a dropped iterator closes the stream
        next(beats)
        yield


def _events(client: httpx.Client, url: str, deadline_s: float) -> list[str]:
    """The ``event:`` lines of a REST caller's result stream, up to its end or the deadline."""
    events: list[str] = []
    end = time.monotonic() + deadline_s
    with client.stream("GET", url) as stream:
        for line in stream.iter_lines():  # Gradio sends a heartbeat every 15 s: the deadline is checked
            if line.startswith("event:"):
                events.append(line)
            if line in ("event: complete", "event: error") or time.monotonic() > end:
                break
    return events


def _completed(base: str, session: str, deadline_s: float) -> dict[str, Any]:
    """The ``process_completed`` message of ``session``'s event, read from its event stream."""
    end = time.monotonic() + deadline_s
    with httpx.stream("GET", f"{base}/gradio_api/queue/data", params={"session_hash": session}, timeout=TIMEOUT) as stream:
        for line in stream.iter_lines():  # a message (a heartbeat at least) every 15 s: the deadline is checked
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed":
                return message
            if time.monotonic() > end:
                break
    raise AssertionError(f"{session}'s event did not complete within {deadline_s:.0f} s")


def _log_count(log: Path, text: str) -> int:
    return log.read_text(errors="replace").count(text)


# --- item 8: development routes --------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/gradio_api/dev/reload"), ("GET", "/gradio_api/dev/reload/"),
    ("GET", "/gradio_api/vibe-code"), ("POST", "/gradio_api/vibe-edit"), ("POST", "/gradio_api/undo-vibe-edit"),
    ("POST", "/gradio_api/vibe-starter-queries"),
])  # (the profiler's routes are mounted only with GRADIO_PROFILING set: tests/unit/server/test_run_watchdog.py)
def test_development_routes_answer_404_and_the_page_still_loads(server: tuple[str, Path], method: str, path: str) -> None:
    base, _log = server
    # On 9faa7d5 the reload watcher answers 200 and streams for as long as the connection lasts.
    with httpx.stream(method, f"{base}{path}", timeout=httpx.Timeout(10.0), follow_redirects=False) as reply:
        assert reply.status_code == 404, (path, reply.status_code)
    page = httpx.get(f"{base}/", timeout=TIMEOUT)
    assert page.status_code == 200 and "gradio" in page.text.lower()
    assert httpx.get(f"{base}/config", timeout=TIMEOUT).status_code == 200


# --- item 4: a page run's share, and no listener, no work --------------------------------------


def test_page_runs_take_their_visitor_s_share_and_another_visitor_is_served(server: tuple[str, Path]) -> None:
    """On 9faa7d5 one run's 50 lines took all 16 slots (keyed on the session hash, which costs
    nothing) and the visitor from 127.0.0.2 got 503 "would wait about ... s". Now the run holds its
    visitor's share, 4 rows; a second page of the same address waits behind it (is told so), and
    the other visitor is served."""
    base, _log = server
    _wait_for(lambda: _idle(base), 120, "an idle engine")
    first, second = uuid.uuid4().hex[:11], uuid.uuid4().hex[:11]
    with _heartbeat(base, first), _heartbeat(base, second):  # live pages: their runs are heard, and run on
        _join(base, first, PAGE_TEXT)
        # Every line in the engine, and the first admitted (the worker admits between its steps).
        rows, _queued = _wait_for(lambda: sum(r := _engine_rows(base)) == 50 and r[0] >= SLOTS * SHARE and r, 120, "the run in the engine")
        assert rows == int(SLOTS * SHARE), rows  # the visitor's share of the slots (all 16 before)
        _join(base, second, PAGE_TEXT)  # a new session hash of the same address: no new share
        done = _completed(base, second, 120)
        assert not done["success"] and "busy" in json.dumps(done["output"]), done
        assert _engine_rows(base)[0] == int(SLOTS * SHARE)
        with httpx.Client(timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address="127.0.0.2")) as visitor:
            body = {"model": "tts-1", "input": "A short visit while a page speaks fifty long lines.", "response_format": "wav"}
            answer = visitor.post(f"{base}/v1/audio/speech", json=body)
        assert answer.status_code == 200, answer.text
        assert answer.content[:4] == b"RIFF" and len(answer.content) > 44
        assert _engine_rows(base)[0] <= int(SLOTS * SHARE)  # the visitor's row has come and gone; the page holds its share
    # The page closed: Gradio's unload (or the run watchdog) cancels the rest of its lines.
    _wait_for(lambda: _idle(base), 90, "the closed page's run to be cancelled")


def test_an_abandoned_page_run_is_cancelled_and_a_read_one_runs_on(server: tuple[str, Path]) -> None:
    """A join sent and dropped (no heartbeat, no stream read) ran on for over 40 s on 9faa7d5; now
    the run watchdog cancels it within seconds. A REST caller who reads its event stream (and holds
    no heartbeat, as curl does not) is heard: its run completes."""
    base, log = server
    _wait_for(lambda: _idle(base), 120, "an idle engine")
    before = _log_count(log, ABANDONED)
    _join(base, uuid.uuid4().hex[:11], PAGE_TEXT)  # then nothing: no page, no reader
    _wait_for(lambda: any(_engine_rows(base)), 120, "the abandoned run to reach the engine")
    with httpx.Client(timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address="127.0.0.2")) as caller:
        posted = caller.post(f"{base}/gradio_api/call/generate", json={"data": _generate_data(LINE[:600])})
        assert posted.status_code == 200, posted.text
        events = _events(caller, f"{base}/gradio_api/call/generate/{posted.json()['event_id']}", 180)
    assert events[-1:] == ["event: complete"], events  # (9faa7d5: still queued behind the abandoned run's lines)
    # 50 lines of 2,000 characters take minutes to make; cancelled, the engine is idle long before.
    _wait_for(lambda: _idle(base), 60, "the abandoned run to be cancelled")
    assert _log_count(log, ABANDONED) == before + 1  # the abandoned run only: the read one was heard
