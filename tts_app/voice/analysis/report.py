"""What ingestion found in a reference clip, for the UI to show beside the voice."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ReferenceReport:
    """Measurements of a reference clip; levels are of the clip as given, before normalisation."""

    source: str  # file name or "array"
    input_duration_s: float
    input_sample_rate: int
    input_channels: int
    duration_s: float  # length kept, after trimming and the 30 s cut
    speech_s: float  # active (above the energy gate) time within what was kept
    lead_trimmed_s: float
    tail_trimmed_s: float
    cut_after_s: float  # audio dropped after the length cap (0 when none)
    level_dbfs: float  # RMS of the active frames
    peak_dbfs: float
    clipping_fraction: float  # share of samples at or beyond full scale
    snr_db: float  # active level over the noise floor (quietest frames): a rough SNR
    gain_db: float  # applied by loudness normalisation
    bandwidth_hz: float = 0.0  # highest frequency the clip carries (ltas.content_cutoff_hz); 0: not measured
    warnings: list[str] = field(default_factory=list)
    transcript: str = ""  # the words the voice match was aligned on
    transcript_source: str = "none"  # "typed", "recognised" or "none" (fallback alignment)

    @property
    def ok(self) -> bool:
        return not self.warnings

    def summary(self) -> str:
        """One paragraph for people: what is kept, what was trimmed, how it measures, what is poor."""
        trimmed = []
        if self.lead_trimmed_s >= 0.01:
            trimmed.append(f"{self.lead_trimmed_s:.2f} s of leading silence")
        if self.tail_trimmed_s >= 0.01:
            trimmed.append(f"{self.tail_trimmed_s:.2f} s of trailing silence")
        if self.cut_after_s > 0:
            trimmed.append(f"{self.cut_after_s:.1f} s after the first 30 s")
        text = (
            f"Reference {self.source}: kept {self.duration_s:.1f} s ({self.speech_s:.1f} s of speech) "
            f"of {self.input_duration_s:.1f} s at {self.input_sample_rate} Hz"
            f"{' (mixed to mono)' if self.input_channels > 1 else ''}; "
            f"trimmed {', '.join(trimmed) if trimmed else 'nothing'}. "
            f"Level {self.level_dbfs:.1f} dBFS (peak {self.peak_dbfs:.1f} dBFS, normalised by {self.gain_db:+.1f} dB), "
            f"clipping {100 * self.clipping_fraction:.2f}% of samples, background noise about {self.snr_db:.0f} dB below the voice."
        )
        if self.transcript_source == "none":
            text += " No transcript (none typed, none recognised): matched by sound classes without word alignment."
        else:
            words = self.transcript if len(self.transcript) <= 200 else self.transcript[:200] + "..."
            text += f' Transcript ({self.transcript_source}): "{words}".'
        if self.warnings:
            text += " Warnings: " + "; ".join(self.warnings) + "."
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ReferenceReport":
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})
