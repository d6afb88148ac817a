"""Document jobs over HTTP: start, follow, files with chapters, stop, hostile ids and bodies."""

from __future__ import annotations

import io
import json
import subprocess
import time

import httpx
import pytest
import soundfile as sf

from tts_app import settings
from tts_app.audio.ffmpeg_path import ffmpeg_exe

pytestmark = pytest.mark.slow

DOC = """# First chapter

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.

# Second chapter

It's easy to tell the depth of a well. These days a *chicken leg* is a rare dish.
"""


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=120) as client:
        yield client


def _wait(http: httpx.Client, job_id: str, timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        progress = http.get(f"/v1/documents/{job_id}").json()
        if progress["status"] not in ("queued", "running"):
            return progress
        assert time.monotonic() < deadline, progress
        time.sleep(0.3)


def test_document_subtitles_show_the_written_words(http: httpx.Client) -> None:
    """Captions in the reader's words: a document's SRT and WebVTT show "$5" and "Jan. 3rd", not "five dollars"
    (fails on the code before: the cues held the spoken words), and no Markdown syntax."""
    started = http.post("/v1/documents", json={"input": "# Costs\n\nDr. Lee paid **$5** on Jan. 3rd.\n", "title": "Costs"})
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    assert _wait(http, job_id)["status"] == "finished"
    srt = http.get(f"/v1/documents/{job_id}/captions.srt").text
    assert " ".join(b.split("\n", 2)[2] for b in srt.strip().split("\n\n")) == "Costs Dr. Lee paid $5 on Jan. 3rd."
    vtt = http.get(f"/v1/documents/{job_id}/captions.vtt").text
    assert ">$5 <" in vtt and "dollars" not in vtt and "Doctor" not in vtt


def test_a_document_runs_to_files_with_chapters(http: httpx.Client) -> None:
    started = http.post("/v1/documents", json={"input": DOC, "title": "Two chapters"})
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    # audio streams from the start: the growing WAV, read while the job runs
    streamed = b""
    with http.stream("GET", f"/v1/documents/{job_id}/audio.wav") as body:
        assert body.status_code == 200
        for data in body.iter_bytes():
            streamed += data
    progress = _wait(http, job_id)
    assert progress["status"] == "finished" and progress["chapters"] == 2 and progress["pieces_done"] == progress["pieces"]
    whole = http.get(f"/v1/documents/{job_id}/audio.wav")
    audio, rate = sf.read(io.BytesIO(whole.content), dtype="float32")
    assert rate == 22050 and abs(len(audio) / rate - progress["audio_s"]) < 0.01
    assert streamed[44:] == whole.content[44:]  # the stream carried every sample of the file
    srt = http.get(f"/v1/documents/{job_id}/captions.srt").text
    assert "First" in srt and "chicken" in srt and "*" not in srt
    if ffmpeg_exe() is not None:
        m4b = http.get(f"/v1/documents/{job_id}/audio.m4b")
        assert m4b.status_code == 200
        probe = subprocess.run(
            [ffmpeg_exe(), "-hide_banner", "-i", "pipe:0", "-f", "ffmetadata", "-"], input=m4b.content, capture_output=True, timeout=60
        )
        meta = probe.stdout.decode(errors="replace")
        assert meta.count("[CHAPTER]") == 2 and "title=First chapter" in meta and "title=Second chapter" in meta


def test_stop_keeps_what_was_read(http: httpx.Client) -> None:
    long_doc = "\n\n".join(f"Paragraph {n}. The juice of lemons makes fine punch, and the box was thrown beside the truck." for n in range(200))
    job_id = http.post("/v1/documents", json={"input": long_doc, "markdown": False}).json()["id"]
    deadline = time.monotonic() + 120
    while http.get(f"/v1/documents/{job_id}").json()["pieces_done"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert http.delete(f"/v1/documents/{job_id}").status_code == 200
    progress = _wait(http, job_id)
    assert progress["status"] == "cancelled" and 0 < progress["pieces_done"] < progress["pieces"]
    audio, rate = sf.read(io.BytesIO(http.get(f"/v1/documents/{job_id}/audio.wav").content), dtype="float32")
    assert len(audio) > 0
    # The captions of the part read stay with it (they were 409: none for a stopped job).
    srt = http.get(f"/v1/documents/{job_id}/captions.srt")
    assert srt.status_code == 200 and "-->" in srt.text
    last_end = srt.text.strip().split("\n\n")[-1].split("\n")[1].split(" --> ")[1]
    h, m, sec = last_end.replace(",", ".").split(":")
    assert 0 < int(h) * 3600 + int(m) * 60 + float(sec) <= len(audio) / rate + 0.01


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/documents/0123456789abcdef0123456789abcdef"),
        ("GET", "/v1/documents/..%2F..%2Fetc%2Fpasswd"),
        ("GET", "/v1/documents/%2Fetc%2Fpasswd/audio.wav"),
        ("DELETE", "/v1/documents/not-a-job"),
    ],
)
def test_unknown_or_hostile_ids_are_404(http: httpx.Client, method: str, path: str) -> None:
    reply = http.request(method, path)
    assert reply.status_code == 404
    assert "root:" not in reply.text


def test_bad_bodies_get_one_line_errors(http: httpx.Client) -> None:
    cases = [
        ({"input": ""}, 400),
        ({"input": "x" * 200_001}, 400),
        ({"input": "```\nonly code\n```"}, 400),
        ({"input": "Hi.", "speed": 50}, 400),
        ({"input": "Hi.", "voice": "/etc/passwd"}, 400),
    ]
    for body, status in cases:
        reply = http.post("/v1/documents", json=body)
        assert reply.status_code == status, (body, reply.text)
        assert "\n" not in reply.json()["error"]["message"]
    huge = json.dumps({"input": "a" * 1_400_000}).encode()
    assert http.post("/v1/documents", content=huge, headers={"content-type": "application/json"}).status_code == 413
    assert http.post("/v1/documents", content=b"[1, 2", headers={"content-type": "application/json"}).status_code == 400
    job = http.post("/v1/documents", json={"input": "Hello there."}).json()["id"]
    assert http.get(f"/v1/documents/{job}/../../../etc/passwd").status_code == 404
    assert http.get(f"/v1/documents/{job}/secret.txt").status_code == 404
    _wait(http, job)


def test_a_create_then_delete_loop_is_capped_for_that_client_only(http: httpx.Client) -> None:
    """Issue 24 item 8: one client's create-then-DELETE loop stops at its cap (429 with Retry-After);
    another client still gets 202. Clients are told apart by address: each binds a loopback address of its own."""
    per_client = settings.value("TTS_APP_DOCUMENTS_PER_CLIENT")

    looper = httpx.Client(base_url=str(http.base_url), timeout=120, transport=httpx.HTTPTransport(local_address="127.0.0.24"))
    other_client = httpx.Client(base_url=str(http.base_url), timeout=120, transport=httpx.HTTPTransport(local_address="127.0.0.25"))
    with looper, other_client:
        created, refused = [], None
        for _ in range(per_client + 20):
            reply = looper.post("/v1/documents", json={"input": "Hello there. " * 20, "markdown": False})
            if reply.status_code != 202:
                refused = reply
                break
            created.append(reply.json()["id"])
            assert looper.delete(f"/v1/documents/{created[-1]}").status_code == 200
        assert refused is not None and len(created) == per_client, (len(created), refused and refused.text)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
        message = refused.json()["error"]["message"]
        assert "\n" not in message and "limit per client" in message
        other = other_client.post("/v1/documents", json={"input": "Hello there."})
        assert other.status_code == 202, other.text
        _wait(other_client, other.json()["id"])  # its owner follows it (issue 46, hole 6)
        assert looper.post("/v1/documents", json={"input": "Hi."}).status_code == 429  # still refused
