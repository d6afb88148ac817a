"""The scheduler's tunables (the paragraph in tts_app/engine/__init__.py says what each does). Each rule of the
listener-first plan has one, and its neutral value turns the rule off (benchmarks/scheduler_ablation.py)."""

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
    """Seconds unless named otherwise."""

    # Streams admitted may need this share of what the machine makes (inf: no load check). 1.0 stalled 15 % of
    # the audio at 1.0 x C on the 2-core AMD CPU (docs/benchmarks-log.md, issue 34); the real machine's jitter is the rest.
    load_margin: float = 0.85
    # A listener holding less is in need (rows holding ``plenty_s`` then skip a step), and gets small windows;
    # each doubling of what it holds past this doubles them (0: always the usual window). Issue 34's runs.
    low_s: float = 1.0
    # What a listener holds past this is the room the load check counts on, and rows holding it skip while
    # another is in need (inf: every row steps every step). Counting from low_s stalled the simulated CPU.
    plenty_s: float = 3.0
    # A step holds about this much work, and every listener who cannot wait for the next; a new stream's first
    # audio is due this long after admission (inf: every row in every step). 0.25 s: issue 34's bursts.
    step_s: float = 0.25
    client_share: float = settings.default("TTS_APP_CLIENT_SHARE")  # a client's share of the slots and stream places
    max_queue_wait_s: float = settings.default("TTS_APP_MAX_QUEUE_WAIT_S")  # longer predicted waits are refused (503)

    @classmethod
    def from_env(cls) -> "QosSettings":
        """Defaults, with TTS_APP_MAX_QUEUE_WAIT_S and TTS_APP_CLIENT_SHARE read now (not at import)."""
        return cls(max_queue_wait_s=settings.value("TTS_APP_MAX_QUEUE_WAIT_S"), client_share=settings.value("TTS_APP_CLIENT_SHARE"))
