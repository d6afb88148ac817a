"""resolve_voice: every way a caller can name a voice, turned into a VoiceProfile (or None)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tts_app.voice.errors import VoiceError, shown_name
from tts_app.voice.library import RESERVED_NAMES, VoiceLibrary, default_library
from tts_app.voice.profile import VoiceProfile, make_profile


def resolve_voice(voice: Any, library: VoiceLibrary | None = None, text: str | None = None) -> VoiceProfile | None:
    """None / "" / "default" -> None (the model's own voice); a VoiceProfile as is; a saved or
    built-in voice name; a path to an audio clip (str or Path); or an ``(audio, sample_rate)`` tuple.
    ``text``: what the clip says (optional; better than the recogniser's guess).

    Raises VoiceError (a ValueError) with a one-line reason for anything else.
    """
    if voice is None:
        return None
    if isinstance(voice, VoiceProfile):
        return voice.with_transcript(text)
    if isinstance(voice, tuple) and len(voice) == 2 and any(isinstance(v, np.ndarray) for v in voice):
        return make_profile(voice, text=text)
    if isinstance(voice, Path):
        return make_profile(voice, text=text)
    if isinstance(voice, str):
        name = voice.strip()
        if not name or name.lower() in RESERVED_NAMES:
            return None
        library = library or default_library()
        if name in library:
            return library.load(name).with_transcript(text)
        if Path(name).expanduser().is_file():
            return make_profile(Path(name).expanduser(), text=text)
        if "/" in name or "\\" in name or Path(name).suffix:
            raise VoiceError(f"reference file not found: {shown_name(name)}")
        raise VoiceError(f"unknown voice {shown_name(name)}; available: {', '.join(library.names()) or 'none'}")
    raise VoiceError(f"cannot use a {type(voice).__name__} as a voice; give a name, a file path or (audio, sample_rate)")
