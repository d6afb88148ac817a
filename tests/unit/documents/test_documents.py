"""Long documents: the text side (Markdown, chapters, pieces) and the job runner on a fake model."""

from __future__ import annotations

import time
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.support.fake_backend import FakeBackend
from tts_app.documents import DocumentJobs, DocumentSettings, JobStatus
from tts_app.documents.export import chapter_metadata
from tts_app.documents.job import ChapterMark
from tts_app.engine import Engine
from tts_app.text import TextError
from tts_app.text.document import MAX_DOCUMENT_CHARS, parse_document
from tts_app.backends.params import SpeechParams

MARKDOWN = """Intro before any heading, with a [link](http://example.com/x) and `code`.

# Chapter *One*

First paragraph. It has **two** sentences!

- a list item
- ![a picture](pic.png) of a cat

```
print("code is not read")
```

Chapter Two
-----------

| name | value |
|------|-------|
| pi   | 3     |

> A quote. <em>Tagged</em> text.
"""


def test_markdown_becomes_chapters_and_readable_pieces() -> None:
    doc = parse_document(MARKDOWN)
    assert doc.chapters == ["Start", "Chapter One", "Chapter Two"]
    texts = [p.text for p in doc.pieces]
    assert texts == [
        "Intro before any heading, with a link and code.",
        "Chapter One", "First paragraph. It has two sentences!", "a list item", "a picture of a cat",
        "Chapter Two", "name, value.", "pi, 3.", "A quote. Tagged text.",
    ]  # fmt: skip
    assert [p.heading for p in doc.pieces].count(True) == 2
    assert not any(ch in " ".join(texts) for ch in "*#`[]|<>")
    plain = parse_document("# Not a heading\n\nJust *text*.", markdown=False)
    assert plain.chapters == ["Start"] and plain.pieces[0].text == "# Not a heading"


def test_pieces_end_at_sentences_and_stay_short() -> None:
    sentence = "The quick brown fox jumps over the lazy dog again and again. "
    doc = parse_document(sentence * 40 + "\n\n" + "word " * 300, piece_chars=200)
    assert all(len(p.text) <= 200 for p in doc.pieces)
    first_paragraph = [p for p in doc.pieces if "fox" in p.text]
    assert all(p.text.endswith("again.") for p in first_paragraph)
    assert [p.paragraph_end for p in first_paragraph] == [False] * (len(first_paragraph) - 1) + [True]
    assert " ".join(p.text for p in first_paragraph) == (sentence * 40).strip()


def test_document_limits_are_one_line_errors() -> None:
    with pytest.raises(TextError, match="limit is 200,000"):
        parse_document("a" * (MAX_DOCUMENT_CHARS + 1))
    with pytest.raises(TextError, match="nothing to read"):
        parse_document("```\ncode only\n```\n\n---\n")


def test_chapter_metadata_escapes_titles() -> None:
    meta = chapter_metadata("Book; one", [ChapterMark("A=B", 0.0), ChapterMark("#2", 1.5)], 3.0)
    assert meta.splitlines()[:2] == [";FFMETADATA1", "title=Book\\; one"]
    assert "START=0\nEND=1500\ntitle=A\\=B" in meta and "START=1500\nEND=3000\ntitle=\\#2" in meta


# --- jobs on a fake model -----------------------------------------------------------------


@pytest.fixture()
def engine():
    e = Engine(FakeBackend(step_sleep_s=0.002), max_batch_size=8)
    yield e
    e.close()


def _until(done: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Poll ``done`` until it holds; fail saying ``what`` was awaited when it has not in ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout_s:.0f} s for {what}"
        time.sleep(0.01)


def _wait(job, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not job.status.over:
        assert time.monotonic() < deadline, job.progress()
        time.sleep(0.02)


def test_a_job_writes_its_audio_in_order_with_pauses_and_chapters(engine, tmp_path: Path) -> None:
    jobs = DocumentJobs(tmp_path, lambda: engine)
    doc = parse_document("# One\n\nAlpha beta gamma. Delta.\n\n# Two\n\nEpsilon zeta.", piece_chars=20)
    job = jobs.start(doc, DocumentSettings(seed=7), "Test")
    _wait(job)
    assert job.status is JobStatus.FINISHED, job.error
    assert job.pieces_done == len(doc.pieces) and job.chars_done == doc.chars
    with wave.open(str(job.files["wav"])) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32767
        rate = w.getframerate()
    # each piece's fake audio (100 samples a word, seeded by settings.seed + piece index), then its pause
    from tests.support.fake_backend import expected

    from tts_app.documents.runner import _pause_after

    at = 0
    for k, piece in enumerate(doc.pieces):
        want = expected(piece.text, 7 + k)
        assert np.abs(audio[at : at + want.size] - np.clip(want, -1, 1)).max() < 1e-4
        at += want.size
        following = doc.pieces[k + 1] if k + 1 < len(doc.pieces) else None
        gap = int(round(_pause_after(piece, following) * rate))
        assert not audio[at : at + gap].any()
        at += gap
    assert at == audio.size
    assert [m.title for m in job.chapter_marks] == ["One", "Two"] and job.chapter_marks[0].start_s == 0.0
    assert job.progress()["status"] == "finished" and job.progress()["time_left_s"] is None


def test_cancel_stops_a_job_and_keeps_what_was_read(engine, tmp_path: Path) -> None:
    jobs = DocumentJobs(tmp_path, lambda: engine)
    doc = parse_document("SLOW words here. " * 400, piece_chars=40)
    job = jobs.start(doc, DocumentSettings(), "Long")
    _until(lambda: job.pieces_done >= 2, "two pieces read")
    assert jobs.cancel(job.id)
    _wait(job)
    assert job.status is JobStatus.CANCELLED and 2 <= job.pieces_done < len(doc.pieces)
    with wave.open(str(job.files["wav"])) as w:  # a valid file of what was read
        assert w.getnframes() > 0
    assert not jobs.cancel(job.id) and engine.stats()["active"] == 0


def test_jobs_beyond_the_limits_wait_then_are_refused(engine, tmp_path: Path) -> None:
    from tts_app.documents import JobsBusy

    jobs = DocumentJobs(tmp_path, lambda: engine, max_running=1, max_waiting=1)
    doc = parse_document("SLOW words. " * 200, piece_chars=40)
    first = jobs.start(doc, DocumentSettings(), "1")
    second = jobs.start(doc, DocumentSettings(), "2")
    assert second.status is JobStatus.QUEUED and jobs.queue_position(second.id) == 1
    with pytest.raises(JobsBusy):
        jobs.start(doc, DocumentSettings(), "3")
    jobs.cancel(first.id)
    _wait(first)
    deadline = time.monotonic() + 10
    while second.status is JobStatus.QUEUED and time.monotonic() < deadline:
        time.sleep(0.01)
    assert second.status is JobStatus.RUNNING
    jobs.cancel(second.id)
    _wait(second)
    assert jobs.get("../../etc/passwd") is None and jobs.get(first.id.upper()) is None


def test_documents_do_not_starve_one_line_requests(tmp_path: Path) -> None:
    """Two long documents run; one-line requests still start within a step or two.

    Each document piece takes 55 steps here: were the documents to fill the engine's 8 slots, a
    one-line request would wait for a piece to end. Counted in engine steps, not seconds, so a loaded
    machine does not move it (the time to first audio on the real model: benchmarks/document_job.py).
    """
    backend = FakeBackend(step_sleep_s=0.02)
    engine = Engine(backend, max_batch_size=8)
    jobs = DocumentJobs(tmp_path, lambda: engine)
    doc = parse_document("SLOW " + "many words in a sentence. " * 2000, piece_chars=300)
    running = [jobs.start(doc, DocumentSettings(), str(k)) for k in range(2)]
    _until(lambda: all(j.pieces_done for j in running), "a piece of each document")
    waits = []
    for n in range(20):
        line = f"one line {n}"
        steps_before = len(backend.stepped)  # steps begun before the line was submitted
        handle = engine.submit(line, SpeechParams(seed=n))
        handle.result(timeout=30)
        first_step = next(i for i, texts in enumerate(backend.stepped) if line in texts)
        waits.append(first_step - steps_before)  # steps begun before the line's own first one
    assert all(j.status is JobStatus.RUNNING for j in running)
    assert float(np.percentile(waits, 95)) <= 2, waits  # the step running at submit, and at most one more
    for j in running:
        jobs.cancel(j.id)
        _wait(j)
    engine.close()


def test_finished_jobs_make_room_and_a_full_store_refuses(engine, tmp_path: Path) -> None:
    from tts_app.documents import JobsBusy

    doc = parse_document("Alpha beta gamma delta. " * 20, piece_chars=60)
    jobs = DocumentJobs(tmp_path, lambda: engine, max_bytes=10**9)
    first = jobs.start(doc, DocumentSettings(), "1")
    _wait(first)
    size = sum(p.stat().st_size for p in first.folder.rglob("*") if p.is_file())
    jobs.max_bytes = size - 1  # the next start finds the store over its cap: the finished job goes
    second = jobs.start(doc, DocumentSettings(), "2")
    assert jobs.get(first.id) is None and not first.folder.exists()
    _wait(second)
    slow = jobs.start(parse_document("SLOW words here. " * 400, piece_chars=40), DocumentSettings(), "3")
    _until(lambda: slow.pieces_done >= 1, "a piece read")
    jobs.max_bytes = 1  # only a running job's files left, over the cap: refused, not deleted
    with pytest.raises(JobsBusy, match="space for documents is full"):
        jobs.start(doc, DocumentSettings(), "4")
    assert slow.wav_path.exists()
    jobs.cancel(slow.id)
    _wait(slow)


def test_jobs_are_capped_per_client_and_in_all(engine, tmp_path: Path) -> None:
    """A create-then-stop loop: the client is refused at its cap, others are not; finished jobs go, oldest first."""
    from tts_app.documents import ClientJobsFull, JobsBusy

    jobs = DocumentJobs(tmp_path, lambda: engine, max_kept=5)
    doc = parse_document("SLOW words here. " * 50, piece_chars=40)
    looper = [("address:10.0.0.1", 3)]
    made = []
    with pytest.raises(ClientJobsFull, match="limit per client") as refused:
        for _ in range(50):
            job = jobs.start(doc, DocumentSettings(), "loop", looper)
            made.append(job)
            jobs.cancel(job.id)
            _wait(job)
    assert len(made) == 3 and jobs.kept() == 3
    assert 3000 < refused.value.retry_after_s <= 3600  # the oldest is forgotten within the hour
    others = [jobs.start(doc, DocumentSettings(), str(k), [(f"address:10.0.1.{k}", 3)]) for k in range(2)]
    assert jobs.kept() == 5
    for job in others:
        jobs.cancel(job.id)
        _wait(job)
    third = jobs.start(doc, DocumentSettings(), "third", [("address:10.0.1.9", 3)])  # the kept cap: the oldest finished goes
    assert jobs.kept() == 5 and jobs.get(made[0].id) is None and not made[0].folder.exists()
    assert jobs.get(made[1].id) is not None
    jobs.max_kept = 1  # only the running job left once the finished ones go: refused for everyone
    with pytest.raises(JobsBusy, match="keeps 1 document jobs"):
        jobs.start(doc, DocumentSettings(), "fourth", [("address:10.0.1.8", 3)])
    assert jobs.kept() == 1 and jobs.get(third.id) is third
    jobs.cancel(third.id)
    _wait(third)
