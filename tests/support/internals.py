"""The product's private state that tests reset or wait on, in one place (no product code exists for tests only).

- ``reset_small_gemm``: forget small_gemm's measured choice of library, so a test can pick each path in turn.
"""

from __future__ import annotations

from tts_app.models.layers import small_gemm


def reset_small_gemm() -> None:
    with small_gemm._lock:
        small_gemm._choice.clear()
        small_gemm._ways.clear()
