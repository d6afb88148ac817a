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
REACQUIRE_AHEAD_S = 12.0  # a window lost nearby is looked for this far ahead (a long stall shifts the timeline)
REACQUIRE_BACK_S = 2.0  # and this far back (audio lost at a join shifts it back)
MIN_CORRELATION = 0.85
# What a clean stream meets (stall_problems): the played timeline drifts under 50 ms in all, no single
# step over 25 ms forward or back, and 95 % of the sent audio's loud windows are found in what was played
# (a stream that stops halfway matches under 50 %). The browser test records on the audio thread (an
# AudioWorklet): every run since matched 100 % of its windows. Its earlier ScriptProcessorNode recorder,
# on the page's main thread, kept stale samples when that thread was busy (87 % in an idle CI run).
MAX_INSERTED_MS = 50.0
MAX_JUMP_MS = 25.0
MIN_ALIGNED_FRACTION = 0.95


@dataclass
class GapReport:
    """How the played audio's timeline drifted against the sent audio's."""

    compared_s: float  # the span of sent audio between the first and the last window that aligned
    windows: int  # windows that aligned confidently
    loud_windows: int  # windows loud enough to align (the aligned ones among them: aligned_fraction)
    aligned_fraction: float  # windows / loud_windows: audio lost, or a stall past the search, lowers it
    inserted_total_ms: float  # extra time in the played audio over the compared span
    largest_jump_ms: float  # the largest single step in the alignment (one gap)
    jumps_over_5ms: int  # steps longer than 5 ms (audible-gap candidates)
    largest_drop_ms: float  # the largest backward step (audio lost or overlapped at a join)
    start_offset_ms: float  # where the sent audio starts in the captured audio

    def as_dict(self) -> dict:
        return asdict(self)


def stall_problems(report: GapReport) -> list[str]:
    """What in ``report`` shows a stall, lost audio or a drift; empty for a clean stream."""
    problems = []
    if not report.windows or report.aligned_fraction < MIN_ALIGNED_FRACTION:
        problems.append(f"only {report.windows} of {report.loud_windows} loud windows were found in the played audio")
    if not report.inserted_total_ms < MAX_INSERTED_MS:  # `not <` so that NaN fails too
        problems.append(f"{report.inserted_total_ms} ms inserted over the stream")
    if not report.largest_jump_ms < MAX_JUMP_MS:
        problems.append(f"a {report.largest_jump_ms} ms gap")
    if not report.largest_drop_ms < MAX_JUMP_MS:
        problems.append(f"{report.largest_drop_ms} ms lost or overlapped at a join")
    return problems


def _resample(audio: np.ndarray, rate: int, target: int) -> np.ndarray:
    if rate == target:
        return audio.astype(np.float32)
    g = gcd(rate, target)
    return resample_poly(audio, target // g, rate // g).astype(np.float32)


def _first_sound(audio: np.ndarray, threshold: float = 0.02) -> int:
    loud = np.flatnonzero(np.abs(audio) > threshold)
    return int(loud[0]) if len(loud) else 0


def _moving_energy(audio: np.ndarray, width: int) -> np.ndarray:
    """The energy of every ``width``-sample stretch of ``audio`` (as correlate's "valid" mode lays them out)."""
    sums = np.concatenate(([0.0], np.cumsum(audio.astype(np.float64) ** 2)))  # linear time, unlike a convolution
    return sums[width:] - sums[:-width]


def _initial_offset(captured: np.ndarray, reference: np.ndarray, ref_start: int, rate: int) -> int:
    """Where the first second of sound of ``reference`` lies in ``captured`` (a wide, one-off search)."""
    piece = reference[ref_start : ref_start + rate]
    guess = _first_sound(captured)
    lo = max(guess - rate, 0)
    region = captured[lo : guess + 2 * rate]
    if len(region) < len(piece) or not np.any(piece):
        return guess - ref_start
    scores = correlate(region, piece, mode="valid", method="fft")
    energy = np.maximum(_moving_energy(region, len(piece)), 1e-9)
    return lo + int(np.argmax(scores / np.sqrt(energy))) - ref_start


def _locate(captured: np.ndarray, piece: np.ndarray, lo: int, hi: int) -> int | None:
    """Where in ``captured[lo:hi]`` ``piece`` matches best (an index into ``captured``), if it matches well."""
    region = captured[lo : min(hi, len(captured))]
    if len(region) < len(piece):
        return None
    scores = correlate(region, piece, mode="valid", method="fft")
    piece_energy = float(np.sum(piece**2))
    # Floor the region's energy: near-silent stretches must not score high by dividing by ~0.
    region_energy = np.maximum(_moving_energy(region, len(piece)), 0.25 * piece_energy)
    normalized = scores / np.sqrt(region_energy * piece_energy)
    best = int(np.argmax(normalized))
    return lo + best if normalized[best] >= MIN_CORRELATION else None


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
    aligned_positions: list[int] = []
    last_ref = min(len(reference), len(captured) - offset) - window
    loudness = np.sqrt(np.mean(reference**2)) if len(reference) else 0.0
    loud_windows = 0
    position = ref_start
    while position < last_ref:
        piece = reference[position : position + window]
        if float(np.sqrt(np.mean(piece**2))) > 0.3 * loudness:
            loud_windows += 1
            start = max(position + offset - back, 0)
            # Nearby first; a window not found there is looked for far around, so that a stall longer than
            # the nearby search shows as a jump instead of the alignment stopping where the stall began.
            found = _locate(captured, piece, start, position + offset + ahead + window)
            if found is None:
                start = max(position + offset - int(REACQUIRE_BACK_S * rate), 0)
                found = _locate(captured, piece, start, position + offset + int(REACQUIRE_AHEAD_S * rate) + window)
            if found is not None:
                offset = found - position
                offsets.append(offset)
                aligned_positions.append(position)
        position += hop

    if not offsets:
        return GapReport(0.0, 0, loud_windows, 0.0, float("nan"), float("nan"), 0, float("nan"), float("nan"))
    steps = np.diff(np.asarray(offsets)) / rate * 1000 if len(offsets) > 1 else np.zeros(0)
    return GapReport(
        compared_s=round((aligned_positions[-1] + window - aligned_positions[0]) / rate, 2),
        windows=len(offsets),
        loud_windows=loud_windows,
        aligned_fraction=round(len(offsets) / loud_windows, 3),
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
        "median_word_ms": round(1000 * float(np.median([end - start for start, end in words])), 1) if words else None,
        "p90_error_ms": round(1000 * float(np.percentile(errors, 90)), 1) if errors else None,
        "max_error_ms": round(1000 * max(errors), 1) if errors else None,
    }
