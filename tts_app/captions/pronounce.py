"""Phones for a written word, for the aligner's dictionary: CMUdict, else spelled-out numbers, else a guess.

A word the dictionary lacks (a name, a coinage, "5") still needs some phones so the alignment
can place it; a rough guess from its letters is enough, since only where the word starts and
ends matters, not which phones fill it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from num2words import num2words

# Letter groups, longest first, to ARPABET (PocketSphinx's en-us phone set).
_GRAPHEMES: tuple[tuple[str, str], ...] = (
    ("tch", "CH"), ("sch", "SH K"), ("igh", "AY"), ("ough", "AO"),
    ("sh", "SH"), ("ch", "CH"), ("th", "TH"), ("ph", "F"), ("ng", "NG"), ("ck", "K"), ("qu", "K W"),
    ("wh", "W"), ("gh", "G"), ("ee", "IY"), ("ea", "IY"), ("oo", "UW"), ("ou", "AW"), ("ow", "OW"),
    ("oi", "OY"), ("oy", "OY"), ("ai", "EY"), ("ay", "EY"), ("au", "AO"), ("aw", "AO"), ("ie", "IY"),
    ("ei", "EY"), ("er", "ER"), ("ir", "ER"), ("ur", "ER"), ("ar", "AA R"), ("or", "AO R"),
    ("a", "AE"), ("b", "B"), ("c", "K"), ("d", "D"), ("e", "EH"), ("f", "F"), ("g", "G"), ("h", "HH"),
    ("i", "IH"), ("j", "JH"), ("k", "K"), ("l", "L"), ("m", "M"), ("n", "N"), ("o", "AA"), ("p", "P"),
    ("q", "K"), ("r", "R"), ("s", "S"), ("t", "T"), ("u", "AH"), ("v", "V"), ("w", "W"), ("x", "K S"),
    ("y", "Y"), ("z", "Z"),
)  # fmt: skip
_GRAPHEME_RE = re.compile("|".join(g for g, _ in _GRAPHEMES))
_GRAPHEME_PHONES = dict(_GRAPHEMES)
_MAX_NUMBER_DIGITS = 12
_TOKEN_RE = re.compile(r"[a-z]+(?:'[a-z]+)*|\d+(?:\.\d+)?")


def dictionary_key(word: str) -> str:
    """The written word as the dictionary spells it: lower case, no punctuation around it ("" when nothing is left)."""
    return " ".join(_TOKEN_RE.findall(word.lower()))


def guess_phones(letters: str) -> str:
    """A rough ARPABET reading of lower-case letters, longest letter group first ("" for none)."""
    return " ".join(_GRAPHEME_PHONES[g] for g in _GRAPHEME_RE.findall(letters))


def phones_for(key: str, lookup: Callable[[str], str | None]) -> tuple[str, bool]:
    """(phones, from the dictionary) for a dictionary key; ``lookup`` is the dictionary's.

    A key of several pieces ("5 pm", "don't's") is read piece by piece; a number is spelled out.
    """
    whole = lookup(key) if " " not in key else None
    if whole:
        return whole, True
    phones, known = [], True
    for piece in key.split():
        if piece[0].isdigit() and len(piece) <= _MAX_NUMBER_DIGITS:
            words = num2words(float(piece) if "." in piece else int(piece)).replace("-", " ").replace(",", "").split()
        elif piece[0].isdigit():  # a long digit string is read digit by digit (and num2words stays bounded)
            words = [num2words(int(d)) for d in piece if d.isdigit()]
        else:
            words = [piece]
        for w in words:
            found = lookup(w)
            known = known and bool(found)
            phones.append(found or guess_phones(w.replace("'", "")))
    return " ".join(p for p in phones if p), known
