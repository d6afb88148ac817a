"""What OpenAI clients expect of /v1/audio/speech: formats, voice names, sizes, speed, instructions.

Over real HTTP (httpx) and with the official ``openai`` client pointed at the app by ``base_url``.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import time
import typing
import wave
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.support.paths import REPO
from tests.support.system_tools import system_tool
from tts_app.audio.formats import MAX_FFMPEG_ENCODERS, open_encoder
from tts_app.catalog.voice_aliases import ALIASES_ENV, OPENAI_VOICES, library_voice, voice_aliases
from tts_app.models.available import OPENAI_MODELS
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.audio.ffmpeg_path import ffmpeg_exe

pytestmark = pytest.mark.slow

TEXT = "Formats for every client. The same words, every time."
# Two sentences: one sentence pause, which must shrink with speed like the speech does.
SPEED_TEXT = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."
MEDIA_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/opus",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
# Decoded length may exceed the PCM's by the codec's priming and last-frame padding
# (MP3 and AAC frames are 1,152 and 1,024 samples); lossless formats match to the sample.
SLACK_S = {"mp3": 0.15, "opus": 0.03, "aac": 0.15, "flac": 0.0, "wav": 0.0}


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def pcm_seconds(http: httpx.Client) -> float:
    """The length of TEXT as raw PCM: the reference every format's decoded length is held to."""
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": TEXT, "response_format": "pcm"})
    assert response.status_code == 200, response.text
    return len(response.content) / 2 / int(response.headers["x-sample-rate"])


def decoded_seconds(data: bytes, rate: int = 22050) -> float:
    """Decode any format with ffmpeg (as a player would) and return its length."""
    exe = ffmpeg_exe()
    assert exe, "ffmpeg (system or imageio-ffmpeg) is needed to decode"
    result = subprocess.run(
        [exe, "-v", "error", "-i", "pipe:0", "-f", "s16le", "-ac", "1", "-ar", str(rate), "pipe:1"],
        input=data,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0 and not result.stderr, result.stderr.decode()
    return len(result.stdout) / 2 / rate


def speech(http: httpx.Client, **body: object) -> httpx.Response:
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": TEXT, **body})
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("fmt", ["mp3", "opus", "aac", "flac", "wav"])
def test_every_format_decodes_to_the_right_length(http: httpx.Client, pcm_seconds: float, fmt: str, stream: bool) -> None:
    response = speech(http, response_format=fmt, stream=stream)
    assert response.headers["content-type"] == MEDIA_TYPES[fmt]
    seconds = decoded_seconds(response.content)
    assert pcm_seconds - 0.005 <= seconds <= pcm_seconds + SLACK_S[fmt] + 0.005, (fmt, seconds, pcm_seconds)


@pytest.mark.parametrize("fmt", ["mp3", "flac", "wav"])
def test_whole_files_carry_their_length_for_libsndfile(http: httpx.Client, pcm_seconds: float, fmt: str) -> None:
    """A non-streamed file's header states its length (FLAC STREAMINFO, MP3 Xing frame, WAV sizes)."""
    info = sf.info(io.BytesIO(speech(http, response_format=fmt, stream=False).content))
    assert info.frames / info.samplerate == pytest.approx(pcm_seconds, abs=0.002)


def test_whole_wav_has_real_sizes_for_pythons_wave(http: httpx.Client, pcm_seconds: float) -> None:
    data = speech(http, response_format="wav", stream=False).content
    with wave.open(io.BytesIO(data)) as reader:
        assert reader.getnframes() / reader.getframerate() == pytest.approx(pcm_seconds, abs=1e-6)
    assert int.from_bytes(data[4:8], "little") == len(data) - 8


def test_mp3_is_the_default_format(http: httpx.Client, pcm_seconds: float) -> None:
    response = speech(http)
    assert response.headers["content-type"] == "audio/mpeg"
    assert pcm_seconds <= decoded_seconds(response.content) <= pcm_seconds + SLACK_S["mp3"] + 0.005


def _official_names(type_alias: object) -> list[str]:
    """The string literals in one of the installed openai client's parameter types (its Voice, SpeechModel)."""
    if typing.get_origin(type_alias) is typing.Literal:
        return [a for a in typing.get_args(type_alias) if isinstance(a, str)]
    return [name for arg in typing.get_args(type_alias) for name in _official_names(arg)]


def official_voices() -> list[str]:
    pytest.importorskip("openai")
    from openai.types.audio.speech_create_params import Voice

    return _official_names(Voice)


def test_every_openai_voice_name_is_served_as_its_alias(http: httpx.Client) -> None:
    """Every voice the installed official client names (13 in openai 2.x: marin and cedar the newest) is accepted,
    listed by /v1/audio/voices, and sounds exactly like the voice it is an alias of."""
    listed = http.get("/v1/audio/voices").json()["voices"]
    aliases = voice_aliases()
    assert sorted(aliases) == sorted(OPENAI_VOICES) == sorted(official_voices())
    own: dict[str, bytes] = {}
    for name in official_voices():
        assert name in listed
        target = aliases[name]
        if target not in own:
            own[target] = speech(http, voice=target, input="Hi there.", response_format="pcm").content
        aliased = speech(http, voice=name, input="Hi there.", response_format="pcm").content
        assert aliased == own[target], f"{name} should sound exactly like {target}"
    assert len(own) >= 4, "the aliases should spread over several voices"
    # ...that really sound different: a server ignoring `voice` would give every alias the same audio.
    assert len(set(own.values())) == len(own), "two different voices gave the same audio"


def test_alias_file_from_the_environment(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "aliases.json"
    path.write_text(json.dumps({"alloy": "lj_female_us", "house": "default", "_comment": "ignored"}))
    monkeypatch.setenv(ALIASES_ENV, str(path))
    assert library_voice("alloy") == "lj_female_us"
    assert library_voice("house") is None  # the model's own voice
    assert library_voice("f5_main") == "f5_main"  # real voices still work
    with pytest.raises(ValueError, match="unknown voice 'nova'"):
        library_voice("nova")
    path.write_text(json.dumps({"alloy": "gone"}) + " " * 10)  # edited: read again
    with pytest.raises(ValueError, match="alias of 'gone'"):
        library_voice("alloy")


def test_a_models_own_voices_come_after_the_librarys_names_and_aliases(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model's saved voice names resolve for that model only; a library voice or alias of the same name keeps
    meaning the library's voice; an unknown name is one line listing every choice, the model's own last."""
    from tts_app.backends.model_voice import ModelVoice

    path = tmp_path / "aliases.json"
    path.write_text(json.dumps({"alloy": "lj_female_us"}))
    monkeypatch.setenv(ALIASES_ENV, str(path))
    own = ("alba", "f5_main", "alloy")
    assert library_voice("alba", own) == ModelVoice("alba")
    assert library_voice("f5_main", own) == "f5_main" and library_voice("alloy", own) == "lj_female_us"
    with pytest.raises(ValueError, match="unknown voice 'alba'") as other_model:
        library_voice("alba")  # another model (no own voices): not a library voice, refused
    assert "alba" not in str(other_model.value).split("choose one of: ")[1].split(", ")
    with pytest.raises(ValueError) as unknown:
        library_voice("../alba", own)
    message = str(unknown.value)
    assert "\n" not in message and message.endswith(", alloy, alba") and message.count("f5_main") == 1


def test_a_broken_alias_file_is_a_one_line_server_error(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from tts_app.web.api.openai_speech import router

    path = tmp_path / "aliases.json"
    path.write_text("[1, 2")
    monkeypatch.setenv(ALIASES_ENV, str(path))
    app = FastAPI()
    app.include_router(router)
    response = TestClient(app).post("/v1/audio/speech", json={"model": "tts-1", "input": "Hi.", "voice": "alloy"})
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["code"] == "voice_aliases_invalid" and "\n" not in error["message"]


@pytest.mark.parametrize(
    ("body", "param"),
    [({"response_format": "ogg"}, "response_format"), ({"voice": "nonesuch"}, "voice"), ({"speed": SPEED_MAX + 0.5}, "speed")],
)
def test_bad_format_voice_or_speed_is_a_one_line_400(http: httpx.Client, body: dict, param: str) -> None:
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Hi.", **body})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["param"] == param and error["message"] and "\n" not in error["message"]


def test_speed_scales_the_whole_length_pauses_included(http: httpx.Client) -> None:
    def seconds(speed: float) -> float:
        response = speech(http, input=SPEED_TEXT, speed=speed, response_format="pcm")
        return len(response.content) / 2 / int(response.headers["x-sample-rate"])

    base = seconds(1.0)
    for speed in (SPEED_MIN, 0.5, 2.0, SPEED_MAX):
        assert seconds(speed) * speed / base == pytest.approx(1.0, abs=0.05), speed


def test_frame_counts_divide_evenly_by_speed() -> None:
    from tts_app.models.piper.durations import phoneme_frames

    w_N = np.exp(np.random.default_rng(0).normal(1.0, 0.9, size=300)).astype(np.float32)  # predicted frames per id
    stock_N = np.ceil(w_N * 1.0).astype(np.int64)
    assert np.array_equal(phoneme_frames(w_N, 1.0, 1.0), stock_N)  # speed 1 is stock Piper
    for speed in (SPEED_MIN, 0.5, 2.0, SPEED_MAX):
        frames_N = phoneme_frames(w_N, 1.0, speed)
        assert frames_N.min() >= 0 and abs(frames_N.sum() - stock_N.sum() / speed) <= 0.5
        # every id's share moves by less than one frame: the rhythm is kept, not just the total
        assert np.abs(np.cumsum(frames_N) - np.cumsum(stock_N) / speed).max() <= 0.5


def test_speed_scales_clause_pauses_too(http: httpx.Client) -> None:
    """A sentence too long for one text pass is cut at a clause mark with a clause pause."""
    from tts_app.text import chunk_sentences, normalize_text, phonemize

    clause = "the quick brown fox, having jumped over the lazy sleeping dog near the river bank at dawn"
    sentence = "; ".join([clause] * 7) + "."
    chunks = chunk_sentences(phonemize(normalize_text(sentence), "en-us"))
    assert len(chunks) >= 2, "the test sentence should be cut into clauses"

    def seconds(speed: float) -> float:
        response = speech(http, input=sentence, speed=speed, response_format="pcm")
        return len(response.content) / 2 / int(response.headers["x-sample-rate"])

    assert seconds(2.0) / seconds(4.0) == pytest.approx(2.0, rel=0.05)


def test_streams_hung_up_early_give_their_ffmpeg_back(http: httpx.Client) -> None:
    """More hang-ups than ffmpeg slots: a leaked slot or process would turn the last request into a 503."""
    # About 50 s of speech: the encoder still has input to wait for while the first bytes are looked at, even on a
    # CPU that makes the audio at 40x real time.
    body = {"model": "tts-1", "input": " ".join([SPEED_TEXT, TEXT] * 6), "response_format": "aac"}

    def post_until_served(read_all: bool, seen_running: list[bool] | None = None) -> bytes:
        deadline = time.monotonic() + 30
        while True:
            with http.stream("POST", "/v1/audio/speech", json=body) as response:
                if response.status_code == 200:
                    if read_all:
                        return response.read()
                    chunks = response.iter_bytes()  # held: a dropped iterator closes the stream at once
                    first = next(chunks)
                    if seen_running is not None:  # the check below can see an encoder at all
                        seen_running.append(bool(_app_ffmpeg_encoders()))
                    return first
                assert response.status_code in (429, 503), response.read()  # 429: this client's share, until a hung-up one is freed
            assert time.monotonic() < deadline, "ffmpeg slots were not given back"
            time.sleep(0.2)

    seen_running: list[bool] = []
    for _ in range(MAX_FFMPEG_ENCODERS + 2):
        assert post_until_served(read_all=False, seen_running=seen_running)  # first bytes, then hang up
    assert any(seen_running), "no running encoder was found while streams were open"
    assert decoded_seconds(post_until_served(read_all=True)) > 3
    deadline = time.monotonic() + 15
    while _app_ffmpeg_encoders():
        assert time.monotonic() < deadline, "ffmpeg encoders outlived their hung-up requests"
        time.sleep(0.2)


def _app_ffmpeg_encoders() -> list[int]:
    """Pids of AAC ffmpeg encoders whose parent is this checkout's app.py (the test server)."""
    repo = REPO
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or b"adts" not in (proc / "cmdline").read_bytes():
                continue
            parent = Path("/proc") / (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
            if b"app.py" in (parent / "cmdline").read_bytes() and (parent / "cwd").resolve() == repo:
                found.append(int(proc.name))
        except OSError:  # the process ended while we looked
            continue
    return found


def test_instructions_are_accepted_and_ignored(http: httpx.Client) -> None:
    plain = speech(http, response_format="pcm").content
    instructed = speech(http, response_format="pcm", instructions="Speak like a pirate, slowly.").content
    assert instructed == plain


def test_aac_and_opus_without_a_system_ffmpeg(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no ffmpeg on PATH the imageio-ffmpeg wheel's binary encodes (the README's two commands suffice)."""
    monkeypatch.setenv("PATH", str(tmp_path))
    exe = ffmpeg_exe()
    assert exe is not None and "imageio_ffmpeg" in exe
    tone_T = (0.3 * np.sin(np.arange(22050) * 2 * np.pi * 220 / 22050)).astype(np.float32)  # 1 s
    for fmt in ("aac", "opus"):
        data = asyncio.run(open_encoder(fmt, 22050).whole(tone_T))
        assert 1.0 <= decoded_seconds(data) <= 1.0 + SLACK_S[fmt] + 0.005, fmt


# --- the official openai client --------------------------------------------------------------


@pytest.fixture(scope="module")
def openai_client(app_server: str):
    openai = pytest.importorskip("openai")
    with openai.OpenAI(base_url=app_server + "/v1", api_key="not-checked", max_retries=0, timeout=120) as client:
        yield client


def test_openai_client_defaults_get_an_mp3(openai_client, pcm_seconds: float) -> None:
    response = openai_client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT)
    assert response.response.headers["content-type"] == "audio/mpeg"
    assert pcm_seconds <= decoded_seconds(response.content) <= pcm_seconds + SLACK_S["mp3"] + 0.005


@pytest.mark.parametrize("fmt", ["opus", "aac", "flac"])
def test_openai_client_streams_each_format(openai_client, pcm_seconds: float, fmt: str) -> None:
    with openai_client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="coral", input=TEXT, response_format=fmt, instructions="Cheerful."
    ) as response:
        assert response.headers["content-type"] == MEDIA_TYPES[fmt]
        data = b"".join(response.iter_bytes())
    assert pcm_seconds - 0.005 <= decoded_seconds(data) <= pcm_seconds + SLACK_S[fmt] + 0.005


def test_openai_client_whole_wav_reads_with_wave(openai_client, pcm_seconds: float) -> None:
    response = openai_client.audio.speech.create(
        model="tts-1", voice="nova", input=TEXT, response_format="wav", speed=2.0, extra_body={"stream": False}
    )
    with wave.open(io.BytesIO(response.content)) as reader:
        seconds = reader.getnframes() / reader.getframerate()
    assert seconds * 2.0 / pcm_seconds == pytest.approx(1.0, abs=0.05)


def _wav_sizes(data: bytes) -> tuple[int, int, int]:
    """(RIFF size, data chunk size, data chunk offset) as the header states them (chunks walked, none assumed)."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    riff = int.from_bytes(data[4:8], "little")
    at = 12
    while at + 8 <= len(data):
        kind, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "little")
        if kind == b"data":
            return riff, size, at + 8
        at += 8 + size + (size & 1)
    raise AssertionError("no data chunk")


def test_openai_client_plain_wav_header_is_true_in_wave_soundfile_and_ffmpeg(openai_client, tmp_path: Path, pcm_seconds: float) -> None:
    """The client's default, non-streaming call (it reads the whole body): a WAV whose sizes are the file's own."""
    response = openai_client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, response_format="wav")
    data = response.content
    riff, size, offset = _wav_sizes(data)
    assert riff == len(data) - 8 and size == len(data) - offset  # not 0xFFFFFFFF
    with wave.open(io.BytesIO(data)) as reader:
        frames = reader.getnframes()
        assert frames * reader.getsampwidth() == size
        assert frames / reader.getframerate() == pytest.approx(pcm_seconds, abs=1e-4)
    assert sf.info(io.BytesIO(data)).frames == frames
    path = tmp_path / "speech.wav"
    path.write_bytes(data)
    exe = ffmpeg_exe()
    assert exe
    checked = subprocess.run([exe, "-v", "warning", "-i", str(path), "-f", "null", "-"], capture_output=True, text=True, timeout=60)
    # A mono WAV without a channel mask: ffmpeg names the layout it guesses; anything else ("Ignoring maximum wav
    # data size", "Estimating duration from bitrate", a corrupt packet: a streamed WAV's) is a defect.
    warnings = [line for line in checked.stderr.splitlines() if "Guessed Channel Layout: mono" not in line]
    assert checked.returncode == 0 and warnings == [], checked.stderr
    assert decoded_seconds(data) == pytest.approx(pcm_seconds, abs=1e-4)


def test_a_wav_asked_to_stream_streams_with_open_sizes(http: httpx.Client) -> None:
    """`"stream": true` (or the client's streaming response, tests/api/test_openai_speech.py) keeps the first audio at once."""
    streamed = speech(http, response_format="wav", stream=True).content
    riff, size, _ = _wav_sizes(streamed)
    assert riff == size == 0xFFFFFFFF
    assert sf.info(io.BytesIO(streamed)).frames == _wav_sizes(speech(http, response_format="wav").content)[1] // 2


def test_every_model_name_of_the_official_client_is_accepted(openai_client) -> None:
    """gpt-4o-mini-tts-2025-12-15 and the older names: each an alias of the embedded model (same audio)."""
    from openai.types.audio.speech_model import SpeechModel

    names = _official_names(SpeechModel)
    assert "gpt-4o-mini-tts-2025-12-15" in names and sorted(names) == sorted(OPENAI_MODELS)
    heard = {name: openai_client.audio.speech.create(model=name, voice="marin", input="Hi there.", response_format="pcm").content
             for name in names}  # fmt: skip
    assert len(set(heard.values())) == 1 and len(heard["tts-1"]) > 0
    cedar = openai_client.audio.speech.create(model="gpt-4o-mini-tts-2025-12-15", voice="cedar", input="Hi there.", response_format="pcm")
    assert cedar.content != heard["tts-1"]


def test_openai_client_sees_a_bad_voice_as_bad_request(openai_client) -> None:
    import openai

    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.audio.speech.create(model="tts-1", voice="nonesuch", input="Hi.")
    assert "unknown voice" in str(caught.value)


# --- what a client that only writes the body to a file gets ----------------------------------

# Long enough for many MP3 frames: variable-bitrate frames without totals made soundfile stop at 84 %.
LONG_TEXT = SPEED_TEXT + " " + TEXT + " " + SPEED_TEXT
# The formats libsndfile reads (soundfile 0.13 / libsndfile 1.2: Ogg Opus too; ADTS AAC and raw PCM not).
SOUNDFILE_READS = {"mp3", "opus", "flac", "wav"}


@pytest.fixture(scope="module")
def long_pcm_seconds(http: httpx.Client) -> float:
    response = speech(http, input=LONG_TEXT, response_format="pcm")
    return len(response.content) / 2 / int(response.headers["x-sample-rate"])


@pytest.fixture(scope="session")
def mpg123() -> str:
    """mpg123's path, or a skip naming its package: session-scoped and first in a test's arguments, it skips before
    the app server starts."""
    return system_tool("mpg123")


def mpg123_seconds(exe: str, path: Path) -> float:
    """Decode with mpg123 (libmpg123, as soundfile, Firefox and many players use it); its errors fail the test."""
    result = subprocess.run([exe, "-q", "-s", "-m", "-r", "22050", str(path)], capture_output=True, timeout=60)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr.decode()
    return len(result.stdout) / 2 / 22050


def _default_file(openai_client, tmp_path: Path, fmt: str | None) -> Path:
    """``speech.create(...).write_to_file`` with the client's defaults (a streamed body, mp3 unless ``fmt``)."""
    extra = {"response_format": fmt} if fmt else {}
    path = tmp_path / f"speech.{fmt or 'mp3'}"
    openai_client.audio.speech.create(model="tts-1", voice="alloy", input=LONG_TEXT, **extra).write_to_file(path)
    return path


def _full_length(long_pcm_seconds: float, fmt: str) -> tuple[float, float]:
    return long_pcm_seconds - 0.005, long_pcm_seconds + SLACK_S.get(fmt, 0.0) + 0.005


@pytest.mark.parametrize("fmt", [None, "mp3", "opus", "aac", "flac", "wav", "pcm"])
def test_openai_client_default_file_reads_at_full_length_everywhere(
    openai_client, long_pcm_seconds: float, tmp_path: Path, fmt: str | None
) -> None:
    """Every decoder gets the whole length of the file the client writes, including those that size the file
    from its first header (mpg123: the next test)."""
    path = _default_file(openai_client, tmp_path, fmt)
    fmt = fmt or "mp3"
    low, high = _full_length(long_pcm_seconds, fmt)
    if fmt == "pcm":
        assert path.stat().st_size / 2 / 22050 == pytest.approx(long_pcm_seconds, abs=1e-6)
        return
    assert low <= decoded_seconds(path.read_bytes()) <= high, "ffmpeg"
    if fmt in SOUNDFILE_READS:
        audio, rate = sf.read(path)
        assert low <= len(audio) / rate <= high, "soundfile"


def test_openai_client_default_mp3_reads_at_full_length_in_mpg123(mpg123: str, openai_client, long_pcm_seconds: float,
                                                                   tmp_path: Path) -> None:  # fmt: skip
    low, high = _full_length(long_pcm_seconds, "mp3")
    assert low <= mpg123_seconds(mpg123, _default_file(openai_client, tmp_path, None)) <= high


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("fmt", ["mp3", "opus", "aac", "flac", "wav", "pcm"])
def test_sample_rate_header_is_the_rate_the_body_decodes_at(http: httpx.Client, tmp_path: Path, fmt: str, stream: bool) -> None:
    response = speech(http, response_format=fmt, stream=stream)
    stated = int(response.headers["x-sample-rate"])
    if fmt == "pcm":
        assert stated == 22050
        return
    exe = ffmpeg_exe()
    assert exe
    wav = tmp_path / "decoded.wav"  # decoded at the stream's own rate (no -ar)
    subprocess.run([exe, "-v", "error", "-i", "pipe:0", str(wav)], input=response.content, check=True, timeout=60)
    assert stated == sf.info(wav).samplerate
    if fmt == "opus":
        assert stated == 48000


def test_a_body_without_model_is_a_one_line_400(http: httpx.Client) -> None:
    response = http.post("/v1/audio/speech", json={"input": "Hi.", "voice": "alloy"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "model" and error["type"] == "invalid_request_error"
    assert "model" in error["message"] and "\n" not in error["message"]
