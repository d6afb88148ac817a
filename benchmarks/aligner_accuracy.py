"""Forced-alignment word timings (tts_app/captions) against the embedded voice's own durations, and their cost.

Each evaluation sentence is spoken by the Piper backend (seed 0, one request at a time, the
backend's own prepare/step, 2 threads); its audio pieces are fed in order to the aligner, as
the Qwen3 backend feeds them, and every aligned word start is compared with the start the
model's durations give (WordTiming). Cost: the aligner's time over the synthesis time of the
same sentence, wall clock and process CPU time (all threads). Goals (issue 26): mean word-start
error <= 60 ms, cost <= 5% of synthesis time. The machine may be shared: costs are upper bounds.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from common import load_backend, load_sentences, machine_info, markdown_table, parse_args, print_machine, report, write_results


def _speak(backend, text: str) -> tuple[list[np.ndarray], list, float, float]:
    """(audio pieces, model words, wall s, CPU s) of one request through prepare/step."""
    from tts_app.backends.base import RowInput
    from tts_app.backends.params import SpeechParams

    wall, cpu = time.perf_counter(), time.process_time()
    (state,) = backend.prepare([RowInput(0, text, SpeechParams(seed=0))])
    pieces, words, done = [], [], False
    while not done:
        (out,) = backend.step([state])
        pieces.append(out.audio)
        words += out.words
        done = out.done
    return pieces, words, time.perf_counter() - wall, time.process_time() - cpu


def _align(text: str, pieces: list[np.ndarray], rate: int) -> tuple[list, int, float, float]:
    """(aligned words, how many came before the last piece, wall s, CPU s)."""
    from tts_app.captions import WordAligner

    wall, cpu = time.perf_counter(), time.process_time()
    aligner, words, early = WordAligner(text, rate), [], 0
    for i, piece in enumerate(pieces):
        words += aligner.feed(piece, i == len(pieces) - 1)
        early = len(words) if i < len(pieces) - 1 else early
    return words, early, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    def extra(p) -> None:
        p.add_argument("--text-file", type=Path, help="other sentences, one a line (default: shared/eval/sentences.txt)")
        p.add_argument("--threads", type=int, default=2, help="the voice's CPU threads")

    args = parse_args(__doc__, extra)
    info = machine_info()
    print_machine(info)
    if args.text_file:
        sentences = [ln.strip() for ln in args.text_file.read_text(encoding="utf-8").splitlines() if ln.strip()]
    else:
        sentences = load_sentences(args.shared)
    backend = load_backend(threads=args.threads)
    _align("Warm up.", _speak(backend, "Warm up.")[0], backend.sample_rate)  # the decoder's one-off load is not counted
    errors, signed, sources, per_sentence = [], [], {}, []
    totals = np.zeros(5)  # audio s, synth wall, synth CPU, align wall, align CPU
    for text in sentences:
        pieces, model, s_wall, s_cpu = _speak(backend, text)
        aligned, early, a_wall, a_cpu = _align(text, pieces, backend.sample_rate)
        if [w.word for w in aligned] != [m.word for m in model]:  # normalised text (numbers): words differ
            per_sentence.append({"text": text, "skipped": "written words differ from the model's"})
            continue
        d = [a.start - m.start for a, m in zip(aligned, model)]
        errors += [abs(x) for x in d]
        signed += d
        for w in aligned:
            sources[w.source] = sources.get(w.source, 0) + 1
        audio_s = sum(p.size for p in pieces) / backend.sample_rate
        totals += [audio_s, s_wall, s_cpu, a_wall, a_cpu]
        per_sentence.append({"text": text, "words": len(aligned), "released_before_end": early, "audio_s": round(audio_s, 3),
                             "mean_abs_start_error_ms": round(1000 * float(np.mean(np.abs(d))), 1),
                             "synth_wall_s": round(s_wall, 4), "align_wall_s": round(a_wall, 4)})
    ms = 1000 * np.asarray(errors)
    audio_s, s_wall, s_cpu, a_wall, a_cpu = totals
    figures = {
        "sentences": len(sentences), "words": len(errors), "sources": sources,
        "mean_abs_start_error_ms": float(ms.mean()), "median_abs_start_error_ms": float(np.median(ms)),
        "p95_abs_start_error_ms": float(np.percentile(ms, 95)), "max_abs_start_error_ms": float(ms.max()),
        "mean_signed_start_error_ms": 1000 * float(np.mean(signed)),
        "audio_s": audio_s, "synth_wall_s": s_wall, "synth_cpu_s": s_cpu, "align_wall_s": a_wall, "align_cpu_s": a_cpu,
        "cost_wall_fraction": a_wall / s_wall, "cost_cpu_fraction": a_cpu / s_cpu,
        "align_real_time_factor": a_wall / audio_s, "synth_real_time_factor": s_wall / audio_s,
    }
    rows = [
        ["sentences / words compared", f"{len(sentences)} / {len(errors)}"],
        ["word sources", ", ".join(f"{k}: {v}" for k, v in sources.items())],
        ["mean / median / p95 / max abs. start error (ms)",
         f"{figures['mean_abs_start_error_ms']:.1f} / {figures['median_abs_start_error_ms']:.1f} / "
         f"{figures['p95_abs_start_error_ms']:.1f} / {figures['max_abs_start_error_ms']:.1f}"],
        ["mean signed start error, aligned - model (ms)", f"{figures['mean_signed_start_error_ms']:+.1f}"],
        ["goal: mean <= 60 ms", "PASS" if figures["mean_abs_start_error_ms"] <= 60 else "FAIL"],
        ["audio (s)", f"{audio_s:.2f}"],
        ["synthesis wall / CPU (s)", f"{s_wall:.2f} / {s_cpu:.2f}"],
        ["alignment wall / CPU (s)", f"{a_wall:.2f} / {a_cpu:.2f}"],
        ["cost: alignment / synthesis, wall / CPU", f"{100 * figures['cost_wall_fraction']:.1f}% / {100 * figures['cost_cpu_fraction']:.1f}%"],
        ["alignment real-time factor (wall)", f"{figures['align_real_time_factor']:.4f}"],
        ["goal: cost <= 5%", "PASS" if figures["cost_wall_fraction"] <= 0.05 else "FAIL"],
    ]
    report("Aligned word starts vs the embedded voice's durations", markdown_table(["figure", "value"], rows))
    write_results("aligner_accuracy", {"machine": info, "figures": figures, "rows": rows, "sentences": per_sentence})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
