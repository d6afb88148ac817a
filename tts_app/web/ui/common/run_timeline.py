"""The run's timeline: one bar a line, from its submission through its wait and its first audio to its end.

A picture instead of the figures table: the table of nine columns showed one character a line on a
phone and cut its headers. Each bar has three parts on one time axis (seconds since the lines were
submitted): waiting to be admitted to the engine, decoding before its first audio, audio coming
until the line's end. Plain HTML and CSS (theme.py), widths in percent, so it reads at any width;
each bar's title says its figures in words.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from tts_app.web.ui.common.run_figures import RunFigures

EMPTY = '<div class="run-timeline muted">The run\'s timeline appears here: one bar a line, from its wait to its end.</div>'
# The parts of a bar, as the legend and the tooltips name them.
WAIT, DECODE, AUDIO = "waiting for the engine", "decoding, no audio yet", "audio coming"


def _pct(seconds: float, span: float) -> str:
    return f"{100.0 * max(0.0, seconds) / span:.2f}%"


def _bar(row: Sequence[Any], span: float) -> str:
    number, text, wait, first, total = str(row[0]), str(row[1]), float(row[2] or 0.0), row[3], float(row[4] or 0.0)
    first = total if first is None else float(first)
    parts = [("tl-wait", 0.0, wait), ("tl-decode", wait, max(first, wait)), ("tl-audio", max(first, wait), total)]
    spans = "".join(
        f'<span class="{cls}" style="left:{_pct(start, span)};width:{_pct(end - start, span)}"></span>'
        for cls, start, end in parts if end > start
    )  # fmt: skip
    title = (f"Line {number} ({text}): {WAIT} {wait:.2f} s; first audio at {first:.2f} s; "
             f"done at {total:.2f} s; {float(row[5] or 0.0):.1f} s of audio")  # fmt: skip
    return (
        f'<div class="tl-row" data-line="{html.escape(number)}" title="{html.escape(title)}">'
        f'<span class="tl-label">{html.escape(number)}</span><span class="tl-track">{spans}</span>'
        f'<span class="tl-figs">{first:.2f} · {total:.2f} s</span></div>'
    )


def timeline_html(figures: RunFigures) -> str:
    """The timeline of the lines finished so far (EMPTY before the first), with the run's summary under it."""
    rows = sorted(figures.rows, key=lambda row: int(row[0]))
    if not rows:
        return EMPTY
    span = max(float(row[4] or 0.0) for row in rows) or 1.0
    summary = figures.summary()
    first = summary.get("time_to_first_audio_s")
    said = [f"first audio {first:.2f} s after the click" if first is not None else "no audio yet",
            f"{summary['audio_s']:.1f} s of audio", f"max batch {summary['max_batch']}"]  # fmt: skip
    if summary.get("rtf") is not None:
        said.insert(2, f"RTF {summary['rtf']:.2f}")
    legend = "".join(f'<span class="tl-key {cls}">{name}</span>' for cls, name in (("tl-wait", WAIT), ("tl-decode", DECODE), ("tl-audio", AUDIO)))
    return (
        f'<div class="run-timeline" data-lines="{len(rows)}">'
        f'<div class="tl-head"><span>Line</span><span>0 s</span><span>{span:.1f} s</span><span>first audio · end</span></div>'
        + "".join(_bar(row, span) for row in rows)
        + f'<div class="tl-legend">{legend}</div><div class="tl-summary">{" · ".join(said)}</div></div>'
    )
