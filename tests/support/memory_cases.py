"""The memory rule's requests (issue 46, hole 4), for tests/e2e/test_memory_rule.py and benchmarks/memory_rule.py.

The rule: a request costs at most 200 MB over idle at its peak; idle RSS after any sequence of requests is
within 100 MB of the warmed idle. Each case is a function of the server's base URL that makes its requests
and returns once they are answered; ``measure`` samples the server's RSS (/proc, every 20 ms) while a case
runs and reads the idle RSS after it (the server trims its heap once idle: tts_app/web/memory_trim.py).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

TIMEOUT = httpx.Timeout(900.0)
SENTENCES = (
    "The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well.", "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.", "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.", "Four hours of steady work faced us.",
)
FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
SETTLE_S = 30.0  # at most this long for the RSS to settle once a case ends (the idle trim comes after 3 s)


def text_of(chars: int, seed: int = 0) -> str:
    """About ``chars`` characters of plain sentences (a different order per ``seed``)."""
    words: list[str] = []
    n = seed
    while sum(len(w) + 1 for w in words) < chars:
        words.append(SENTENCES[n % len(SENTENCES)])
        n += 3
    return " ".join(words)[:chars].rsplit(" ", 1)[0] + "."


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Sampler:
    """The server's RSS every 20 ms on a thread; ``peak`` since the last ``reset``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._peak = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            value = rss_mb(self.pid)
            with self._lock:
                self._peak = max(self._peak, value)

    def reset(self) -> None:
        with self._lock:
            self._peak = rss_mb(self.pid)

    @property
    def peak(self) -> float:
        with self._lock:
            return self._peak

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def settled(pid: int, settle_s: float = SETTLE_S) -> float:
    """The RSS once it has stopped moving (2 s within 2 MB, after the server's idle trim), at most ``settle_s``."""
    time.sleep(4.0)  # the trim comes 3 s after the last engine step
    end = time.monotonic() + settle_s
    last = rss_mb(pid)
    while time.monotonic() < end:
        time.sleep(2.0)
        now = rss_mb(pid)
        if abs(now - last) < 2.0:
            return now
        last = now
    return last


def speech(base: str, text: str, **body: Any) -> int:
    """One /v1/audio/speech request read to its end; its size in bytes."""
    payload = {"model": "tts-1", "input": text, "response_format": "wav"} | body
    size = 0
    with httpx.stream("POST", f"{base}/v1/audio/speech", json=payload, timeout=TIMEOUT) as reply:
        assert reply.status_code == 200, reply.read()[:300]
        for chunk in reply.iter_bytes():
            size += len(chunk)
    return size


def page_run(base: str, lines: int, chars: int, streaming: bool = True) -> int:
    """The Speak tab's Generate with ``lines`` lines of ``chars`` characters, its event stream read to the end;
    the bytes of that stream (every update the page receives)."""
    session = uuid.uuid4().hex[:11]
    text = "\n".join(text_of(chars, seed) for seed in range(lines))
    data = [text, "Model's own voice", None, None, 1.0, 1.0, 0, streaming, None, "", True, "piper-joe-medium", False]
    received = 0
    with httpx.Client(base_url=base, timeout=TIMEOUT) as client:
        fn = next(d["id"] for d in client.get("/config").json()["dependencies"] if d["api_name"] == "generate")
        with client.stream("GET", f"/gradio_api/heartbeat/{session}") as beat:  # a live page: the run is heard
            next(beat.iter_lines())
            body = {"data": data, "fn_index": fn, "session_hash": session, "event_data": None, "trigger_id": None}
            assert client.post("/gradio_api/queue/join", json=body).status_code == 200
            with client.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as stream:
                for line in stream.iter_lines():
                    received += len(line) + 1
                    message = json.loads(line[5:]) if line.startswith("data:") else {}
                    if message.get("msg") == "process_completed":
                        assert message.get("success"), str(message)[:500]
                        return received
    raise AssertionError("the page run did not complete")


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[str], object]


def sweep(count: int) -> Callable[[str], object]:
    """``count`` streamed requests, each of a new length and speed (a shape the model has not met)."""
    def run(base: str) -> None:
        for i in range(count):
            speech(base, text_of(40 + 37 * i, i), speed=round(0.5 + (i * 0.029) % 1.5, 3), stream=True)
    return run


def every_format(base: str) -> None:
    for fmt in FORMATS:
        speech(base, text_of(600, 5), response_format=fmt, stream=fmt != "wav")


CASES = {
    "longest streamed (4,000 characters)": Case("longest streamed", lambda base: speech(base, text_of(4000), stream=True)),
    "whole WAV at speed 0.25 (2,000 characters)": Case("speed 0.25 WAV", lambda base: speech(base, text_of(2000, 1), speed=0.25, stream=False)),
    "a 4,000-digit ordinal": Case("4,000-digit ordinal", lambda base: speech(base, "The " + "7" * 4000 + "th.", stream=False)),
    "sweep of 60 lengths and speeds": Case("sweep of 60", sweep(60)),
    "every format": Case("every format", every_format),
}


def measure(base: str, pid: int, cases: dict[str, Case], sampler: Sampler, warm: float) -> list[dict[str, Any]]:
    """Each case in turn: its peak over the idle before it, and the idle after it over ``warm``."""
    rows = []
    for label, case in cases.items():
        before = settled(pid, 10)
        sampler.reset()
        started = time.perf_counter()
        out = case.run(base)
        seconds = time.perf_counter() - started
        peak = sampler.peak
        after = settled(pid)
        rows.append({"case": label, "peak_over_idle_mb": round(peak - before, 1), "idle_over_warm_mb": round(after - warm, 1),
                     "seconds": round(seconds, 1), **({"bytes": out} if isinstance(out, int) else {})})
    return rows
