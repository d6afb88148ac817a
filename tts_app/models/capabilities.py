"""What each backend honours, declared where the server can read it without loading the model (no torch here).

A request that asks a model for something it does not honour is refused before it is queued
(``UnsupportedParameter``), or, on the page, spoken without it and noted (``Capabilities.refusals``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

# ISO 639-1 code -> the language name Pocket TTS's released folders (languages/<name>[_variant]) start with.
POCKET_TTS_LANGUAGES = {
    "en": "english", "fr": "french", "de": "german", "pt": "portuguese", "it": "italian", "es": "spanish", "nl": "dutch",
}  # fmt: skip
# ISO 639-1 code -> the name Qwen3-TTS's checkpoints key their language table with (config.json).
QWEN3_LANGUAGES = {
    "zh": "chinese", "en": "english", "ja": "japanese", "ko": "korean", "de": "german",
    "fr": "french", "ru": "russian", "pt": "portuguese", "es": "spanish", "it": "italian",
}  # fmt: skip


# A Pocket TTS model loaded from the no-cloning release (the gated weights were refused): its saved voices speak,
# a clip is refused with this line (never spoken in a voice that is not the clip's).
NO_CLONING = "saved voices only: cloning is off"
NO_CLONING_FIX = "accept the terms of kyutai/pocket-tts on the Hugging Face hub, set HF_TOKEN and restart"


class UnsupportedParameter(ValueError):
    """A request asks a model for what it does not honour; ``param`` names the request field."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Refusal:
    """One thing a request asks that the model does not honour: the request field and what it asked."""

    param: str
    asked: str


@dataclass(frozen=True)
class Capabilities:
    """What a backend honours. ``normalize``: it can spell out numbers, dates and abbreviations
    (``normalize_default``: it does so unless told not to). ``word_timings``: "model" (its own
    durations), "aligned" (forced alignment, unless TTS_APP_ALIGN_WORDS=0) or "none".
    ``languages``: ISO 639-1 codes it reads. ``max_text_chars``: the longest line it takes. ``voice_clips``: a clip
    given is spoken in its voice (False: the model's saved voices only, ``NO_CLONING``)."""

    speed: bool
    ssml: bool
    lexicon: bool
    normalize: bool
    normalize_default: bool
    voice_strength: bool
    word_timings: str
    languages: tuple[str, ...]
    max_text_chars: int
    voice_clips: bool = True

    def as_json(self) -> dict[str, Any]:
        """The fields as ``/v1/models`` lists them: ``max_text_chars`` is the longest ``input`` a request may send."""
        data = asdict(self)
        data["languages"] = list(self.languages)
        data["max_text_chars"] = min(self.max_text_chars, API_INPUT_CHARS)
        return data

    def refusals(self, params: Any, texts: Sequence[str]) -> list[Refusal]:
        """What ``params`` (a SpeechParams) and ``texts`` ask that this model does not honour; [] when all is honoured.

        Only what a caller asked for counts: a default value (speed 1, full voice strength, the
        model's own reading) never does, nor a lexicon none of whose words occur in the texts.
        """
        from tts_app.text.ssml import is_ssml  # the text package is heavy (num2words): the catalogue lists capabilities without it

        found = []
        if not self.speed and params.speed != 1.0:
            found.append(Refusal("speed", f"speed {params.speed:g}"))
        if not self.ssml and any(is_ssml(t) for t in texts):
            found.append(Refusal("input", "SSML input"))
        lexicon = params.lexicon
        if not self.lexicon and lexicon is not None and any(lexicon.matches(t) for t in texts):
            found.append(Refusal("lexicon", "lexicon pronunciations"))
        if params.normalize is True and not self.normalize:
            found.append(Refusal("normalize", "normalize (spelling out numbers, dates and abbreviations)"))
        if not self.voice_strength and params.voice is not None and params.voice_strength != 1.0:
            found.append(Refusal("voice_strength", f"voice_strength {params.voice_strength:g}"))
        if not self.voice_clips and params.voice is not None and not getattr(params.voice, "saved_voice", False):
            found.append(Refusal("voice", f"a voice clip ({NO_CLONING}: {NO_CLONING_FIX})"))
        if params.language is not None and params.language not in self.languages:
            found.append(Refusal("language", f"language {params.language!r} (it reads: {', '.join(self.languages)})"))
        return found

    def check(self, params: Any, texts: Sequence[str], model: str) -> None:
        """Raise UnsupportedParameter (one line, naming the parameter and the model) for the first refusal."""
        found = self.refusals(params, texts)
        if found:
            raise UnsupportedParameter(f"model {model!r} does not support {found[0].asked}", found[0].param)


# OpenAI's limit on one speech request's ``input``: the API refuses more, whatever the model takes.
API_INPUT_CHARS = 4096

PIPER = Capabilities(
    speed=True, ssml=True, lexicon=True, normalize=True, normalize_default=True, voice_strength=True,
    word_timings="model", languages=("en",), max_text_chars=5000,
)  # fmt: skip
# Qwen3-TTS and Chatterbox read the text as given (no SSML, lexicon or number expansion), at their own
# pace, and clone a reference voice whole (their speaker conditioning has no strength).
QWEN3 = Capabilities(
    speed=False, ssml=False, lexicon=False, normalize=False, normalize_default=False, voice_strength=False,
    word_timings="aligned", languages=tuple(QWEN3_LANGUAGES), max_text_chars=10_000,
)  # fmt: skip
CHATTERBOX = Capabilities(
    speed=False, ssml=False, lexicon=False, normalize=False, normalize_default=False, voice_strength=False,
    word_timings="none", languages=("en",), max_text_chars=500,
)  # fmt: skip
# Pocket TTS reads the text as given (the official chunking, capitals and final period only), at its own pace,
# clones a clip whole; one checkpoint reads one language (which, its config's weights_path says: see available.py).
POCKET_TTS = Capabilities(
    speed=False, ssml=False, lexicon=False, normalize=False, normalize_default=False, voice_strength=False,
    word_timings="aligned", languages=("en",), max_text_chars=10_000,
)  # fmt: skip


def pocket_capabilities(code: str, cloning: bool = True) -> Capabilities:
    """A Pocket TTS model of one language (an ISO 639-1 code of POCKET_TTS_LANGUAGES). Captions are aligned by an
    English acoustic model (tts_app.captions), so another language's words get no timings. ``cloning`` False: the
    no-cloning release (its saved voices only)."""
    found = POCKET_TTS if code == "en" else replace(POCKET_TTS, languages=(code,), word_timings="none")
    return found if cloning else replace(found, voice_clips=False)
