"""Phoneme slots: IPA that bypasses espeak, carried through the text rules as one private-use character."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from tts_app.text.errors import TextError

_FIRST, _LAST = 0xE000, 0xF8FF  # Unicode's private-use area: no rule and no user text matches it
SLOT_RE = re.compile("([\ue000-\uf8ff])")


def ipa_symbols(ipa: str) -> list[str]:
    """IPA as the model's symbols: one per code point after NFD, as piper splits espeak's output."""
    return list(unicodedata.normalize("NFD", ipa.strip()))


def check_ipa(ipa: str, id_map: Mapping[str, object], what: str) -> None:
    """Raise TextError naming the first symbol the voice does not know."""
    if not ipa.strip():
        raise TextError(f"{what}: the phonemes are empty")
    for sym in ipa_symbols(ipa):
        if sym not in id_map:
            raise TextError(f"{what}: {sym!r} (U+{ord(sym):04X}) is not a phoneme of this voice")


@dataclass
class PhonemeSlots:
    """Per-request table of placeholder character -> IPA; one per parse, never shared."""

    ipa: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # placeholder -> where it came from, for errors
    words: dict[str, str] = field(default_factory=dict)  # placeholder -> the written word it replaces (captions)

    def add(self, ipa: str, label: str, word: str = "") -> str:
        n = _FIRST + len(self.ipa)
        if n > _LAST:
            raise TextError("too many phoneme overrides in one text")
        ch = chr(n)
        self.ipa[ch], self.labels[ch], self.words[ch] = ipa, label, word.strip()
        return ch

    def check(self, id_map: Mapping[str, object]) -> None:
        for ch, ipa in self.ipa.items():
            check_ipa(ipa, id_map, self.labels[ch])
