"""The engine: request queue, continuous batching and streaming handles."""

from .engine import Engine, EngineClosed, LineRejected
from ..backends.base import WordTiming
from ..backends.capabilities import Capabilities, UnsupportedParameter
from .handle import AudioChunk, RequestCancelled, RequestHandle
from .metrics import RequestMetrics
from .params import SpeechParams
from .qos_settings import QosSettings, app_policy
from .request import RequestStatus
from .scheduler import EngineBusy, Scheduler

__all__ = [
    "AudioChunk",
    "Capabilities",
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
