"""Gradio's private state that the guards read, each behind one small named function.

Gradio has no public API for these; keeping every read here means a Gradio upgrade is checked in
one file (issue 50 gathers the rest of the framework's private attributes here too). Every
function takes the app's ``gr.Blocks`` and only reads.
"""

from __future__ import annotations

from typing import Any


def live_stream_run(blocks: Any, session: str, run: str) -> bool:
    """True while Gradio holds the streams of ``run`` (its per-run key) for ``session``:
    ``Blocks.pending_streams[session][run]``, filed when a run's first streamed chunk is made,
    dropped with its session."""
    return run in blocks.pending_streams.get(session, {})


def event_session(blocks: Any, event_id: str) -> str | None:
    """The session hash of a queued or just-finished event (what ``GET /call/<api>/<event>`` streams)."""
    queue = blocks._queue
    event = queue.event_ids_to_events.get(event_id)
    if event is not None:
        return event.session_hash
    return next((s for s, ids in queue.pending_event_ids_session.items() if event_id in ids), None)


def event_inputs(blocks: Any, fn_index: int | None, api_name: str | None) -> int | None:
    """How many inputs the event takes (``Blocks.fns[i].inputs``), found by ``fn_index`` or else by ``api_name``
    as Gradio's ``route_utils.get_fn`` finds it; None when no event matches (Gradio answers that itself)."""
    fns = blocks.fns
    if fn_index is not None:
        fn = fns.get(fn_index)
    else:
        fn = next((f for f in fns.values() if f.api_name == api_name), None)
    return None if fn is None else len(fn.inputs)


def known_event(blocks: Any, fn_index: int) -> bool:
    """True when ``fn_index`` names one of the app's events (Gradio's lookup of any other is a KeyError, a 500)."""
    return fn_index in blocks.fns
