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
