"""What a ``/generate`` caller (gradio_client, REST) gets: a real value for every output in every update.

The page takes partial updates (an output left out keeps what it shows), and Gradio hands an API
caller each left-out output as ``{'__type__': 'update'}``. So for a caller that is not the page,
every update carries the last value of each output, and the status is plain text (the page's is
Markdown). The live stream is the exception Gradio makes: a value there is a new piece of the HLS
stream, so an update without new audio sends None (the stream's file, no new piece).
"""

from __future__ import annotations

import re
from typing import Any

_BOLD = re.compile(r"\*\*([^*\n]{1,400})\*\*")  # the page's status uses bold only; bounded, linear


def plain_status(markdown: str) -> str:
    """The page's status line without its Markdown (``**Done:** 2 lines`` -> ``Done: 2 lines``)."""
    return _BOLD.sub(r"\1", markdown or "")


def _is_update(value: Any) -> bool:
    return isinstance(value, dict) and "update" in str(value.get("__type__", ""))


class ApiView:
    """Turns the handler's partial updates into complete ones for an API caller."""

    def __init__(self, outputs: Any) -> None:  # the run's handlers.SpeakOutputs (which imports this module)
        self._outputs = outputs
        self._last: dict[Any, Any] = {
            outputs.full: None, outputs.files: [], outputs.status: "", outputs.figures: [], outputs.captions: "",
            outputs.live: "",  # an API caller has no page player: it streams through the HLS stream
            outputs.timeline: "",
        }  # fmt: skip

    def complete(self, update: dict[Any, Any]) -> dict[Any, Any]:
        """``update`` with every output the caller reads given a value."""
        stream = self._outputs.stream
        out: dict[Any, Any] = {stream: None}
        for component, value in update.items():
            if _is_update(value) or component is self._outputs.live:
                continue  # visibility and the page's player are the page's business
            if component is self._outputs.status:
                value = plain_status(value)
            elif component is self._outputs.files and value is None:
                value = []  # the page's "cleared"; a list always, for a caller
            out[component] = value
        for component in self._last:
            if component in out:
                self._last[component] = out[component]
            else:
                out[component] = self._last[component]
        return out
