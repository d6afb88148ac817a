"""OpenAI's voice names (alloy, ash, ...) as aliases of the voices served here.

The mapping is a JSON object ``{"alias": "voice", ...}`` (keys starting with
``_`` are comments): ``openai_voices.json`` beside this file by default, or the
file named by ``$TTS_APP_VOICE_ALIASES``. It is re-read when the file changes.
A real voice (built-in or saved) of the same name wins over an alias.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from tts_app import settings
from tts_app.backends.model_voice import ModelVoice
from tts_app.catalog.voices import DEFAULT_VOICE, voice_names

ALIASES_ENV = "TTS_APP_VOICE_ALIASES"
DEFAULT_ALIASES_FILE = Path(__file__).with_name("openai_voices.json")
# OpenAI's 13 built-in speech voices (its API reference, 2025-12); tests hold this to the installed openai client's list.
OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse", "marin", "cedar")
_MAX_FILE_BYTES = 64 * 1024


class VoiceAliasError(ValueError):
    """The alias file is unreadable or not a JSON object of names to names (a server-side problem)."""


def aliases_file() -> Path:
    """$TTS_APP_VOICE_ALIASES, else the file shipped with the package."""
    return settings.value(ALIASES_ENV) or DEFAULT_ALIASES_FILE


def voice_aliases() -> dict[str, str]:
    """Alias -> voice name, from the current alias file."""
    path = aliases_file()
    try:
        stat = path.stat()
    except OSError as exc:
        raise VoiceAliasError(f"voice alias file {str(path)!r} cannot be read: {exc.strerror}") from exc
    return dict(_load(str(path), stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, str], ...]:
    """The parsed file; the cache key holds mtime and size, so an edited file is read again."""
    if size > _MAX_FILE_BYTES:
        raise VoiceAliasError(f"voice alias file {path!r} is over {_MAX_FILE_BYTES} bytes")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VoiceAliasError(f"voice alias file {path!r} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise VoiceAliasError(f"voice alias file {path!r} must hold a JSON object of alias: voice")
    pairs = {k: v for k, v in data.items() if not k.startswith("_")}
    bad = [k for k, v in pairs.items() if not isinstance(v, str) or not k]
    if bad:
        raise VoiceAliasError(f"voice alias file {path!r}: the voice for {bad[0]!r} must be a name (a string)")
    return tuple(pairs.items())


def library_voice(name: str, model_voices: Sequence[str] = ()) -> str | ModelVoice | None:
    """The library voice name a request's ``voice`` means (an alias looked up), None for the model's default voice,
    or one of ``model_voices`` (the requested model's own saved voices, looked up after the library's names and
    aliases, which keep their meaning). A library name is resolved to a profile later, once
    (tts_app.engine.input_processing.resolve_params).

    Raises ValueError (one line, listing the choices) for a name that is none of these, or an alias whose voice
    no longer exists.
    """
    from tts_app.voice.errors import shown_name  # the voice package is heavy; imported on first request
    from tts_app.voice.library import RESERVED_NAMES  # the voice package is heavy; imported on first request

    if name.strip().lower() in RESERVED_NAMES:  # "default", "none", "DEFAULT": the model's own voice, as in the library
        return None
    known = voice_names()
    if name in known:
        return name
    aliases = voice_aliases()
    if name not in aliases and name in model_voices:
        return ModelVoice(name)
    if name not in aliases:
        choices = api_voice_names(known, aliases, model_voices)
        raise ValueError(f"unknown voice {shown_name(name)}; choose one of: {', '.join(choices)}")
    target = aliases[name]
    if target == DEFAULT_VOICE:
        return None
    if target not in known:
        raise ValueError(f"voice {shown_name(name)} is an alias of {shown_name(target)}, which is not a voice here")
    return target


def api_voice_names(known: list[str] | None = None, aliases: dict[str, str] | None = None,
                    model_voices: Sequence[str] = ()) -> list[str]:
    """Every name the API accepts: ``default``, the library's voices, then aliases not shadowed by them, then the
    model's own saved voices not shadowed by either."""
    known = voice_names() if known is None else known
    aliases = voice_aliases() if aliases is None else aliases
    names = [DEFAULT_VOICE, *known, *(a for a in aliases if a not in known and a != DEFAULT_VOICE)]
    taken = set(names)
    return names + [v for v in model_voices if v not in taken]
