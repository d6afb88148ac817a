"""VoiceLibrary: named voices on disk plus the built-in reference clips; shared by UI and API."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from tts_app import settings
from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.voice.errors import VoiceError, shown_name
from tts_app.voice.profile import PROFILE_SUFFIX, VoiceProfile, load_profile, make_profile

logger = logging.getLogger(__name__)

RESERVED_NAMES = frozenset({"default", "none"})
_AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".aiff", ".aif")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")


@dataclass(frozen=True)
class VoiceEntry:
    name: str
    builtin: bool
    path: Path


def voices_dir() -> Path:
    """Where saved voices (and the server's lexicon) live: $TTS_APP_VOICES_DIR, else ``voices`` in the app's cache
    folder (settings.cache_root: the one rule of every folder the app keeps)."""
    return settings.voices_dir()


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise VoiceError(
            f"invalid voice name {shown_name(name)}: use 1-64 letters, digits, '_' or '-', starting with a letter or digit"
        )
    if name.lower() in RESERVED_NAMES:
        raise VoiceError(f"{shown_name(name)} is reserved (it means the model's own voice)")
    return name


class VoiceLibrary:
    """Saved voices in ``directory`` (one .voice.npz each) and built-in clips in ``builtin_dir``."""

    def __init__(self, directory: str | Path | None = None, builtin_dir: str | Path | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else voices_dir()
        self.builtin_dir = Path(builtin_dir) if builtin_dir is not None else BUILTIN_VOICES_DIR

    def builtin_names(self) -> list[str]:
        return sorted(self._builtin_paths())

    def saved_names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.name[: -len(PROFILE_SUFFIX)] for p in self.directory.glob(f"*{PROFILE_SUFFIX}"))

    def names(self) -> list[str]:
        """Built-in names first, then saved ones (a saved voice never shadows a built-in)."""
        builtin = self.builtin_names()
        return builtin + [n for n in self.saved_names() if n not in builtin]

    def entries(self) -> list[VoiceEntry]:
        builtin = self._builtin_paths()
        out = [VoiceEntry(n, True, builtin[n]) for n in sorted(builtin)]
        out += [VoiceEntry(n, False, self.path_for(n)) for n in self.saved_names() if n not in builtin]
        return out

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtin_paths() or self._saved_path(name).is_file())

    def path_for(self, name: str) -> Path:
        return self._saved_path(check_name(name))

    def builtin_path(self, name: str) -> Path | None:
        """The clip of the built-in voice ``name`` (None: no such built-in)."""
        return self._builtin_paths().get(name)

    def load(self, name: str) -> VoiceProfile:
        """A built-in (analysed on first use, then cached) or saved voice by name."""
        builtin = self._builtin_paths()
        if name in builtin:
            return make_profile(builtin[name], name=name)
        path = self._saved_path(name)
        if not _NAME_RE.fullmatch(name or "") or not path.is_file():
            raise VoiceError(f"unknown voice {shown_name(name)}; available: {', '.join(self.names()) or 'none'}")
        return load_profile(path)

    def save(self, profile: VoiceProfile, name: str | None = None, overwrite: bool = True) -> VoiceProfile:
        """Store ``profile`` under ``name`` (default: its own name); returns the profile as saved."""
        name = check_name(profile.name if name is None else name)
        if name in self._builtin_paths():
            raise VoiceError(f"{name!r} is a built-in voice; choose another name")
        path = self._saved_path(name)
        if path.exists() and not overwrite:
            raise VoiceError(f"a voice named {name!r} already exists")
        saved = profile if profile.name == name else profile.renamed(name)
        saved.save(path)
        return saved

    def delete(self, name: str) -> None:
        if name in self._builtin_paths():
            raise VoiceError(f"{name!r} is a built-in voice and cannot be deleted")
        path = self.path_for(name)
        if not path.is_file():
            raise VoiceError(f"unknown voice {shown_name(name)}")
        path.unlink()
        logger.info("deleted voice %r", name)

    def _saved_path(self, name: str) -> Path:
        return self.directory / f"{name}{PROFILE_SUFFIX}"

    def _builtin_paths(self) -> dict[str, Path]:
        if not self.builtin_dir.is_dir():
            return {}
        return {
            p.name.split(".")[0]: p
            for p in sorted(self.builtin_dir.iterdir())
            if p.is_file() and p.suffix.lower() in _AUDIO_SUFFIXES
        }


def default_library() -> VoiceLibrary:
    """The library at the configured directory (re-read from the environment on each call)."""
    return VoiceLibrary()
