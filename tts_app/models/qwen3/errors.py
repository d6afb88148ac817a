"""WeightsMissing: the Qwen3-TTS checkpoint, or a package it needs, is not here."""


class WeightsMissing(RuntimeError):
    """Raised with a one-line explanation of how to get the weights."""
