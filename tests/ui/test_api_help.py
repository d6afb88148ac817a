"""The API tab's Markdown renders as written: every inline code span closed, no stray backtick."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from tts_app.web.ui.api_help.tab import api_help_markdown


def test_api_help_has_no_stray_backticks() -> None:
    html = MarkdownIt("commonmark").enable("table").render(api_help_markdown())
    # Code blocks and inline code may hold backticks; everything else shown as text must not.
    outside_code = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    assert "`" not in outside_code, [line for line in outside_code.splitlines() if "`" in line]


def test_document_example_is_one_code_span() -> None:
    html = MarkdownIt("commonmark").enable("table").render(api_help_markdown())
    assert '<code>{&quot;input&quot;: &quot;# Chapter\\n\\nText…&quot;' in html


def test_api_help_lists_every_name_the_official_client_sends() -> None:
    """OpenAI's 13 voices and its current model names, taken from the installed openai client's own types."""
    from tests.api.test_openai_formats import _official_names, official_voices
    from openai.types.audio.speech_model import SpeechModel

    text = api_help_markdown()
    for name in (*official_voices(), *_official_names(SpeechModel)):
        assert f"`{name}`" in text, name
