"""The contract between the engine and a model backend.

The engine's worker thread is the only caller. A backend owns its device and
weights; it never sees the engine's queues. Per-request state lives in the
opaque objects that ``prepare`` returns (the engine keeps them on its request
objects), never on the backend itself, so one backend serves every request.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from tts_app.text.errors import TextError
from tts_app.text.word_timing import WordTiming
from tts_app.models.capabilities import Capabilities

if TYPE_CHECKING:  # a type only: backends sit below the engine and never import it
    from tts_app.backends.params import SpeechParams


@dataclass
class RowInput:
    """What a backend needs to start one request: plain values, no tensors.

    ``params.voice`` is a tts_app.voice.VoiceProfile or None (the engine takes resolved voices only).
    ``parsed`` is what this backend's ``check_text`` returned for ``text`` (None: the backend parses it).
    """

    request_id: int
    text: str
    params: SpeechParams
    parsed: object = None


@dataclass
class StepOutput:
    """One row's result of one engine step."""

    audio: np.ndarray  # float32 mono, the samples new since the last step (may be empty)
    done: bool  # True when this row has produced all of its audio
    words: tuple[WordTiming, ...] = ()  # words whose audio has now all been sent (backends that know durations)


RowEmitter = Callable[[int, "StepOutput"], None]


@dataclass(frozen=True)
class StepEstimate:
    """What a row's next step is expected to cost and give; the scheduler plans with it, never with tensors.

    ``key`` names what the cost depends on (the window size): measured step times are learnt per key.
    ``cost_s`` is the backend's prior for one row's share of a batched step, used until steps are measured.
    """

    key: str
    audio_s: float
    cost_s: float


WIDEST_WINDOW = 1 << 30  # set_window_level: the widest steps the backend makes (a file: nobody waits on its next audio)


@dataclass
class FirstAudioPlan:
    """How a step hands out the first audio of the requests starting in it (tts_app/engine/first_audio.py plans it):
    decoded a latent at a time (``each``) or at once, handed out from latent ``hold`` on (the latents before it wait
    for it). The backend writes in what its parts took, timed with ``clock`` (the engine's)."""

    key: tuple[int, int]  # (requests starting, rows live)
    clock: Callable[[], float]
    each: bool
    hold: int
    flow_s: float | None = None  # one flow pass of their next latents
    decode_one_s: float | None = None  # one decode of one latent each
    decode_all_s: float | None = None  # one decode of their whole first audio
    ended_at: float | None = None  # when the last of the first audio was handed out

    def hands_out(self, latent: int, last: int) -> bool:
        """Whether the audio made so far goes out after latent ``latent`` (0-based) of ``last`` + 1."""
        return latent >= self.hold or latent == last


class Backend(ABC):
    """A model the engine can batch and stream.

    ``prepare`` runs once for a group of newly admitted requests (the text
    stage of a VITS model, the prefill of an autoregressive one). ``step``
    advances every active row by one unit (a decoder window, or a few token
    steps plus a codec decode) in one batched call and returns each row's new
    audio. The batch passed to ``step`` changes between calls: finished rows
    leave and new rows join, so a backend must not assume a fixed batch.
    """

    name: str = "backend"
    sample_rate: int = 22050
    # True: a clip bends this model's own voice with the voice-matching filter (VoiceProfile.streamer), which needs
    # the clip's analysis; False: the model clones from the clip's audio itself and the analysis is skipped
    # (tts_app.engine.input_processing.resolve_params).
    voice_filter: bool = False
    max_text_chars: int = 10_000
    # What it honours of a request (speed, SSML, a lexicon...): the engine refuses the rest before queueing.
    capabilities: Capabilities = Capabilities(
        speed=False, ssml=False, lexicon=False, normalize=False, normalize_default=False, voice_strength=False,
        word_timings="none", languages=("en",), max_text_chars=10_000,
    )  # fmt: skip

    def check_text(self, text: str, params: SpeechParams | None = None) -> Any:
        """Validate and parse text in the caller's thread; raise TextError (a ValueError) with a one-line reason.

        ``params`` (None for the defaults) says how to read it (normalisation on or off, a lexicon).
        The result travels to ``prepare`` as ``RowInput.parsed``.
        """
        if not isinstance(text, str):
            raise TextError("text must be a string")
        if len(text) > self.max_text_chars:
            raise TextError(f"text is {len(text)} characters; the limit is {self.max_text_chars}")
        if not text.strip():
            raise TextError("text is empty")
        return text

    def prepare_params(self, params: SpeechParams, ahead: bool = False) -> None:
        """Work a request's ``params`` need before its rows can start (a clip's voice state, say), done in the
        submitting thread after its texts are checked: the engine's step loop, which every stream waits on, then
        finds it ready instead of doing it between two steps. ``ahead``: asked before any request (the page, when
        it got the clip), so it may be skipped (the request then does it). Default: nothing."""

    @abstractmethod
    def prepare(self, rows: Sequence[RowInput]) -> list[Any]:
        """Start each row; return one opaque state object per row, in order."""

    @abstractmethod
    def step(self, states: Sequence[Any], emit: RowEmitter | None = None) -> list[StepOutput]:
        """Advance every row by one unit in one batched call; one output per state, in order.

        ``emit(i, output)``, when given, may be called with row ``i``'s output as soon as it is
        final, before the step ends (a backend that decodes row by row lets a stream's next audio
        out without waiting for the other rows); the returned list still holds every output.
        A backend with a ``first_audio_shape`` also takes ``plan`` (a FirstAudioPlan; None: handed out at the end).
        """

    def first_audio_shape(self) -> tuple[int, float] | None:
        """(latents in a request's first audio, seconds a latent lasts) for a backend that makes a starting request's
        first audio before its step and hands it out as the engine plans (``step``'s ``plan``); None: no such part."""
        return None

    @property
    def emits_rows(self) -> bool:
        """True when ``step`` hands each row out as soon as it is decoded (see ``step``'s ``emit``)."""
        return False

    def handed_out_after(self, position: int) -> float:
        """How many rows of a step are made before the row at ``position`` (0-based, in step order) is
        handed out: the scheduler's plan of who hears what when. Default: every row at the step's end."""
        return math.inf

    def estimate_step(self, state: Any) -> StepEstimate:
        """The next step of ``state``'s row (see StepEstimate). Default: a generic quarter second of audio."""
        return StepEstimate("step", 0.25, 0.02)

    def steady_estimate(self) -> StepEstimate:
        """A typical step of a row past its first window: admission sizes a stream's real-time load from it."""
        return StepEstimate("step", 0.25, 0.02)

    def calibration_text(self) -> str | None:
        """A text the engine may step at start in batches of 1 up to its maximum, to measure a step's
        fixed cost apart from its cost per row (a GPU's). None (the default): costs are learnt in service."""
        return None

    def audio_estimate_s(self, parsed: Any) -> float:
        """Seconds of audio a request will give, from what ``check_text`` returned (queue ETAs use it)."""
        return max(1.0, len(str(parsed)) / 15.0)  # about 15 characters a second of English speech

    def remaining_audio_s(self, state: Any) -> float | None:
        """Seconds of audio ``state``'s row has still to give, if known."""
        return None

    def set_window_level(self, state: Any, level: int) -> None:
        """Ask for other steps on a row: 0 the small first window (its listener holds little), 1 the usual window,
        each level above doubles it up to the backend's own largest (``WIDEST_WINDOW``: a file's). A backend that cannot
        change its steps ignores it; the audio must not depend on the level (streamed = whole decode)."""
        return None

    def slot_bytes(self) -> int:
        """Memory one row in a slot holds at most, in bytes, from the model's shapes (logged at start). Default: 0, unknown."""
        return 0

    def release(self, state: Any) -> None:
        """Free what a finished or cancelled row holds (a KV-cache slot, say). Default: nothing."""
        return None
