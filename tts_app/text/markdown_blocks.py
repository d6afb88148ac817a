"""Markdown -> the blocks a reader says: headings and paragraphs, with the syntax left out.

markdown-it-py parses (CommonMark plus tables and strikethrough) in linear time; regexes did
not (``*a `` or ``<!--a`` repeated took quadratic time and held the GIL). Headings are
blocks of their own; each paragraph, list item, table row and HTML block is a paragraph.
Code blocks and link targets are not read; images are read as their alt text. Nothing here
recurses on the document's nesting.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

_TAG_MAX = 200  # a "<...>" longer than this is text, not a tag (as the old rule had it)


@functools.lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Built on first use, not at import; parse() keeps its state per call, so one instance serves all threads.
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def strip_tags(text: str) -> str:
    """HTML tags and comments out, their text kept; one pass (an unclosed comment runs to the end)."""
    out: list[str] = []
    at = 0
    while True:
        lt = text.find("<", at)
        if lt < 0:
            out.append(text[at:])
            break
        out.append(text[at:lt])
        if text.startswith("<!--", lt):
            close = text.find("-->", lt + 4)
            if close < 0:
                break  # no "-->" after this one, so none after any later "<!--" either: the rest is comment
            out.append(" ")
            at = close + 3
            continue
        gt = text.find(">", lt + 1, lt + 2 + _TAG_MAX)
        nxt = text[lt + 1 : lt + 3]
        is_tag = gt > 0 and nxt[:1].isascii() and (nxt[:1].isalpha() or (nxt[:1] == "/" and nxt[1:2].isalpha()))
        if is_tag:
            out.append(" ")
            at = gt + 1
        else:
            out.append("<")
            at = lt + 1
    return "".join(out)


def _inline_text(children: Sequence[Token]) -> str:
    """The words of an inline token's children: text, code spans and images' alt text (walked with a stack)."""
    parts: list[str] = []
    stack: list[Iterator[Token]] = [iter(children)]
    while stack:
        token = next(stack[-1], None)
        if token is None:
            stack.pop()
        elif token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image" and token.children:
            stack.append(iter(token.children))
    return " ".join("".join(parts).split())


def markdown_blocks(text: str) -> list[tuple[str, str]]:
    """("heading" | "para", text) in reading order."""
    blocks: list[tuple[str, str]] = []
    row: list[str] | None = None  # the cells of the table row being read
    heading = False
    for token in _parser().parse(text):
        kind = token.type
        if kind == "heading_open":
            heading = True
        elif kind == "heading_close":
            heading = False
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None:
            # a table row: its cells read as one short sentence
            cells = [c for c in row if c]
            if cells:
                blocks.append(("para", ", ".join(cells) + "."))
            row = None
        elif kind == "inline":
            words = _inline_text(token.children or [])
            if row is not None:
                row.append(words)
            elif words:
                blocks.append(("heading" if heading else "para", words))
        elif kind == "html_block":
            words = " ".join(strip_tags(token.content).split())
            if words:
                blocks.append(("para", words))
    return blocks  # code blocks, rules and link definitions left no block
