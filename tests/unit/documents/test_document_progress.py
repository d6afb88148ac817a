"""A document job's time left and files, as the Document tab shows them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.support.fake_backend import FakeBackend

from tts_app.documents import DocumentJobs, DocumentSettings
from tts_app.documents import runner as runner_module
from tts_app.documents.progress import AUDIO_S_PER_CHAR, engine_prior_s_per_char, time_left_s
from tts_app.engine import Engine
from tts_app.text.document import parse_document
from tts_app.web.ui.documents.tab import progress_html

# The job: a 21-character heading first, then paragraphs; it finished in 33 s.
HEADING, TOTAL, PACE_S, START_S = 21, 3_000, 0.01, 3.0  # characters, characters, s per character, start-up


def _done_at(t: float, pieces: list[int]) -> tuple[int, float]:
    """Characters of finished pieces at time t of a job reading at PACE_S after START_S, and when they were done."""
    done, done_at, finished_at = 0, 0.0, START_S
    for size in pieces:
        finished_at += size * PACE_S
        if finished_at > t:
            break
        done, done_at = done + size, finished_at
    return done, done_at


@pytest.mark.parametrize("prior", [None, PACE_S, PACE_S * 2, PACE_S / 2], ids=["no prior", "right", "2x slow", "2x fast"])
def test_time_left_is_never_absurd_after_a_short_first_piece(prior: float | None) -> None:
    pieces = [HEADING] + [(TOTAL - HEADING) // 7] * 7
    total = sum(pieces)
    end = START_S + total * PACE_S
    shown = []
    slack = 3
    for tenth in range(1, int(end * 10)):
        t = tenth / 10
        done, done_at = _done_at(t, pieces)
        estimate = time_left_s(done_at, done, total, prior, t - done_at)
        truth = end - t
        if estimate is not None:
            shown.append(t)
            assert truth / slack <= estimate <= truth * slack + 5, (t, done, estimate, truth)
    if prior is None:  # nothing to go on but the heading: "estimating…", not 18 minutes
        assert time_left_s(START_S + HEADING * PACE_S, HEADING, total, None, 4.0) is None
    assert shown and shown[-1] > end - 5  # an estimate is shown by the end


def test_time_left_at_the_start_and_the_end() -> None:
    assert time_left_s(0.0, 0, TOTAL, None) is None
    assert time_left_s(5.0, TOTAL, TOTAL, None) == 0.0
    assert time_left_s(0.0, 0, 1000, 0.02) == pytest.approx(20.0)  # the prior alone


def test_the_engines_measured_speed_is_the_prior() -> None:
    assert engine_prior_s_per_char(None, 1.0) is None
    assert engine_prior_s_per_char({"audio_s": 0.5, "step_time_s": 0.1}, 1.0) is None  # too little measured
    stats = {"audio_s": 100.0, "step_time_s": 20.0}  # 0.2 s of work per second of audio
    assert engine_prior_s_per_char(stats, 1.0) == pytest.approx(0.2 * AUDIO_S_PER_CHAR)
    assert engine_prior_s_per_char(stats, 2.0) == pytest.approx(0.1 * AUDIO_S_PER_CHAR)  # faster speech, less audio


def _progress(**changes) -> dict:
    base = {"id": "j1", "status": "running", "pieces": 16, "pieces_done": 1, "chars": TOTAL, "chars_done": HEADING,
            "audio_s": 1.2, "time_left_s": None, "chapters": 2, "chapters_started": 1, "chapter": "One", "files": [], "error": ""}
    return base | changes


def test_the_page_says_estimating_until_there_is_an_estimate() -> None:
    assert "time left estimating…" in progress_html(_progress())
    assert "time left 0:31" in progress_html(_progress(time_left_s=31.0))
    assert "time left —" in progress_html(_progress(status="finished", pieces_done=16, files=["wav"]))


def test_a_finished_documents_player_knows_its_length_before_it_plays() -> None:
    """A finished file's player loads its header (its length shows); a running one's growing stream waits for play."""
    assert 'preload="metadata"' in progress_html(_progress(status="finished", pieces_done=16, files=["wav"]))
    assert 'preload="none"' in progress_html(_progress())


def test_every_file_is_listed_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the M4B and MP3 are written, the job lists no file yet (then all five together)."""
    engine = Engine(FakeBackend(step_sleep_s=0.002), max_batch_size=8)
    jobs = DocumentJobs(tmp_path, lambda: engine)
    seen_while_writing: list[list[str]] = []
    real_write_chaptered = runner_module.write_chaptered

    def write_chaptered_and_look(*args, **kwargs):
        seen_while_writing.append(job.progress()["files"])
        return real_write_chaptered(*args, **kwargs)

    monkeypatch.setattr(runner_module, "write_chaptered", write_chaptered_and_look)
    try:
        job = jobs.start(parse_document("# One\n\nAlpha beta. Gamma.\n\n# Two\n\nDelta.", piece_chars=20), DocumentSettings(), "T")
        deadline = time.monotonic() + 60
        while not job.status.over:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        engine.close()
    assert seen_while_writing == [[]]
    files = job.progress()["files"]
    assert {"wav", "srt", "vtt"} <= set(files)
    html = progress_html(job.progress())
    assert all(f"/{name}" in html for name in ("audio.wav", "captions.srt", "captions.vtt"))
