"""Reference ingestion: every refusal gives its one-line VoiceError; every format loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.voice import ReferenceReport, VoiceError, load_reference
from tts_app.voice.analysis.ingest import MAX_FILE_BYTES

VOICES = BUILTIN_VOICES_DIR


def speech_like(sample_rate: int, seconds: float, f0_hz: float = 120.0, seed: int = 0) -> np.ndarray:
    """Voiced 'syllables': a pulse train through two formant resonators, with pauses and gliding pitch."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    f0 = f0_hz * (1 + 0.1 * np.sin(2 * np.pi * 0.7 * t))
    phase = np.cumsum(f0 / sample_rate)
    pulses = (np.diff(np.floor(phase), prepend=0) > 0).astype(np.float64)
    x = pulses + 0.01 * rng.standard_normal(n)
    for f_hz, bw_hz in ((700, 90), (1200, 110), (2600, 160)):
        r = np.exp(-np.pi * bw_hz / sample_rate)
        x = lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * f_hz / sample_rate), r * r], x)
    envelope = (np.sin(2 * np.pi * 2.0 * t) > -0.3).astype(np.float64)  # ~4 syllables/s with gaps
    x *= np.convolve(envelope, np.hanning(int(0.02 * sample_rate)) / (0.01 * sample_rate), mode="same")
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def write(path: Path, audio: np.ndarray, sample_rate: int, **kwargs) -> Path:
    sf.write(path, audio, sample_rate, **kwargs)
    return path


# -- refusals -----------------------------------------------------------------
def test_half_second_clip_is_too_short(tmp_path):
    path = write(tmp_path / "short.wav", speech_like(16000, 0.5), 16000)
    with pytest.raises(VoiceError, match=r"only 0\.\d s of speech; at least 1 s is needed"):
        load_reference(path)


def test_pure_silence_is_refused(tmp_path):
    path = write(tmp_path / "silence.wav", np.zeros(16000 * 3, dtype=np.float32), 16000)
    with pytest.raises(VoiceError, match="is silent"):
        load_reference(path)


def test_random_bytes_named_wav_are_not_audio(tmp_path):
    path = tmp_path / "noise.wav"
    path.write_bytes(np.random.default_rng(0).bytes(10_000))
    with pytest.raises(VoiceError, match="not a readable audio file"):
        load_reference(path)


@pytest.mark.parametrize("keep", ["header", "half"])
def test_truncated_file_is_refused(tmp_path, keep):
    data = (VOICES / "f5_main.flac").read_bytes()
    path = tmp_path / "cut.flac"
    path.write_bytes(data[:40] if keep == "header" else data[: len(data) // 2])
    with pytest.raises(VoiceError, match="not a readable audio file|could not be decoded"):
        load_reference(path)


def test_longer_than_ten_minutes_is_refused_without_decoding(tmp_path):
    path = tmp_path / "long.wav"
    with sf.SoundFile(path, "w", samplerate=8000, channels=1, subtype="PCM_16") as f:
        block = np.zeros(8000 * 60, dtype=np.int16)
        for _ in range(11):
            f.write(block)
    with pytest.raises(VoiceError, match=r"11\.0 minutes long; the limit is 10 minutes"):
        load_reference(path)


def test_larger_than_50_mb_is_refused(tmp_path):
    path = tmp_path / "huge.wav"
    with open(path, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no real 50 MB written
    with pytest.raises(VoiceError, match="the limit is 50 MB"):
        load_reference(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(VoiceError, match="not found"):
        load_reference(tmp_path / "nope.wav")
    (tmp_path / "empty.wav").write_bytes(b"")
    with pytest.raises(VoiceError, match="is empty"):
        load_reference(tmp_path / "empty.wav")


def test_bad_arrays_are_refused():
    with pytest.raises(VoiceError, match="sample rate"):
        load_reference((np.zeros(1000, np.float32), 10))
    with pytest.raises(VoiceError, match="NaN"):
        load_reference((np.full(16000, np.nan, np.float32), 16000))
    with pytest.raises(VoiceError, match="minutes long"):
        load_reference((np.zeros(8000 * 601, np.float32), 8000))


def test_refusal_message_is_one_line(tmp_path):
    path = tmp_path / "noise.wav"
    path.write_bytes(b"RIFF....garbage")
    with pytest.raises(VoiceError) as info:
        load_reference(path)
    assert "\n" not in str(info.value) and len(str(info.value)) < 200
    assert isinstance(info.value, ValueError)


# -- formats ------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, sample_rate, channels, kwargs",
    [
        ("a.wav", 22050, 1, {}),
        ("a.flac", 48000, 1, {}),
        ("a.mp3", 44100, 1, {"format": "MP3"}),
        ("a.ogg", 44100, 1, {"format": "OGG", "subtype": "VORBIS"}),
        ("a.opus.ogg", 48000, 1, {"format": "OGG", "subtype": "OPUS"}),
        ("stereo.wav", 44100, 2, {}),
        ("narrow.wav", 8000, 1, {}),
        ("cd.flac", 44100, 2, {}),
    ],
)
def test_every_format_loads(tmp_path, name, sample_rate, channels, kwargs):
    mono = speech_like(sample_rate, 2.5)
    audio = np.stack([mono, 0.5 * mono], axis=1) if channels == 2 else mono
    ref = load_reference(write(tmp_path / name, audio, sample_rate, **kwargs))
    assert ref.sample_rate == sample_rate
    assert ref.audio.ndim == 1 and ref.audio.dtype == np.float32
    assert 1.5 < ref.audio.size / sample_rate <= 2.7
    assert ref.report.input_channels == channels
    peak_dbfs = 20 * np.log10(np.abs(ref.audio).max())
    # Normalised to -20 dBFS active level unless the -1 dBFS peak ceiling stops it first.
    assert abs(ref.report.level_dbfs + ref.report.gain_db + 20) < 0.2 or abs(peak_dbfs + 1) < 0.1
    assert peak_dbfs <= -0.99
    assert ref.report.bandwidth_hz <= sample_rate / 2
    if sample_rate < 14000:
        assert any("sound only up to about" in w for w in ref.report.warnings)


@pytest.mark.parametrize("clip", ["lj_female_us.wav", "f5_ref_en.wav", "f5_main.flac", "ov_speaker0.mp3"])
def test_builtin_clips_load(clip):
    ref = load_reference(VOICES / clip)
    assert ref.report.speech_s > 3.0
    assert ref.report.cut_after_s == 0


def test_long_clip_is_cut_to_30_s_and_reported():
    ref = load_reference(VOICES / "ov_speaker1_long.mp3")
    assert ref.audio.size == 30 * ref.sample_rate
    assert ref.report.cut_after_s > 55
    assert "first 30 s" in ref.report.summary()


# -- cleaning and report ------------------------------------------------------
def test_silence_is_trimmed_and_level_normalised(tmp_path):
    sr = 16000
    speech = speech_like(sr, 2.0) * 0.05  # quiet: about -40 dBFS
    audio = np.concatenate([np.zeros(sr), speech, np.zeros(2 * sr)]).astype(np.float32)
    ref = load_reference(write(tmp_path / "padded.wav", audio, sr, subtype="FLOAT"))
    rep = ref.report
    assert 0.8 < rep.lead_trimmed_s <= 1.05 and 1.7 < rep.tail_trimmed_s <= 2.05
    assert rep.gain_db > 10
    assert abs(rep.level_dbfs + rep.gain_db + 20) < 0.2 or np.abs(ref.audio).max() > 0.88


def test_array_input_both_orders_and_int_samples():
    audio = speech_like(16000, 2.0)
    a = load_reference((audio, 16000))
    b = load_reference((16000, audio))  # Gradio's numpy order
    c = load_reference(((audio * 32767).astype(np.int16), 16000))
    assert a.content_hash == b.content_hash
    np.testing.assert_allclose(a.audio, c.audio, atol=1e-3)


def test_report_summary_and_warnings(tmp_path):
    sr = 16000
    rng = np.random.default_rng(1)
    noisy = speech_like(sr, 2.0) + 0.05 * rng.standard_normal(2 * sr).astype(np.float32)
    clipped = np.clip(noisy * 8, -1, 1)
    rep = load_reference(write(tmp_path / "bad.wav", clipped, sr)).report
    assert isinstance(rep, ReferenceReport)
    text = rep.summary()
    assert "\n" not in text and "dBFS" in text and "clipping" in text
    assert any("clips" in w for w in rep.warnings)
    assert any("noisy" in w for w in rep.warnings)
    assert any("speech" in w for w in rep.warnings)  # only ~1.5 s
    assert ReferenceReport.from_dict(rep.to_dict()) == rep
