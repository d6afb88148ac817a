"""The session sweeper forgets sessions that are over, streams included, and keeps busy ones."""

from __future__ import annotations

import datetime
import threading
from types import SimpleNamespace

from tts_app.web.session_sweeper import sweep_sessions


class _Stream:
    def __init__(self) -> None:
        self.ended = False

    def end_stream(self) -> None:
        self.ended = True


def _blocks(now: datetime.datetime) -> tuple[SimpleNamespace, dict[str, _Stream]]:
    streams = {name: _Stream() for name in ("stateful", "stream_only", "busy")}
    old = now - datetime.timedelta(seconds=600)
    holder = SimpleNamespace(
        session_data={"stateful": object(), "busy": object(), "recent": object()},
        time_last_used={"stateful": old, "busy": old, "recent": now},
        lock=threading.Lock(),
    )
    queue = SimpleNamespace(
        pending_event_ids_session={"busy": {"event-1"}},
        pending_messages_per_session={"stateful": [], "stream_only": [], "busy": []},
    )
    blocks = SimpleNamespace(
        state_holder=holder,
        _queue=queue,
        # An API call's live stream can outlive its session's stored state: "stream_only" has no state.
        pending_streams={name: {"run": {7: stream}} for name, stream in streams.items()},
        pending_diff_streams={"stream_only": object()},
    )
    return blocks, streams


def test_sessions_that_are_over_are_forgotten_with_their_streams() -> None:
    blocks, streams = _blocks(datetime.datetime.now())
    assert sweep_sessions(blocks, idle_s=300) == 2
    assert streams["stateful"].ended and streams["stream_only"].ended
    assert set(blocks.pending_streams) == {"busy"} and not streams["busy"].ended  # an event still runs
    assert set(blocks.state_holder.session_data) == {"busy", "recent"}  # used a moment ago: kept
    assert blocks.pending_diff_streams == {}
    assert set(blocks._queue.pending_messages_per_session) == {"busy"}


def test_what_a_forgotten_session_owned_is_forgotten_with_it() -> None:
    from tts_app.web import session_sweeper

    ended: list[str] = []
    blocks, _streams = _blocks(datetime.datetime.now())
    session_sweeper.add_session_end_hook(ended.append)
    session_sweeper.add_session_end_hook(ended.append)  # added twice, called once
    try:
        sweep_sessions(blocks, idle_s=300)
    finally:
        session_sweeper._session_end_hooks.remove(ended.append)
    assert sorted(ended) == ["stateful", "stream_only"]
