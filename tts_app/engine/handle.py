"""The caller's side of a request: stream its audio, wait for it, or cancel it."""

from __future__ import annotations

import asyncio
import threading
from contextlib import aclosing, closing
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator, Protocol

import numpy as np

from tts_app.backends.base import WordTiming
from tts_app.engine.metrics import RequestMetrics
from tts_app.engine.request import Request, RequestStatus


class EngineSide(Protocol):
    """What a handle asks of the engine that made it (engine.py's Engine, which imports this module)."""

    sample_rate: int
    qos: Any

    def stats(self) -> dict: ...
    def _queue_position(self, req: Request) -> int: ...
    def _eta(self, req: Request) -> float: ...
    def _buffered(self, req: Request) -> float: ...
    def _wake(self) -> None: ...


_NO_AUDIO = np.zeros(0, np.float32)


class RequestCancelled(RuntimeError):
    """The request was cancelled before it finished."""


@dataclass(frozen=True)
class AudioChunk:
    """New audio of a request, and the words whose audio is now all sent (times in seconds from its start)."""

    audio: np.ndarray  # float32 mono [S], may be empty when only words arrive
    words: tuple[WordTiming, ...] = ()


class RequestHandle:
    """Returned by ``Engine.submit``. Chunks are float32 mono at ``engine.sample_rate``."""

    def __init__(self, engine: EngineSide, req: Request) -> None:
        self._engine = engine
        self._req = req
        self._chunks: list[AudioChunk] = []
        self._done = False
        self._cond = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    # -- worker side ------------------------------------------------------------
    def _push(self, audio: np.ndarray, words: tuple[WordTiming, ...] = ()) -> None:
        with self._cond:
            self._chunks.append(AudioChunk(audio, tuple(words)))
            self._notify()

    def _finish(self) -> None:
        with self._cond:
            self._done = True
            self._notify()

    def _notify(self) -> None:
        self._cond.notify_all()
        for loop, event in self._waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # its loop is closed: nobody there to wake, and the engine's worker must not die of it
                pass
        self._waiters.clear()

    # -- caller side ------------------------------------------------------------
    @property
    def id(self) -> int:
        return self._req.id

    @property
    def engine(self) -> EngineSide:
        """The engine serving this request (its stats give queue estimates)."""
        return self._engine

    @property
    def status(self) -> RequestStatus:
        return self._req.status

    @property
    def done(self) -> bool:
        return self._done

    @property
    def metrics(self) -> RequestMetrics:
        return RequestMetrics.of(self._req, self._engine.sample_rate)

    def queue_position(self) -> int:
        """Requests ahead of this one in the engine's queue; 0 once it runs."""
        return self._engine._queue_position(self._req)

    def eta_s(self) -> float:
        """Predicted seconds until this request starts (0 once it runs): the queue's honest answer."""
        return self._engine._eta(self._req)

    @property
    def buffered_s(self) -> float:
        """Audio a 1x player started at the first chunk would hold now (its margin against a stall)."""
        return self._engine._buffered(self._req)

    @property
    def safe(self) -> bool:
        """True once a player starting now will not run dry: the engine has finished the audio, or the
        listener holds ``qos.low_s`` or more (rows below that are stepped first)."""
        return self._done or self.buffered_s >= self._engine.qos.low_s

    @property
    def stall_s(self) -> float:
        """How long a 1x player started at the first chunk has waited for audio so far."""
        return self._req.stall_s

    @property
    def cancel_asked(self) -> bool:
        """True once ``cancel`` was called, before the engine's next step marks the request cancelled."""
        return bool(self._req.cancel_requested)

    def cancel(self) -> None:
        """Stop this request; its slot is freed within one engine step."""
        if not self._done:
            self._req.cancel_requested = True
            self._engine._wake()

    def _raise_if_failed(self) -> None:
        if self._req.status is RequestStatus.FAILED:
            raise self._req.error if self._req.error is not None else RuntimeError("request failed")

    @property
    def words(self) -> list[WordTiming]:
        """Word timings released so far (all of them once the request is done); empty for models without durations."""
        with self._cond:
            return [w for c in self._chunks for w in c.words]

    def __iter__(self) -> Iterator[np.ndarray]:
        """The audio, chunk by chunk (empty chunks skipped); stopping early cancels the request."""
        with closing(self.chunks()) as chunks:  # closed at once, not at garbage collection
            for c in chunks:
                if c.audio.size:
                    yield c.audio

    async def astream(self, forget: bool = False) -> AsyncIterator[np.ndarray]:
        """Async form of iteration, for Gradio and other asyncio callers; ``forget``: see ``achunks``."""
        async with aclosing(self.achunks(forget)) as chunks:
            async for c in chunks:
                if c.audio.size:
                    yield c.audio

    def chunks(self) -> Iterator[AudioChunk]:
        """Audio with its word timings as the engine produces them; stopping early cancels the request."""
        i = 0
        finished = False
        try:
            while True:
                with self._cond:
                    while i >= len(self._chunks) and not self._done:
                        self._cond.wait()
                    batch, done = self._chunks[i:], self._done
                i += len(batch)
                yield from batch
                if done and i >= len(self._chunks):
                    finished = True
                    break
            self._raise_if_failed()
        finally:
            if not finished:  # the caller stopped listening: free the slot
                self.cancel()

    async def achunks(self, forget: bool = False) -> AsyncIterator[AudioChunk]:
        """Async form of ``chunks``. ``forget``: the handle drops each chunk's audio once handed out (its words
        stay), so a long request holds only what its one reader has not taken yet; ``result`` is then empty."""
        loop = asyncio.get_running_loop()
        i = 0
        finished = False
        try:
            while True:
                event = asyncio.Event()
                with self._cond:
                    batch, done = self._chunks[i:], self._done
                    if not batch and not done:
                        self._waiters.append((loop, event))
                    elif forget:
                        self._chunks[i:] = [AudioChunk(_NO_AUDIO, c.words) for c in batch]
                if not batch and not done:
                    try:
                        await event.wait()
                    except asyncio.CancelledError:
                        with self._cond:  # the reader gave up: its wake-up is not kept
                            if (loop, event) in self._waiters:
                                self._waiters.remove((loop, event))
                        raise
                    continue
                i += len(batch)
                for chunk in batch:
                    yield chunk
                if done and i >= len(self._chunks):
                    finished = True
                    break
            self._raise_if_failed()
        finally:
            if not finished:
                self.cancel()

    def result(self, timeout: float | None = None) -> np.ndarray:
        """The whole utterance; raises the request's error, RequestCancelled, or TimeoutError (the request
        is then cancelled: a caller that gives up frees its slot rather than leave the engine working for no one)."""
        with self._cond:
            finished = self._cond.wait_for(lambda: self._done, timeout)
        if not finished:
            self.cancel()
            raise TimeoutError(f"request {self.id} not finished after {timeout} s")
        return self._whole()

    async def aresult(self) -> np.ndarray:
        async for _ in self.astream():
            pass
        return self._whole()

    def _whole(self) -> np.ndarray:
        self._raise_if_failed()
        if self._req.status is RequestStatus.CANCELLED:
            raise RequestCancelled(f"request {self.id} was cancelled")
        with self._cond:
            audio = [c.audio for c in self._chunks]
        return np.concatenate(audio) if audio else np.zeros(0, np.float32)
