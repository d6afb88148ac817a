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


def pcm16_array(audio: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] to signed 16-bit little-endian samples (clipped, never renormalised)."""
    samples = np.asarray(audio, dtype=np.float32).reshape(-1)
    return (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")


def to_pcm16(audio: np.ndarray) -> bytes:
    """Float samples in [-1, 1] to signed 16-bit little-endian PCM bytes."""
    return pcm16_array(audio).tobytes()


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
    return wav_header(sample_rate, None)


def wav_header(sample_rate: int, data_bytes: int | None) -> bytes:
    """The 44-byte header of a mono 16-bit WAV with ``data_bytes`` of samples (None: unknown, 0xFFFFFFFF)."""
    byte_rate = int(sample_rate) * 2
    return (
        b"RIFF"
        + struct.pack("<I", _UNKNOWN_SIZE if data_bytes is None else 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, int(sample_rate), byte_rate, 2, 16)
        + b"data"
        + struct.pack("<I", _UNKNOWN_SIZE if data_bytes is None else data_bytes)
    )


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int) -> Path:
    """Write ``audio`` to ``path`` as a mono 16-bit WAV file and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(wav_bytes(audio, sample_rate))
    return target


class GrowingWav:
    """A mono 16-bit WAV file written as audio arrives; readable while it grows, sizes set on ``close``.

    While open its header says "length unknown" (0xFFFFFFFF), so a reader of the partial
    file (a progressive download) plays up to its end.
    """

    def __init__(self, path: str | Path, sample_rate: int) -> None:
        self.path = Path(path)
        self.sample_rate = int(sample_rate)
        self.samples = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "wb")
        self._file.write(streaming_wav_header(self.sample_rate))
        self._file.flush()

    @property
    def seconds(self) -> float:
        return self.samples / self.sample_rate

    def write(self, audio: np.ndarray) -> None:
        data = to_pcm16(audio)
        self._file.write(data)
        self._file.flush()  # a progressive reader sees it now
        self.samples += len(data) // 2

    def append_wav(self, path: str | Path, block_frames: int = 1 << 16) -> None:
        """Append the frames of a mono 16-bit WAV file at this rate (write_wav's), a block at a time: a long take
        is joined from its lines' files without holding any of them whole (the standard library's ``wave``)."""
        with wave.open(str(path), "rb") as source:
            if (source.getnchannels(), source.getsampwidth(), source.getframerate()) != (1, 2, self.sample_rate):
                raise ValueError(f"{path}: not mono 16-bit at {self.sample_rate} Hz")
            while block := source.readframes(block_frames):
                self._file.write(block)
                self.samples += len(block) // 2
        self._file.flush()

    def close(self) -> None:
        """Set the RIFF and data sizes and close the file."""
        if self._file.closed:
            return
        data_bytes = self.samples * 2
        self._file.seek(4)
        self._file.write(struct.pack("<I", 36 + data_bytes))
        self._file.seek(40)
        self._file.write(struct.pack("<I", data_bytes))
        self._file.close()
