"""The text side: normalize -> phonemes -> chunks. Runs and is tested without a model."""

from tts_app.text.chunk import Chunk, chunk_sentences
from tts_app.text.errors import TextError
from tts_app.text.expand import expand_text
from tts_app.text.lexicon import Lexicon, load_lexicon, parse_lexicon
from tts_app.text.normalize import normalize_text
from tts_app.text.phonemize import phonemize, to_ids, word_id_spans
from tts_app.text.prepare import PreparedText, TextOptions, prepare_text

__all__ = [
    "Chunk", "Lexicon", "PreparedText", "TextError", "TextOptions", "chunk_sentences", "expand_text", "load_lexicon",
    "normalize_text", "parse_lexicon", "phonemize", "prepare_text", "to_ids", "word_id_spans",
]  # fmt: skip
