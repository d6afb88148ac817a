"""The one module that touches Gradio's and uvicorn's private internals: each behind one small named function.

Neither framework offers a public API for what is done here, so an upgrade of either may break any of it
silently. Every such use is in this file, listed below with why; nothing else in tts_app/ names them
(tests/repo/test_framework_internals.py), and tests/unit/server/test_framework.py fails with one line when
an installed version differs from ``CHECKED_AGAINST``, and checks that each internal below still exists.
After an upgrade: re-read each item against the new version's source, then update ``CHECKED_AGAINST``.

Checked against gradio 6.31.0, uvicorn 0.54.0, h11 0.16.0 and starlette 1.10.0.

Gradio (``gr.Blocks`` and its queue, read and changed from the server's event loop):

- ``Blocks._queue.pending_event_ids_session`` (session -> its queued or running event ids): which sessions
  are busy (the session sweeper keeps them), a session's events (the run watchdog asks whether anyone reads
  them), and the session of an event id (with ``Blocks._queue.event_ids_to_events``: what a
  ``GET /call/<api>/<event>`` streams, so the session guard checks its owner).
- ``Blocks._queue.pending_messages_per_session``: a forgotten session's message queue, dropped with it.
- ``Blocks.state_holder`` (``.session_data``, ``.time_last_used``, ``.lock``): every session's stored state,
  which Gradio frees only past 10,000 sessions; the sweeper forgets finished ones (one per API call).
- ``Blocks.pending_streams`` (session -> run -> stream, each with ``end_stream()``) and
  ``Blocks.pending_diff_streams``: a session's live streams; ended and dropped with a forgotten session, and
  asked whether a stream URL's run still streams.
- ``Blocks.fns`` (index -> ``BlockFunction`` with ``.inputs`` and ``.api_name``): which events exist and how many
  inputs each takes, so a malformed event body is refused in one line before Gradio's 500.
- ``Blocks.blocks`` and each component's ``preprocess``: the components' own input checks (a choice not
  offered) wrapped so they raise the app's one-line UserError instead of a traceback (``Blocks.preprocess_data``
  calls ``block.preprocess`` through the instance, so the wrapper is what runs).
- ``Blocks.has_launched``: set, because ``gr.mount_gradio_app`` never sets it and Gradio checks that event files
  lie in its upload folder only for launched Blocks (CVE-2024-51751's class).
- ``gradio.routes.App.stop_event`` (the mounted app, found among the FastAPI routes): Gradio ends its
  heartbeat streams on it; set at the stop signal so pages disconnect at once, not after uvicorn's grace.
- ``gradio.audio_stream_encoder.STARTUP_WAIT``: how long the live player's first segment waits for ffmpeg
  (0.1 s); raised, or a busy machine's first segment is empty and the browser's player backs off.
- ``gradio.utils.get_upload_folder``: Gradio's upload folder, the only place a request may name a file in.

uvicorn and h11 (one connection's protocol, on the server's event loop):

- ``uvicorn.protocols.http.h11_impl.H11Protocol``, subclassed for the connection guard's deadlines and caps
  (uvicorn has no header or body timeout): its hooks ``connection_made``, ``data_received``,
  ``connection_lost`` and ``handle_websocket_upgrade``; its attributes ``client``, ``transport``, ``loop``,
  ``conn.their_state`` (h11's state of the client: ``h11.IDLE`` before a request's headers,
  ``h11.SEND_BODY`` while its body comes), ``cycle.response_started`` and ``flow.read_paused``; and
  ``uvicorn.Config(http=<that class>)``.
- ``uvicorn.Server.handle_exit``, overridden: the app hears the stop signal before uvicorn's graceful wait.

Starlette: nothing private; it is pinned with the others because Gradio's routes and every guard's ASGI
messages were checked against this version.

uvicorn's ``ProxyHeadersMiddleware`` (with ``forwarded_allow_ips``) could replace the guards' own
``X-Forwarded-For`` walk, but at 0.54.0 it answers 4 of the 15 cases of tests/unit/server/test_client_identity.py
differently (an entry that is not an address becomes the client as written instead of ``unknown``, an empty
entry is skipped, an IPv4-mapped IPv6 address is not unmapped), so tts_app/web/guards/forwarded.py stays.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any, Protocol

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

CHECKED_AGAINST = {"gradio": "6.31.0", "uvicorn": "0.54.0", "h11": "0.16.0", "starlette": "1.10.0"}
_WRAPPED = "_tts_app_wrapped"  # marks a component check already wrapped (wrapping twice would nest)


# -- Gradio: events and sessions ---------------------------------------------------------------------
def live_stream_run(blocks: Any, session: str, run: str) -> bool:
    """True while Gradio holds the streams of ``run`` (its per-run key) for ``session``: filed when a run's
    first streamed chunk is made, dropped with its session."""
    return run in blocks.pending_streams.get(session, {})


def event_session(blocks: Any, event_id: str) -> str | None:
    """The session hash of a queued or just-finished event (what ``GET /call/<api>/<event>`` streams)."""
    queue = blocks._queue
    event = queue.event_ids_to_events.get(event_id)
    if event is not None:
        return event.session_hash
    return next((s for s, ids in queue.pending_event_ids_session.items() if event_id in ids), None)


def session_events(blocks: Any, session: str) -> tuple[str, ...]:
    """The ids of ``session``'s queued or running events."""
    return tuple(blocks._queue.pending_event_ids_session.get(session, ()))


def busy_sessions(blocks: Any) -> set[str]:
    """The sessions with an event queued or running."""
    return {session for session, events in blocks._queue.pending_event_ids_session.items() if events}


def stored_sessions(blocks: Any) -> set[str]:
    """Every session Gradio holds something for: stored state, or streams without state (an API call's audio)."""
    return set(blocks.state_holder.session_data) | set(blocks.pending_streams) | set(blocks.pending_diff_streams)


def session_last_used(blocks: Any, session: str) -> datetime.datetime | None:
    """When Gradio last stored ``session``'s state (local time, as Gradio keeps it); None if never."""
    return blocks.state_holder.time_last_used.get(session)


def forget_session_state(blocks: Any, session: str) -> None:
    """Drop all Gradio holds for an idle session: its state, its streams (ended first), its message queue."""
    holder = blocks.state_holder
    with holder.lock:  # Gradio's StateHolder.update takes it (from worker threads too)
        holder.session_data.pop(session, None)
        holder.time_last_used.pop(session, None)
    for run in blocks.pending_streams.pop(session, {}).values():
        for stream in run.values():
            stream.end_stream()
    blocks.pending_diff_streams.pop(session, None)
    blocks._queue.pending_messages_per_session.pop(session, None)  # no client reads it any more
    blocks._queue.pending_event_ids_session.pop(session, None)  # empty: only idle sessions are forgotten


def event_inputs(blocks: Any, fn_index: int | None, api_name: str | None) -> int | None:
    """How many inputs the event takes, found by ``fn_index`` or else by ``api_name`` as Gradio's
    ``route_utils.get_fn`` finds it; None when no event matches (Gradio answers that itself)."""
    fns = blocks.fns
    if fn_index is not None:
        fn = fns.get(fn_index)
    else:
        fn = next((f for f in fns.values() if f.api_name == api_name), None)
    return None if fn is None else len(fn.inputs)


def known_event(blocks: Any, fn_index: int) -> bool:
    """True when ``fn_index`` names one of the app's events (Gradio's lookup of any other is a KeyError, a 500)."""
    return fn_index in blocks.fns


# -- Gradio: the app's set-up -----------------------------------------------------------------------
def wrap_component_checks(blocks: Any, wrap: Callable[[Callable[[Any], Any]], Callable[[Any], Any]]) -> int:
    """Replace each component's input check (``preprocess``) by ``wrap(check)``, once; returns how many."""
    wrapped = 0
    for block in blocks.blocks.values():
        preprocess = getattr(block, "preprocess", None)
        if not callable(preprocess) or getattr(preprocess, _WRAPPED, False):
            continue
        checked = wrap(preprocess)
        setattr(checked, _WRAPPED, True)
        block.preprocess = checked
        wrapped += 1
    return wrapped


def mark_launched(blocks: Any) -> None:
    """Make a mounted app's Blocks count as launched, so Gradio's own upload-folder check of event files runs."""
    blocks.has_launched = True


def gradio_stop_events(app: Any) -> list[asyncio.Event]:
    """The stop events of the Gradio apps mounted in ``app`` (a FastAPI app): set, they end the heartbeats."""
    found = (getattr(getattr(route, "app", None), "stop_event", None) for route in app.routes)
    return [event for event in found if event is not None]


def raise_stream_start_wait(seconds: float) -> bool:
    """Let a live stream's first segment wait up to ``seconds`` for ffmpeg (never lowering Gradio's wait);
    False, and nothing changed, when this Gradio has no such setting."""
    from gradio import audio_stream_encoder  # gradio is heavy: only when the page is built

    current = getattr(audio_stream_encoder, "STARTUP_WAIT", None)
    if not isinstance(current, (int, float)):
        return False
    audio_stream_encoder.STARTUP_WAIT = max(float(current), seconds)
    return True


def upload_folder() -> str:
    """Gradio's upload folder ($GRADIO_TEMP_DIR, else <tmp>/gradio), as Gradio computes it."""
    from gradio.utils import get_upload_folder  # gradio is heavy; the CLI reaches this through storage

    return get_upload_folder()


# -- uvicorn: one connection, and the stop signal --------------------------------------------------------
class Connection:
    """One HTTP/1.1 connection as the connection guard sees it: a view of uvicorn's protocol object."""

    def __init__(self, protocol: H11Protocol) -> None:
        self._protocol = protocol

    @property
    def peer_host(self) -> str | None:
        client = self._protocol.client
        return client[0] if client else None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._protocol.loop

    def awaiting_request(self) -> bool:
        """True before a request's headers are complete (a new connection, or kept alive between requests)."""
        return self._protocol.conn.their_state is h11.IDLE

    def receiving_body(self) -> bool:
        """True while the client is sending a request's body."""
        return self._protocol.conn.their_state is h11.SEND_BODY

    def reply_begun(self) -> bool:
        cycle = self._protocol.cycle  # the request being served (None before the first)
        return bool(cycle is not None and cycle.response_started)

    def reading_paused(self) -> bool:
        """True while uvicorn itself stops reading (the app has not taken the body yet)."""
        flow = self._protocol.flow
        return bool(flow is not None and flow.read_paused)

    def closing(self) -> bool:
        return self._protocol.transport.is_closing()

    def close(self, reply: bytes = b"") -> None:
        """Write ``reply`` (raw bytes, a whole HTTP response) if any, then close the connection."""
        if reply:
            self._protocol.transport.write(reply)
        self._protocol.transport.close()


class ConnectionWatch(Protocol):
    """What a connection guard does at each event of one connection (the guard makes one per connection)."""

    def opened(self) -> None: ...

    def before_data(self) -> None: ...

    def after_data(self, received: int) -> None: ...

    def released(self) -> None: ...  # the connection closed, or passed to the WebSocket protocol


def watched_h11_protocol(watch: Callable[[Connection], ConnectionWatch]) -> type[H11Protocol]:
    """uvicorn's h11 protocol class that tells ``watch(connection)`` of each connection's events
    (pass it as ``uvicorn.Config(http=...)``)."""

    class WatchedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._tts_app_watch = watch(Connection(self))
            self._tts_app_watch.opened()

        def data_received(self, data: bytes) -> None:
            self._tts_app_watch.before_data()
            super().data_received(data)
            self._tts_app_watch.after_data(len(data))

        def connection_lost(self, exc: Exception | None) -> None:
            self._tts_app_watch.released()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, event: h11.Request) -> None:
            self._tts_app_watch.released()  # the WebSocket protocol takes the socket and never reports back here
            super().handle_websocket_upgrade(event)

    return WatchedH11Protocol


def signalled_server(config: uvicorn.Config, on_signal: Callable[[], None]) -> uvicorn.Server:
    """uvicorn's server that calls ``on_signal()`` (in the signal handler) first on SIGINT/SIGTERM, then stops
    as uvicorn does (waiting up to ``timeout_graceful_shutdown`` for open responses)."""

    class SignalledServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            on_signal()
            super().handle_exit(sig, frame)

    return SignalledServer(config)
