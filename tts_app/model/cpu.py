"""What this CPU can do: its model name and ISA flags, read from /proc/cpuinfo (Linux)."""

from __future__ import annotations

import platform
from functools import lru_cache

# Flags that decide the fast precision's kernels (precision.py) and that benchmarks report.
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_bf16", "amx_int8")


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


def isa_summary() -> str:
    """The decisive ISA flags this CPU has, e.g. "avx2 fma" on AMD Zen 3."""
    have = cpu_flags()
    return " ".join(f for f in ISA_FLAGS if f in have) or "none of " + " ".join(ISA_FLAGS)


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""
