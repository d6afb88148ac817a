"""Voice references: ingest a clip, profile it, and adapt the model's voice toward it.

    profile = resolve_voice("lj_female_us")          # or a path, (audio, sr), a saved name
    audio = adapt(audio_22k, profile, strength=0.8)  # whole utterance
    stream = profile.streamer(0.8)                   # per request: process(chunk)... flush()
"""

from tts_app.voice.matching.adapt import StreamingAdapter, adapt
from tts_app.voice.analysis.stats import VoiceStats
from tts_app.voice.cache import CacheInfo
from tts_app.voice.errors import VoiceError
from tts_app.voice.analysis.ingest import Reference, load_reference
from tts_app.voice.library import VoiceEntry, VoiceLibrary, default_library, voices_dir
from tts_app.voice.profile import ClipVoice, VoiceProfile, clear_profile_cache, clip_voice, load_profile, make_profile, profile_cache_info
from tts_app.voice.analysis.report import ReferenceReport
from tts_app.voice.resolve import resolve_voice

__all__ = [
    "CacheInfo",
    "ClipVoice",
    "Reference",
    "ReferenceReport",
    "StreamingAdapter",
    "VoiceEntry",
    "VoiceError",
    "VoiceLibrary",
    "VoiceProfile",
    "VoiceStats",
    "adapt",
    "clear_profile_cache",
    "clip_voice",
    "default_library",
    "load_profile",
    "load_reference",
    "make_profile",
    "profile_cache_info",
    "resolve_voice",
    "voices_dir",
]
