"""WAV and PCM encoding for the app's players, downloads and the HTTP API."""

from __future__ import annotations

import io
import struct
import wave
from pathlib import Path

import numpy as np

# A WAV header's size fields for a stream whose length is not known yet, as
# OpenAI's streamed WAV bodies carry them; readers take them as "read to EOF".
_UNKNOWN_SIZE = 0xFFFFFFFF


def to_pcm16(audio: np.ndarray) -> bytes:
    """Float samples in [-1, 1] to signed 16-bit little-endian PCM (clipped, never renormalised)."""
    samples = np.asarray(audio, dtype=np.float32).reshape(-1)
    clipped = np.clip(samples, -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    """A complete mono 16-bit WAV file holding ``audio``."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(int(sample_rate))
        writer.writeframes(to_pcm16(audio))
    return buffer.getvalue()


def streaming_wav_header(sample_rate: int) -> bytes:
    """The 44-byte header of a mono 16-bit WAV whose length is unknown (sizes set to 0xFFFFFFFF)."""
    byte_rate = int(sample_rate) * 2
    return (
        b"RIFF"
        + struct.pack("<I", _UNKNOWN_SIZE)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, int(sample_rate), byte_rate, 2, 16)
        + b"data"
        + struct.pack("<I", _UNKNOWN_SIZE)
    )


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int) -> Path:
    """Write ``audio`` to ``path`` as a mono 16-bit WAV file and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(wav_bytes(audio, sample_rate))
    return target


def join_with_pauses(parts: list[np.ndarray], sample_rate: int, pause_s: float) -> np.ndarray:
    """Concatenate utterances with ``pause_s`` of silence between them."""
    if not parts:
        return np.zeros(0, dtype=np.float32)
    gap = np.zeros(int(round(pause_s * sample_rate)), dtype=np.float32)
    pieces: list[np.ndarray] = []
    for index, part in enumerate(parts):
        if index:
            pieces.append(gap)
        pieces.append(np.asarray(part, dtype=np.float32).reshape(-1))
    return np.concatenate(pieces)
