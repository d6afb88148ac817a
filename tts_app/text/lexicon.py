"""A user pronunciation lexicon: whole words (case-insensitive) -> a respelling or IPA.

File format (UTF-8 JSON object): ``{"Nguyen": "nwin", "Siobhan": "/ʃɪvˈɔːn/"}``.
A value between slashes is IPA, spoken as is; any other value is a respelling,
read by the normal text rules in place of the word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tts_app import settings
from tts_app.text.errors import TextError
from tts_app.text.offsets import sub
from tts_app.text.slots import PhonemeSlots, check_ipa

LEXICON_FILE = "lexicon.json"
MAX_ENTRIES = 5000
MAX_FILE_BYTES = 1_000_000
_WORD_RE = re.compile(r"^[^\W_](?:[\w'’.-]{0,62}[^\W_])?$")
_RESPELLING_RE = re.compile(r"^[A-Za-z][A-Za-z '’-]{0,199}$")


@dataclass(frozen=True)
class Lexicon:
    """Validated entries keyed by lowercased word; IPA values keep their slashes off."""

    respell: Mapping[str, str] = field(default_factory=dict)
    ipa: Mapping[str, str] = field(default_factory=dict)
    _pattern: re.Pattern | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        words = sorted({*self.respell, *self.ipa}, key=len, reverse=True)
        if words:
            alt = "|".join(re.escape(w) for w in words)
            object.__setattr__(self, "_pattern", re.compile(rf"(?<![\w'’])({alt})(?![\w'’])", re.IGNORECASE))

    def __len__(self) -> int:
        return len(self.respell) + len(self.ipa)

    def to_json_dict(self) -> dict[str, str]:
        return {**self.respell, **{w: f"/{p}/" for w, p in self.ipa.items()}}

    def matches(self, text: str) -> bool:
        """True when one of the listed words occurs in ``text`` (the lexicon would change how it is read)."""
        return self._pattern is not None and self._pattern.search(text) is not None

    def check(self, id_map: Mapping[str, object]) -> None:
        """Refuse IPA with symbols the voice has no id for (one-line TextError)."""
        for word, ipa in self.ipa.items():
            check_ipa(ipa, id_map, f"lexicon entry {word!r}")

    def apply(self, text: str, slots: PhonemeSlots) -> str:
        """Replace listed words: respellings as text, IPA as a phoneme slot."""
        if self._pattern is None:
            return text

        def one(m: re.Match) -> str:
            key = m.group(1).lower()
            if key in self.ipa:
                return slots.add(self.ipa[key], f"lexicon entry {key!r}", m.group(1))
            return self.respell[key]

        return sub(self._pattern, one, text)


def _entry(word: object, value: object, id_map: Mapping[str, object] | None) -> tuple[str, str, bool]:
    """One entry as (lowercased word, pronunciation, is IPA); TextError with a one-line reason otherwise."""
    if not isinstance(word, str) or not _WORD_RE.match(word):
        raise TextError(f"lexicon word {str(word)[:40]!r} must be one word of letters, digits, ' or -")
    if not isinstance(value, str):
        raise TextError(f"lexicon entry {word!r}: the pronunciation must be a string")
    value = value.strip()
    if len(value) > 2 and value.startswith("/") and value.endswith("/"):
        ipa = value[1:-1].strip()
        if not ipa or len(ipa) > 200:
            raise TextError(f"lexicon entry {word!r}: IPA must be 1 to 200 characters")
        if id_map is not None:
            check_ipa(ipa, id_map, f"lexicon entry {word!r}")
        return word.lower(), ipa, True
    if _RESPELLING_RE.match(value):
        return word.lower(), value, False
    raise TextError(f"lexicon entry {word!r}: use a respelling of letters and spaces, or IPA between slashes like /nwɪn/")


def _checked_object(data: object) -> dict:
    if not isinstance(data, dict):
        raise TextError("a lexicon must be a JSON object of word -> pronunciation")
    if len(data) > MAX_ENTRIES:
        raise TextError(f"a lexicon has at most {MAX_ENTRIES} entries, this one has {len(data)}")
    return data


def parse_lexicon(data: object, id_map: Mapping[str, object] | None = None) -> Lexicon:
    """Validate a decoded JSON object into a Lexicon; TextError with the first entry's one-line reason otherwise.

    With ``id_map`` (the voice's phonemes) IPA is checked too: the check the page and the CLI both make
    before they keep an entry.
    """
    respell: dict[str, str] = {}
    ipa: dict[str, str] = {}
    for word, value in _checked_object(data).items():
        key, pron, is_ipa = _entry(word, value, id_map)
        (ipa if is_ipa else respell)[key] = pron
    return Lexicon(respell, ipa)


def forgiving_lexicon(data: object, id_map: Mapping[str, object] | None = None) -> tuple[Lexicon, list[str]]:
    """Every good entry, and one line per entry skipped: how a file edited by hand is read (one bad
    entry must not take every request down). A file that is not an object of at most MAX_ENTRIES still
    raises TextError."""
    respell: dict[str, str] = {}
    ipa: dict[str, str] = {}
    skipped: list[str] = []
    for word, value in _checked_object(data).items():
        try:
            key, pron, is_ipa = _entry(word, value, id_map)
        except TextError as e:
            skipped.append(str(e))
            continue
        (ipa if is_ipa else respell)[key] = pron
    return Lexicon(respell, ipa), skipped


def load_lexicon(path: str | Path, id_map: Mapping[str, object] | None = None) -> Lexicon:
    """Read and validate a lexicon file; TextError (one line) for anything wrong with it."""
    return parse_lexicon(read_lexicon_json(path), id_map)


def read_lexicon_json(path: str | Path) -> object:
    """A lexicon file's decoded JSON, unvalidated; TextError (one line) when it cannot be read or decoded."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise TextError(f"{path.name} is larger than {MAX_FILE_BYTES // 1000} kB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise TextError(f"cannot read lexicon {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise TextError(f"lexicon {path.name} is not UTF-8") from None
    except json.JSONDecodeError as e:
        raise TextError(f"lexicon {path.name} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    return data


def saved_lexicon_path() -> Path:
    """The server's lexicon: lexicon.json next to the saved voices (settings.voices_dir)."""
    return settings.voices_dir() / LEXICON_FILE


def save_lexicon(lexicon: Lexicon | Mapping[str, str], path: str | Path | None = None) -> Path:
    """Write a Lexicon, or a file's own entries as they are, atomically (a reader never sees half a file)."""
    entries = lexicon.to_json_dict() if isinstance(lexicon, Lexicon) else dict(lexicon)
    path = Path(path) if path is not None else saved_lexicon_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(entries, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path
