"""Drop Gradio's per-session state once a session is over.

Gradio keeps a SessionState (component copies, gr.render output, streamed media) for every
session hash it has seen, up to 10,000, and frees it only on eviction: every
``/gradio_api/call`` makes a new session, so API callers grow the server without bound.
A session is over when no page holds its heartbeat connection, no event of it is queued
or running, and it has not been used for ``TTS_APP_IDLE_SESSION_S`` seconds (default 300).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from tts_app import settings
from tts_app.framework import busy_sessions, forget_session_state, live_stream_run, session_last_used, stored_sessions
from tts_app.web.guards.session_binding import SESSION_BINDINGS, STREAM_TOKENS, forget_session
from tts_app.web.memory_trim import trim

logger = logging.getLogger(__name__)

IDLE_SESSION_ENV = "TTS_APP_IDLE_SESSION_S"
HEARTBEAT_PREFIX = "/gradio_api/heartbeat/"
_open_heartbeats: Counter[str] = Counter()  # session hash -> open heartbeat connections (pages)
_server_loop: list[asyncio.AbstractEventLoop] = []  # the loop Gradio's state lives on (sweeps run there)
_session_end_hooks: list[Callable[[str], None]] = []  # what else a session owns (files, voices, lexicon)
STAND_IN_BEAT_S = 15.0  # Gradio's own heartbeat period


class HeartbeatTracker:
    """ASGI middleware: which sessions have a page connected (Gradio's heartbeat stream is open).

    A session hash is chosen by the page and may leak; whoever knows it can open its heartbeat,
    and Gradio treats the close of any heartbeat as the page going away (unload events, state
    closed, streams ended). So only the first open heartbeat of a hash reaches Gradio: another
    one opened meanwhile gets a stand-in stream, and its close ends nothing.
    """

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if not _server_loop:
            _server_loop.append(asyncio.get_running_loop())
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(HEARTBEAT_PREFIX):
            await self.app(scope, receive, send)
            return
        session = path[len(HEARTBEAT_PREFIX):]
        first = session not in _open_heartbeats
        _open_heartbeats[session] += 1
        closed = False

        def close() -> None:
            nonlocal closed
            if not closed:
                closed = True
                _open_heartbeats[session] -= 1
                if _open_heartbeats[session] <= 0:
                    del _open_heartbeats[session]

        async def receive_until_gone() -> dict:
            message = await receive()
            if message["type"] == "http.disconnect":
                close()  # before Gradio's unload events run: they ask whether the page is still here
            return message

        try:
            if first:
                await self.app(scope, receive_until_gone, send)
            else:
                await _stand_in_heartbeat(receive_until_gone, send)
        finally:
            close()


async def _stand_in_heartbeat(receive: Callable, send: Callable) -> None:
    """A heartbeat stream that keeps a page content and ends after one beat (the page reconnects)."""
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": b"data: ALIVE\n\n", "more_body": True})
    try:  # bounded, so a shutdown never waits on it for more than one beat
        while (await asyncio.wait_for(receive(), STAND_IN_BEAT_S))["type"] != "http.disconnect":
            pass
    except TimeoutError:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def heartbeat_open(session: str | None) -> bool:
    """True while a page holds ``session``'s heartbeat stream open."""
    return bool(session) and session in _open_heartbeats


def add_session_end_hook(hook: Callable[[str], None]) -> None:
    """Call ``hook(session)`` whenever a session is forgotten (once per hook, however often added)."""
    if hook not in _session_end_hooks:
        _session_end_hooks.append(hook)


def sweep_sessions(blocks: Any, idle_s: float) -> int:
    """Forget every session that is over (see the module doc); returns how many."""
    cutoff = datetime.datetime.now() - datetime.timedelta(seconds=idle_s)  # local time, as Gradio stamps it
    busy = busy_sessions(blocks)
    dropped = 0
    # A session may hold streams (an API call's live audio) without any stored state: stored_sessions has both.
    for session in stored_sessions(blocks):
        last = session_last_used(blocks, session)
        if session in _open_heartbeats or session in busy or (last is not None and last > cutoff):
            continue
        forget_session_state(blocks, session)
        forget_session(session)  # its page binding and stream tokens
        for hook in _session_end_hooks:
            hook(session)
        dropped += 1
    # Hashes bound by a request that never made a session (a heartbeat alone, a refused event).
    alive = stored_sessions(blocks) | set(_open_heartbeats) | busy
    SESSION_BINDINGS.prune(idle_s, alive)
    STREAM_TOKENS.prune(lambda session, run: live_stream_run(blocks, session, run))  # tokens go with their runs
    return dropped


def start_session_sweeper(blocks: Any, every_s: float = 5.0) -> threading.Thread:
    """Every ``every_s`` seconds, sweep ``blocks``' sessions on the server's event loop (where Gradio
    changes them, so no lock is needed) from a daemon thread that only schedules the sweep."""
    idle_s = settings.value(IDLE_SESSION_ENV)

    def sweep_and_log() -> None:
        dropped = sweep_sessions(blocks, idle_s)
        if dropped:
            trim()  # what the sessions held goes back to the system, not just to malloc's free lists
            logger.info("forgot %d finished sessions", dropped)

    def run() -> None:
        tick = threading.Event()
        while not tick.wait(every_s):
            if _server_loop and not _server_loop[0].is_closed():
                _server_loop[0].call_soon_threadsafe(sweep_and_log)

    thread = threading.Thread(target=run, name="session-sweeper", daemon=True)
    thread.start()
    return thread
