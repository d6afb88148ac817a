"""POST /v1/audio/speech/captioned over HTTP: JSON, NDJSON stream, SRT and WebVTT, bad input."""

from __future__ import annotations

import base64
import io
import json
import re

import httpx
import numpy as np
import pytest
import soundfile as sf

TEXT = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."
ROUTE = "/v1/audio/speech/captioned"


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=120) as client:
        yield client


def _check_words(words: list[dict], audio_s: float) -> None:
    assert [w["word"] for w in words[:3]] == ["The", "birch", "canoe"] and words[-1]["word"] == "background."
    for a, b in zip(words, words[1:]):
        assert a["start"] <= a["end"] <= b["start"]
    assert words[-1]["end"] <= audio_s + 1e-3 and words[-1]["end"] > audio_s - 0.3


def test_whole_reply_has_audio_and_words(http: httpx.Client) -> None:
    reply = http.post(ROUTE, json={"input": TEXT, "response_format": "wav", "seed": 4})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["audio_format"] == "wav" and body["sample_rate"] == 22050
    audio, rate = sf.read(io.BytesIO(base64.b64decode(body["audio"])), dtype="float32")
    assert rate == 22050
    _check_words(body["words"], len(audio) / rate)


def test_streamed_lines_join_into_the_same_audio_and_words(http: httpx.Client) -> None:
    whole = http.post(ROUTE, json={"input": TEXT, "response_format": "pcm", "seed": 4}).json()
    lines = []
    with http.stream("POST", ROUTE, json={"input": TEXT, "response_format": "pcm", "seed": 4, "stream": True}) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("application/x-ndjson")
        for line in reply.iter_lines():
            if line:
                lines.append(json.loads(line))
    assert len(lines) > 2  # streamed in pieces
    pcm = b"".join(base64.b64decode(x["audio"]) for x in lines)
    streamed, one = np.frombuffer(pcm, np.int16).astype(np.int32), np.frombuffer(base64.b64decode(whole["audio"]), np.int16)
    # The same samples to the last bit of 16: a stream's windows follow what its listener holds (64 frames while
    # it holds little), a whole reply's are the largest, and the decoder's sums in another order differ by
    # under 1e-4 (tests/unit/engine/test_engine_qos_piper.py), which can round a sample to its neighbour.
    assert streamed.shape == one.shape and np.abs(streamed - one).max() <= 1
    words = [w for x in lines for w in x["words"]]
    assert words == whole["words"]
    # a line's words are heard within the audio sent up to and including that line
    sent = 0
    for x in lines:
        sent += len(base64.b64decode(x["audio"])) // 2
        assert all(w["end"] * 22050 <= sent + 1 for w in x["words"])
    _check_words(words, len(pcm) / 2 / 22050)


def test_srt_and_vtt(http: httpx.Client) -> None:
    srt = http.post(ROUTE, json={"input": TEXT, "response_format": "srt"})
    assert srt.status_code == 200 and srt.headers["content-type"].startswith("application/x-subrip")
    blocks = srt.text.strip().split("\n\n")
    assert len(blocks) >= 2 and blocks[0].startswith("1\n00:00:00,")
    assert re.fullmatch(r"\d+\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n.+", blocks[1])
    assert " ".join(b.split("\n", 2)[2] for b in blocks).startswith("The birch canoe slid")
    vtt = http.post(ROUTE, json={"input": TEXT, "response_format": "vtt"})
    assert vtt.status_code == 200 and vtt.headers["content-type"].startswith("text/vtt")
    assert vtt.text.startswith("WEBVTT\n\n00:00:00.") and "<00:00:0" in vtt.text


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": TEXT, "response_format": "docx"}, "response_format"),
        ({"input": ""}, "input"),
        ({"input": "x" * 5000}, "input"),
        ({"input": TEXT, "speed": 99}, "speed"),
        ({"input": TEXT, "voice": "../../etc/passwd"}, "voice"),
        ({"input": TEXT, "stream": "maybe"}, "stream"),
    ],
)
def test_bad_requests_get_one_line_errors(http: httpx.Client, body: dict, param: str) -> None:
    reply = http.post(ROUTE, json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and "\n" not in error["message"]


def test_not_json_and_oversized_bodies(http: httpx.Client) -> None:
    assert http.post(ROUTE, content=b"{nope", headers={"content-type": "application/json"}).status_code == 400
    assert http.post(ROUTE, content=b"[" * 100_000, headers={"content-type": "application/json"}).status_code in (400, 413)
    big = json.dumps({"input": "a" * 3_000_000}).encode()
    assert http.post(ROUTE, content=big, headers={"content-type": "application/json"}).status_code == 413
    assert http.get("/healthz").status_code == 200


WRITTEN = "Dr. Lee paid $5 on Jan. 3rd."


def test_words_carry_the_written_text_in_every_format(http: httpx.Client) -> None:
    """Captions in the reader's words: JSON and NDJSON words say where in ``input`` they were read from; SRT and
    WebVTT show the written tokens (fails on the code before: no text_start, and subtitles said "Doctor ... five dollars")."""
    whole = http.post(ROUTE, json={"input": WRITTEN, "response_format": "pcm", "seed": 4})
    assert whole.status_code == 200, whole.text
    words = whole.json()["words"]
    assert [w["word"] for w in words] == ["Doctor", "Lee", "paid", "five", "dollars", "on", "January", "third."]
    assert [w["written"] for w in words] == ["Dr.", "Lee", "paid", "$5", "$5", "on", "Jan.", "3rd."]
    for w in words:
        assert WRITTEN[w["text_start"] : w["text_end"]] == w["written"]
    lines = []
    with http.stream("POST", ROUTE, json={"input": WRITTEN, "response_format": "pcm", "seed": 4, "stream": True}) as reply:
        assert reply.status_code == 200
        lines = [json.loads(line) for line in reply.iter_lines() if line]
    assert [w for x in lines for w in x["words"]] == words
    srt = http.post(ROUTE, json={"input": WRITTEN, "response_format": "srt", "seed": 4}).text
    assert " ".join(b.split("\n", 2)[2] for b in srt.strip().split("\n\n")) == WRITTEN
    vtt = http.post(ROUTE, json={"input": WRITTEN, "response_format": "vtt", "seed": 4}).text
    cue = vtt.split("\n\n")[1].split("\n", 1)[1]
    assert re.sub(r"<[\d:.]+>", "", cue).strip() == WRITTEN and cue.count("<") == 6  # one timestamp a written token after the first
    dollars = [w for w in words if w["written"] == "$5"]
    assert f"<{_vtt_clock(dollars[0]['start'])}>$5" in cue  # the token's cue word starts with its first spoken word


def _vtt_clock(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


SSML = "<speak>Pay <say-as interpret-as='cardinal'>12</say-as> to <sub alias='World Wide Web'>WWW</sub> &amp; go.</speak>"


def test_ssml_words_carry_the_written_text_of_the_source(http: httpx.Client) -> None:
    """An SSML request's words map to the SSML as sent: a <say-as> or <sub> to what its element holds, an entity
    as written (before: every SSML word had null offsets and the subtitles showed the spoken words)."""
    reply = http.post(ROUTE, json={"input": SSML, "response_format": "pcm", "seed": 4})
    assert reply.status_code == 200, reply.text
    words = reply.json()["words"]
    assert [(w["word"], w["written"]) for w in words] == [
        ("Pay", "Pay"), ("twelve", "12"), ("to", "to"), ("World", "WWW"), ("Wide", "WWW"), ("Web", "WWW"),
        ("and", "&amp;"), ("go.", "go."),
    ]  # fmt: skip
    for w in words:
        assert SSML[w["text_start"] : w["text_end"]] == w["written"]
    srt = http.post(ROUTE, json={"input": SSML, "response_format": "srt", "seed": 4}).text
    assert " ".join(b.split("\n", 2)[2] for b in srt.strip().split("\n\n")) == "Pay 12 to WWW &amp; go."
