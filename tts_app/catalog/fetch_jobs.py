"""The state of each $TTS_APP_MODELS download (loading, ready or unavailable and why), read by /readyz, /v1/models,
the page's status line and the model engines; ``tts_app.catalog.model_fetch`` runs the downloads and updates it."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from tts_app import settings
from tts_app.models.available import FETCHABLE
from tts_app.models.capabilities import NO_CLONING
from tts_app.models.hub_fetch import Plan

MODELS_ENV = "TTS_APP_MODELS"


class FetchStatus(str, enum.Enum):
    LOADING = "loading"  # waiting its turn, downloading, or being loaded into memory
    READY = "ready"
    UNAVAILABLE = "unavailable"  # ``reason`` says why, in one line


@dataclass
class FetchJob:
    """One model named in $TTS_APP_MODELS. ``stage`` (while loading): waiting, downloading or loading;
    ``plan``: the download's files once the hub has listed them."""

    model_id: str
    status: FetchStatus = FetchStatus.LOADING
    stage: str = "waiting"
    reason: str = ""
    plan: Optional[Plan] = field(default=None, repr=False)
    # Ready, but short of what was asked (Pocket TTS's no-cloning release after the hub refused the gated one): why.
    short: str = ""

    def progress(self) -> tuple[int, int]:
        """(bytes on disk, bytes in all) of the download; (0, 0) before the hub has listed the files."""
        if self.plan is None:
            return 0, 0
        return self.plan.bytes_on_disk(), self.plan.total_bytes

    def line(self) -> str:
        """One line for the page and the log."""
        if self.status is FetchStatus.READY and self.short:
            return f"{self.model_id} is ready with {NO_CLONING}: {self.short}."
        if self.status is FetchStatus.READY:
            return f"{self.model_id} is ready."
        if self.status is FetchStatus.UNAVAILABLE:
            return f"{self.model_id} is unavailable: {self.reason} (the embedded voice serves)."
        if self.stage == "downloading":
            done, total = self.progress()
            size = f"{total / 1e9:.2g} GB" if total >= 1e9 else f"{max(1, round(total / 1e6))} MB"
            share = f"{100 * done // total}% of {size}" if total else "listing files"
            return f"{self.model_id}: downloading, {share} (the embedded voice serves meanwhile)."
        return f"{self.model_id}: {self.stage} (the embedded voice serves meanwhile)."

    def as_json(self) -> dict[str, Any]:
        """The fields /v1/models and /readyz add for this model."""
        row: dict[str, Any] = {"status": self.status.value}
        if self.status is FetchStatus.UNAVAILABLE:
            row["reason"] = self.reason
        if self.status is FetchStatus.READY and self.short:
            row["reason"] = self.line()
        if self.status is FetchStatus.LOADING:
            done, total = self.progress()
            row |= {"stage": self.stage, "downloaded_bytes": done, "total_bytes": total}
        return row


_lock = threading.Lock()
_jobs: dict[str, FetchJob] = {}


def requested_models() -> tuple[str, ...]:
    """The model ids of $TTS_APP_MODELS, each once; raises ``SettingError`` (one line) for a name not fetchable."""
    names = tuple(dict.fromkeys(name.lower() for name in settings.value(MODELS_ENV)))
    unknown = [name for name in names if name not in FETCHABLE]
    if unknown:
        raise settings.SettingError(f"{MODELS_ENV}: unknown model {unknown[0][:40]!r}; choose from: {', '.join(FETCHABLE)}")
    return names


def exit_on_unknown_models() -> None:
    """Stop the start with one line when $TTS_APP_MODELS names a model nobody can fetch."""
    try:
        requested_models()
    except settings.SettingError as error:
        raise SystemExit(str(error)) from None


def add_job(model_id: str) -> FetchJob:
    with _lock:
        return _jobs.setdefault(model_id, FetchJob(model_id))


def jobs() -> list[FetchJob]:
    """Every model of $TTS_APP_MODELS this process has started on, in order."""
    with _lock:
        return list(_jobs.values())


def job(model_id: str) -> Optional[FetchJob]:
    with _lock:
        return _jobs.get(model_id)


def settled_or_absent(model_id: str) -> bool:
    """False while ``model_id``'s $TTS_APP_MODELS download is under way, or after it failed: its folder, if any, may
    be partial and is not offered."""
    found = job(model_id)
    return found is None or found.status is FetchStatus.READY


def any_loading() -> bool:
    return any(j.status is FetchStatus.LOADING for j in jobs())
