"""The engine: request queue, continuous batching and streaming handles.

How it schedules (the listener-first policy, ``deadline``, the server's default; ``fifo`` admits into any
free slot and steps every row every step). Requests wait in one queue and are admitted oldest first by one
predicate, ``Scheduler.verdict``: a slot is free (the slots, ``TTS_APP_ENGINE_SLOTS``, are a memory cap, not
the admission control); the request's client (a visitor: its pages and API calls alike) holds fewer rows than
its share of the slots and fewer runs than its share of the streams the machine feeds (``TTS_APP_CLIENT_SHARE``;
a client at its share waits for its own rows, not everyone's, and a page's later lines join their first
line's place); and a stream beside others keeps every listener fed when the machine makes ``load_margin`` of
what the engine measured it make for that many rows (``step_costs``: a table of prices by batch size, from
its own steps on its own clock), counting what each listener holds past ``plenty_s``. A file (not streamed)
needs only the slot and the share. The queue's ETA replays the same predicate on simulated slots whose
rows end at the measured pace (each listener's buffer gaining what its row makes), so it says "now" exactly when
admission would admit; a request told "now" needs no queue place, the others take one (a page's run one in all, a client its share of them), and a visitor
predicted to wait past ``TTS_APP_MAX_QUEUE_WAIT_S`` is refused at once (503 with Retry-After). Each step then runs rows
earliest deadline first (a heard listener's playback end; a new stream's first audio, ``step_s`` after its
admission; a file, ``plenty_s`` after its last step), new streams' first windows first where every heard
listener can spare them, a page's later lines once its first line has stepped: about ``step_s`` of work, and
past it every row that would be late if it waited for the next step. While any listener holds under ``low_s``, rows whose listeners
hold ``plenty_s`` skip (and files not overdue). A listener holding under ``low_s`` gets small windows, the others the
usual ones, a file the widest. A request's first audio is planned by the engine from what the backend's
earlier first audios measured (``first_audio``): handed out a piece at a time where the listener then stays
fed, else in one piece.
"""

from tts_app.engine.engine import ClientMissing, Engine, EngineClosed, LineRejected
from tts_app.backends.base import WordTiming
from tts_app.models.capabilities import Capabilities, UnsupportedParameter
from tts_app.engine.handle import AudioChunk, RequestCancelled, RequestHandle
from tts_app.engine.metrics import RequestMetrics
from tts_app.backends.params import SpeechParams
from tts_app.engine.qos_settings import QosSettings, app_policy
from tts_app.engine.request import EngineBusy, RequestStatus
from tts_app.engine.scheduler import Scheduler

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
