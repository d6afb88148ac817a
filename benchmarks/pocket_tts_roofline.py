"""How far Pocket TTS's stages are from this CPU's limit (issue 47's goals), in one run: per step, the flow LM's and
Mimi's FLOPs (torch.utils.flop_counter.FlopCounterMode) and bytes (the weights each reads once per latent, plus the
flow LM's KV cache), their time at 1 and 8 rows on one intra-op thread (each stage's thread in the server), and the
fraction of this machine's measured GEMM peak (a large square float32 matmul, same run, one thread) they reach; the
same peak in bfloat16 says what a bf16 path would give where the CPU has it (AVX512-BF16 or AMX).

    python benchmarks/pocket_tts_roofline.py [--ckpt DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pocket_tts_new_clip import released_size  # noqa: E402
from benchmarks.pocket_tts_throughput import machine  # noqa: E402
from tts_app.models.layers import small_gemm  # noqa: E402
from tts_app.models.pocket_tts.generator import PocketGenerator, seeded_noise  # noqa: E402
from tts_app.models.pocket_tts.voice import VoiceState  # noqa: E402
from tts_app.models.pocket_tts.weights import load_pocket  # noqa: E402

PROMPT, TEXT_TOKENS = 125, 30  # a 10 s clip's prompt, a sentence's tokens


def _best(fn, repeats: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def peak_gflops(dtype: torch.dtype, n: int = 2048) -> float:
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    return 2 * n ** 3 / _best(lambda: a @ b, 3) / 1e9


def _rows(model, rows: int) -> tuple[PocketGenerator, list]:
    gen = PocketGenerator(model, max_batch=8, max_len=512)
    flow = model.flow_lm
    heads, hd = flow.transformer.layers[0].self_attn.num_heads, flow.transformer.layers[0].self_attn.head_dim
    voice = VoiceState(tuple((torch.randn(heads, PROMPT, hd), torch.randn(heads, PROMPT, hd)) for _ in flow.transformer.layers))
    made = gen.prefill([voice] * rows, [list(range(1, TEXT_TOKENS + 1))] * rows, [400] * rows, [2] * rows,
                       [seeded_noise(i, gen.ldim, 0.3) for i in range(rows)])
    return gen, made


def _param_bytes(module: torch.nn.Module, skip: tuple[str, ...] = ()) -> int:
    return sum(p.numel() * p.element_size() for n, p in module.named_parameters() if not n.startswith(skip))


def stage(model, rows: int) -> dict:
    gen, made = _rows(model, rows)
    gen.step(made)  # the first latent (ready from the prefill)
    route = small_gemm._choice.get("openblas", False)
    small_gemm._choice["openblas"] = False  # counted on torch's path: OpenBLAS's products (numpy) are not seen
    with FlopCounterMode(display=False) as flow_count:
        gen.step(made)
    for r in made:
        r.decoded = len(r.latents) - 1  # one latent each to decode
    with FlopCounterMode(display=False) as mimi_count:
        gen.decode(made)
    small_gemm._choice["openblas"] = route
    flow_s = _best(lambda: gen.step(made))
    mimi_s = _best(lambda: [setattr(r, "decoded", len(r.latents) - 1) for r in made] and gen.decode(made))  # a latent each
    flow = model.flow_lm
    kv_bytes = 2 * rows * len(flow.transformer.layers) * (PROMPT + TEXT_TOKENS + 8) * flow.transformer.layers[0].self_attn.attn_dim * 4
    flow_bytes = _param_bytes(flow, ("conditioner.", "speaker_proj_weight")) + kv_bytes
    mimi_bytes = _param_bytes(model.mimi, ("encoder.", "encoder_transformer.", "downsample."))
    return {"rows": rows,
            "flow_lm": {"flops": flow_count.get_total_flops(), "bytes": flow_bytes, "s": round(flow_s, 5)},
            "mimi": {"flops": mimi_count.get_total_flops(), "bytes": mimi_bytes, "s": round(mimi_s, 5)}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", type=Path)
    ap.add_argument("--root", type=Path, default=Path("/tmp/pocket_tts_new_clip"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)  # each stage's thread in the server
    small_gemm.calibrate("auto")
    model = load_pocket(args.ckpt or released_size(args.root / "released-size"))
    peak32, peak16 = peak_gflops(torch.float32), peak_gflops(torch.bfloat16)
    stages = []
    with torch.no_grad():
        for rows in (1, 8):
            found = stage(model, rows)
            for name in ("flow_lm", "mimi"):
                s = found[name]
                s["gflops_per_s"] = round(s["flops"] / s["s"] / 1e9, 2)
                s["of_fp32_peak"] = round(s["gflops_per_s"] / peak32, 3)
                s["flops_per_byte"] = round(s["flops"] / s["bytes"], 2)
                s["gb_per_s"] = round(s["bytes"] / s["s"] / 1e9, 2)
            stages.append(found)
    report = {"machine": machine(), "gemm_route": "openblas" if small_gemm._choice.get("openblas") else "torch",
              "peak_gflops_fp32_1thread": round(peak32, 1), "peak_gflops_bf16_1thread": round(peak16, 1), "stages": stages}
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
