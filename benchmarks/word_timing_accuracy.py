"""Word timestamps against a forced alignment: mean absolute word-boundary difference.

For each evaluation sentence the engine speaks it (seed 0) and gives its word timings; the
same audio, at 16 kHz, is force-aligned to the same words by PocketSphinx (its English model
ships in its wheel). Boundaries compared: every word's start and end. Sentences with a word
missing from PocketSphinx's dictionary, or where the aligner fails, are skipped and counted.
Goal (issue 15): mean absolute difference <= 60 ms.
"""

from __future__ import annotations

import re
from math import gcd
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

from common import load_backend, load_sentences, machine_info, markdown_table, parse_args, print_machine, report, write_results
from tts_app.backends.params import SpeechParams

FRAME_S = 0.01  # PocketSphinx's frame rate: 100 frames a second


def _align(decoder, audio: np.ndarray, rate: int, words: list[str]) -> list[tuple[str, float, float]] | None:
    g = gcd(16000, rate)
    a16 = resample_poly(np.asarray(audio, np.float64), 16000 // g, rate // g)
    decoder.set_align_text(" ".join(words))
    decoder.start_utt()
    decoder.process_raw((np.clip(a16, -1, 1) * 32767).astype(np.int16).tobytes(), full_utt=True)
    decoder.end_utt()
    segs = [(s.word, s.start_frame * FRAME_S, (s.end_frame + 1) * FRAME_S) for s in decoder.seg()]
    segs = [(re.sub(r"\(\d+\)$", "", w), a, b) for w, a, b in segs if w not in ("<s>", "</s>", "<sil>", "[NOISE]")]
    return segs if [w for w, _, _ in segs] == words else None


def main() -> int:
    def extra(p) -> None:
        p.add_argument("--sentences", type=int, default=40)
        p.add_argument("--text-file", type=Path, help="other sentences, one a line (default: shared/eval/sentences.txt)")

    args = parse_args(__doc__, extra)
    from pocketsphinx import Decoder

    from tts_app.engine import Engine

    info = machine_info()
    print_machine(info)
    if args.text_file:
        sentences = [ln.strip() for ln in args.text_file.read_text(encoding="utf-8").splitlines() if ln.strip()][: args.sentences]
    else:
        sentences = load_sentences(args.shared)[: args.sentences]
    engine = Engine(load_backend(threads=2), max_batch_size=8)
    decoder = Decoder(samprate=16000, loglevel="FATAL")
    diffs: list[float] = []
    starts: list[float] = []
    ends: list[float] = []
    skipped = {"out of dictionary": 0, "aligner failed": 0}
    try:
        for text in sentences:
            handle = engine.submit(text, SpeechParams(seed=0))
            audio = handle.result(timeout=120)
            timings = handle.words
            words = [re.sub(r"[^a-z']", "", w.word.lower()) for w in timings]
            if any(not w or decoder.lookup_word(w) is None for w in words):
                skipped["out of dictionary"] += 1
                continue
            aligned = _align(decoder, audio, engine.sample_rate, words)
            if aligned is None:
                skipped["aligner failed"] += 1
                continue
            for t, (_, a, b) in zip(timings, aligned):
                starts.append(t.start - a)
                ends.append(t.end - b)
                diffs.extend([abs(t.start - a), abs(t.end - b)])
    finally:
        engine.close()
    mean_ms = 1000 * float(np.mean(diffs))
    rows = [
        ["sentences aligned", len(sentences) - sum(skipped.values())],
        ["skipped", ", ".join(f"{k}: {v}" for k, v in skipped.items())],
        ["boundaries compared", len(diffs)],
        ["mean |difference| (ms)", f"{mean_ms:.1f}"],
        ["median |difference| (ms)", f"{1000 * float(np.median(diffs)):.1f}"],
        ["p90 |difference| (ms)", f"{1000 * float(np.percentile(diffs, 90)):.1f}"],
        ["mean signed start / end difference (ms)", f"{1000 * float(np.mean(starts)):+.1f} / {1000 * float(np.mean(ends)):+.1f}"],
        ["goal (mean <= 60 ms)", "PASS" if mean_ms <= 60 else "FAIL"],
    ]
    report("Word timestamps vs PocketSphinx forced alignment", markdown_table(["figure", "value"], rows))
    write_results("word_timing_accuracy", {"machine": info, "rows": rows, "skipped": skipped, "mean_ms": mean_ms})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
