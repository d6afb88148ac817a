"""The released Pocket TTS language models (pocket-tts 4.0.1's ``config/<variant>.yaml``, MIT) and their model ids.

A variant is a folder name of the release (``languages/<variant>/`` in the Hugging Face repositories): a language
(``french``) or a language's 24-layer model (``french_24l``). Its model id here is ``pocket-tts`` for English and
``pocket-tts-<language>[-24l]`` otherwise. Every official language config is the English one with four
differences, kept here: the files' revisions, the text rules (``replace_characters``, ``remove_semicolons``),
the flow LM's depth (24 layers for ``*_24l``) and the default voice (``default_parameters.py``). The dated and
smaller English models (``english_2026-04``, ``english_18m_2026-10``, ...) are not offered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

BASE_ID = "pocket-tts"
CLONING_REPO = "kyutai/pocket-tts"
NO_CLONING_REPO = "kyutai/pocket-tts-without-voice-cloning"  # the tokenizers and saved voices live here
VOICES_REVISION = "a7056f505a4a8ca72d8b5fb1440071d6f1a35739"  # pocket_tts.utils.utils.get_predefined_voice
_REV_A, _REV_B = "3e82814a68665eec246ff649b14c71331f955c06", "2dd944b099d06bb9edbd221fef138685711d9bf0"
_TOK_FR, _TOK_OTHER = "8843db76457a91db32077edf8dfcd1c0e3e755fd", "4e1e0a3e611c51c0b4ed8174fc10f32a54644303"
# The no-cloning weights' revisions (``weights_path_without_voice_cloning``): English's, the other 6-layer models' and
# the 24-layer French and Italian ones', and the other 24-layer models' (the tokenizers' revision).
_NO_CLONING_EN, _NO_CLONING_REV = VOICES_REVISION, "1e08e6a23401048648a9fdcfde2f89348215c2a7"
# What every non-English config replaces (quotes and brackets dropped, typographic apostrophes and the en dash
# made plain); French adds ':' -> ',', German '—' -> ',', Spanish drops the inverted marks.
_EUROPEAN = {'"': "", "\u201c": "", "\u201d": "", "\u201e": "", "\u00ab": "", "\u00bb": "", "\u2019": "'",
             "\u2018": "'", "(": "", ")": "", "[": "", "]": "", "\u2013": ","}  # fmt: skip


@dataclass(frozen=True)
class Variant:
    """One released model: its folder name, ISO 639-1 code, file revisions, text rules, depth, default voice."""

    name: str
    code: str
    weights_revision: str
    tokenizer_revision: str
    replace_characters: tuple[tuple[str, str], ...]
    remove_semicolons: bool
    num_layers: int
    default_voice: str

    @property
    def no_cloning_revision(self) -> str:
        """The revision of this model's weights in the no-cloning release (not gated; saved voices only)."""
        if self.name == "english":
            return _NO_CLONING_EN
        return _TOK_OTHER if self.num_layers == 24 and self.language not in ("french", "italian") else _NO_CLONING_REV

    @property
    def language(self) -> str:
        return self.name.split("_")[0]

    @property
    def model_id(self) -> str:
        return BASE_ID if self.name == "english" else f"{BASE_ID}-{self.name.replace('_', '-')}"

    @property
    def label(self) -> str:
        size = ", 24 layers" if self.num_layers == 24 else ""
        return f"Pocket TTS {self.language.capitalize()} (Kyutai, CPU cloning{size})"


def _european(name: str, code: str, voice: str, extra: dict[str, str], semicolons: bool) -> tuple[Variant, Variant]:
    chars = tuple({**_EUROPEAN, **extra}.items())
    tok = _TOK_FR if name == "french" else _TOK_OTHER
    # The 24-layer French and Italian weights share the 6-layer ones' revision; the others have their own.
    deep_rev = _REV_A if name in ("french", "italian") else _REV_B
    return (Variant(name, code, _REV_A, tok, chars, semicolons, 6, voice),
            Variant(f"{name}_24l", code, deep_rev, tok, chars, semicolons, 24, voice))


ENGLISH = Variant("english", "en", "db04f0e653473e5c7333c69686ac92b7460b0c1d", "00eac05ed3d16bdc3f6b5d598874019c34a89214",
                  (("\u2019", "'"), ("\u2018", "'")), False, 6, "alba")
VARIANTS: dict[str, Variant] = {v.name: v for v in (
    ENGLISH,
    *_european("french", "fr", "estelle", {":": ","}, True),
    *_european("german", "de", "juergen", {"\u2014": ","}, True),
    *_european("portuguese", "pt", "rafael", {}, False),
    *_european("italian", "it", "giovanni", {}, False),
    *_european("spanish", "es", "lola", {"\u00a1": "", "\u00bf": ""}, False),
    *_european("dutch", "nl", "daan", {}, False),
)}  # fmt: skip
MODEL_IDS: dict[str, Variant] = {v.model_id: v for v in VARIANTS.values()}
_RELEASED_PATH = re.compile(r"languages/([a-z0-9_-]+)/model\.safetensors")


def variant_for_id(model_id: str) -> Optional[Variant]:
    """The released model a ``pocket-tts[-LANGUAGE[-24l]]`` id names; None for any other id."""
    return MODEL_IDS.get(model_id)


def variant_of_weights(weights_path: str) -> Variant:
    """Which released model a config's ``weights_path`` names (``hf://.../languages/<variant>/model.safetensors``,
    as the official configs and our fetch write it); English for a bare file name (an older fetch, a local folder)
    or a language the release does not have."""
    found = _RELEASED_PATH.search(weights_path)
    if found is None:
        return ENGLISH
    name = found.group(1)
    # A dated or smaller release of a language (english_2026-04, english_18m_2026-10) reads that language.
    return VARIANTS.get(name) or VARIANTS.get(name.split("_")[0], ENGLISH)
