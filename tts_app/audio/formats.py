"""The API's ``response_format``s: media types, and encoders that turn float audio into bytes.

Every encoder works piece by piece (``feed`` each chunk, then ``finish``) and
hands back the bytes it has ready each time, so a streamed body starts with
the first chunk and memory stays bounded by one chunk. FLAC and MP3 come from
libsndfile in process; AAC (ADTS) and Ogg/Opus from an ffmpeg subprocess fed
16-bit PCM on stdin (libsndfile's Opus takes only 8-48 kHz rates in steps the
model's 22,050 Hz is not one of; ffmpeg resamples).

A streamed body must still read at full length in decoders that trust its header:
- MP3 is constant-bitrate, so a decoder that sizes the file from the first frame's
  bitrate (libmpg123 as libsndfile uses it) gets the length right; variable-bitrate
  frames with no Xing totals (they cannot be sent before the end) made soundfile read
  8.2 s of 9.7. The first frame is LAME's blank tag placeholder, a valid silent frame.
- FLAC with an unknown total (STREAMINFO total 0, which the format allows) opens in
  ffmpeg but not in soundfile (libsndfile then reports 2**63 frames), so a "streamed"
  FLAC is encoded as the audio comes and sent whole at the end, with its real totals.
"""

from __future__ import annotations

import asyncio
import io
import logging
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import soundfile as sf

from tts_app.audio.encoder_slots import SLOTS, TOTAL, EncoderBusy, EncoderShareFull  # noqa: F401 (raised by claim, for callers)
from tts_app.audio.ffmpeg_path import ffmpeg_exe
from tts_app.audio.wav_io import streaming_wav_header, to_pcm16, wav_bytes, wav_header

logger = logging.getLogger(__name__)

DEFAULT_FORMAT = "mp3"  # OpenAI's default
MAX_FFMPEG_ENCODERS = TOTAL  # ffmpeg processes at once (~20 MB each), a share of them per visitor: encoder_slots.py
LOCAL_CLIENT = "local"  # whose slot an encode started in process (no request) takes


class WholeBody:
    """A reply sent whole, with its length in the header, kept on disk while it is made (an unlinked temporary
    file, gone when closed or when the process ends): the longest allowed request is about 74 MB of WAV, which a
    request held in memory next to its audio took the 4,000-digit ordinal past the memory rule's 200 MB."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self.size = 0

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self.size += len(data)

    def rewrite_start(self, data: bytes) -> None:
        """Overwrite the first ``len(data)`` bytes (a header whose sizes are known only at the end)."""
        self._file.seek(0)
        self._file.write(data)
        self._file.seek(0, 2)

    def pieces(self, piece_bytes: int = 1 << 20) -> Iterator[bytes]:
        """The bytes in order, a piece at a time; the file is closed once read (or when the reader stops)."""
        try:
            self._file.seek(0)
            while piece := self._file.read(piece_bytes):
                yield piece
        finally:
            self.close()

    def read(self) -> bytes:
        """Every byte at once (a caller that embeds the file, e.g. in JSON), the file closed."""
        return b"".join(self.pieces())

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class AudioFormat:
    """One ``response_format``: its HTTP media type and how it is encoded."""

    name: str
    media_type: str
    soundfile_format: tuple[str, str] | None = None  # (format, subtype) when libsndfile writes it
    ffmpeg_args: tuple[str, ...] | None = None  # output options when ffmpeg writes it
    stream_options: tuple[tuple[str, object], ...] = ()  # libsndfile settings of a streamed body
    sent_whole: bool = False  # a streamed body waits for the end: its header needs the length
    decoded_rate: int | None = None  # the rate decoders output, when not the engine's (Opus: always 48 kHz)


FORMATS: dict[str, AudioFormat] = {
    f.name: f
    for f in (
        # CBR: 64 kbit/s at 16-24 kHz, 160 at 44.1-48 kHz (libsndfile's compression level 0.6)
        AudioFormat("mp3", "audio/mpeg", soundfile_format=("MP3", "MPEG_LAYER_III"),
                    stream_options=(("bitrate_mode", "CONSTANT"), ("compression_level", 0.6))),  # fmt: skip
        AudioFormat("opus", "audio/opus", ffmpeg_args=("-c:a", "libopus", "-b:a", "48k", "-f", "ogg", "-page_duration", "100000"),
                    decoded_rate=48000),  # fmt: skip
        AudioFormat("aac", "audio/aac", ffmpeg_args=("-c:a", "aac", "-b:a", "64k", "-f", "adts")),
        AudioFormat("flac", "audio/flac", soundfile_format=("FLAC", "PCM_16"), sent_whole=True),
        AudioFormat("wav", "audio/wav"),
        AudioFormat("pcm", "audio/pcm"),
    )
}

def decoded_sample_rate(name: str, sample_rate: int) -> int:
    """The rate a decoder outputs for ``response_format`` ``name`` made from ``sample_rate`` audio (X-Sample-Rate)."""
    return FORMATS[name].decoded_rate or int(sample_rate)


class EncoderUnavailable(RuntimeError):
    """The format needs ffmpeg and none was found."""


class Encoder:
    """Float mono chunks [T] in, encoded bytes out, piece by piece or whole.

    ``open_encoder`` makes one before the response starts, so a missing ffmpeg is a clean
    error status, never a broken body; ``claim`` (when the first audio is there) the same
    for a full house.
    """

    needs_slot = False  # True when encoding holds one of the server's few ffmpeg slots

    def __init__(self, fmt: AudioFormat, sample_rate: int) -> None:
        self.format = fmt
        self.sample_rate = int(sample_rate)

    def claim(self, client: str) -> None:
        """Take what encoding needs, for ``client``: nothing here; EncoderBusy/EncoderShareFull for ffmpeg."""

    async def stream(self, audio_chunks: AsyncIterator[np.ndarray]) -> AsyncIterator[bytes]:
        """Bytes as soon as they are encoded; the stream's header says the length is unknown."""
        writer = self._writer()
        # libsndfile's encoders take ~2 ms per 100 ms of audio: off the event loop, which also serves the page.
        offload = isinstance(writer, _SoundFileWriter)
        try:
            async for audio_T in audio_chunks:
                if not len(audio_T):
                    continue
                data = await asyncio.to_thread(writer.feed, audio_T) if offload else writer.feed(audio_T)
                if data:
                    yield data
            if data := (await asyncio.to_thread(writer.finish) if offload else writer.finish()):
                yield data
        finally:
            writer.close()

    async def whole(self, audio_T: np.ndarray) -> bytes:
        """The complete file for audio whose length is known: sizes and totals filled in."""
        return await asyncio.to_thread(_encode_whole, self.format, audio_T, self.sample_rate)

    async def whole_pieces(self, audio_chunks: AsyncIterator[np.ndarray]) -> WholeBody:
        """The complete file (sizes and totals filled in) of audio that comes piece by piece, written to a
        ``WholeBody`` as it comes: 16-bit PCM or encoded bytes, never one float32 array nor a copy in memory."""
        body = WholeBody()
        try:
            if self.format.name not in ("wav", "pcm"):
                writer = _WholeFileWriter(self.format, self.sample_rate) if self.format.soundfile_format else None
                if writer is None:  # no file header to fill in: the stream is the file
                    async for data in self.stream(audio_chunks):
                        body.write(data)
                    return body
                try:
                    async for audio_T in audio_chunks:
                        if len(audio_T):
                            await asyncio.to_thread(writer.feed, audio_T)  # encoded as it comes: the work is spread out
                    body.write(await asyncio.to_thread(writer.finish))
                    return body
                finally:
                    writer.close()
            if self.format.name == "wav":
                body.write(wav_header(self.sample_rate, 0))  # its sizes are filled in at the end
            async for audio_T in audio_chunks:
                if len(audio_T):
                    body.write(to_pcm16(audio_T))
            if self.format.name == "wav":
                body.rewrite_start(wav_header(self.sample_rate, body.size - 44))
            return body
        except BaseException:
            body.close()
            raise

    def release(self) -> None:
        """Give back what the encoder holds when it will never run (no-op here)."""

    def _writer(self) -> "_Writer":
        if self.format.name == "pcm":
            return _PcmWriter()
        if self.format.name == "wav":
            return _StreamingWavWriter(self.sample_rate)
        if self.format.sent_whole:
            return _WholeFileWriter(self.format, self.sample_rate)
        return _SoundFileWriter(self.format, self.sample_rate)


class _Writer:
    """A synchronous piece-by-piece encoder (fast enough to run on the event loop per chunk)."""

    def feed(self, audio_T: np.ndarray) -> bytes:
        raise NotImplementedError

    def finish(self) -> bytes:
        return b""

    def close(self) -> None:
        """Release what is held; safe after ``finish`` and more than once."""


class _PcmWriter(_Writer):
    def feed(self, audio_T: np.ndarray) -> bytes:
        return to_pcm16(audio_T)


class _StreamingWavWriter(_Writer):
    """A WAV header with unknown sizes first (the length is not known yet), then PCM."""

    def __init__(self, sample_rate: int) -> None:
        self._header: bytes | None = streaming_wav_header(sample_rate)

    def feed(self, audio_T: np.ndarray) -> bytes:
        head, self._header = self._header or b"", None
        return head + to_pcm16(audio_T)

    def finish(self) -> bytes:
        head, self._header = self._header or b"", None
        return head


class _AppendOnlySink:
    """A file-like libsndfile writes to, whose bytes can be taken away as they come.

    At close, libsndfile seeks back to fill in totals (FLAC's STREAMINFO, MP3's
    Xing frame). Bytes already sent cannot change, so those rewrites are
    dropped: the stream then says "length unknown", which decoders accept.
    """

    def __init__(self) -> None:
        self._pending = bytearray()
        self._sent = 0  # bytes handed out by take()
        self._end = 0  # total bytes written at the end of the stream
        self._pos = 0

    def write(self, data: bytes) -> int:
        data = bytes(data)
        if self._pos == self._end:
            self._pending += data
            self._end += len(data)
        elif self._pos >= self._sent:  # a rewrite of bytes not yet sent: apply it
            start = self._pos - self._sent
            self._pending[start : start + len(data)] = data
            self._end = max(self._end, self._pos + len(data))
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._end}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:  # libsndfile never reads in write mode
        return b""

    def take(self) -> bytes:
        out = bytes(self._pending)
        self._sent += len(out)
        self._pending.clear()
        return out


class _SoundFileWriter(_Writer):
    """FLAC or MP3 written by libsndfile into an append-only sink."""

    def __init__(self, fmt: AudioFormat, sample_rate: int) -> None:
        assert fmt.soundfile_format is not None
        major, subtype = fmt.soundfile_format
        self._sink = self._make_sink()
        options = dict(fmt.stream_options)
        self._file: sf.SoundFile | None = sf.SoundFile(self._sink, "w", int(sample_rate), 1, subtype, format=major, **options)
        # feed runs on a worker thread that outlives a cancelled request; close must wait for it.
        self._lock = threading.Lock()

    @staticmethod
    def _make_sink() -> Any:
        return _AppendOnlySink()

    def feed(self, audio_T: np.ndarray) -> bytes:
        with self._lock:
            if self._file is None:
                raise RuntimeError("encoder closed")
            self._file.write(np.asarray(audio_T, dtype=np.float32).reshape(-1))
            return self._sink.take()

    def finish(self) -> bytes:
        self.close()
        with self._lock:
            return self._sink.take()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class _SeekableSink(io.BytesIO):
    """A whole file in memory: libsndfile seeks back at close to fill in the totals."""

    def take(self) -> bytes:
        return b""  # nothing leaves before the end

    def take_all(self) -> bytes:
        return self.getvalue()


class _WholeFileWriter(_SoundFileWriter):
    """Encoded as the audio comes (the work is spread out), sent at the end with its real totals."""

    @staticmethod
    def _make_sink() -> Any:
        return _SeekableSink()

    def finish(self) -> bytes:
        self.close()
        with self._lock:
            return self._sink.take_all()


class FfmpegEncoder(Encoder):
    """AAC or Ogg/Opus from an ffmpeg process reading 16-bit PCM on stdin.

    Holds one of ``MAX_FFMPEG_ENCODERS`` slots, counted against its client, from ``claim``
    (taken by ``stream`` for ``LOCAL_CLIENT`` when not claimed) until ``release``.
    Stdin is fed from a task while the body reads stdout, so encoded bytes go
    out as soon as ffmpeg writes them and a slow client slows the feeding
    (pipe back-pressure) instead of growing a buffer.
    """

    def __init__(self, fmt: AudioFormat, sample_rate: int) -> None:
        super().__init__(fmt, sample_rate)
        exe = ffmpeg_exe()
        if exe is None:
            raise EncoderUnavailable(f"response_format {fmt.name!r} needs ffmpeg, which this server does not have")
        self._holder: str | None = None  # the client whose slot this encoder holds
        assert fmt.ffmpeg_args is not None
        self._command = [
            exe, "-hide_banner", "-nostats", "-loglevel", "error",
            "-probesize", "32",  # start encoding at once (default probing held ~0.3 s back); not nobuffer: it drops input
            "-f", "s16le", "-ar", str(self.sample_rate), "-ac", "1", "-i", "pipe:0",
            *fmt.ffmpeg_args, "-flush_packets", "1", "pipe:1",
        ]  # fmt: skip

    needs_slot = True

    def claim(self, client: str) -> None:
        if self._holder is None:
            SLOTS.take(client)
            self._holder = client

    def release(self) -> None:
        if self._holder is not None:
            holder, self._holder = self._holder, None
            SLOTS.give(holder)

    async def stream(self, audio_chunks: AsyncIterator[np.ndarray]) -> AsyncIterator[bytes]:
        self.claim(LOCAL_CLIENT)  # a no-op when the request claimed its slot already
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            assert proc.stdin is not None and proc.stdout is not None
            feeder = asyncio.create_task(self._feed(proc.stdin, audio_chunks))
            try:
                while data := await proc.stdout.read(65536):
                    yield data
                await feeder  # re-raises an engine error after ffmpeg's last bytes
                code = await proc.wait()
                if code != 0:
                    raise RuntimeError(f"ffmpeg exited with {code}: {await _last_line(proc)}")
            finally:
                feeder.cancel()
                if proc.returncode is None:  # client gone or an error: stop ffmpeg now
                    proc.kill()
                    await proc.wait()
        finally:
            self.release()

    async def whole(self, audio_T: np.ndarray) -> bytes:
        async def one_chunk() -> AsyncIterator[np.ndarray]:
            yield audio_T

        return b"".join([data async for data in self.stream(one_chunk())])

    @staticmethod
    async def _feed(stdin: asyncio.StreamWriter, audio_chunks: AsyncIterator[np.ndarray]) -> None:
        try:
            async for audio_T in audio_chunks:
                if len(audio_T):
                    stdin.write(to_pcm16(audio_T))
                    await stdin.drain()
        finally:
            stdin.close()  # EOF: ffmpeg flushes and exits


async def _last_line(proc: asyncio.subprocess.Process) -> str:
    text = (await proc.stderr.read(4000)).decode("utf-8", "replace").strip() if proc.stderr else ""
    return text.splitlines()[-1] if text else "no message"


def _encode_whole(fmt: AudioFormat, audio_T: np.ndarray, sample_rate: int) -> bytes:
    if fmt.name == "wav":
        return wav_bytes(audio_T, sample_rate)
    if fmt.name == "pcm":
        return to_pcm16(audio_T)
    assert fmt.soundfile_format is not None
    major, subtype = fmt.soundfile_format
    buffer = io.BytesIO()  # seekable, so libsndfile fills in the totals (FLAC STREAMINFO, MP3 Xing frame)
    sf.write(buffer, np.asarray(audio_T, dtype=np.float32).reshape(-1), int(sample_rate), subtype, format=major)
    return buffer.getvalue()


def open_encoder(name: str, sample_rate: int) -> Encoder:
    """The encoder for ``response_format`` ``name`` (a key of FORMATS).

    Raises EncoderUnavailable (no ffmpeg). An ffmpeg encoder takes its slot at ``claim``
    (EncoderBusy, EncoderShareFull) or when it starts encoding, and holds it until its
    ``stream``/``whole`` ends or ``release`` is called; call ``release`` if neither is ever run.
    """
    fmt = FORMATS[name]
    if fmt.ffmpeg_args is not None:
        return FfmpegEncoder(fmt, sample_rate)
    return Encoder(fmt, sample_rate)
