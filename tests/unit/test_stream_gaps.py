"""The browser test's gap measurement (tests/stream_gaps.py) sees a stall: silence inserted into a
played stream fails the check, however long, while the clean stream passes."""

from __future__ import annotations

from math import gcd

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from tests.support.stream_gaps import measure_gaps, stall_problems
from tts_app.assets import BUILTIN_VOICES_DIR

PLAYED_RATE = 48000  # the browser's Web Audio clock
LEAD_S = 1.3  # the player starts this late after the capture began (as the browser test measured)
STALL_AT_S = 4.0  # where in the sent audio the stall is inserted


@pytest.fixture(scope="module")
def sent() -> tuple[np.ndarray, int]:
    audio, rate = sf.read(BUILTIN_VOICES_DIR / "lj_female_us.wav", dtype="float32")  # 9.7 s of speech
    return audio, rate


def _played(sent: np.ndarray, rate: int, stall_s: float = 0.0, lost_s: float = 0.0) -> np.ndarray:
    """``sent`` as the browser's tap records it: at 48 kHz, after a lead-in, with a stall of ``stall_s``
    seconds of silence (or ``lost_s`` seconds of audio missing) at STALL_AT_S, and a faint hiss."""
    cut = int(STALL_AT_S * rate)
    pieces = [np.zeros(int(LEAD_S * rate), np.float32), sent[:cut], np.zeros(int(stall_s * rate), np.float32),
              sent[cut + int(lost_s * rate):], np.zeros(rate, np.float32)]
    audio = np.concatenate(pieces)
    g = gcd(rate, PLAYED_RATE)
    played = resample_poly(audio, PLAYED_RATE // g, rate // g).astype(np.float32)
    return played + np.random.default_rng(0).normal(0, 1e-4, len(played)).astype(np.float32)


def test_the_clean_stream_passes(sent: tuple[np.ndarray, int]) -> None:
    audio, rate = sent
    report = measure_gaps(_played(audio, rate), PLAYED_RATE, audio, rate)
    assert stall_problems(report) == [], report
    assert report.compared_s > 0.9 * len(audio) / rate - LEAD_S, report
    assert report.start_offset_ms == pytest.approx(LEAD_S * 1000, abs=2), report


@pytest.mark.parametrize("stall_s", [0.2, 1.0, 3.0])
def test_a_stall_fails_the_check_and_is_measured(sent: tuple[np.ndarray, int], stall_s: float) -> None:
    audio, rate = sent
    report = measure_gaps(_played(audio, rate, stall_s=stall_s), PLAYED_RATE, audio, rate)
    problems = stall_problems(report)
    assert problems, report
    assert report.inserted_total_ms == pytest.approx(stall_s * 1000, abs=10), report
    assert report.largest_jump_ms == pytest.approx(stall_s * 1000, abs=10), report


def test_lost_audio_fails_the_check(sent: tuple[np.ndarray, int]) -> None:
    audio, rate = sent
    report = measure_gaps(_played(audio, rate, lost_s=0.5), PLAYED_RATE, audio, rate)
    assert stall_problems(report), report


def test_a_stream_that_stops_fails_the_check(sent: tuple[np.ndarray, int]) -> None:
    """The player went silent for good after STALL_AT_S: most of the sent audio was never played."""
    audio, rate = sent
    played = _played(audio, rate, stall_s=20.0)
    report = measure_gaps(played, PLAYED_RATE, audio, rate)
    assert stall_problems(report), report
