"""The pronunciation lexicon panel: edit the server's lexicon as a table, hear one entry before saving.

Handlers only translate table rows into tts_app.text calls and raise gr.Error with the one-line
reason; the lexicon itself (format, validation, storage) lives in tts_app/text/lexicon.py.
"""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr
import numpy as np

from tts_app.text import TextError, parse_lexicon, saved_lexicon
from tts_app.text.lexicon import save_lexicon
from tts_app.ui.user_error import UserError

logger = logging.getLogger(__name__)

HEADERS = ["word", "pronunciation (respelling, or /IPA/)"]
SAY_IT_TEMPLATE = "Say {word} again."  # a carrier sentence: a word alone is read with list intonation


def _rows_to_dict(rows: Any) -> dict[str, str]:
    """Table rows (a list of lists or a DataFrame) to word -> pronunciation; empty rows dropped."""
    values = rows.values.tolist() if hasattr(rows, "values") else list(rows or [])
    out: dict[str, str] = {}
    for row in values:
        word, pron = (str(row[0] or "").strip(), str(row[1] or "").strip()) if len(row) >= 2 else ("", "")
        if word or pron:
            out[word] = pron
    return out


def lexicon_rows() -> list[list[str]]:
    """The saved lexicon as table rows (one empty row when there is none)."""
    lex = saved_lexicon()
    rows = sorted(lex.to_json_dict().items()) if lex else []
    return [list(r) for r in rows] or [["", ""]]


def _id_map() -> Any:
    from tts_app.shared_engine import get_engine

    return get_engine().backend.model.config.phoneme_id_map


def save_rows(rows: Any) -> str:
    """Validate and save the table; gr.Error with the first problem."""
    try:
        lex = parse_lexicon(_rows_to_dict(rows))
        lex.check(_id_map())
        path = save_lexicon(lex)
    except TextError as exc:
        raise UserError(str(exc)) from exc
    except OSError as exc:
        raise UserError(f"could not save the lexicon: {exc.strerror or exc}") from exc
    logger.info("lexicon saved: %d entries at %s", len(lex), path)
    return f"Saved {len(lex)} entries."


def say_it(word: str, pronunciation: str) -> tuple[int, np.ndarray]:
    """Speak one entry in a carrier sentence, before it is saved."""
    from tts_app.shared_engine import get_engine

    word = (word or "").strip()
    if not word:
        raise UserError("Type a word to hear it.")
    try:
        lex = parse_lexicon({word: pronunciation}) if (pronunciation or "").strip() else None
        engine = get_engine()
        audio = engine.submit(SAY_IT_TEMPLATE.format(word=word), lexicon=lex).result(timeout=60)
    except ValueError as exc:  # TextError and bad settings: one line for the user
        raise UserError(str(exc)) from exc
    return engine.sample_rate, audio


def build_lexicon_panel() -> None:
    """Components and events of the panel; call inside a gr.Blocks (e.g. in a tab or an accordion)."""
    gr.Markdown(
        "Words here are read your way in every request (UI and API). A pronunciation is a respelling "
        "(`Nguyen` -> `win`) or IPA between slashes (`/ʃɪvˈɔːn/`)."
    )
    table = gr.Dataframe(elem_id="lexicon-table", headers=HEADERS, datatype=["str", "str"], column_count=(2, "fixed"), value=lexicon_rows,
                         interactive=True, label="Lexicon")  # fmt: skip
    with gr.Row():
        word = gr.Textbox(label="Word", scale=2)
        pron = gr.Textbox(label="Pronunciation", scale=3)
        say = gr.Button("Say it", scale=1)
    preview = gr.Audio(label="Preview", interactive=False, autoplay=True)
    with gr.Row():
        save = gr.Button("Save lexicon", variant="primary")
        reload = gr.Button("Reload")
    status = gr.Markdown()
    say.click(say_it, [word, pron], preview, api_visibility="private")
    save.click(save_rows, table, status, api_visibility="private")
    reload.click(lexicon_rows, None, table, api_visibility="private")
