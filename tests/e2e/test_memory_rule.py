"""The memory rule on a fresh server (issue 46, hole 4): a request costs at most 200 MB over idle at its peak,
and the idle RSS after any sequence of requests is within 100 MB of the warmed idle.

Through the real server (python app.py, default settings), its RSS read from /proc every 20 ms. The cases
are tests/support/memory_cases.py's at CI scale (benchmarks/memory_rule.py runs them at the issue's: the
longest text, a page run of 50 x 2,000 characters). On e67156b a whole WAV at speed 0.25 kept +468 MB, a
4,000-digit ordinal +202 MB, 57 lengths and speeds +337 MB, and a page run held every line's audio, then
joined them in one more copy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app
from tests.support.memory_cases import Case, Sampler, every_format, measure, page_run, settled, speech, sweep, text_of

pytestmark = pytest.mark.slow

PEAK_MB = 200  # the rule itself: each case's peak over the idle before it
IDLE_MB = 100  # the rule itself: the idle after each case over the warmed idle
CASES = {
    "whole WAV at speed 0.25 (1,000 characters)": Case("speed 0.25", lambda base: speech(base, text_of(1000, 1), speed=0.25, stream=False)),
    "a 4,000-digit ordinal": Case("ordinal", lambda base: speech(base, "The " + "7" * 4000 + "th.", stream=False)),
    "longest streamed (4,000 characters)": Case("longest", lambda base: speech(base, text_of(4000), stream=True)),
    "sweep of 20 lengths and speeds": Case("sweep", sweep(20)),
    "every format": Case("formats", every_format),
    "page run, 10 x 2,000 characters, Stream on": Case("page run", lambda base: page_run(base, 10, 2000)),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[tuple[str, int]]:
    gradio = tmp_path_factory.mktemp("gradio")
    with serve_app(artifacts_dir / "memory_rule_server.log", {"GRADIO_TEMP_DIR": str(gradio)}, ready=True) as (base, process):
        yield base, process.pid


# Still broken (measured 2026-12-02 06:01-06:15 UTC, p46mem): the decoder now runs at 14 fixed widths per stage
# (a WAV at speed 0.25 keeps +36 MB, was +875 MB), but the text encoder keeps the buffers of its longest call and
# about 4 MB per new id width: a 4,000-digit ordinal (chunks of 800 ids) kept +177 MB, idle +212 MB over warm after
# it, +215 MB after the page run. Strict: once the rule holds, this fails until the mark is removed.
@pytest.mark.xfail(strict=True, reason="issue 46 hole 4 open: the text encoder keeps memory per id width (BENCHMARKS.md)")
def test_every_request_keeps_to_the_memory_rule(server: tuple[str, int], artifacts_dir: Path) -> None:
    base, pid = server
    speech(base, text_of(200), stream=True)  # warm: the route, the encoder, a first shape
    warm = settled(pid)
    sampler = Sampler(pid)
    try:
        rows = measure(base, pid, CASES, sampler, warm)
    finally:
        sampler.stop()
    figures = {"warm_idle_mb": round(warm, 1), "cases": rows}
    (artifacts_dir / "memory_rule.json").write_text(json.dumps(figures, indent=2))
    over = [r for r in rows if r["peak_over_idle_mb"] > PEAK_MB or r["idle_over_warm_mb"] > IDLE_MB]
    assert not over, json.dumps(figures, indent=1)
    assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
