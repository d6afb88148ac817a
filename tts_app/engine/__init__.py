"""The engine: request queue, continuous batching and streaming handles."""

from tts_app.engine.engine import ClientMissing, Engine, EngineClosed, LineRejected
from tts_app.backends.base import WordTiming
from tts_app.models.capabilities import Capabilities, UnsupportedParameter
from tts_app.engine.handle import AudioChunk, RequestCancelled, RequestHandle
from tts_app.engine.metrics import RequestMetrics
from tts_app.backends.params import SpeechParams
from tts_app.engine.qos_settings import QosSettings, app_policy
from tts_app.engine.request import RequestStatus
from tts_app.engine.scheduler import EngineBusy, Scheduler

__all__ = [
    "AudioChunk",
    "Capabilities",
    "ClientMissing",
    "Engine",
    "EngineBusy",
    "EngineClosed",
    "LineRejected",
    "QosSettings",
    "RequestCancelled",
    "RequestHandle",
    "RequestMetrics",
    "RequestStatus",
    "Scheduler",
    "SpeechParams",
    "UnsupportedParameter",
    "WordTiming",
    "app_policy",
]
