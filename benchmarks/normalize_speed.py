"""Cost of English normalisation: milliseconds per 1,000 characters of input (goal: under 2 ms).

Two inputs: ordinary prose (shared eval sentences when present, else a built-in paragraph) and
text dense with numbers, dates and abbreviations (benchmarks/data/normalization_sentences.tsv).
Best of several repeats, since the machine is shared.

    python benchmarks/normalize_speed.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.normalize_wer import SENTENCES, isa_flags, load_pairs  # noqa: E402
from benchmarks.voice_similarity import cpu_name  # noqa: E402
from tts_app.text import expand_text, phonemize  # noqa: E402
from tts_app.text.offsets import Recorder, map_bounds_back, recording  # noqa: E402
from tts_app.text.words import written_word_bounds  # noqa: E402

PROSE = (
    "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. "
    "It's easy to tell the depth of a well. These days a chicken leg is a rare dish. "
)


def expand_with_spans(text: str) -> list[tuple[int, int]]:
    """What a request pays for captions in the reader's words: the rules recorded, every word mapped back
    (``prepare.py``'s ``_read``: its written words' bounds, then ``map_bounds_back``)."""
    with recording(Recorder()) as rec:
        out = expand_text(text)
    return map_bounds_back(*written_word_bounds(out), rec.passes)


def ms_per_1000_chars(fn, text: str, repeats: int = 7) -> float:
    pieces = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    fn(pieces[0])  # warm: regexes compiled at import, caches filled
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for p in pieces:
            fn(p)
        best = min(best, time.perf_counter() - t0)
    return 1000.0 * best / (len(text) / 1000.0)


def main() -> int:
    shared = REPO_ROOT.parent / "shared" / "eval" / "sentences.txt"
    prose = shared.read_text(encoding="utf-8") if shared.is_file() else PROSE * 40
    dense = " ".join(w for w, _ in load_pairs(SENTENCES))
    prose, dense = (prose * (50_000 // len(prose) + 1))[:50_000], (dense * (50_000 // len(dense) + 1))[:50_000]
    # Whitespace as normalize_text leaves it (prepare_text cleans before it expands): one space between words.
    prose, dense = " ".join(prose.split()), " ".join(dense.split())
    print(f"{cpu_name()} ({isa_flags()})")
    for name, text in (("prose", prose), ("numbers/dates/abbreviations", dense)):
        norm = ms_per_1000_chars(expand_text, text)
        spans = ms_per_1000_chars(expand_with_spans, text)
        # espeak on the same text, same run: a yardstick that the shared CPU's load scales alike
        espeak = ms_per_1000_chars(lambda t: phonemize(t, "en-us"), text[:10_000], repeats=3)
        print(
            f"{name}: normalisation {norm:.3f} ms per 1,000 characters; espeak phonemization {espeak:.2f} ms "
            f"({100 * norm / espeak:.1f}% of it); with word spans recorded and mapped back {spans:.3f} ms "
            f"({spans / norm:.2f}x)"
        )
    # Hostile input: 5,000 characters of one repeated shape each; the rules must stay near-linear.
    shapes = ["a." * 2500, "a" * 4999 + "@", "1" * 5000, "1," * 2500, "A" * 5000, "1-" * 2500, "1/" * 2500,
              "$1" * 2500, "12:30 pm " * 500, "e.g. " * 1000, "www." + "a." * 2490, "Jan 1 " * 800]  # fmt: skip
    worst = max((ms_per_1000_chars(expand_text, s[:5000], repeats=1) * 5, s[:12]) for s in shapes)
    print(f"worst hostile 5,000-character input: {worst[0]:.0f} ms ({worst[1]!r}...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
