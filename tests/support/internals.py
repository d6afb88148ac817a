"""The product's private state that tests reset or wait on, in one place (no product code exists for tests only).

- ``reset_small_gemm``: forget small_gemm's measured choice of library, so a test can pick each path in turn.
- ``wait_calibrated``: block until an engine's start-up calibration of its step costs is over (at once when the
  backend has none); False on timeout. Requests submitted meanwhile simply queue, so only tests that time a
  burst need it.
"""

from __future__ import annotations

from typing import Any

from tts_app.models.layers import small_gemm


def reset_small_gemm() -> None:
    with small_gemm._lock:
        small_gemm._choice.clear()
        small_gemm._ways.clear()


def wait_calibrated(engine: Any, timeout: float | None = None) -> bool:
    return engine._calibrated.wait(timeout)
