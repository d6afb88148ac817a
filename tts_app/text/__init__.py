"""The text side: normalize -> phonemes -> chunks. Runs and is tested without a model."""

from .chunk import Chunk, chunk_sentences
from .errors import TextError
from .expand import expand_text
from .lexicon import Lexicon, load_lexicon, parse_lexicon, saved_lexicon
from .normalize import normalize_text
from .phonemize import phonemize, to_ids, word_id_spans
from .prepare import PreparedText, TextOptions, prepare_text

__all__ = [
    "Chunk", "Lexicon", "PreparedText", "TextError", "TextOptions", "chunk_sentences", "expand_text", "load_lexicon",
    "normalize_text", "parse_lexicon", "phonemize", "prepare_text", "saved_lexicon", "to_ids", "word_id_spans",
]  # fmt: skip
