"""Document jobs' admission (issue 32 item 6): caps before parsing, one parse at a time, a client's share
of the running and waiting places, and an over job's text given back. On a fake model."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from pathlib import Path

import pytest

from tests.support.fake_backend import FakeBackend
from tts_app.documents import ClientShareFull, DocumentJobs, DocumentSettings, JobsBusy, JobStatus
from tts_app.documents.parse_gate import ParseBusy, ParseGate
from tts_app.engine import Engine
from tts_app.text.document import parse_document

SLOW_DOC = "SLOW words here. " * 400  # many pieces: still running when the test looks


@pytest.fixture()
def engine():
    e = Engine(FakeBackend(step_sleep_s=0.002), max_batch_size=8)
    yield e
    e.close()


def _wait(job, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not job.status.over:
        assert time.monotonic() < deadline, job.progress()
        time.sleep(0.02)


def _stop(jobs: DocumentJobs, *started) -> None:
    for job in started:
        jobs.cancel(job.id)
        _wait(job)


def test_a_client_holding_its_share_is_refused_before_its_text_is_parsed(engine, tmp_path: Path) -> None:
    gate = ParseGate()
    jobs = DocumentJobs(tmp_path, lambda: engine, max_running=2, max_waiting=4, parse_gate=gate)
    flooder = [("address:10.0.0.1", 10)]
    first = jobs.admit(SLOW_DOC, False, DocumentSettings(), "1", flooder)
    assert gate.parsed == 1 and jobs.share == 1
    for _ in range(5):
        with pytest.raises(ClientShareFull, match="limit per client"):
            jobs.admit(SLOW_DOC, False, DocumentSettings(), "again", flooder)
    assert gate.parsed == 1  # refused five times, parsed never
    other = jobs.admit(SLOW_DOC, False, DocumentSettings(), "other", [("address:10.0.0.2", 10)])
    assert other.status is JobStatus.RUNNING  # the second visitor's document starts at once
    _stop(jobs, first, other)


def test_one_client_cannot_take_every_place_and_a_stopped_job_frees_its_place(engine, tmp_path: Path) -> None:
    jobs = DocumentJobs(tmp_path, lambda: engine, max_running=4, max_waiting=2)
    assert jobs.share == 2  # half the readers, rounded up
    doc = parse_document(SLOW_DOC, markdown=False)
    mine = [jobs.start(doc, DocumentSettings(), str(k), [("address:a", 10)]) for k in range(2)]
    with pytest.raises(ClientShareFull):
        jobs.start(doc, DocumentSettings(), "3", [("address:a", 10)])
    others = [jobs.start(doc, DocumentSettings(), str(k), [(f"address:b{k}", 10)]) for k in range(2)]
    assert all(j.status is JobStatus.RUNNING for j in mine + others)
    jobs.cancel(mine[0].id)  # being stopped: its place is the client's again at once
    again = jobs.start(doc, DocumentSettings(), "again", [("address:a", 10)])
    _stop(jobs, *mine, *others, again)


def test_a_reserved_place_counts_until_released(engine, tmp_path: Path) -> None:
    jobs = DocumentJobs(tmp_path, lambda: engine, max_running=1, max_waiting=2)
    held = [jobs.reserve([("address:x", 10)]), jobs.reserve([("address:y", 10)])]  # texts being parsed
    with pytest.raises(ClientShareFull):
        jobs.reserve([("address:x", 10)])
    held.append(jobs.reserve([("address:z", 10)]))
    with pytest.raises(JobsBusy, match="wait"):  # every place is held: full for everyone
        jobs.reserve([("address:w", 10)])
    for reservation in held:
        jobs.release(reservation)
    jobs.release(jobs.reserve([("address:w", 10)]))


def test_a_text_that_fails_to_parse_gives_its_place_back(engine, tmp_path: Path) -> None:
    from tts_app.text import TextError

    jobs = DocumentJobs(tmp_path, lambda: engine, max_running=1, max_waiting=0)
    for _ in range(3):
        with pytest.raises(TextError):
            jobs.admit("```\nonly code\n```", True, DocumentSettings(), "code", [("address:x", 10)])
    with pytest.raises(TextError, match="limit is"):
        jobs.admit("a" * 200_001, True, DocumentSettings(), "huge", [("address:x", 10)])
    job = jobs.admit("Hello there.", True, DocumentSettings(), "ok", [("address:x", 10)])
    _wait(job)


def test_parses_run_one_at_a_time_and_one_per_client(tmp_path: Path) -> None:
    gate = ParseGate(at_once=1, wait_s=0.2)
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with gate.turn(["address:a"]):
            inside.set()
            leave.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    for keys in (["address:a"], ["address:b"]):  # the same client, and anyone while the one turn is taken
        with pytest.raises(ParseBusy):
            with gate.turn(keys):
                pass
    leave.set()
    holder.join(10)
    with gate.turn(["address:b"]):
        pass
    assert gate.figures() == {"parsed": 2, "running": 0, "most_at_once": 1}
    wide = ParseGate(at_once=2, wait_s=0.2)
    with wide.turn(["address:a"]):
        with pytest.raises(ParseBusy):  # one client: one parse at a time, however wide the gate
            with wide.turn(["address:a"]):
                pass
        with wide.turn(["address:b"]):
            assert wide.figures()["most_at_once"] == 2


@pytest.mark.parametrize("how", ["cancelled while running", "cancelled while waiting", "finished"])
def test_an_over_job_drops_its_text(engine, tmp_path: Path, how: str) -> None:
    jobs = DocumentJobs(tmp_path, lambda: engine, max_running=1, max_waiting=1)
    blocker = jobs.start(parse_document(SLOW_DOC), DocumentSettings(), "blocker") if how == "cancelled while waiting" else None
    document = parse_document("# One\n\n" + ("SLOW words here. " if how != "finished" else "Short words. ") * 300)
    counts = (len(document.chapters), len(document.pieces), document.chars)
    job = jobs.start(document, DocumentSettings(), "t")
    text_alive = weakref.ref(document)
    del document
    if how != "finished":
        deadline = time.monotonic() + 30
        while how == "cancelled while running" and job.pieces_done < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        jobs.cancel(job.id)
    _wait(job)
    gc.collect()
    assert text_alive() is None, f"the job kept its parsed text after it was {how}"
    assert not job.document.pieces and job.words == []
    progress = job.progress()
    assert (progress["chapters"], progress["pieces"], progress["chars"]) == counts
    assert jobs.get(job.id) is job  # still kept: its files and figures stay for the hour
    if blocker is not None:
        _stop(jobs, blocker)
