"""The pronunciation lexicon panel: edit this visitor's own entries as a table, hear one before saving.

A visitor's entries apply to their own runs only and are forgotten with their session
(tts_app/web/ui/session/visitor_lexicon.py); the server's lexicon is the operator's (``python -m tts_app
lexicon ...``). Handlers only translate table rows into tts_app.text calls and raise gr.Error
with the one-line reason; the lexicon format and validation live in tts_app/text/lexicon.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import gradio as gr
import numpy as np

from tts_app.backends.params import SpeechParams
from tts_app.catalog.server_lexicon import lexicon_phonemes
from tts_app.text import parse_lexicon
from tts_app.web.ui.common.players import player_buttons
from tts_app.web.engine_calls import submitted
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.ui.common.user_error import UserError
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.session.visitor_lexicon import VISITOR_LEXICONS

logger = logging.getLogger(__name__)

HEADERS = ["word", "pronunciation (respelling, or /IPA/)"]
SAY_IT_TEMPLATE = "Say {word} again."  # a carrier sentence: a word alone is read with list intonation
MAX_SAY_IT_CHARS = 64  # a lexicon word's longest (tts_app/text/lexicon.py): Say it says one word, not a page
SAY_IT_TIMEOUT_S = 30.0  # a carrier sentence takes well under a second; past this the visitor has given up


def _rows_to_dict(rows: Any) -> dict[str, str]:
    """Table rows (a list of lists or a DataFrame) to word -> pronunciation; empty rows dropped."""
    values = rows.values.tolist() if hasattr(rows, "values") else list(rows or [])
    out: dict[str, str] = {}
    for row in values:
        word, pron = (str(row[0] or "").strip(), str(row[1] or "").strip()) if len(row) >= 2 else ("", "")
        if word or pron:
            out[word] = pron
    return out


def lexicon_rows(request: gr.Request = None) -> list[list[str]]:  # type: ignore[assignment]
    """This visitor's entries as table rows (one empty row when there are none)."""
    lex = VISITOR_LEXICONS.get(owner_of(request))
    rows = sorted(lex.to_json_dict().items()) if lex else []
    return [list(r) for r in rows] or [["", ""]]


def _id_map() -> Any:
    """The phonemes an entry's IPA may use: the same check as ``python -m tts_app lexicon set`` makes."""
    return lexicon_phonemes()


def save_rows(rows: Any, request: gr.Request = None) -> str:  # type: ignore[assignment]
    """Validate the table and keep it as this visitor's entries; gr.Error with the first problem."""
    try:
        lex = parse_lexicon(_rows_to_dict(rows), _id_map())
        VISITOR_LEXICONS.put(owner_of(request), lex)
    except ValueError as exc:  # TextError is one; so are the caps
        raise UserError(str(exc)) from exc
    entries = "1 entry" if len(lex) == 1 else f"{len(lex)} entries"
    return f"Saved {entries} (for your runs on this page; forgotten when you close it)."


def with_typed_entry(rows: Any, word: str | None, pronunciation: str | None) -> list[list[str]]:
    """The table's rows plus the entry typed in the Word and Pronunciation boxes (it replaces a row of that word)."""
    entries = _rows_to_dict(rows)
    word, pronunciation = (word or "").strip(), (pronunciation or "").strip()
    if word and pronunciation:
        entries = {w: p for w, p in entries.items() if w.lower() != word.lower()} | {word: pronunciation}
    return [[w, p] for w, p in entries.items()] or [["", ""]]


def save_panel(rows: Any, word: str | None, pronunciation: str | None,
               request: gr.Request = None) -> tuple[str, list[list[str]]]:  # type: ignore[assignment]
    """Save lexicon: the table and the typed entry are kept (a word typed and heard is not lost); the table shows them."""
    message = save_rows(with_typed_entry(rows, word, pronunciation), request)
    return message, lexicon_rows(request)


async def say_it(word: str, pronunciation: str, request: gr.Request, runs: ActiveRuns) -> tuple[int, np.ndarray]:
    """Speak one entry in a carrier sentence, before it is saved: a word (at most ``MAX_SAY_IT_CHARS``), as
    the visitor's engine work (their share, their queue places), cancelled when the event ends or gives up."""
    from tts_app.catalog.shared_engine import get_engine  # start-up: the shared engine loads on first use
    from tts_app.engine import EngineBusy, RequestCancelled  # start-up: with the shared engine

    word = (word or "").strip()
    if not word:
        raise UserError("Type a word to hear it.")
    if len(word) > MAX_SAY_IT_CHARS:
        raise UserError(f"Say it plays one word of at most {MAX_SAY_IT_CHARS} characters; this one has {len(word):,}.")
    try:
        lex = parse_lexicon({word: pronunciation}) if (pronunciation or "").strip() else None
        engine = await asyncio.to_thread(get_engine)
        params = SpeechParams(lexicon=lex, stream=False, client=visitor_key(request))
        handle = await submitted(lambda: engine.submit(SAY_IT_TEMPLATE.format(word=word), params))
    except EngineBusy as exc:
        raise UserError(f"The server is busy: {exc}.") from exc
    except ValueError as exc:  # TextError and bad settings: one line for the user
        raise UserError(str(exc)) from exc
    with runs.held(owner_of(request) or "anonymous", [handle]):
        try:
            audio = await asyncio.wait_for(handle.aresult(), SAY_IT_TIMEOUT_S)
        except (TimeoutError, RequestCancelled) as exc:
            raise UserError("Not spoken: the server is busy; try again in a moment.") from exc
    return engine.sample_rate, audio


def build_lexicon_panel(runs: ActiveRuns) -> None:
    """Components and events of the panel; call inside a gr.Blocks (e.g. in a tab or an accordion). ``runs``:
    the page's engine work by session (Say it's request is there while it plays out)."""
    gr.Markdown(
        "Words here are read your way in your own runs on this page, until you close it (other visitors and "
        "API callers are not affected). A pronunciation is a respelling (`Nguyen` -> `win`) or IPA between "
        "slashes (`/ʃɪvˈɔːn/`). *Say it* plays the word below; *Save lexicon* keeps the table and that word."
    )
    table = gr.Dataframe(elem_id="lexicon-table", headers=HEADERS, datatype=["str", "str"], column_count=(2, "fixed"), value=[["", ""]],
                         interactive=True, label="Lexicon")  # fmt: skip
    with gr.Row():
        word = gr.Textbox(label="Word", scale=2)
        pron = gr.Textbox(label="Pronunciation", scale=3)
        say_button = gr.Button("Say it", scale=1)
    preview = gr.Audio(label="Preview", interactive=False, autoplay=True, buttons=player_buttons())
    with gr.Row():
        save = gr.Button("Save lexicon", variant="primary")
        reload = gr.Button("Reload")
    status = gr.Markdown()
    async def say(word_value: str, pron_value: str, request: gr.Request) -> tuple[int, np.ndarray]:
        return await say_it(word_value, pron_value, request, runs)

    say_button.click(say, [word, pron], preview, api_name="say_it", api_visibility="private")
    save.click(save_panel, [table, word, pron], [status, table], api_visibility="private")
    reload.click(lexicon_rows, None, table, api_visibility="private")
