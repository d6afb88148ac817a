"""The History tab: the session's takes in a table, a player for the clicked one, and the zip of them all."""

from __future__ import annotations

from typing import Any

import gradio as gr

from tts_app.web.ui.common.players import player_buttons

from tts_app.web.ui.history.takes import HISTORY_HEADERS, HISTORY_TYPES, HISTORY_WIDTHS, history_table, history_zip, take_audio
from tts_app.web.ui.session.owner import owner_of


def _history_outputs(history: list[dict[str, Any]] | None, request: gr.Request) -> tuple[Any, Any]:
    rows = history_table(history)
    archive = history_zip(history, owner_of(request))
    return rows, gr.update(value=archive, interactive=archive is not None)


def _select_take(history: list[dict[str, Any]] | None, event: gr.SelectData) -> Any:
    row = event.index[0] if isinstance(event.index, (list, tuple)) else int(event.index)
    path, caption = take_audio(history, int(row))
    return gr.update(value=path, label=caption or "Selected take")


def build_history_tab(history: gr.State) -> None:
    """Lay out the History tab inside the current tab; the table and the zip follow ``history``."""
    gr.Markdown(
        "Every take of this session, newest first; click a row to listen to it. "
        "The zip holds each take's audio with its text, voice, settings, seed and figures."
    )
    history_df = gr.Dataframe(
        headers=HISTORY_HEADERS,
        datatype=HISTORY_TYPES,
        interactive=False,
        wrap=False,  # one line per cell: a phone scrolls the table inside its box
        column_widths=HISTORY_WIDTHS,  # at 1280 px every column shows (RTF, batch and wait were cut off)
        elem_id="history-table",
        elem_classes=["wide-table"],
    )
    with gr.Row(equal_height=True):
        take_player = gr.Audio(label="Selected take", interactive=False, scale=3, buttons=player_buttons(), elem_id="take-player")
        zip_btn = gr.DownloadButton(
            "Download all takes (.zip)", value=None, interactive=False, scale=1, elem_id="history-zip"
        )
    history.change(_history_outputs, history, [history_df, zip_btn], api_visibility="private")
    history_df.select(_select_take, history, take_player, api_visibility="private")
