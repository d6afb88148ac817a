"""Long documents: plain text or Markdown -> chapters -> paragraphs -> engine-sized pieces.

Markdown headings start chapters (their titles are read, then a longer pause); Markdown
syntax is not read aloud (emphasis marks, link targets, images' addresses, code blocks, list
bullets, table rules, HTML tags): markdown_blocks.py reads it, in linear time. Pieces end at
sentence boundaries, each at most ``PIECE_CHARS`` long (one sentence longer than that is cut at a clause mark or a space),
and never span paragraphs. Runs without a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tts_app.text.errors import TextError
from tts_app.text.markdown_blocks import markdown_blocks

MAX_DOCUMENT_CHARS = 200_000
PIECE_CHARS = 400  # one engine request: a few sentences, so the first audio comes quickly

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_CLAUSE = re.compile(r"(?<=[,;:])\s+")
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class DocumentPiece:
    """One engine request of a document."""

    chapter: int  # index into ParsedDocument.chapters
    text: str
    paragraph_end: bool  # the last piece of its paragraph (a longer pause follows)
    heading: bool = False  # a chapter's title


@dataclass(frozen=True)
class ParsedDocument:
    chapters: list[str]  # titles; the first is "Start" when text comes before any heading
    pieces: list[DocumentPiece]

    @property
    def chars(self) -> int:
        return sum(len(p.text) for p in self.pieces)

    @property
    def first_heading(self) -> str:
        """The title of the first chapter that has a heading ("" for a text without one)."""
        return next((self.chapters[p.chapter] for p in self.pieces if p.heading), "")


def _blocks(text: str, markdown: bool) -> list[tuple[str, str]]:
    """("heading" | "para", text) in order; Markdown structure read when ``markdown``."""
    if markdown:
        blocks = markdown_blocks(text)
    else:
        blocks, para = [], []
        for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            if raw.strip():
                para.append(raw.strip())
            elif para:
                blocks.append(("para", " ".join(para)))
                para = []
        if para:
            blocks.append(("para", " ".join(para)))
    return [(kind, body) for kind, body in blocks if _WORD.search(body)]


def _cut(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, at sentence ends, else clause marks, else spaces."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(text):
        for part in _split_long(sentence.strip(), limit):
            if current and len(current) + 1 + len(part) > limit:
                pieces.append(current)
                current = part
            else:
                current = f"{current} {part}".strip()
    if current:
        pieces.append(current)
    return pieces


def _split_long(sentence: str, limit: int) -> list[str]:
    if len(sentence) <= limit:
        return [sentence] if sentence else []
    out: list[str] = []
    for clause in _CLAUSE.split(sentence):
        clause = clause.strip()
        at = 0  # an offset, not a shrinking copy: a long clause without spaces stays linear
        while len(clause) - at > limit:
            space = clause.rfind(" ", at, at + limit)
            cut = space if space - at > limit // 3 else at + limit
            out.append(clause[at:cut].strip())
            at = cut
            while at < len(clause) and clause[at].isspace():
                at += 1
        if at < len(clause):
            out.append(clause[at:])
    return out


def check_document_size(text: str) -> None:
    """TextError (one line) unless ``text`` is a string within MAX_DOCUMENT_CHARS: O(1), before any cap or parse."""
    if not isinstance(text, str):
        raise TextError("the document must be text")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise TextError(f"the document is {len(text):,} characters; the limit is {MAX_DOCUMENT_CHARS:,}")


def parse_document(text: str, markdown: bool = True, piece_chars: int = PIECE_CHARS) -> ParsedDocument:
    """Chapters and engine pieces of ``text``; TextError (one line) for an empty or oversized document."""
    check_document_size(text)
    chapters: list[str] = []
    pieces: list[DocumentPiece] = []
    for kind, body in _blocks(text, markdown):
        if kind == "heading":
            chapters.append(body)
            for part in _cut(body, piece_chars):
                pieces.append(DocumentPiece(len(chapters) - 1, part, True, heading=True))
            continue
        if not chapters:
            chapters.append("Start")
        parts = _cut(body, piece_chars)
        pieces.extend(DocumentPiece(len(chapters) - 1, part, i == len(parts) - 1) for i, part in enumerate(parts))
    if not pieces:
        raise TextError("the document has nothing to read")
    return ParsedDocument(chapters, pieces)
