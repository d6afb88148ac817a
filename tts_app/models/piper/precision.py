"""The two precisions: "exact" (float32, equal to stock piper within 1e-3) and "fast".

"fast" changes the decoder, where most of the arithmetic is, and the flow: bfloat16 on CPUs with bf16
instructions (AVX512-BF16 or AMX); elsewhere it runs float32, as exact (an int8 decoder from post-training
quantization cost 17-23 WER points for about a tenth more speed, and was removed: docs/benchmarks-log.md, 2026-12-02).
The encoder stays float32 in both, so durations (rounded up from floats) are those of the exact mode.
"""

from __future__ import annotations

from tts_app import settings

from tts_app.models.piper.cpu import usable_flags

PRECISIONS = ("exact", "fast")
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
PRECISION_ENV = "TTS_APP_PRECISION"  # read by tts_app/catalog/shared_engine.py for `python app.py`


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def decoder_kind(precision: str, flags: frozenset[str] | None = None) -> str:
    """"f32" for exact; for fast, "bf16" where the CPU has bf16 instructions, else "f32"."""
    if check_precision(precision) == "exact":
        return "f32"
    return "bf16" if BF16_FLAGS & usable_flags(flags) else "f32"


def precision_from_env() -> str:
    """``$TTS_APP_PRECISION`` ("exact" or "fast"), else "exact"."""
    return check_precision(settings.value(PRECISION_ENV))
