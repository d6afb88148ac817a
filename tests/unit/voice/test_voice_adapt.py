"""The adapter: strength 0 is untouched, streaming equals whole-utterance, pitch really moves, speed."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from tts_app.voice import VoiceError, adapt, resolve_voice
from tts_app.voice.analysis.stats import f0_track_hz
from tts_app.voice.model_voice import model_voice

pytestmark = pytest.mark.slow

SR = 22050
# Streamed output vs whole-utterance output: measured max |diff| is 0 to ~1e-7 (float32
# rounding of the FIR's FFT convolution over different block lengths); allow 1e-5.
STREAM_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def speech_22k() -> np.ndarray:
    """13 s of the model's own voice (the adapter's real input)."""
    return np.array(model_voice().audio, dtype=np.float32)


@pytest.fixture(scope="module")
def female():
    return resolve_voice("lj_female_us")


def stream(profile, audio: np.ndarray, sizes, strength: float = 1.0) -> tuple[np.ndarray, int]:
    """Feed ``audio`` through a fresh streamer in chunks of ``sizes`` (cycled); return output and max held."""
    s = profile.streamer(strength, sample_rate=SR)
    outs, i, k, held = [], 0, 0, 0
    while i < len(audio):
        n = sizes[k % len(sizes)]
        outs.append(s.process(audio[i : i + n]))
        i, k = i + n, k + 1
        held = max(held, s.samples_in - s.samples_out)
    outs.append(s.flush())
    assert s.samples_out == s.samples_in == len(audio)
    return np.concatenate(outs), held


def median_f0(audio: np.ndarray) -> float:
    f0 = f0_track_hz(audio, SR)
    return float(np.median(f0[f0 > 0]))


def test_strength_zero_is_bit_identical(speech_22k, female):
    out = adapt(speech_22k, female, strength=0.0)
    assert out.dtype == np.float32 and np.array_equal(out, speech_22k)
    assert out is not speech_22k
    assert np.array_equal(adapt(speech_22k, None), speech_22k)
    s = female.streamer(0.0)
    assert s.bypass and s.latency_samples == 0
    chunks = [s.process(speech_22k[i : i + 8192]) for i in range(0, len(speech_22k), 8192)]
    assert s.flush().size == 0
    assert np.array_equal(np.concatenate(chunks), speech_22k)


@pytest.mark.parametrize("sizes", [[8192], [16384], [12_345], [1000, 64, 16384, 3], [256 * 40]])
def test_streaming_matches_whole(speech_22k, female, sizes):
    whole = adapt(speech_22k, female)
    streamed, held = stream(female, speech_22k, sizes)
    assert len(streamed) == len(whole) == len(speech_22k)
    assert np.abs(streamed - whole).max() <= STREAM_TOLERANCE
    assert held <= female.streamer().latency_samples + max(sizes)


def test_streaming_random_and_single_sample_chunks(speech_22k, female):
    rng = np.random.default_rng(3)
    piece = speech_22k[: SR // 2]
    whole = adapt(piece, female, 0.7)
    one, _ = stream(female, piece, [1], strength=0.7)
    assert np.abs(one - whole).max() <= STREAM_TOLERANCE
    sizes = [int(v) for v in rng.integers(1, 20_000, size=50)]
    whole = adapt(speech_22k, female, 0.7)
    rand, _ = stream(female, speech_22k, sizes, strength=0.7)
    assert np.abs(rand - whole).max() <= STREAM_TOLERANCE


def test_lookahead_is_bounded(speech_22k, female):
    s = female.streamer()
    assert 0 < s.latency_samples < 0.15 * SR  # < 150 ms held back
    _, held = stream(female, speech_22k, [8192])
    assert held < s.latency_samples + 8192


@pytest.mark.parametrize("n", [0, 1, 100, 2047, 5000])
def test_any_length_comes_back_the_same_length(female, n):
    x = (0.1 * np.random.default_rng(n).standard_normal(n)).astype(np.float32)
    assert len(adapt(x, female)) == n
    out, _ = stream(female, x, [333]) if n else (adapt(x, female), 0)
    assert len(out) == n


def test_memory_is_bounded_per_stream(speech_22k, female):
    s = female.streamer()
    peaks = []
    for _ in range(6):  # ~80 s of audio: what is held must not grow with the stream
        peak = 0
        for i in range(0, len(speech_22k), 16384):
            s.process(speech_22k[i : i + 16384])
            peak = max(peak, s.buffered_samples)
        peaks.append(peak)
    assert max(peaks) == peaks[0] or max(peaks[1:]) <= peaks[0] * 1.1
    assert max(peaks) < 4 * (16384 + s.latency_samples)  # two rows of output plus input history


def test_pitch_moves_toward_the_reference(speech_22k, female):
    source_hz = median_f0(speech_22k)
    target_hz = female.stats.f0_median_hz
    full = median_f0(adapt(speech_22k, female, 1.0))
    half = median_f0(adapt(speech_22k, female, 0.5))
    assert abs(math.log(full / target_hz)) < math.log(1.12), (source_hz, full, target_hz)
    assert abs(math.log(half / math.sqrt(source_hz * target_hz))) < math.log(1.12)


def test_output_is_sane(speech_22k):
    for name in ("ov_speaker1_long", "f5_ref_en"):
        out = adapt(speech_22k, resolve_voice(name))
        assert np.all(np.isfinite(out)) and np.abs(out).max() <= 1.0
        level = 10 * np.log10(np.mean(out.astype(np.float64) ** 2) / np.mean(speech_22k.astype(np.float64) ** 2))
        assert abs(level) < 4.0  # loudness kept within a few dB


def test_other_sample_rates_work(female):
    x = np.array(model_voice().audio[:44100], dtype=np.float32)
    from scipy.signal import resample_poly

    x24 = resample_poly(x, 160, 147).astype(np.float32)
    assert len(adapt(x24, female, sample_rate=24000)) == len(x24)


def test_streamers_keep_their_own_state(speech_22k, female):
    other = resolve_voice("ov_speaker0")
    a, b = female.streamer(), other.streamer()
    outs_a, outs_b = [], []
    for i in range(0, len(speech_22k), 8192):  # interleaved, as the engine's worker thread does
        outs_a.append(a.process(speech_22k[i : i + 8192]))
        outs_b.append(b.process(speech_22k[i : i + 8192]))
    outs_a.append(a.flush())
    outs_b.append(b.flush())
    assert np.abs(np.concatenate(outs_a) - adapt(speech_22k, female)).max() <= STREAM_TOLERANCE
    assert np.abs(np.concatenate(outs_b) - adapt(speech_22k, other)).max() <= STREAM_TOLERANCE


def test_threads_share_profiles_safely(speech_22k, female):
    expected = adapt(speech_22k[: 3 * SR], female)
    results: list[np.ndarray] = []

    def work() -> None:
        results.append(adapt(speech_22k[: 3 * SR], female))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.abs(r - expected).max() <= STREAM_TOLERANCE for r in results)


def test_the_plan_is_built_once_per_voice(speech_22k, female):
    """What keeps the adapter fast: a voice's filter plan is made once and reused, whatever the audio.
    Its speed (x real time, CPU time) is measured by benchmarks/voice_similarity.py, not asserted here."""
    from tts_app.voice.matching.plan import _PLANS  # the plan cache's counters, read to see it is reused

    adapt(speech_22k[:SR], female)  # plan built and cached
    before = _PLANS.info()
    adapt(speech_22k, female)
    adapt(speech_22k[: 2 * SR], female)
    after = _PLANS.info()
    assert after.misses == before.misses and after.hits >= before.hits + 2, (before, after)


@pytest.mark.parametrize("strength", [-0.1, 1.5, float("nan"), "x"])
def test_bad_strength_is_refused(female, strength):
    with pytest.raises(VoiceError, match="strength"):
        female.streamer(strength)
