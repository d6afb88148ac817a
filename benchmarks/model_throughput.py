"""Stock piper vs this model, no engine: single-utterance RTF and batched throughput.

Every pass times stock piper (``PiperVoice.synthesize``, one utterance at a
time) and this model (``PiperBackend.prepare``/``step`` driving rows to
completion, slots refilled as rows finish) on the same texts, interleaved, so
both see the same machine load. Figures are medians over passes; ratios are
taken within a pass, then the median is reported.

    python benchmarks/model_throughput.py [--shared PATH] [--passes 3]
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Sequence

import numpy as np

import common
from common import Timed

NAME = "model_throughput"
SINGLE_RTF_GOAL = 1.0  # ours / stock, at most
THROUGHPUT_GOAL = 1.3  # ours / stock sequential, at least
# "stock" is the baseline of every ratio; the 1-thread session is a reference point only.
STOCK_NAMES = {"stock": "stock piper", "stock_1thread": "stock piper, 1 intra-op thread (reference)"}


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--batch-requests", type=int, default=32, help="requests per batched run (multiple of 16)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--precision", choices=["exact", "fast"], default="exact", help="the model's precision (tts_app/models/piper/precision.py)")


def whole_synthesize(backend: Any, text: str) -> Timed:
    """Model level without windows: text_to_latents, then one decode of the whole utterance."""
    from tts_app.models.piper import LatentRequest

    t0 = time.perf_counter()
    parsed = backend.check_text(text)
    rng = np.random.default_rng(0)
    samples = 0
    for ids in parsed.chunk_ids:
        (z_CxT,) = backend.model.text_to_latents([LatentRequest(ids=ids, rng=rng)])
        samples += backend.model.decode(z_CxT[None]).shape[1]
    return Timed(samples / backend.sample_rate, time.perf_counter() - t0)


def stock_passes(stocks: dict[str, Any], texts: Sequence[str]) -> dict[str, Any]:
    """Every stock piper variant, one utterance at a time, on ``texts``."""
    return {key: common.summarize_sequential(common.time_each(lambda t, v=v: common.stock_synthesize(v, t), texts)) for key, v in stocks.items()}


def single_pass(stocks: dict[str, Any], backends: dict[int, Any], sentences: Sequence[str], flip: bool) -> dict[str, Any]:
    """One utterance at a time: stock, ours windowed (backend) and ours whole-decode, per worker count."""
    out = stock_passes(stocks, sentences)
    for w in sorted(backends, reverse=flip):
        b = backends[w]
        runs = [common.drive_backend(b, [t], 1) for t in sentences]
        summary = common.summarize_sequential([Timed(r.audio_s, r.wall_s) for r in runs])
        summary["median_first_audio_s"] = common.median([r.first_audio_s[0] for r in runs])
        out[f"ours_w{w}"] = summary
        out[f"ours_whole_w{w}"] = common.summarize_sequential(common.time_each(lambda t, b=b: whole_synthesize(b, t), sentences))
    return out


def batched_pass(stocks: dict[str, Any], backends: dict[int, Any], texts: Sequence[str], batches: Sequence[int], flip: bool) -> dict[str, Any]:
    """Stock sequential throughput, then ours at every (threads, B), on the same texts."""
    out = stock_passes(stocks, texts)
    for w in sorted(backends, reverse=flip):
        for B in sorted(batches, reverse=flip):
            run = common.drive_backend(backends[w], texts, B)
            out[f"ours_w{w}_b{B}"] = {"audio_s": run.audio_s, "wall_s": run.wall_s, "throughput_audio_s_per_s": run.throughput}
    return out


def _median_of(passes: Sequence[dict], key: str, field: str) -> float:
    return common.median([p[key][field] for p in passes])


def _median_ratio(passes: Sequence[dict], key: str, field: str) -> float:
    return common.median([p[key][field] / p["stock"][field] for p in passes])


def single_table(passes: Sequence[dict], threads: Sequence[int]) -> tuple[str, list[dict]]:
    rows = [
        [name, "-", "-", _median_of(passes, key, "rtf"), _median_of(passes, key, "median_utterance_rtf"), "= whole", _median_ratio(passes, key, "rtf"), "-"]
        for key, name in STOCK_NAMES.items()
    ]
    summary = []
    for w in threads:
        for key, how in ((f"ours_w{w}", "windowed (backend)"), (f"ours_whole_w{w}", "whole decode")):
            ratio = _median_ratio(passes, key, "rtf")
            first = _median_of(passes, key, "median_first_audio_s") if "whole" not in key else "= whole"
            verdict = "PASS" if ratio <= SINGLE_RTF_GOAL else "FAIL"
            rows.append(["ours", w, how, _median_of(passes, key, "rtf"), _median_of(passes, key, "median_utterance_rtf"), first, ratio, verdict])
            summary.append({"key": key, "rtf": _median_of(passes, key, "rtf"), "ratio_vs_stock": ratio, "verdict": verdict})
    headers = ["system", "threads", "decode", "RTF (sum wall / sum audio)", "median utterance RTF", "median first audio (s)", "RTF ours / stock", "goal <= 1.0"]
    return common.markdown_table(headers, rows), summary


def batched_table(passes: Sequence[dict], threads: Sequence[int], batches: Sequence[int]) -> tuple[str, list[dict]]:
    field = "throughput_audio_s_per_s"
    rows = [[name, "-", "1 (sequential)", _median_of(passes, key, field), _median_ratio(passes, key, field), "-"] for key, name in STOCK_NAMES.items()]
    summary = []
    for w in threads:
        for B in batches:
            key = f"ours_w{w}_b{B}"
            ratio = _median_ratio(passes, key, field)
            verdict = "PASS" if ratio >= THROUGHPUT_GOAL else "FAIL"
            rows.append(["ours", w, B, _median_of(passes, key, field), ratio, verdict])
            summary.append({"key": key, "throughput": _median_of(passes, key, field), "ratio_vs_stock": ratio, "verdict": verdict})
    headers = ["system", "threads", "B", "throughput (audio s / wall s)", "x stock sequential", "goal >= 1.3x"]
    return common.markdown_table(headers, rows), summary


def warm_up(stocks: dict[str, Any], backends: dict[int, Any], sentences: Sequence[str], max_batch: int) -> None:
    """First runs pay for onnxruntime allocations; keep them out of the figures."""
    stock_passes(stocks, sentences[:1])
    for b in backends.values():
        common.drive_backend(b, common.cycle_texts(sentences, max_batch), max_batch)
        whole_synthesize(b, sentences[0])


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    info_before = common.machine_info()
    common.print_machine(info_before)
    sentences = common.load_sentences(args.shared)
    texts = common.cycle_texts(sentences, args.batch_requests)
    stocks = {"stock": common.load_stock_piper(), "stock_1thread": common.load_stock_piper(intra_op_threads=1)}
    backends = {w: common.load_backend(w, args.precision) for w in args.threads}
    warm_up(stocks, backends, sentences, max(args.batches))
    singles, batched = [], []
    cpu_shares = []
    for i in range(args.passes):
        flip = i % 2 == 1  # alternate the order of our configurations between passes
        t0, cpu0 = time.perf_counter(), time.process_time()
        singles.append(single_pass(stocks, backends, sentences, flip))
        batched.append(batched_pass(stocks, backends, texts, args.batches, flip))
        cpu_shares.append((time.process_time() - cpu0) / (time.perf_counter() - t0))
        print(f"pass {i + 1}/{args.passes} done; this process used {cpu_shares[-1]:.2f} of 2 cores", flush=True)
    t_single, s_single = single_table(singles, args.threads)
    t_batched, s_batched = batched_table(batched, args.threads, args.batches)
    where = f"precision {args.precision}; {info_before['cpu_model']}, ISA {info_before['isa']}"
    common.report(f"Single utterance ({len(sentences)} sentences, median of {args.passes} passes; {where})", t_single)
    common.report(f"Batched throughput ({len(texts)} requests, median of {args.passes} passes; {where})", t_batched)
    path = common.write_results(
        NAME,
        {
            "machine_before": info_before,
            "machine_after": common.machine_info(),
            "args": {k: str(v) if k == "shared" else v for k, v in vars(args).items()},
            "goals": {"single_rtf_ratio_max": SINGLE_RTF_GOAL, "throughput_ratio_min": THROUGHPUT_GOAL},
            "cpu_share_per_pass": cpu_shares,
            "single_summary": s_single,
            "batched_summary": s_batched,
            "single_passes": singles,
            "batched_passes": batched,
            "tables_markdown": {"single": t_single, "batched": t_batched},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
