"""The text box's contract: each non-empty line is one utterance, within the run's limits."""

from __future__ import annotations

MAX_LINES = 50
MAX_LINE_CHARS = 2000


class TextLimitError(ValueError):
    """The text breaks a limit; the message is one line, ready to show in the page."""


def parse_lines(text: str | None, max_lines: int = MAX_LINES, max_chars: int = MAX_LINE_CHARS) -> list[str]:
    """Split ``text`` into utterances (non-empty lines, stripped); raise TextLimitError when out of bounds."""
    lines = [line.strip() for line in (text or "").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        raise TextLimitError("Enter some text: each non-empty line is spoken as one utterance.")
    if len(lines) > max_lines:
        raise TextLimitError(f"{len(lines)} lines is too many for one run; the limit is {max_lines}.")
    for number, line in enumerate(lines, start=1):
        if len(line) > max_chars:
            raise TextLimitError(f"Line {number} has {len(line):,} characters; the limit is {max_chars:,} a line.")
    return lines
