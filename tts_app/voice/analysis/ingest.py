"""Reference ingestion: decode, check, trim silence, cap length, normalise loudness, report.

Decoding is libsndfile's (wav, flac, mp3, ogg/vorbis/opus, aiff, au, caf, ...).
Every refusal is a VoiceError with a one-line reason; nothing else escapes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from math import gcd
from pathlib import Path
from typing import Union

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from tts_app import settings
from tts_app.voice.errors import VoiceError
from tts_app.voice.analysis.ltas import content_cutoff_hz
from tts_app.voice.analysis.memory_budget import analysis_bytes, analysis_budget
from tts_app.voice.analysis.report import ReferenceReport

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_INPUT_S = 600.0
# Limits read from the header before anything is decoded: a 172-byte WAV may claim
# 2,147,483,647 Hz, a 447 KB FLAC 10 minutes of 192 kHz stereo (GBs once decoded).
MIN_SAMPLE_RATE = 8_000
MAX_SAMPLE_RATE = 192_000
MAX_CHANNELS = 8
# frames x channels: the 10-minute cap counted in samples at up to 48 kHz (28.8 M samples, 115 MB as float32).
MAX_INPUT_SAMPLES = int(MAX_INPUT_S * 48_000)
MAX_KEPT_S = 30.0
# Only this much of a clip is decoded (the kept 30 s come from it, after any leading
# silence), and it is decoded in blocks, downmixed to mono as it goes and resampled to at
# most 48 kHz: an 8-channel 192 kHz clip never lives whole, and every clip's memory is
# bounded by its analysed samples, not its file size.
MAX_ANALYSED_ENV = "TTS_APP_VOICE_MAX_ANALYSED_S"
MAX_WORK_RATE = 48_000
BLOCK_FRAMES = 1 << 16
MIN_SPEECH_S = 1.0
TARGET_LEVEL_DBFS = -20.0
PEAK_CEILING_DBFS = -1.0
SILENCE_DBFS = -60.0  # a clip with no 20 ms frame above this is silence

_FRAME_S = 0.02
_HOP_S = 0.01
_LEAD_PAD_S = 0.10  # keep a little room before the first active frame so onsets stay whole
_TAIL_PAD_S = 0.15
_CLIP_LEVEL = 0.999

AudioSource = Union[str, Path, tuple]


@dataclass
class Reference:
    """A processed reference clip: mono float32 at its own sample rate, at most 30 s."""

    audio: np.ndarray
    sample_rate: int
    report: ReferenceReport
    content_hash: str  # sha256 of the file bytes, or of the samples and rate for arrays


@dataclass(frozen=True)
class Decoded:
    """A clip decoded for analysis: mono float64 at its working rate, and what was read."""

    mono: np.ndarray
    sample_rate: int  # the working rate: the input's, or 48 / 44.1 kHz for higher ones
    input_rate: int
    channels: int
    input_s: float  # the whole input's length (the header's), analysed or not
    clipping: float  # fraction of the analysed samples (all channels) at full scale


def content_hash(source: AudioSource) -> str:
    """Hash identifying a clip by content: same bytes (or samples and rate) give the same hash."""
    if isinstance(source, (str, Path)):
        path = _checked_file(Path(source))
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()  # streamed: a 50 MB file is not held
    audio, sample_rate = _split_array_source(source)
    return _array_hash(audio, sample_rate)


def load_reference(source: AudioSource) -> Reference:
    """Decode and clean a reference clip from a path or an ``(audio, sample_rate)`` tuple.

    Gradio's ``(sample_rate, audio)`` order is accepted too. Raises VoiceError when
    the clip is not usable. The clip comes back at the input's rate, or at 48 / 44.1 kHz
    when the input's is higher. Runs within the analyses' memory budget (it may wait its turn).
    """
    with analysis_budget.reserve(analysis_bytes_of(source), _name_of(source)):
        if isinstance(source, (str, Path)):
            path = _checked_file(Path(source))
            decoded, name, digest = _decode(path, path.name), path.name, content_hash(path)
        else:
            audio, sample_rate = _split_array_source(source)
            name, digest = "array", _array_hash(audio, sample_rate)
            decoded = _decode_array(audio, sample_rate)
        clip, report = _clean(decoded, name)
    logger.info("reference %s: %s", name, report.summary())
    return Reference(audio=clip, sample_rate=decoded.sample_rate, report=report, content_hash=digest)


def _max_analysed_s() -> float:
    return settings.value(MAX_ANALYSED_ENV)


def analysis_bytes_of(source: AudioSource) -> int:
    """The estimated peak memory of analysing a clip, from its header alone (VoiceError when it
    would be refused): it follows the samples analysed, not the file's size."""
    if isinstance(source, (str, Path)):
        info = _info(_checked_file(Path(source)), Path(source).name)
        rate, frames = info.samplerate, info.frames
    else:
        audio, rate = _split_array_source(source)
        frames = audio.size // (1 if audio.ndim == 1 else min(audio.shape))
    return analysis_bytes(min(frames, int(_max_analysed_s() * rate)), rate, _work_rate(rate), MAX_KEPT_S)


def _name_of(source: AudioSource) -> str:
    return Path(source).name if isinstance(source, (str, Path)) else "the clip"


# -- decoding -----------------------------------------------------------------
def _checked_file(path: Path) -> Path:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise VoiceError(f"reference file not found: {path}") from None
    except OSError as exc:
        raise VoiceError(f"cannot read reference file {path.name}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise VoiceError(f"reference path is not a file: {path}")
    if size > MAX_FILE_BYTES:
        raise VoiceError(
            f"reference file {path.name} is {size / 2**20:.0f} MB; the limit is {MAX_FILE_BYTES // 2**20} MB"
        )
    if size == 0:
        raise VoiceError(f"reference file {path.name} is empty")
    return path


def _info(path: Path, name: str) -> "sf._SoundFileInfo":
    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError, OSError):
        raise VoiceError(f"{name} is not a readable audio file (unsupported format or corrupt)") from None
    if info.samplerate <= 0 or info.frames <= 0:
        raise VoiceError(f"{name} holds no audio samples (empty or truncated file)")
    _check_header(info.samplerate, info.channels, info.frames)
    return info


def _decode(path: Path, name: str) -> Decoded:
    info = _info(path, name)
    wanted = min(info.frames, int(_max_analysed_s() * info.samplerate))
    try:
        with sf.SoundFile(str(path)) as f:
            # frames=: never decode more than the header declared, whatever the stream holds.
            blocks = f.blocks(blocksize=BLOCK_FRAMES, frames=wanted, dtype="float32", always_2d=True)
            return _downmix(blocks, wanted, info.samplerate, info.channels, info.frames, name)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError, OSError):
        raise VoiceError(f"{name} could not be decoded (corrupt or truncated audio)") from None


def _decode_array(audio: np.ndarray, sample_rate: int) -> Decoded:
    frames_fc = audio[:, None] if audio.ndim == 1 else (audio if audio.shape[1] <= audio.shape[0] else audio.T)
    wanted = min(len(frames_fc), int(_max_analysed_s() * sample_rate))
    blocks = (_to_float32(frames_fc[i : i + BLOCK_FRAMES]) for i in range(0, wanted, BLOCK_FRAMES))
    return _downmix(blocks, wanted, sample_rate, frames_fc.shape[1], len(frames_fc), "array")


def _downmix(blocks: Iterable[np.ndarray], wanted: int, rate: int, channels: int, frames: int, name: str) -> Decoded:
    """Blocks of (frames, channels) float32 -> one mono array at the working rate."""
    # float64 as the mean always was; float32 only where it is resampled next (4x the samples).
    mono = np.empty(wanted, np.float64 if rate <= MAX_WORK_RATE else np.float32)
    n = clipped = 0
    for block in blocks:
        block = block[: wanted - n]
        if not np.all(np.isfinite(block)):
            raise VoiceError(f"{name} contains invalid (NaN or infinite) samples: corrupt audio")
        clipped += int(np.count_nonzero(np.abs(block) >= _CLIP_LEVEL))
        mono[n : n + len(block)] = block.mean(axis=1, dtype=np.float64)
        n += len(block)
    if n == 0:
        raise VoiceError(f"{name} holds no audio samples (empty or truncated file)")
    mono, work_rate = _to_work_rate(mono[:n], rate)
    return Decoded(mono, work_rate, rate, channels, frames / rate, clipped / (n * channels))


def _work_rate(rate: int) -> int:
    if rate <= MAX_WORK_RATE:
        return rate
    return 44_100 if rate % 44_100 == 0 else MAX_WORK_RATE  # 88.2 and 176.4 kHz: a whole ratio


def _to_work_rate(mono: np.ndarray, rate: int) -> tuple[np.ndarray, int]:
    target = _work_rate(rate)
    if target == rate:
        return mono.astype(np.float64, copy=False), rate
    g = gcd(target, rate)
    return resample_poly(mono, target // g, rate // g).astype(np.float64), target


def _to_float32(audio: np.ndarray) -> np.ndarray:
    if np.issubdtype(audio.dtype, np.integer):
        return audio.astype(np.float32) / np.float32(float(np.iinfo(audio.dtype).max) + 1.0)
    return np.asarray(audio, dtype=np.float32)


def _check_header(sample_rate: int, channels: int, frames: int) -> None:
    """Refuse, from the header alone, audio whose rate, channels or size is out of bounds."""
    if not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise VoiceError(
            f"reference sample rate {sample_rate} Hz is out of range ({MIN_SAMPLE_RATE}..{MAX_SAMPLE_RATE} Hz)"
        )
    if not 1 <= channels <= MAX_CHANNELS:
        raise VoiceError(f"reference has {channels} channels; at most {MAX_CHANNELS} are accepted")
    if frames / sample_rate > MAX_INPUT_S:
        raise VoiceError(_too_long_message(frames / sample_rate))
    if frames * channels > MAX_INPUT_SAMPLES:
        raise VoiceError(
            f"reference holds {frames * channels / 1e6:.1f} M samples (frames x channels); "
            f"the limit is {MAX_INPUT_SAMPLES / 1e6:.1f} M (10 minutes at 48 kHz)"
        )


def _split_array_source(source: object) -> tuple[np.ndarray, int]:
    if not isinstance(source, tuple) or len(source) != 2:
        raise VoiceError("a reference must be a file path or an (audio array, sample rate) pair")
    first, second = source
    if isinstance(first, (int, np.integer)) and isinstance(second, np.ndarray):
        first, second = second, first  # Gradio's numpy audio is (sample_rate, data)
    if not isinstance(first, np.ndarray) or not isinstance(second, (int, np.integer)):
        raise VoiceError("a reference must be a file path or an (audio array, sample rate) pair")
    sample_rate = int(second)
    if first.ndim not in (1, 2) or first.size == 0:
        raise VoiceError("reference audio must be a non-empty 1-D (mono) or 2-D (multichannel) array")
    channels = 1 if first.ndim == 1 else min(first.shape)
    _check_header(sample_rate, channels, first.size // channels)
    if not (np.issubdtype(first.dtype, np.floating) or np.issubdtype(first.dtype, np.integer)):
        raise VoiceError(f"reference audio has non-numeric dtype {first.dtype}")
    return first, sample_rate


def _array_hash(audio: np.ndarray, sample_rate: int) -> str:
    digest = hashlib.sha256(f"{sample_rate}:{audio.dtype.str}:{audio.shape}".encode())
    digest.update(np.ascontiguousarray(audio).tobytes())
    return digest.hexdigest()


def _too_long_message(duration_s: float) -> str:
    return f"reference is {duration_s / 60:.1f} minutes long; the limit is {MAX_INPUT_S / 60:.0f} minutes"


# -- cleaning -----------------------------------------------------------------
def _clean(decoded: Decoded, name: str) -> tuple[np.ndarray, ReferenceReport]:
    mono, sample_rate = decoded.mono, decoded.sample_rate
    unread_s = max(0.0, decoded.input_s - len(mono) / sample_rate)  # past $TTS_APP_VOICE_MAX_ANALYSED_S
    frame, hop = max(1, round(_FRAME_S * sample_rate)), max(1, round(_HOP_S * sample_rate))
    frame_db = _frame_levels_db(mono, frame, hop)
    peak_frame_db = float(frame_db.max()) if len(frame_db) else -200.0
    if peak_frame_db < SILENCE_DBFS:
        raise VoiceError(f"{name} is silent (loudest moment {peak_frame_db:.0f} dBFS); record some speech")
    noise_db = float(np.percentile(frame_db, 10))
    gate_db = max(peak_frame_db - 40.0, SILENCE_DBFS)
    if noise_db > gate_db - 6.0:  # noisy clip: gate above the noise floor, but below most speech
        gate_db = min(noise_db + 6.0, peak_frame_db - 12.0)
    active = frame_db > gate_db
    if active.sum() * _HOP_S < MIN_SPEECH_S:
        raise VoiceError(
            f"{name} has only {active.sum() * _HOP_S:.1f} s of speech; at least {MIN_SPEECH_S:.0f} s is needed"
        )

    idx = np.nonzero(active)[0]
    start = max(0, idx[0] * hop - round(_LEAD_PAD_S * sample_rate))
    end = min(len(mono), idx[-1] * hop + frame + round(_TAIL_PAD_S * sample_rate))
    lead_s, tail_s = start / sample_rate, (len(mono) - end) / sample_rate
    cap = round(MAX_KEPT_S * sample_rate)
    cut_s = max(0, end - start - cap) / sample_rate + unread_s
    end = min(end, start + cap)
    clip = mono[start:end]

    kept_frames = slice(start // hop, max(start // hop, (end - frame) // hop + 1))
    speech_s = float(active[kept_frames].sum() * _HOP_S)
    active_power = 10 ** (frame_db[active] / 10)
    level_dbfs = float(10 * np.log10(np.mean(active_power)))
    peak = float(np.max(np.abs(mono)))
    peak_dbfs = 20 * np.log10(max(peak, 1e-10))
    clipping = decoded.clipping

    gain_db = TARGET_LEVEL_DBFS - level_dbfs
    clip_peak = float(np.max(np.abs(clip)))
    if clip_peak > 0:
        gain_db = min(gain_db, PEAK_CEILING_DBFS - 20 * np.log10(clip_peak))
    clip = (clip * 10 ** (gain_db / 20)).astype(np.float32)

    snr_db = level_dbfs - noise_db if noise_db < level_dbfs else 0.0
    bandwidth_hz = content_cutoff_hz(clip, sample_rate)
    report = ReferenceReport(
        source=name,
        input_duration_s=round(decoded.input_s, 3),
        input_sample_rate=decoded.input_rate,
        input_channels=decoded.channels,
        duration_s=round(len(clip) / sample_rate, 3),
        speech_s=round(speech_s, 2),
        lead_trimmed_s=round(lead_s, 3),
        tail_trimmed_s=round(tail_s, 3),
        cut_after_s=round(cut_s, 3),
        level_dbfs=round(level_dbfs, 1),
        peak_dbfs=round(float(peak_dbfs), 1),
        clipping_fraction=round(clipping, 5),
        snr_db=round(min(snr_db, 99.0), 1),
        gain_db=round(float(gain_db), 1),
        bandwidth_hz=bandwidth_hz,
        warnings=_warnings(speech_s, clipping, snr_db, level_dbfs, bandwidth_hz, cut_s),
    )
    return clip, report


def _frame_levels_db(x: np.ndarray, frame: int, hop: int) -> np.ndarray:
    if len(x) < frame:
        x = np.concatenate([x, np.zeros(frame - len(x))])
    csum = np.concatenate([[0.0], np.cumsum(x * x)])
    starts = np.arange(0, len(x) - frame + 1, hop)
    power = (csum[starts + frame] - csum[starts]) / frame
    return 10 * np.log10(np.maximum(power, 1e-20))


_NARROW_BAND_HZ = 7000.0  # sound only below this: a phone call, a low sample rate or a low-bitrate file


def _warnings(
    speech_s: float, clipping: float, snr_db: float, level_dbfs: float, bandwidth_hz: float, cut_s: float
) -> list[str]:
    out = []
    if speech_s < 3.0:
        out.append(f"only {speech_s:.1f} s of speech; 5 to 30 s gives a steadier voice")
    if clipping > 0.001:
        out.append(f"the recording clips ({100 * clipping:.1f}% of samples at full scale)")
    if snr_db < 20.0:
        out.append(f"noisy background (voice only about {snr_db:.0f} dB above the noise)")
    if level_dbfs < -40.0:
        out.append(f"very quiet recording ({level_dbfs:.0f} dBFS)")
    if bandwidth_hz < _NARROW_BAND_HZ:
        out.append(
            f"sound only up to about {bandwidth_hz / 1000:.1f} kHz (a phone call, a low sample rate or a low-bitrate "
            "file): the voice is matched below that and keeps the model's own sound above"
        )
    if cut_s > 0:
        out.append(f"only the first {MAX_KEPT_S:.0f} s are used")
    return out
