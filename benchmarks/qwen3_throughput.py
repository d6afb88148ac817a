"""Qwen3-TTS batched generation throughput (meant for a GPU; ``--tiny`` checks it runs on CPU).

A randomly initialised full-size model (0.6B or 1.7B shapes) with EOS suppressed, so every
request yields a fixed number of frames. For each batch size, runs ``2 x batch`` requests of
varied length through an engine-like loop (admit into free slots, step, release) and reports
talker frames/s, audio real-time factor (wall time / audio time, codec included), and the
effect of CUDA graphs and of compaction (off = finished rows keep their slot until the whole
batch is done, i.e. static batching).

    python benchmarks/qwen3_throughput.py --model 0.6b --batch-sizes 1,2,4,8,16,32
    python benchmarks/qwen3_throughput.py --tiny
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from tts_app.models.qwen3.codec import CodecDecoder  # noqa: E402
from tts_app.models.qwen3.config import CodecConfig, CodePredictorConfig, Qwen3TTSConfig, TalkerConfig  # noqa: E402
from tests.support.qwen3_talker import tiny_configs  # noqa: E402  (the tests' miniature)
from tts_app.models.qwen3.generator import BatchedGenerator  # noqa: E402
from tts_app.models.qwen3.prompt import PromptTokens, build_prompt  # noqa: E402
from tts_app.models.qwen3.sampling import SamplingParams  # noqa: E402
from tts_app.models.qwen3.streaming import decode_new_audio  # noqa: E402
from tts_app.models.qwen3.talker import Talker  # noqa: E402

SIZES = {
    "0.6b": dict(hidden_size=1024, intermediate_size=3072),
    "1.7b": dict(hidden_size=2048, intermediate_size=6144),
}


def build(args: argparse.Namespace) -> tuple[Qwen3TTSConfig, Talker, CodecDecoder]:
    if args.tiny:
        cfg, codec_cfg = tiny_configs(num_code_groups=4)
    else:
        cfg = Qwen3TTSConfig(talker_config=TalkerConfig(**SIZES[args.model], code_predictor_config=CodePredictorConfig()))
        codec_cfg = CodecConfig()
    torch.manual_seed(0)
    dev, dt = torch.device(args.device), getattr(torch, args.dtype)
    with torch.device(dev):
        talker = Talker(cfg.talker_config).to(dt).eval()
        codec = CodecDecoder(codec_cfg).to(dt).eval()
    return cfg, talker, codec


def run(cfg, talker, codec, batch: int, frames: int, graphs: bool, compaction: bool, args) -> dict:
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=batch, max_seq_len=args.max_seq_len,
                           frames_per_step=args.frames_per_step, use_cuda_graphs=graphs)
    prompt, tail = build_prompt(talker, cfg, PromptTokens([1, 2, 3], list(range(100, 100 + args.text_tokens))))
    # Lengths between frames/2 and frames: with compaction off, short rows idle in their slot.
    lengths = [frames // 2 + (frames // 2) * i // max(1, 2 * batch - 1) for i in range(2 * batch)]
    queue = list(enumerate(lengths))
    live, total_frames = [], 0

    def sync() -> None:
        if gen.device.type == "cuda":
            torch.cuda.synchronize()

    def admit() -> None:
        if not compaction and live:
            return
        take = queue[: gen.free_slots]
        del queue[: len(take)]
        if take:
            params = [SamplingParams(max_new_tokens=n, min_new_tokens=n) for _, n in take]  # EOS suppressed
            live.extend(gen.prefill([prompt] * len(take), [tail] * len(take), params, [i for i, _ in take]))

    # Warm-up (captures the graphs it needs), not timed.
    admit()
    gen.decode(live)
    for s in live:
        gen.release(s)
    live.clear()
    queue = list(enumerate(lengths))
    sync()
    t0, c0 = time.perf_counter(), time.process_time()
    while queue or live:
        admit()
        new = gen.decode(live)
        total_frames += sum(n.shape[0] for n in new)
        decode_new_audio(codec, [s.codes for s in live], [n.shape[0] for n in new], args.left_context)
        if compaction:
            for s in [s for s in live if s.done]:
                gen.release(s)
            live[:] = [s for s in live if not s.done]
        elif all(s.done for s in live):
            for s in live:
                gen.release(s)
            live.clear()
    sync()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    audio_s = total_frames * codec.samples_per_frame / codec.cfg.output_sample_rate
    return dict(batch=batch, cuda_graphs=graphs and gen.graphs is not None, compaction=compaction,
                frames=total_frames, seconds=round(wall, 3), frames_per_s=round(total_frames / wall, 1),
                rtf=round(wall / audio_s, 4), cpu_s=round(cpu, 3), cpu_s_per_audio_s=round(cpu / audio_s, 4))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny random model, CPU-friendly smoke run")
    ap.add_argument("--model", choices=sorted(SIZES), default="0.6b")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default=None, help="float32 / bfloat16 (default: bf16 on CUDA, fp32 on CPU)")
    ap.add_argument("--batch-sizes", default="1,2,4,8,16,32")
    ap.add_argument("--frames", type=int, default=240, help="longest request in frames (12.5 frames = 1 s)")
    ap.add_argument("--frames-per-step", type=int, default=4)
    ap.add_argument("--left-context", type=int, default=25)
    ap.add_argument("--text-tokens", type=int, default=40)
    ap.add_argument("--max-seq-len", type=int, default=1024)
    ap.add_argument("--compaction", choices=("both", "on", "off"), default="both")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    if args.tiny:
        args.batch_sizes = "1,2,4" if args.batch_sizes == ap.get_default("batch_sizes") else args.batch_sizes
        args.frames = min(args.frames, 24)
        args.max_seq_len = min(args.max_seq_len, 256)
    args.dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    logging.basicConfig(level=logging.WARNING)

    cfg, talker, codec = build(args)
    graph_modes = [False, True] if args.device.startswith("cuda") and torch.cuda.is_available() else [False]
    rows = []
    print(f"{'batch':>5} {'graphs':>6} {'compact':>7} {'frames':>6} {'s':>7} {'frames/s':>9} {'RTF':>7} {'CPU s/audio s':>13}")
    for b in [int(x) for x in args.batch_sizes.split(",")]:
        for graphs in graph_modes:
            for compaction in {"both": (True, False), "on": (True,), "off": (False,)}[args.compaction]:
                r = run(cfg, talker, codec, b, args.frames, graphs, compaction, args)
                rows.append(r)
                print(f"{r['batch']:>5} {str(r['cuda_graphs']):>6} {str(r['compaction']):>7} {r['frames']:>6} "
                      f"{r['seconds']:>7} {r['frames_per_s']:>9} {r['rtf']:>7} {r['cpu_s_per_audio_s']:>13}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
