"""The Speak tab's status line: what the run is doing now, in words, one figure one meaning (STATUS_TIP says each)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tts_app.web.ui.speak.run_model import SpeakRun

STATUS_TIP = (
    "What this run is doing now. Before its first audio: requests ahead of it in the engine's queue and the engine's "
    "estimate of the wait until its first line starts. Then: lines done (finished of asked), decoding (being made "
    "now), not started (the engine starts them as the listener needs them, or after the requests ahead). Done: "
    "first audio is seconds from the click to the first sound; RTF is the time to make it over its length."
)


def queue_note(handles: Sequence[Any]) -> tuple[int, str]:
    """How many of ``handles`` still wait in the engine queue, and a note on their place and wait."""
    waiting = [h for h in handles if h.status.value == "waiting"]
    if not waiting:
        return 0, ""
    ahead = min(h.queue_position() for h in waiting)
    estimate = min(h.eta_s() for h in waiting)  # the engine's own prediction (its learnt capacity)
    wait = f", about {estimate:.1f} s to wait" if estimate is not None else ""
    return len(waiting), f"{ahead} request{'s' if ahead != 1 else ''} ahead in the engine queue{wait}"


def waiting_status(handles: Sequence[Any], started: float) -> str:
    elapsed = time.perf_counter() - started
    waiting, note = queue_note(handles)
    if not waiting:
        return f"**Decoding…** {len(handles)} line{'s' if len(handles) != 1 else ''} in the engine ({elapsed:.1f} s)"
    if waiting == len(handles):
        if min(h.queue_position() for h in handles) == 0:
            return f"**Starting…** ({elapsed:.1f} s)"  # nothing ahead: the engine is gathering this batch
        return f"**Queued:** {note} ({elapsed:.1f} s so far)"
    return f"**Decoding…** {len(handles) - waiting} of {len(handles)} lines running; the other {waiting}: {note} ({elapsed:.1f} s)"


def progress_status(run: SpeakRun, handles: Sequence[Any]) -> str:
    """The status once audio plays: lines done, decoding, not started (no wait estimate: the listener hears audio,
    and a later line's start is the scheduler's to time; it said "about 2.3 s to wait" while the first line played)."""
    running = sum(1 for h in handles if h.status.value == "running")
    waiting = [h for h in handles if h.status.value == "waiting"]
    parts = [f"{run.finished_count} of {len(run.lines)} lines done"]
    if running:
        parts.append(f"{running} decoding")
    if waiting:
        ahead = min(h.queue_position() for h in waiting)
        others = f" ({ahead} request{'s' if ahead != 1 else ''} ahead in the engine queue)" if ahead else ""
        parts.append(f"{len(waiting)} not started{others}")
    doing = "Speaking…" if run.streaming else "Decoding…"
    return f"**{doing}** " + ", ".join(parts)


def done_status(summary: dict[str, Any], count: int, route: str = "") -> str:
    """A finished run's figures, and which route spoke its voice (``route``: clone_route.spoken_by)."""
    model = f" with {summary['model']}" if summary.get("model") else ""
    return (
        f"✓ **Done{model}:** {count} line{'s' if count != 1 else ''}, "
        f"{summary['audio_s']:.1f} s of audio in {summary['total_s']:.1f} s "
        f"(first audio {summary['time_to_first_audio_s'] or 0:.2f} s, RTF {summary['rtf'] or 0:.2f}, "
        f"max batch {summary['max_batch']})" + (f" · voice: {route}" if route else "")
    )


def stopped_status(finished: int, total: int) -> str:
    """The status of a stopped run: how many of its lines finished and how many were cancelled."""
    return f"■ Stopped: {finished} of {total} line{'s' if total != 1 else ''} finished, {total - finished} cancelled."
