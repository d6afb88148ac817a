"""The app's small parts, without a server: text limits, stream pacing, figures, history zip, WAV bytes."""

from __future__ import annotations

import asyncio

import io
import json
import os
import struct
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from tts_app.web.ui.common.run_figures import RunFigures, describe_batches
from tts_app.web.ui.common.text_lines import TextLimitError, parse_lines
from tts_app.web.ui.history.takes import Take, add_take, history_table, history_zip
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.speak.stream_pacer import StreamPacer
from tts_app.audio.wav_io import streaming_wav_header, to_pcm16, wav_bytes, write_wav


def test_each_non_empty_line_is_an_utterance() -> None:
    assert parse_lines("  one \n\n two\n   \nthree") == ["one", "two", "three"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Enter some text"),
        ("\n \n", "Enter some text"),
        ("\n".join(["x"] * 51), "51 lines is too many"),
        ("ok\n" + "y" * 2001, "Line 2 has 2,001 characters"),
    ],
)
def test_text_limits_have_clear_messages(text: str, message: str) -> None:
    with pytest.raises(TextLimitError, match=message):
        parse_lines(text)


def test_fifty_lines_of_two_thousand_characters_pass() -> None:
    assert len(parse_lines("\n".join(["z" * 2000] * 50))) == 50


def test_pacer_holds_a_runway_then_sends_short_segments_in_order() -> None:
    rate = 1000
    pacer = StreamPacer(rate, prebuffer_s=1.5, max_segment_s=0.8, min_segment_s=0.4)
    sent: list[np.ndarray] = []
    audio = np.arange(5000, dtype=np.float32)
    for start in range(0, 4000, 300):
        pacer.push(audio[start : start + 300])
        pieces = pacer.take()
        if not sent and pieces:
            assert start + 300 >= 1500  # nothing before the runway is there
        sent.extend(pieces)
    pacer.push(audio[4200:])  # a gap in the input is the caller's business; order is kept
    sent.extend(pacer.take(final=True))
    assert all(len(p) <= 800 for p in sent)
    assert np.array_equal(np.concatenate(sent), np.concatenate([audio[:4200], audio[4200:]]))


def test_pacer_first_piece_is_small_and_the_runway_follows_at_once() -> None:
    # The player's first playlist reload comes after twice the first segment's duration, so the
    # first piece is short and the rest of the pre-buffer follows in the same take.
    pacer = StreamPacer(1000, prebuffer_s=1.0, max_segment_s=0.3, min_segment_s=0.15, first_piece_s=0.25)
    pacer.push(np.ones(700, np.float32))
    assert pacer.take() == []  # under the pre-buffer
    pacer.push(np.ones(600, np.float32))
    assert [len(p) for p in pacer.take()] == [250, 300, 300, 300, 150]
    pacer.push(np.ones(100, np.float32))
    assert pacer.take() == []  # under the smallest segment while more is coming
    assert [len(p) for p in pacer.take(final=True)] == [100]


def test_prebuffer_outlasts_the_engine_step() -> None:
    from tts_app.web.ui.speak.stream_pacer import MAX_PREBUFFER_S, PREBUFFER_S, UNKNOWN_STEP_PREBUFFER_S, prebuffer_for

    assert prebuffer_for(0.0, 0, 5) == UNKNOWN_STEP_PREBUFFER_S  # no step timed yet
    assert UNKNOWN_STEP_PREBUFFER_S > 64 * 256 / 22050  # more than the engine's first window
    assert prebuffer_for(1.0, 40, 1) == PREBUFFER_S  # 25 ms per row-step, one line: the floor
    assert prebuffer_for(1.0, 5, 5) == pytest.approx(2.0)  # 0.2 s per row-step, 5 lines: two 1 s steps
    assert prebuffer_for(60.0, 10, 5) == MAX_PREBUFFER_S


def test_pacer_flushes_a_short_run() -> None:
    from tts_app.web.ui.speak.stream_pacer import FIRST_PIECE_S, PREBUFFER_S

    short = int(PREBUFFER_S * 1000) - 50  # under the pre-buffer: held until the run ends
    pacer = StreamPacer(1000)
    pacer.push(np.arange(short, dtype=np.float32))
    assert pacer.take() == []
    pieces = pacer.take(final=True)
    assert len(pieces[0]) == int(FIRST_PIECE_S * 1000)
    assert np.array_equal(np.concatenate(pieces), np.arange(short, dtype=np.float32))


def test_figures_table_and_summary() -> None:
    figures = RunFigures()
    figures.add_line(2, "second", {"queue_wait_s": 0.02, "time_to_first_audio_s": 0.3, "total_s": 1.0, "audio_s": 2.0, "rtf": 0.5, "batch_sizes": [2, 2]})
    figures.add_line(1, "first", {"queue_wait_s": 0.01, "time_to_first_audio_s": 0.2, "total_s": 0.8, "audio_s": 1.0, "rtf": 0.8, "batch_sizes": [2, 1]})
    figures.time_to_first_audio_s, figures.total_s = 0.25, 1.2
    table = figures.table()
    assert [row[0] for row in table] == ["1", "2", "run"]
    summary = figures.summary()
    assert summary["max_batch"] == 2 and summary["audio_s"] == 3.0 and summary["rtf"] == 0.4
    assert summary["queue_wait_s"] == 0.01 and table[-1][2] == 0.01  # the run's wait: until its first line started
    assert describe_batches([3, 3, 1]) == "3×2, 1×1 (max 3)"


def test_wav_bytes_and_streaming_header() -> None:
    audio = np.array([0.0, 0.5, -0.5, 1.5], np.float32)
    data = wav_bytes(audio, 22050)
    decoded, rate = sf.read(io.BytesIO(data), dtype="int16")
    assert rate == 22050 and decoded.tolist() == [0, 16384, -16384, 32767]  # clipped, not renormalised
    header = streaming_wav_header(24000)
    assert len(header) == 44 and header[:4] == b"RIFF" and struct.unpack("<I", header[24:28])[0] == 24000
    assert to_pcm16(audio) == data[44:]


def test_history_lists_takes_and_zips_them(tmp_path) -> None:
    clip = write_wav(tmp_path / "line-01.wav", np.zeros(100, np.float32), 22050)
    take = Take(kind="speak", lines=["Hello."], voice="lj_female_us", voice_strength=1.0, speed=1.0, seed=3,
                streaming=True, figures={"rtf": 0.2, "max_batch": 3}, line_files=[str(clip)], full_file=str(clip))
    history = add_take(add_take(None, take), take)
    assert [t["take"] for t in history] == [1, 2]
    assert history_table(history)[0][0] == 2  # newest first
    archive = history_zip(history, "unit-test-session")
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
        assert {"takes.json", "takes.csv", "take-001/line-01.wav", "take-002/all-lines.wav"} <= names
        records = json.loads(zipped.read("takes.json"))
        assert records[0]["seed"] == 3 and records[0]["line_files"] == ["take-001/line-01.wav"]
    assert history_zip([], "unit-test-session") is None


class _Handle:
    """An engine request handle as far as the page's run registry sees it."""

    def __init__(self, done: bool = False) -> None:
        self.done, self.cancelled = done, False

    @property
    def cancel_asked(self) -> bool:
        return self.cancelled

    def cancel(self) -> None:
        self.cancelled = True


def test_active_runs_cancel_only_that_session_and_count_what_they_cancelled() -> None:
    runs = ActiveRuns()
    mine, theirs = [_Handle(done=True), _Handle(), _Handle()], [_Handle()]
    runs.add("me", mine)
    theirs_run = runs.add("them", theirs)
    cancelled = runs.cancel("me")
    assert (cancelled.cancelled, cancelled.total, cancelled.finished) == (2, 3, 1)  # the finished line is not counted
    assert all(h.cancelled for h in mine[1:]) and not theirs[0].cancelled
    assert runs.cancel("me").cancelled == 0  # a second Stop cancels nothing more
    runs.end(theirs_run)
    assert runs.cancel("them").total == 0


def test_a_stop_while_the_run_starts_cancels_its_requests_as_they_come() -> None:
    runs = ActiveRuns()
    run = runs.begin("me")  # loading the model, analysing the voice: nothing submitted yet
    assert runs.cancel("me").total == 0 and run.stopped and runs.sessions() == []
    late = [_Handle(), _Handle()]
    runs.attach(run, late)
    assert all(h.cancelled for h in late)
    again = runs.begin("me")  # the next click is a run of its own, not stopped
    runs.attach(again, [fresh := _Handle()])
    assert not fresh.cancelled and runs.sessions() == ["me"]


def test_stop_cancels_in_the_page_registry_it_is_given() -> None:
    """Stop reads the registry its page owns (build_demo makes one per page), not a module-level one."""
    from tts_app.web.ui.speak.stopping import stop  # here: it loads gradio, which the rest of this file does not need

    page_a, page_b = ActiveRuns(), ActiveRuns()
    handle = _Handle()
    request = SimpleNamespace(session_hash="visitor")

    async def scenario() -> None:
        run = page_a.add("visitor", [handle])
        assert await stop(request, page_b) == "■ Nothing was running." and not handle.cancelled  # another page's registry
        # Stop answers once the run's handler has ended (removed its handles): an update the run sent as Stop
        # came lands before Stop's, never after it (the status went back to Speaking… and stayed there).
        answer = asyncio.create_task(stop(request, page_a))
        await asyncio.sleep(0.3)
        assert handle.cancelled and not answer.done() and page_a.open_runs("visitor") == 1
        run.outcome = "■ Stopped: 0 of 1 line finished, 1 cancelled."  # the handler's own account
        page_a.end(run)
        assert await answer == run.outcome
        assert page_a.open_runs("visitor") == 0

    asyncio.run(scenario())


def test_run_model_streams_lines_in_order_and_collects_figures() -> None:
    from tts_app.engine.handle import AudioChunk, WordTiming
    import soundfile as sf

    from tts_app.audio.wav_io import pcm16_array as to_pcm16_array
    from tts_app.web.ui.speak.run_files import RunFiles
    from tts_app.web.ui.speak.run_model import LINE_PAUSE_S, LineFailed, SpeakRun

    rate = 1000
    run = SpeakRun(["one", "two"], rate, streaming=True)
    metrics = {"total_s": 0.5, "queue_wait_s": 0.0, "audio_s": 1.0}
    # Line 2 finishes first: nothing of it may reach the stream before line 1 has ended.
    step = run.feed([(1, AudioChunk(np.full(800, 0.2, np.float32), (WordTiming("two", 0.1, 0.5),))), (1, None)], lambda i: metrics)
    assert step.finished == [1] and step.first_audio and step.segments == [] and step.new_words
    assert run.take_words() == []  # line 1's length is not known yet, so neither is where line 2 starts
    step = run.feed([(0, AudioChunk(np.full(900, 0.1, np.float32), (WordTiming("one", 0.2, 0.8),))), (0, None)], lambda i: metrics)
    assert step.finished == [0] and run.complete
    streamed = np.concatenate(step.segments)
    pause = int(LINE_PAUSE_S * rate)
    assert len(streamed) == 900 + pause + 800
    assert np.all(streamed[:900] == np.float32(0.1)) and np.all(streamed[900 + pause :] == np.float32(0.2))
    files = RunFiles("test-session")  # the joined file, from the lines' files, is what the stream played
    for index in (1, 0):
        files.add_line(run, index)
    run.release(files.wavs)
    assert all(not line.chunks for line in run.lines) and [line.samples for line in run.lines] == [900, 800]  # on disk only
    take, _rate = sf.read(files.finish(run), dtype="int16")
    assert np.array_equal(take, to_pcm16_array(streamed))
    # line 2's word moves by line 1's audio and the pause: where it is heard in the stream
    assert run.take_words() == [WordTiming("one", 0.2, 0.8), WordTiming("two", 0.9 + LINE_PAUSE_S + 0.1, 0.9 + LINE_PAUSE_S + 0.5)]
    summary = run.finish()
    assert summary["audio_s"] == pytest.approx(2.0) and summary["time_to_first_audio_s"] is not None
    failing = SpeakRun(["x"], rate, streaming=False)
    with pytest.raises(LineFailed, match="Line 1 failed: boom"):
        failing.feed([(0, RuntimeError("boom"))], lambda i: metrics)


def test_wheel_ffmpeg_is_put_on_path_when_the_system_has_none(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import shutil
    import subprocess

    from tts_app.audio import ffmpeg_path

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(ffmpeg_path, "_linked_dir", None)
    assert ffmpeg_path._system_ffmpeg() is None
    wheel = ffmpeg_path.ffmpeg_exe()
    assert wheel and "imageio_ffmpeg" in wheel
    assert ffmpeg_path.ensure_ffmpeg_on_path() == wheel
    found = shutil.which("ffmpeg")
    assert found and Path(found).resolve() == Path(wheel).resolve()
    version = subprocess.run([found, "-version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and "ffmpeg version" in version.stdout
    # Gradio probes served files with ffprobe once ffmpeg exists: the stand-in fails fast instead of missing.
    probe = subprocess.run([shutil.which("ffprobe"), "x.wav"], capture_output=True, text=True, timeout=30)
    assert probe.returncode == 1 and "not installed" in probe.stderr
    ffmpeg_path.ensure_ffmpeg_on_path()  # a second call adds nothing
    assert os.environ["PATH"].count(str(ffmpeg_path._linked_dir)) == 1


def test_model_selector_lists_what_is_here_and_refuses_the_rest(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tts_app.models.available import CHATTERBOX_ENV, CHATTERBOX_FILES, CHATTERBOX_ID, EMBEDDED_ID, ENV_VAR
    from tts_app.web.ui.common.model_picker import check_model, model_choices, model_help, refresh
    from tts_app.web.ui.common.user_error import UserError

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv(CHATTERBOX_ENV, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache: no Qwen3-TTS here
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # no bf16 either: no fast variant (test_qwen3_models_available)
    assert [model_id for _label, model_id in model_choices()] == [EMBEDDED_ID]
    assert "fetch qwen3-0.6b" in model_help()
    assert "requirements-gpu.txt" in model_help()  # the weights alone do not run: torch is needed besides
    assert check_model(None) == check_model(EMBEDDED_ID) == EMBEDDED_ID
    with pytest.raises(UserError, match="fetch qwen3-1.7b"):
        check_model("qwen3-1.7b")  # known but not here: how to get it
    with pytest.raises(UserError, match="Unknown model"):
        check_model("/etc/passwd")  # a hostile value is never a path
    assert refresh("qwen3-0.6b")["value"] == EMBEDDED_ID  # a value no longer offered falls back
    with pytest.raises(UserError, match="fetch chatterbox"):
        check_model(CHATTERBOX_ID)
    # A Chatterbox checkpoint here: offered, and the help line says what it costs on a CPU.
    (tmp_path / "cb").mkdir()
    for name in CHATTERBOX_FILES:
        (tmp_path / "cb" / name).write_bytes(b"")
    monkeypatch.setenv(CHATTERBOX_ENV, str(tmp_path / "cb"))
    assert [model_id for _label, model_id in model_choices()] == [EMBEDDED_ID, CHATTERBOX_ID]
    assert "Chatterbox is a GPU model" in model_help() and "Qwen3-TTS is" not in model_help()
    assert check_model(CHATTERBOX_ID) == CHATTERBOX_ID


@pytest.mark.parametrize("space", ["", "someone/tts"])
def test_players_offer_share_on_a_space_only(monkeypatch: pytest.MonkeyPatch, space: str) -> None:
    """Gradio's Share posts to the Space's discussions: the page's players offer it on a Space, and nowhere else."""
    import gradio as gr  # here: it loads gradio, which the rest of this file does not need

    from tts_app.web.ui.layout import build_demo

    monkeypatch.setenv("SPACE_ID", space)
    demo = build_demo()
    players = [b for b in demo.blocks.values() if isinstance(b, gr.Audio) and not b.streaming]
    assert len(players) >= 5
    assert all(("share" in (p.buttons or [])) == bool(space) for p in players), [(p.label, p.buttons) for p in players]
