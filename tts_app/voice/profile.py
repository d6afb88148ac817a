"""VoiceProfile: a processed reference clip plus its voice statistics and class map; cached, saved, loaded.

The clip itself travels with the profile (mono float32, its own rate, <= 30 s)
so that a cloning model can take the same reference the adapter uses.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from tts_app.voice.matching.adapt import StreamingAdapter, adapt, streamer_for
from tts_app.voice.analysis.stats import ANALYSIS_VERSION, VoiceStats, analyze
from tts_app.voice.cache import CacheInfo, LruCache
from tts_app.voice.matching.conversion import CONVERSION_VERSION, build_class_map
from tts_app.voice.matching.classmap import ClassMap
from tts_app.voice.errors import VoiceError
from tts_app.voice.analysis.ingest import AudioSource, analysis_bytes_of, content_hash, load_reference
from tts_app.voice.analysis.memory_budget import analysis_budget
from tts_app.voice.analysis.report import ReferenceReport

logger = logging.getLogger(__name__)

PROFILE_SUFFIX = ".voice.npz"
_FILE_FORMAT = "tts_app.voice/1"  # container layout; what is inside is versioned by analysis_version
_PROFILES: LruCache["VoiceProfile | ClipVoice"] = LruCache(maxsize=32)


class _CleanedClip:
    """What every cleaned clip offers a model that clones from audio (its ``audio`` at ``sample_rate``)."""

    audio: np.ndarray
    sample_rate: int

    @property
    def reference_audio(self) -> np.ndarray:
        """The processed reference clip, for models that clone from audio (same as ``audio``)."""
        return self.audio

    @property
    def reference_sample_rate(self) -> int:
        return self.sample_rate

    @property
    def duration_s(self) -> float:
        return len(self.audio) / self.sample_rate


@dataclass(frozen=True, eq=False)
class VoiceProfile(_CleanedClip):
    """A reference voice ready to use. Treat as immutable: cached profiles are shared."""

    name: str
    audio: np.ndarray  # float32 mono, loudness-normalised, silence-trimmed, <= 30 s
    sample_rate: int
    stats: VoiceStats
    report: ReferenceReport
    content_hash: str  # of the original clip
    analysis_version: int = ANALYSIS_VERSION
    class_map: ClassMap | None = None  # per-sound-class filter learnt from the clip (None: EQ only)
    transcript: str = ""  # what the clip says, as used for alignment ("" when none)
    transcript_source: str = "none"  # "typed", "recognised" or "none"

    @property
    def cache_key(self) -> str:
        return f"{self.content_hash}:{self.analysis_version}:{_text_key(self.transcript)}"

    @property
    def f0_median_hz(self) -> float:
        return self.stats.f0_median_hz

    def streamer(self, strength: float = 1.0, sample_rate: int = 22050) -> StreamingAdapter:
        """A new per-request streaming adapter (process(chunk) / flush())."""
        return streamer_for(self, strength, sample_rate)

    def adapt(self, audio: np.ndarray, strength: float = 1.0, sample_rate: int = 22050) -> np.ndarray:
        return adapt(audio, self, strength, sample_rate)

    def with_transcript(self, text: str | None) -> "VoiceProfile":
        """This voice with its class map refitted on a typed transcript (self when none or the same)."""
        text = _clean_text(text)
        if text is None or (text == self.transcript and self.transcript_source == "typed"):
            return self

        def build() -> "VoiceProfile":
            class_map, transcript, source = build_class_map(self.audio, self.sample_rate, self.stats, text)
            return dataclasses.replace(
                self,
                class_map=class_map,
                transcript=transcript,
                transcript_source=source,
                report=dataclasses.replace(self.report, transcript=transcript, transcript_source=source),
            )

        return _PROFILES.get_or_create(("text", self.content_hash, self.analysis_version, _text_key(text)), build)

    def renamed(self, name: str) -> "VoiceProfile":
        return dataclasses.replace(self, name=name)

    def describe(self) -> str:
        """One line for a voice picker."""
        s = self.stats
        return f"{self.name}: {self.duration_s:.1f} s reference, median pitch {s.f0_median_hz:.0f} Hz"

    # -- persistence ----------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write one .npz file (clip as 24-bit FLAC inside, statistics, report); atomic replace."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        flac = io.BytesIO()
        sf.write(flac, self.audio, self.sample_rate, format="FLAC", subtype="PCM_24")
        meta = {
            "format": _FILE_FORMAT,
            "name": self.name,
            "sample_rate": self.sample_rate,
            "content_hash": self.content_hash,
            "analysis_version": self.analysis_version,
            "conversion_version": CONVERSION_VERSION,
            "transcript": self.transcript,
            "transcript_source": self.transcript_source,
            "report": self.report.to_dict(),
        }
        arrays = {f"stats_{k}": v for k, v in self.stats.to_arrays().items()}
        if self.class_map is not None:
            arrays.update({f"classmap_{k}": v for k, v in self.class_map.to_arrays().items()})
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(
                    handle,
                    meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                    audio_flac=np.frombuffer(flac.getvalue(), dtype=np.uint8),
                    **arrays,
                )
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        logger.info("saved voice %r to %s", self.name, path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "VoiceProfile":
        """Read a file written by save(); re-analyses the clip if the analysis has changed since."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(bytes(data["meta"]).decode())
                audio, sample_rate = sf.read(io.BytesIO(bytes(data["audio_flac"])), dtype="float32")
                stats = VoiceStats.from_arrays(
                    {k[len("stats_") :]: data[k] for k in data.files if k.startswith("stats_")}
                )
                cmap_arrays = {k[len("classmap_") :]: data[k] for k in data.files if k.startswith("classmap_")}
                class_map = ClassMap.from_arrays(cmap_arrays) if cmap_arrays else None
        except FileNotFoundError:
            raise VoiceError(f"voice file not found: {path}") from None
        except (OSError, ValueError, KeyError, sf.LibsndfileError, json.JSONDecodeError):
            raise VoiceError(f"{path.name} is not a readable voice profile") from None
        if meta.get("format") != _FILE_FORMAT:
            raise VoiceError(f"{path.name} has an unknown voice profile format {meta.get('format')!r}")
        audio.flags.writeable = False
        version = int(meta.get("analysis_version", 0))
        transcript, transcript_source = str(meta.get("transcript", "")), str(meta.get("transcript_source", "none"))
        if version != ANALYSIS_VERSION:
            logger.info("voice %s was analysed by version %d; re-analysing", path.name, version)
            stats, version = analyze(audio, int(sample_rate)), ANALYSIS_VERSION
        if int(meta.get("conversion_version", 0)) != CONVERSION_VERSION or class_map is None:
            # Older files have no class map (or one fitted differently): rebuild it from the clip.
            logger.info("voice %s has no current class map; rebuilding", path.name)
            class_map, transcript, transcript_source = build_class_map(
                audio, int(sample_rate), stats, transcript if transcript_source == "typed" else None
            )
        return cls(
            name=str(meta["name"]),
            audio=audio,
            sample_rate=int(sample_rate),
            stats=stats,
            report=dataclasses.replace(
                ReferenceReport.from_dict(meta["report"]), transcript=transcript, transcript_source=transcript_source
            ),
            content_hash=str(meta["content_hash"]),
            analysis_version=version,
            class_map=class_map,
            transcript=transcript,
            transcript_source=transcript_source,
        )


def make_profile(source: AudioSource, name: str | None = None, text: str | None = None) -> VoiceProfile:
    """Ingest and analyse a reference (path or (audio, rate)), cached by the clip's content hash.

    ``text``: what the clip says, if known (else it is recognised, or a fallback is used).
    """
    text = _clean_text(text)
    digest = content_hash(source)
    profile = _PROFILES.get_or_create((digest, _text_key(text)), lambda: _build_profile(source, digest, text))
    wanted = name or _default_name(source, digest)
    return profile if profile.name == wanted else profile.renamed(wanted)


@dataclass(frozen=True, eq=False)
class ClipVoice(_CleanedClip):
    """A clip for a model that clones from the audio itself (Pocket TTS, Qwen3-TTS, Chatterbox): decoded, checked
    and cleaned as every clip is (the same one-line reasons for a bad clip, the same report), without the analysis
    that only the embedded voice's filter uses (pitch, spectra, class map, the recogniser): seconds of a 2-core CPU
    that a cloned line's first audio waited for. Treat as immutable: cached clips are shared."""

    name: str
    audio: np.ndarray  # float32 mono, loudness-normalised, silence-trimmed, <= 30 s (as VoiceProfile.audio)
    sample_rate: int
    report: ReferenceReport
    content_hash: str  # of the original clip


def clip_voice(source: AudioSource, name: str | None = None) -> ClipVoice:
    """A clip checked and cleaned for a model that clones (no voice-matching analysis), cached by content hash."""
    digest = content_hash(source)

    def build() -> ClipVoice:
        ref = load_reference(source)
        ref.audio.flags.writeable = False
        return ClipVoice(_default_name(source, digest), ref.audio, ref.sample_rate, ref.report, digest)

    clip = _PROFILES.get_or_create(("clip", digest), build)
    wanted = name or _default_name(source, digest)
    return clip if clip.name == wanted else dataclasses.replace(clip, name=wanted)


def load_profile(path: str | Path) -> VoiceProfile:
    """VoiceProfile.load through the profile cache, keyed by the file's path, size and mtime."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        raise VoiceError(f"voice file not found: {path}") from None
    key = ("file", str(path.resolve()), st.st_size, st.st_mtime_ns)
    return _PROFILES.get_or_create(key, lambda: VoiceProfile.load(path))


def profile_cache_info() -> CacheInfo:
    """Hits and misses of the profile cache (a reference used for 50 lines is analysed once)."""
    return _PROFILES.info()


def clear_profile_cache() -> None:
    _PROFILES.clear()


def _build_profile(source: AudioSource, digest: str, text: str | None) -> VoiceProfile:
    # One reservation for the whole build: ingest, statistics and class map (load_reference's is nested).
    with analysis_budget.reserve(analysis_bytes_of(source), _default_name(source, digest)):
        ref = load_reference(source)
        ref.audio.flags.writeable = False
        stats = analyze(ref.audio, ref.sample_rate, cutoff_hz=ref.report.bandwidth_hz)
        class_map, transcript, transcript_source = build_class_map(ref.audio, ref.sample_rate, stats, text)
    return VoiceProfile(
        name=_default_name(source, digest),
        audio=ref.audio,
        sample_rate=ref.sample_rate,
        stats=stats,
        report=dataclasses.replace(ref.report, transcript=transcript, transcript_source=transcript_source),
        content_hash=digest,
        class_map=class_map,
        transcript=transcript,
        transcript_source=transcript_source,
    )


_MAX_TEXT_CHARS = 2000  # a 30 s clip says ~500 characters; more is not a transcript


def _clean_text(text: str | None) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise VoiceError("voice text must be a string")
    text = " ".join(text.split())
    if len(text) > _MAX_TEXT_CHARS:
        raise VoiceError(f"voice text is too long ({len(text)} characters; at most {_MAX_TEXT_CHARS})")
    return text or None


def _text_key(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()[:12]


def _default_name(source: AudioSource, digest: str) -> str:
    if isinstance(source, (str, Path)):
        return Path(source).name.split(".")[0] or f"voice-{digest[:8]}"
    return f"voice-{digest[:8]}"
