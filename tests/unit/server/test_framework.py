"""tts_app/framework.py against the installed Gradio, uvicorn, h11 and Starlette: the versions it was checked
against, and each private internal it touches, present and behaving as the adapter expects.

The first test fails with one line when a framework is upgraded; the others say which internal moved.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
import signal

import gradio as gr
import h11
import pytest
import uvicorn
from fastapi import FastAPI
from gradio import audio_stream_encoder
from gradio.route_utils import MediaStream
from gradio.state_holder import SessionState
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from tts_app import framework
from tts_app.framework import CHECKED_AGAINST, Connection


def test_the_installed_frameworks_are_the_versions_the_adapter_was_checked_against() -> None:
    stale = [f"{name} {importlib.metadata.version(name)} is installed, checked against {checked}"
             for name, checked in CHECKED_AGAINST.items() if importlib.metadata.version(name) != checked]
    assert not stale, ("re-check every internal tts_app/framework.py's docstring lists, then update its CHECKED_AGAINST: "
                       + "; ".join(stale))


@pytest.fixture(scope="module")
def demo() -> gr.Blocks:
    with gr.Blocks() as blocks:
        text = gr.Textbox()
        choice = gr.Dropdown(["a", "b"], value="a")
        gr.Button().click(lambda t, c: t, [text, choice], text, api_name="echo")
    blocks.queue()
    return blocks


def test_events_and_their_inputs_are_found(demo: gr.Blocks) -> None:
    (index,) = demo.fns
    assert framework.known_event(demo, index) and not framework.known_event(demo, index + 1)
    assert framework.event_inputs(demo, index, None) == framework.event_inputs(demo, None, "echo") == 2
    assert framework.event_inputs(demo, None, "no-such-event") is None


def test_a_sessions_state_events_and_streams_are_seen_and_forgotten(demo: gr.Blocks) -> None:
    demo.state_holder["stateful"]  # Gradio makes a session's state on first use, stamped then
    demo.pending_streams["streaming"]["run-1"] = {0: (stream := MediaStream())}
    demo.pending_diff_streams["streaming"]["run-1"] = [None]
    demo._queue.pending_event_ids_session["stateful"] = {"event-1"}
    assert framework.stored_sessions(demo) == {"stateful", "streaming"}
    assert framework.busy_sessions(demo) == {"stateful"} and framework.session_events(demo, "stateful") == ("event-1",)
    assert framework.event_session(demo, "event-1") == "stateful" and framework.event_session(demo, "event-2") is None
    assert framework.session_last_used(demo, "stateful") is not None and framework.session_last_used(demo, "streaming") is None
    assert framework.live_stream_run(demo, "streaming", "run-1") and not framework.live_stream_run(demo, "streaming", "run-2")
    demo._queue.pending_event_ids_session["stateful"] = set()
    for session in ("stateful", "streaming"):
        framework.forget_session_state(demo, session)
    assert framework.stored_sessions(demo) == set() and framework.busy_sessions(demo) == set()
    assert stream.ended and "stateful" not in demo._queue.pending_event_ids_session


def test_component_checks_are_wrapped_once_and_gradio_calls_the_wrapper(demo: gr.Blocks) -> None:
    seen: list[object] = []

    def wrap(check):
        def checked(payload):
            seen.append(payload)
            return check(payload)
        return checked

    components = sum(callable(getattr(block, "preprocess", None)) for block in demo.blocks.values())
    assert framework.wrap_component_checks(demo, wrap) == components >= 2
    assert framework.wrap_component_checks(demo, wrap) == 0  # already wrapped: not nested
    (event,) = demo.fns.values()
    assert asyncio.run(demo.preprocess_data(event, ["hi", "b"], SessionState(demo))) == ["hi", "b"]
    assert seen == ["hi", "b"]  # Gradio calls each component's check through the instance: the wrapper
    dropdown = next(block for block in demo.blocks.values() if isinstance(block, gr.Dropdown))
    with pytest.raises(gr.Error):  # the component's own check still runs inside the wrapper
        dropdown.preprocess("not offered")


def test_a_mounted_app_can_be_marked_launched_and_stopped(demo: gr.Blocks) -> None:
    app = gr.mount_gradio_app(FastAPI(), demo, path="/")
    assert demo.has_launched is False  # what makes the marking needed: mounting leaves it unset
    framework.mark_launched(demo)
    assert demo.has_launched is True
    (stop,) = framework.gradio_stop_events(app)
    assert isinstance(stop, asyncio.Event) and not stop.is_set()


def test_the_stream_start_wait_is_raised_never_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(audio_stream_encoder.STARTUP_WAIT, float)
    monkeypatch.setattr(audio_stream_encoder, "STARTUP_WAIT", 0.1)
    assert framework.raise_stream_start_wait(3.0) and audio_stream_encoder.STARTUP_WAIT == 3.0
    assert framework.raise_stream_start_wait(1.0) and audio_stream_encoder.STARTUP_WAIT == 3.0
    monkeypatch.delattr(audio_stream_encoder, "STARTUP_WAIT")
    assert not framework.raise_stream_start_wait(3.0) and not hasattr(audio_stream_encoder, "STARTUP_WAIT")


def test_the_upload_folder_is_gradios(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    assert framework.upload_folder() == str(tmp_path)


def test_uvicorns_protocol_hooks_have_the_signatures_the_adapter_overrides() -> None:
    names = {hook: list(inspect.signature(getattr(H11Protocol, hook)).parameters) for hook in
             ("__init__", "connection_made", "data_received", "connection_lost", "handle_websocket_upgrade")}
    assert names == {"__init__": ["self", "config", "server_state", "app_state", "_loop"],
                     "connection_made": ["self", "transport"], "data_received": ["self", "data"],
                     "connection_lost": ["self", "exc"], "handle_websocket_upgrade": ["self", "event"]}
    assert list(inspect.signature(uvicorn.Server.handle_exit).parameters) == ["self", "sig", "frame"]
    assert "http" in inspect.signature(uvicorn.Config).parameters and h11.IDLE is not h11.SEND_BODY


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written, self.closed = b"", False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"peername": ("192.0.2.7", 5555), "sockname": ("127.0.0.1", 7860)}.get(name, default)

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _answer(scope, receive, send) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_watched_connection_reports_each_stage_of_a_request() -> None:
    """A real uvicorn protocol object, fed a request in two parts: the view reads its client, h11's state,
    the response cycle and the flow control at each hook."""
    seen: list[tuple] = []

    class Watch:
        def __init__(self, connection: Connection) -> None:
            self.c = connection

        def opened(self) -> None:
            seen.append(("opened", self.c.peer_host, self.c.awaiting_request(), self.c.reading_paused(), self.c.closing()))

        def before_data(self) -> None:
            seen.append(("before", self.c.awaiting_request()))

        def after_data(self, received: int) -> None:
            seen.append(("after", received, self.c.receiving_body(), self.c.reply_begun()))

        def released(self) -> None:
            seen.append(("released",))

    async def serve_one() -> bytes:
        protocol_class = framework.watched_h11_protocol(Watch)
        config = uvicorn.Config(_answer, http=protocol_class, log_level="warning")
        config.load()
        protocol = protocol_class(config, ServerState(), {}, asyncio.get_running_loop())
        transport = _Transport()
        protocol.connection_made(transport)
        protocol.data_received(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")
        await asyncio.sleep(0)
        protocol.data_received(b"cd")
        for _ in range(5):  # the app's task answers
            await asyncio.sleep(0)
        protocol.connection_lost(None)
        return transport.written

    written = asyncio.run(serve_one())
    assert written.startswith(b"HTTP/1.1 200")
    assert seen == [("opened", "192.0.2.7", True, False, False), ("before", True), ("after", 49, True, False),
                    ("before", False), ("after", 2, False, True), ("released",)]


def test_the_signalled_server_hears_the_signal_before_uvicorn_stops() -> None:
    heard: list[bool] = []
    server = framework.signalled_server(uvicorn.Config(_answer), lambda: heard.append(server.should_exit))
    server.handle_exit(signal.SIGTERM, None)
    assert heard == [False] and server.should_exit  # told first, then uvicorn's own stop
