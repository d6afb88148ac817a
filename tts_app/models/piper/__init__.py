"""Models: the embedded Piper VITS voice, split into batched stages."""

from tts_app.models.piper.piper_vits import FLOW_REACH, LatentRequest, PiperVits
from tts_app.models.piper.stream_decoder import DecoderStream
from tts_app.models.piper.windows import FIRST_WINDOW_FRAMES, WINDOW_FRAMES, Window, plan_windows

__all__ = ["DecoderStream", "FIRST_WINDOW_FRAMES", "FLOW_REACH", "WINDOW_FRAMES", "LatentRequest", "PiperVits", "Window", "plan_windows"]
