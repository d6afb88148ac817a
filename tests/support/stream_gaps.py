"""Measure silence a streaming player inserted: align what the browser played with what was sent."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from math import gcd

import numpy as np
from scipy.signal import correlate, resample_poly

WINDOW_S = 0.08
HOP_S = 0.04
SEARCH_BACK_S = 0.05
SEARCH_AHEAD_S = 0.4
MIN_CORRELATION = 0.85


@dataclass
class GapReport:
    """How the played audio's timeline drifted against the sent audio's."""

    compared_s: float  # how much of the sent audio was compared
    windows: int  # windows that aligned confidently
    inserted_total_ms: float  # extra time in the played audio over the compared span
    largest_jump_ms: float  # the largest single step in the alignment (one gap)
    jumps_over_5ms: int  # steps longer than 5 ms (audible-gap candidates)
    largest_drop_ms: float  # the largest backward step (audio lost or overlapped at a join)
    start_offset_ms: float  # where the sent audio starts in the captured audio

    def as_dict(self) -> dict:
        return asdict(self)


def _resample(audio: np.ndarray, rate: int, target: int) -> np.ndarray:
    if rate == target:
        return audio.astype(np.float32)
    g = gcd(rate, target)
    return resample_poly(audio, target // g, rate // g).astype(np.float32)


def _first_sound(audio: np.ndarray, threshold: float = 0.02) -> int:
    loud = np.flatnonzero(np.abs(audio) > threshold)
    return int(loud[0]) if len(loud) else 0


def _initial_offset(captured: np.ndarray, reference: np.ndarray, ref_start: int, rate: int) -> int:
    """Where the first second of sound of ``reference`` lies in ``captured`` (a wide, one-off search)."""
    piece = reference[ref_start : ref_start + rate]
    guess = _first_sound(captured)
    lo = max(guess - rate, 0)
    region = captured[lo : guess + 2 * rate]
    if len(region) < len(piece) or not np.any(piece):
        return guess - ref_start
    scores = correlate(region, piece, mode="valid", method="fft")
    energy = np.maximum(np.convolve(region**2, np.ones(len(piece)), mode="valid"), 1e-9)
    return lo + int(np.argmax(scores / np.sqrt(energy))) - ref_start


def measure_gaps(played: np.ndarray, played_rate: int, sent: np.ndarray, sent_rate: int) -> GapReport:
    """Track, window by window, where each piece of ``sent`` sits in ``played``; jumps are inserted silence."""
    captured = _resample(np.asarray(played, np.float32), played_rate, sent_rate)
    reference = np.asarray(sent, np.float32)
    rate = sent_rate
    window, hop = int(WINDOW_S * rate), int(HOP_S * rate)
    back, ahead = int(SEARCH_BACK_S * rate), int(SEARCH_AHEAD_S * rate)

    ref_start = _first_sound(reference)
    offset = _initial_offset(captured, reference, ref_start, rate)  # captured index = reference index + offset
    offsets: list[int] = []
    last_ref = min(len(reference), len(captured) - offset) - window
    loudness = np.sqrt(np.mean(reference**2)) if len(reference) else 0.0
    first_offset: int | None = None
    position = ref_start
    while position < last_ref:
        piece = reference[position : position + window]
        energy = float(np.sqrt(np.mean(piece**2)))
        if energy > 0.3 * loudness:
            lo = max(position + offset - back, 0)
            hi = min(position + offset + ahead + window, len(captured))
            region = captured[lo:hi]
            if len(region) >= window:
                scores = correlate(region, piece, mode="valid", method="fft")
                piece_energy = float(np.sum(piece**2))
                # Floor the region's energy: near-silent stretches must not score high by dividing by ~0.
                region_energy = np.maximum(np.convolve(region**2, np.ones(window), mode="valid"), 0.25 * piece_energy)
                normalized = scores / np.sqrt(region_energy * piece_energy)
                best = int(np.argmax(normalized))
                if normalized[best] >= MIN_CORRELATION:
                    offset = lo + best - position
                    offsets.append(offset)
                    if first_offset is None:
                        first_offset = offset
        position += hop

    if not offsets:
        return GapReport(0.0, 0, float("nan"), float("nan"), 0, float("nan"), float("nan"))
    steps = np.diff(np.asarray(offsets)) / rate * 1000 if len(offsets) > 1 else np.zeros(0)
    return GapReport(
        compared_s=round((position - ref_start) / rate, 2),
        windows=len(offsets),
        inserted_total_ms=round((offsets[-1] - offsets[0]) / rate * 1000, 1),
        largest_jump_ms=round(float(steps.max()) if len(steps) else 0.0, 1),
        jumps_over_5ms=int(np.sum(steps > 5)),
        largest_drop_ms=round(float(-steps.min()) if len(steps) and steps.min() < 0 else 0.0, 1),
        start_offset_ms=round(offsets[0] / rate * 1000, 1),
    )


def caption_sync(samples: list, buffer_len: int, rate: int, start_offset_s: float) -> dict:
    """How far the highlighted caption word was from the audio being played.

    ``samples``: one ``[buffer index, word start, word end]`` per Web Audio buffer the tap
    recorded (start/end None when no word was highlighted). Buffer k holds captured samples
    [k, k + 1) x ``buffer_len``; its middle, less ``start_offset_s`` (where the sent take
    starts in the capture), is the take time being played. The error is that time's
    distance outside the highlighted word's [start, end].
    """
    errors, words = [], set()
    for index, start, end in samples:
        if start is None:
            continue
        played_s = (index + 0.5) * buffer_len / rate - start_offset_s
        errors.append(max(start - played_s, played_s - end, 0.0))
        words.add((start, end))
    return {
        "buffers": len(samples),
        "buffers_with_a_word": len(errors),
        "words_highlighted": len(words),
        "p90_error_ms": round(1000 * float(np.percentile(errors, 90)), 1) if errors else None,
        "max_error_ms": round(1000 * max(errors), 1) if errors else None,
    }
