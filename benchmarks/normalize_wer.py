"""Normalisation acceptance: PocketSphinx WER of written-form sentences spoken through the engine
vs the same sentences written out in words by hand (goal: within +5 points).

Both are scored against the hand-written words. A third column speaks the written form with
normalisation off, to show what the rules buy. Sentences: benchmarks/data/normalization_sentences.tsv.

    python benchmarks/normalize_wer.py [--out benchmarks/results/normalize_wer.md]
"""

from __future__ import annotations

import argparse
import datetime
import logging
import platform
import subprocess
import sys
from math import gcd
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
from scipy.signal import resample_poly  # noqa: E402

from benchmarks.voice_similarity import cpu_name, word_errors  # noqa: E402
from tts_app.backends.params import SpeechParams  # noqa: E402

logger = logging.getLogger("normalize_wer")
SENTENCES = REPO_ROOT / "benchmarks" / "data" / "normalization_sentences.tsv"


def load_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            written, words = line.split("\t")
            pairs.append((written, words))
    return pairs


class Recognizer:
    def __init__(self) -> None:
        from pocketsphinx import Decoder

        self.decoder = Decoder(samprate=16000, loglevel="FATAL")

    def __call__(self, audio: np.ndarray, sample_rate: int) -> str:
        g = gcd(16000, sample_rate)
        a16 = resample_poly(np.asarray(audio, np.float64), 16000 // g, sample_rate // g)
        self.decoder.start_utt()
        self.decoder.process_raw((np.clip(a16, -1, 1) * 32767).astype(np.int16).tobytes(), full_utt=True)
        self.decoder.end_utt()
        hyp = self.decoder.hyp()
        return hyp.hypstr if hyp is not None else ""


def isa_flags() -> str:
    try:
        flags = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        line = next(ln for ln in flags.splitlines() if ln.startswith("Flags:"))
        wanted = ("avx", "avx2", "avx512f", "avx512_vnni", "fma", "f16c", "amx_tile")
        return " ".join(f for f in line.split()[1:] if f in wanted)
    except (OSError, StopIteration, subprocess.SubprocessError):
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(REPO_ROOT / "benchmarks" / "results" / "normalize_wer.md"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from tts_app.engine import Engine

    pairs = load_pairs(SENTENCES)
    asr = Recognizer()
    engine = Engine(max_batch_size=8)
    errors = {"normalised": [0, 0], "by hand": [0, 0], "not normalised": [0, 0]}
    rows = []
    try:
        for written, words in pairs:
            runs = {
                "normalised": engine.submit(written, SpeechParams(seed=1)),
                "by hand": engine.submit(words, SpeechParams(seed=1)),
                "not normalised": engine.submit(written, SpeechParams(seed=1, normalize=False)),
            }
            hyps = {k: asr(h.result(timeout=300), engine.sample_rate) for k, h in runs.items()}
            for k, hyp in hyps.items():
                e, n = word_errors(words, hyp)
                errors[k][0] += e
                errors[k][1] += n
            rows.append((written, hyps["normalised"], hyps["by hand"]))
            logger.info("%s\n  norm: %s\n  hand: %s", written, hyps["normalised"], hyps["by hand"])
    finally:
        engine.close()
    wer = {k: 100.0 * e / n for k, (e, n) in errors.items()}
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Normalisation WER ({len(pairs)} sentences, {errors['by hand'][1]} reference words), {date}, "
        f"{cpu_name()} ({isa_flags()}), Python {platform.python_version()}.",
        "",
        "| input spoken | PocketSphinx WER vs the hand-written words |",
        "|---|---|",
        f"| written form, normalised (default) | {wer['normalised']:.1f}% |",
        f"| hand-written words | {wer['by hand']:.1f}% |",
        f"| written form, `normalize: false` | {wer['not normalised']:.1f}% |",
        "",
        f"Normalised minus hand-written: **{wer['normalised'] - wer['by hand']:+.1f} points** (goal: at most +5).",
        "",
        "| written | heard (normalised) | heard (hand-written) |",
        "|---|---|---|",
        *(f"| {w} | {a} | {b} |" for w, a, b in rows),
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[:10]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
