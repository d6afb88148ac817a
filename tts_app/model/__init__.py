"""Models: the embedded Piper VITS voice, split into batched stages."""

from .piper_vits import LatentRequest, PiperVits
from .windows import CONTEXT_FRAMES, FIRST_WINDOW_FRAMES, WINDOW_FRAMES, Window, plan_windows

__all__ = ["CONTEXT_FRAMES", "FIRST_WINDOW_FRAMES", "WINDOW_FRAMES", "LatentRequest", "PiperVits", "Window", "plan_windows"]
