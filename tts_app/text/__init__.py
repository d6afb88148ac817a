"""The text side: normalize -> phonemes -> chunks. Runs and is tested without a model."""

from .chunk import Chunk, chunk_sentences
from .errors import TextError
from .normalize import normalize_text
from .phonemize import phonemize, to_ids

__all__ = ["Chunk", "TextError", "chunk_sentences", "normalize_text", "phonemize", "to_ids"]
