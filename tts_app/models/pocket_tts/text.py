"""Text to the chunks and token ids the model speaks (pocket_tts/models/text_chunking.py, pocket-tts 4.0.1).

The model is trained on single sentences: a long input is cut on sentence ends (then on , ; : for
an over-long sentence) and regrouped into chunks of at most ``MAX_TOKENS`` tokens, each spoken from
the voice prompt afresh. The official rules are kept (capital first letter, a final period, the
character replacements of the config); the decimal-point check looks at a few tokens around the
boundary instead of decoding the whole prefix, so the cost stays linear in the text's length.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

MAX_TOKENS = 50  # the official MAX_TOKEN_PER_CHUNK
_TERMINAL = ".!?\u2026"
_WEAK = ",;:-\u2013\u2014"
_CLOSERS = "\"'\u201d\u2019)]\u00bb"
_AFTER_SENTENCE_MARK = re.compile(r"([.!?\u2026])\s*[,;:]")
_WINDOW = 8  # tokens decoded on each side of a boundary for the decimal-point check


class Tokenizer:
    """A released ``tokenizer.json`` (HF tokenizers): text -> ids and back."""

    def __init__(self, path: Path, n_bins: int) -> None:
        from tokenizers import Tokenizer as HFTokenizer  # optional dependency: only when a checkpoint loads

        self._tok = HFTokenizer.from_file(str(path))
        if self._tok.get_vocab_size() != n_bins:
            raise ValueError(f"{path.name} holds {self._tok.get_vocab_size()} tokens, the config says {n_bins}")

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids)


@dataclass(frozen=True)
class TextRules:
    pad_with_spaces_for_short_inputs: bool = False
    remove_semicolons: bool = False
    append_terminal_punctuation: bool = True
    capitalize_first_letter: bool = True
    replace_characters: tuple[tuple[str, str], ...] = ()


def prepare(text: str, rules: TextRules) -> tuple[str, int]:
    """(the text as spoken, the official guess of frames to keep after end of speech)."""
    text = text.strip()
    if rules.replace_characters:
        text = " ".join(text.translate(str.maketrans(dict(rules.replace_characters))).split())
        text = _AFTER_SENTENCE_MARK.sub(r"\1", text)
    if text == "":
        raise ValueError("Text prompt cannot be empty")
    text = text.replace("\n", " ").replace("\r", " ").replace("  ", " ")
    if rules.remove_semicolons:
        text = text.replace(";", ",")
    frames_after_eos = 3 if len(text.split()) <= 4 else 1
    if rules.capitalize_first_letter and not text[0].isupper():
        text = text[0].upper() + text[1:]
    if rules.append_terminal_punctuation:
        text = _terminal_punctuation(text)
    if rules.pad_with_spaces_for_short_inputs and len(text.split()) < 5:
        text = " " * 8 + text
    return text, frames_after_eos


def _terminal_punctuation(text: str) -> str:
    core = text.rstrip(_CLOSERS + " ")
    closers = text[len(core):].strip()
    if not core or core[-1] in _TERMINAL:
        return text
    if core[-1] in _WEAK:
        return core.rstrip(_WEAK + " ") + "." + closers
    return text + "."


def _decimal_boundary(ids: list[int], i: int, tok: Tokenizer) -> bool:
    prefix = tok.decode(ids[max(0, i - _WINDOW):i])
    suffix = tok.decode(ids[i:i + _WINDOW])
    return len(prefix) >= 2 and prefix[-1] == "." and prefix[-2].isdigit() and bool(suffix) and suffix[0].isdigit()


def _boundaries(ids: list[int], marks: set[int], tok: Tokenizer, skip_decimal: bool) -> list[int]:
    out, after_mark = [0], False
    for i, t in enumerate(ids):
        if t in marks:
            after_mark = True
            continue
        if after_mark and not (skip_decimal and _decimal_boundary(ids, i, tok)):
            out.append(i)
        after_mark = False
    out.append(len(ids))
    return out


def _segments(ids: list[int], bounds: list[int], tok: Tokenizer) -> list[tuple[int, str]]:
    return [(b - a, tok.decode(ids[a:b])) for a, b in zip(bounds, bounds[1:])]


def split_chunks(text: str, tok: Tokenizer, rules: TextRules, max_tokens: int = MAX_TOKENS) -> list[str]:
    """The official ``split_into_best_sentences``: chunks of whole sentences, each at most ``max_tokens`` when it can."""
    text = prepare(text, rules)[0].strip()
    ids = tok.encode(text)
    sentence_marks = set(tok.encode(".!...?")[1:])
    segments = _segments(ids, _boundaries(ids, sentence_marks, tok, True), tok)
    weak_marks = set(tok.encode(",;:")[1:])
    refined: list[tuple[int, str]] = []
    for n, sentence in segments:
        if n <= max_tokens:
            refined.append((n, sentence))
            continue
        sub_ids = tok.encode(sentence.strip())
        subs = _segments(sub_ids, _boundaries(sub_ids, weak_marks, tok, False), tok)
        refined.extend(subs if len(subs) > 1 else [(n, sentence)])
    chunks: list[str] = []
    current, count = "", 0
    for n, sentence in refined:
        if current == "":
            current, count = sentence, n
        elif count + n > max_tokens:
            chunks.append(current.strip())
            current, count = sentence, n
        else:
            current, count = current + " " + sentence, count + n
    if current != "":
        chunks.append(current.strip())
    return chunks


def max_frames(token_count: int, frame_rate: float) -> int:
    """The official cap on generated latents: 3 tokens a second plus 2 s."""
    return math.ceil((token_count / 3.0 + 2.0) * frame_rate)
