"""resolve_voice: every way a caller can name a voice, turned into a VoiceProfile (or None)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tts_app.voice.errors import VoiceError, shown_name
from tts_app.voice.library import RESERVED_NAMES, VoiceLibrary, default_library
from tts_app.voice.profile import ClipVoice, VoiceProfile, clip_voice, make_profile


def resolve_voice(
    voice: Any, library: VoiceLibrary | None = None, text: str | None = None, analysed: bool = True
) -> VoiceProfile | ClipVoice | None:
    """None / "" / "default" -> None (the model's own voice); a VoiceProfile as is; a saved or
    built-in voice name; a path to an audio clip (str or Path); or an ``(audio, sample_rate)`` tuple.
    ``text``: what the clip says (optional; better than the recogniser's guess).
    ``analysed`` False: for a model that clones from the clip itself, a clip (or a built-in voice's) comes back as
    a ClipVoice, checked and cleaned but not analysed for the filter (``text`` is then unused: the filter's alone).

    Raises VoiceError (a ValueError) with a one-line reason for anything else.
    """
    if voice is None:
        return None
    if isinstance(voice, VoiceProfile):
        return voice.with_transcript(text) if analysed else voice
    if isinstance(voice, ClipVoice):  # resolved for a model that clones, now wanted by the filter: analysed now
        return make_profile((voice.audio, voice.sample_rate), name=voice.name, text=text) if analysed else voice
    if isinstance(voice, tuple) and len(voice) == 2 and any(isinstance(v, np.ndarray) for v in voice):
        return _from_clip(voice, text, analysed)
    if isinstance(voice, Path):
        return _from_clip(voice, text, analysed)
    if isinstance(voice, str):
        name = voice.strip()
        if not name or name.lower() in RESERVED_NAMES:
            return None
        library = library or default_library()
        builtin = library.builtin_path(name)
        if not analysed and builtin is not None:
            return clip_voice(builtin, name=name)
        if name in library:
            return library.load(name).with_transcript(text)
        if Path(name).expanduser().is_file():
            return _from_clip(Path(name).expanduser(), text, analysed)
        if "/" in name or "\\" in name or Path(name).suffix:
            raise VoiceError(f"reference file not found: {shown_name(name)}")
        raise VoiceError(f"unknown voice {shown_name(name)}; available: {', '.join(library.names()) or 'none'}")
    raise VoiceError(f"cannot use a {type(voice).__name__} as a voice; give a name, a file path or (audio, sample_rate)")


def _from_clip(source: Any, text: str | None, analysed: bool) -> VoiceProfile | ClipVoice:
    return make_profile(source, text=text) if analysed else clip_voice(source)
