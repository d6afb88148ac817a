"""Long documents: plain text or Markdown -> chapters -> paragraphs -> engine-sized pieces.

Markdown headings start chapters (their titles are read, then a longer pause); Markdown
syntax is not read aloud (emphasis marks, link targets, images' addresses, code blocks, list
bullets, table rules, HTML tags). Pieces end at sentence boundaries, each at most
``PIECE_CHARS`` long (one sentence longer than that is cut at a clause mark or a space),
and never span paragraphs. Runs without a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import TextError

MAX_DOCUMENT_CHARS = 200_000
PIECE_CHARS = 400  # one engine request: a few sentences, so the first audio comes quickly

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")  # with a "|" in the line
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_LINK_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*\S+.*$")
_HTML = re.compile(r"</?[A-Za-z][^>]{0,200}>|<!--.*?-->")
_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_CLAUSE = re.compile(r"(?<=[,;:])\s+")


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


def _inline(line: str) -> str:
    """Markdown inline syntax out, the words kept."""
    line = _IMAGE.sub(lambda m: m.group(1), line)
    line = _LINK.sub(lambda m: m.group(1), line)
    line = _REF_LINK.sub(lambda m: m.group(1), line)
    line = _HTML.sub(" ", line)
    line = _CODE.sub(lambda m: m.group(1), line)
    for _ in range(3):  # nested emphasis: ***a*** -> a
        line = _EMPHASIS.sub(lambda m: m.group(2), line)
    return re.sub(r"\s+", " ", line).strip()


def _blocks(text: str, markdown: bool) -> list[tuple[str, str]]:
    """("heading" | "para", text) in order; Markdown structure read when ``markdown``."""
    blocks: list[tuple[str, str]] = []
    para: list[str] = []
    in_fence = False

    def close() -> None:
        joined = " ".join(p for p in para if p)
        if joined.strip():
            blocks.append(("para", joined))
        para.clear()

    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not markdown:
            if raw.strip():
                para.append(raw.strip())
            else:
                close()
            continue
        if _FENCE.match(raw):
            close()
            in_fence = not in_fence
            continue
        if in_fence or _LINK_DEF.match(raw) or ("|" in raw and _TABLE_RULE.match(raw)):
            continue
        if _TABLE_ROW.match(raw):  # a table row: its cells read as one short sentence
            close()
            cells = [_inline(c) for c in raw.strip().strip("|").split("|")]
            para.append(", ".join(c for c in cells if c) + ".")
            close()
            continue
        heading = _HEADING.match(raw)
        if heading:
            close()
            blocks.append(("heading", _inline(heading.group(2))))
            continue
        if _SETEXT.match(raw) and para:
            title = para.pop()
            close()
            blocks.append(("heading", title))
            continue
        if _RULE.match(raw) or not raw.strip():
            close()
            continue
        if _BULLET.match(raw):  # each list item is a paragraph of its own
            close()
            raw = _BULLET.sub("", raw)
        para.append(_inline(_QUOTE.sub("", raw)))
    close()
    return [(kind, body) for kind, body in blocks if re.search(r"\w", body)]


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
        while len(clause) > limit:
            cut = clause.rfind(" ", 0, limit)
            cut = cut if cut > limit // 3 else limit
            out.append(clause[:cut].strip())
            clause = clause[cut:].strip()
        if clause:
            out.append(clause)
    return out


def parse_document(text: str, markdown: bool = True, piece_chars: int = PIECE_CHARS) -> ParsedDocument:
    """Chapters and engine pieces of ``text``; TextError (one line) for an empty or oversized document."""
    if not isinstance(text, str):
        raise TextError("the document must be text")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise TextError(f"the document is {len(text):,} characters; the limit is {MAX_DOCUMENT_CHARS:,}")
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
