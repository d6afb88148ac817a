"""Live audio channels: a Speak run's stream handed straight to the page's Web Audio player.

Gradio's streaming audio goes through HLS (an AAC encoder, a playlist the player reloads):
about a second between the engine's first audio and the first sound in the browser. A page
that asks for it instead gets a token; it fetches ``GET /live/{token}`` and the run writes its
audio (float32 mono, the lines in order with their pauses) into the response as it is made.

A channel is a queue of byte chunks with one reader. No Gradio and no HTTP here: the handler
writes, the route (tts_app/web/api/live.py) reads; both run on the server's event loop.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import AsyncIterator

import numpy as np

TOKEN_RE = re.compile(r"[0-9a-f]{32}")
MAX_CHANNELS = 256  # open runs with a live player at once (the page queue holds at most 128 runs)
MAX_CHANNEL_BYTES = 64 * 2**20  # ~12 min of float32 audio at 22.05 kHz: more is dropped, the reader ends
UNREAD_TTL_S = 120.0  # a finished channel nobody opened is dropped after this
MAX_AGE_S = 3600.0  # and any channel after this
_WAIT_S = 15.0  # a reader waits this long for audio before it re-checks the channel


class LiveChannelsFull(RuntimeError):
    """Too many open channels: the run falls back to the page's HLS player."""


class LiveChannel:
    """One run's audio on its way to one reader."""

    def __init__(self, token: str, sample_rate: int) -> None:
        self.token = token
        self.sample_rate = int(sample_rate)
        self.created = time.monotonic()
        self.closed_at: float | None = None
        self.reader_attached = False
        self._chunks: deque[bytes] = deque()
        self._total = 0  # bytes ever queued: the cap
        self._overflow = False
        self._wake = asyncio.Event()

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    def put(self, audio: np.ndarray) -> None:
        """Queue audio [T] (float, mono) for the reader; ignored once closed or over the byte cap."""
        if self.closed or self._overflow or not len(audio):
            return
        data = np.asarray(audio, dtype="<f4").reshape(-1).tobytes()
        if self._total + len(data) > MAX_CHANNEL_BYTES:
            self._overflow = True
            self.close()
            return
        self._chunks.append(data)
        self._total += len(data)
        self._wake.set()

    def close(self) -> None:
        """No more audio: the reader ends once it has read what is queued."""
        if self.closed_at is None:
            self.closed_at = time.monotonic()
        self._wake.set()

    async def read(self) -> AsyncIterator[bytes]:
        """The queued and future chunks, in order, until the channel is closed."""
        while True:
            self._wake.clear()
            while self._chunks:
                yield self._chunks.popleft()
            if self.closed:
                return
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=_WAIT_S)
            except asyncio.TimeoutError:
                continue


class LiveChannels:
    """Open channels by token; expired ones are dropped whenever one is opened or looked up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, LiveChannel] = {}

    def open(self, sample_rate: int) -> LiveChannel:
        """A new channel under a fresh unguessable token; LiveChannelsFull past MAX_CHANNELS."""
        with self._lock:
            self._expire()
            if len(self._channels) >= MAX_CHANNELS:
                raise LiveChannelsFull("too many live streams are open")
            token = secrets.token_hex(16)
            channel = self._channels[token] = LiveChannel(token, sample_rate)
            return channel

    def attach(self, token: str) -> LiveChannel | None:
        """The channel for ``token`` if it exists and has no reader yet (it then has one)."""
        if not isinstance(token, str) or not TOKEN_RE.fullmatch(token):
            return None
        with self._lock:
            self._expire()
            channel = self._channels.get(token)
            if channel is None or channel.reader_attached:
                return None
            channel.reader_attached = True
            return channel

    def release(self, channel: LiveChannel) -> None:
        """Forget a channel (its reader is done, or its run ended and it was never opened)."""
        channel.close()
        with self._lock:
            if self._channels.get(channel.token) is channel:
                del self._channels[channel.token]

    def __len__(self) -> int:
        with self._lock:
            return len(self._channels)

    def _expire(self) -> None:
        now = time.monotonic()
        for token, channel in list(self._channels.items()):
            unread = channel.closed_at is not None and not channel.reader_attached and now - channel.closed_at > UNREAD_TTL_S
            if unread or now - channel.created > MAX_AGE_S:
                channel.close()
                del self._channels[token]


LIVE_CHANNELS = LiveChannels()
