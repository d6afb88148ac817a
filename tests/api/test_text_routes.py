"""Normalisation switch, lexicon and SSML through the real routes: the CLI and POST /v1/audio/speech."""

import io
import json

import httpx
import pytest
import soundfile as sf

from tests.e2e.test_cli import _synth

pytestmark = pytest.mark.slow


def test_cli_no_normalize_and_lexicon(tmp_path):
    lines = tmp_path / "l.txt"
    lines.write_text("Dr. Smith paid $5 for a tomato.\n", encoding="utf-8")
    lex = tmp_path / "lex.json"
    lex.write_text(json.dumps({"tomato": "/təmˈɑːtoʊ/"}), encoding="utf-8")
    assert _synth("-i", str(lines), "-o", str(tmp_path / "n")).returncode == 0
    assert _synth("-i", str(lines), "-o", str(tmp_path / "r"), "--no-normalize").returncode == 0
    assert _synth("-i", str(lines), "-o", str(tmp_path / "x"), "--lexicon", str(lex)).returncode == 0
    n, r, x = (sf.read(tmp_path / d / "001.wav")[0] for d in "nrx")
    assert n.size != r.size and n.size != x.size


@pytest.mark.parametrize(
    "content, message",
    [('{"tomato": "/Ж/"}', "not a phoneme of this voice"), ("{bad", "not valid JSON"), ('{"a b": "x"}', "one word")],
)
def test_cli_bad_lexicon_exits_2_with_one_line(tmp_path, content, message):
    lines = tmp_path / "l.txt"
    lines.write_text("A tomato.\n", encoding="utf-8")
    lex = tmp_path / "lex.json"
    lex.write_text(content, encoding="utf-8")
    done = _synth("-i", str(lines), "-o", str(tmp_path / "o"), "--lexicon", str(lex))
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=120) as client:
        yield client


def _seconds(response: httpx.Response) -> float:
    assert response.status_code == 200, response.text
    audio, sr = sf.read(io.BytesIO(response.content))
    return audio.size / sr


def test_api_normalize_false_and_inline_lexicon(http):
    body = {"model": "tts-1", "input": "It cost $1,234.56 on 3/14/2026.", "stream": False}
    spoken = _seconds(http.post("/v1/audio/speech", json=body))
    raw = _seconds(http.post("/v1/audio/speech", json={**body, "normalize": False}))
    words = "It cost one thousand two hundred thirty four dollars and fifty six cents on March fourteenth, twenty twenty six."
    assert spoken == _seconds(http.post("/v1/audio/speech", json={**body, "input": words}))
    assert raw != spoken
    plain = _seconds(http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Nguyen", "stream": False}))
    lexed = _seconds(http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Nguyen", "stream": False, "lexicon": {"Nguyen": "win"}}))
    assert lexed != plain


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"model": "tts-1", "input": "<speak>Hi <b></speak>"}, "not well-formed"),
        ({"model": "tts-1", "input": "Hi", "lexicon": {"hi": "/Ж/"}}, "not a phoneme"),
        ({"model": "tts-1", "input": "Hi", "lexicon": {"hi": 5}}, "lexicon"),
        ({"model": "tts-1", "input": "Hi", "normalize": "maybe"}, "normalize"),
        ({"model": "tts-1", "input": '<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "b">]><speak>&a;</speak>'}, "DTD"),
    ],
)
def test_api_bad_text_options_get_a_400(http, body, fragment):
    response = http.post("/v1/audio/speech", json=body)
    assert response.status_code == 400
    assert fragment in response.json()["error"]["message"]


def test_api_ssml_break_lengthens_the_audio(http):
    short = _seconds(http.post("/v1/audio/speech", json={"model": "tts-1", "input": "<speak>One<break time='0ms'/>two</speak>", "stream": False}))
    long = _seconds(http.post("/v1/audio/speech", json={"model": "tts-1", "input": "<speak>One<break time='2s'/>two</speak>", "stream": False}))
    assert 1.9 < long - short < 2.1
