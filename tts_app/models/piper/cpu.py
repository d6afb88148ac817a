"""What this CPU can do: its model name and ISA flags, read from /proc/cpuinfo (Linux)."""

from __future__ import annotations

import os
import platform
from functools import lru_cache

# Flags that decide the fast precision's kernels (precision.py) and that benchmarks report.
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_bf16", "amx_int8")
# oneDNN (inside OpenVINO) runs no kernels above $ONEDNN_MAX_CPU_ISA: an AVX-512 machine set to
# AVX2 runs the AVX2 kernels (checked in OpenVINO's per-op kernel names), which is how an AVX2-only
# CPU is emulated. The flags each cap leaves out, so choices made from flags follow it.
ISA_CAP_ENV = "ONEDNN_MAX_CPU_ISA"
_ABOVE_AVX2 = ("avx512", "amx")
_CAP_DROPS = {
    "SSE41": ("avx", "fma", "f16c") + _ABOVE_AVX2,
    "AVX": ("avx2", "fma", "avx_vnni") + _ABOVE_AVX2,
    "AVX2": ("avx_vnni",) + _ABOVE_AVX2,
    "AVX2_VNNI": _ABOVE_AVX2,
    "AVX2_VNNI_2": _ABOVE_AVX2,
    "AVX512_CORE": ("avx512_vnni", "avx512_bf16", "amx"),
    "AVX512_CORE_VNNI": ("avx512_bf16", "amx"),
    "AVX512_CORE_BF16": ("amx",),
}


@lru_cache(maxsize=1)
def cpu_model() -> str:
    for line in _cpuinfo().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    for line in _cpuinfo().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def isa_cap() -> str:
    """``$ONEDNN_MAX_CPU_ISA`` in upper case, or "" when unset."""
    return os.environ.get(ISA_CAP_ENV, "").strip().upper()


def usable_flags(flags: frozenset[str] | None = None) -> frozenset[str]:
    """The CPU's flags less those above ``$ONEDNN_MAX_CPU_ISA`` (all of them when it is unset)."""
    flags = cpu_flags() if flags is None else flags
    drops = _CAP_DROPS.get(isa_cap(), ())
    return frozenset(f for f in flags if not f.startswith(drops))


def isa_summary() -> str:
    """The decisive ISA flags this CPU has, e.g. "avx2 fma" on AMD Zen 3 (and the cap, if one is set)."""
    have = usable_flags()
    summary = " ".join(f for f in ISA_FLAGS if f in have) or "none of " + " ".join(ISA_FLAGS)
    return summary + (f" (capped by {ISA_CAP_ENV}={isa_cap()} on a CPU that has more)" if usable_flags() != cpu_flags() else "")


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""
