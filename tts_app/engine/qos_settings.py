"""The listener-first policy's knobs; the limits a server operator sets come from TTS_APP_* variables."""

from __future__ import annotations

from dataclasses import dataclass

from tts_app import settings

POLICY_ENV = "TTS_APP_ENGINE_POLICY"
POLICIES = settings.setting(POLICY_ENV).choices


def app_policy() -> str:
    """The scheduling policy of the app's engines: $TTS_APP_ENGINE_POLICY, the listener-first "deadline"
    by default (as the Engine class's); "fifo" stays selectable."""
    return settings.value(POLICY_ENV)


@dataclass(frozen=True)
class QosSettings:
    """Seconds unless named otherwise. Defaults: a 1x player that must never run dry."""

    margin_s: float = 0.15  # a step must end this long before the earliest listener runs out
    first_audio_target_s: float = 0.3  # a new stream's first audio is due this long after it was sent
    low_s: float = 1.0  # a listener holding less than this is in need: rows holding plenty then skip steps
    plenty_s: float = 3.0
    ride_share: float = 0.1  # a row that adds at most this share of a step's fixed cost steps with it, needed or not
    step_horizon_s: float = 0.25  # a step holds about this much work (and every listener who cannot wait); the rest waits, newcomers start sooner
    batch_gap_s: float = 2.0  # a non-streamed row is stepped at least this often, whatever the streams need
    usual_from_s: float = 1.5  # a listener holding less gets small windows (each due soon after the last, as its first was)
    grow_at_s: tuple[float, ...] = (2.0, 4.0, 8.0)  # a listener's buffer at which its windows double, and double again
    load_margin: float = 0.85  # admitted streams may use this fraction of the machine; the rest is the margin (1.0 stalled 15 % at 1.0 x C on the 2-core CPU)
    batch_slot_share: float = 0.5  # non-streamed rows hold at most this share of the slots
    client_share: float = settings.default("TTS_APP_CLIENT_SHARE")  # one client holds at most this share of the slots and of the queue places
    max_queue_wait_s: float = settings.default("TTS_APP_MAX_QUEUE_WAIT_S")  # longer predicted waits are refused (503 + Retry-After)
    playback_rate: float = 1.0

    @classmethod
    def from_env(cls) -> "QosSettings":
        """Defaults, with TTS_APP_MAX_QUEUE_WAIT_S and TTS_APP_CLIENT_SHARE read now (not at import)."""
        return cls(max_queue_wait_s=settings.value("TTS_APP_MAX_QUEUE_WAIT_S"), client_share=settings.value("TTS_APP_CLIENT_SHARE"))
