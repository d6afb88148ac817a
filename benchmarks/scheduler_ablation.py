"""Every rule earns its place (issue 49): the listener-first policy with each rule turned off in turn (its tunable
set to the value that disables it), on the simulated Piper-like CPU of stream_qos_sim.py at C = 14 and C = 37
audio-s/s (``--speed 2.75``), beside fifo. Rows: bursts of 0.75 and 1.5 x C, Poisson arrivals at 0.75 x C for 60 s;
per variant the glitch-free start p95, the stall fraction and the throughput (in C).

    python benchmarks/scheduler_ablation.py [--speeds 1 2.75]
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import replace
from typing import Any

import common
import stream_qos_sim as sim
from tts_app.engine.qos_settings import QosSettings

BASE = QosSettings(max_queue_wait_s=1e9)
VARIANTS: dict[str, tuple[str, QosSettings]] = {
    "deadline (all rules)": ("deadline", BASE),
    "no load check (load_margin inf)": ("deadline", replace(BASE, load_margin=math.inf)),
    "no skip, no held room (plenty_s inf)": ("deadline", replace(BASE, plenty_s=math.inf)),
    "no horizon (step_s inf)": ("deadline", replace(BASE, step_s=math.inf)),
    "usual windows, nobody in need (low_s 0)": ("deadline", replace(BASE, low_s=0.0)),
    "fifo": ("fifo", BASE),
}


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speeds", type=float, nargs="+", default=[1.0, 2.75])
    parser.add_argument("--seed", type=int, default=1)


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    rows: list[list[Any]] = []
    results: dict[str, Any] = {"runs": []}
    for speed in args.speeds:
        capacity, stream_s = sim._capacity(speed)
        rng = random.Random(args.seed)
        poisson, t = [], 0.0
        while (t := t + rng.expovariate(0.75 * capacity / stream_s)) <= 60.0:
            poisson.append(t)
        runs = [("burst 0.75 x C", [0.0] * round(0.75 * capacity)), ("burst 1.5 x C", [0.0] * round(1.5 * capacity)),
                ("Poisson 0.75 x C", poisson)]
        for label, arrivals in runs:
            for name, (policy, qos) in VARIANTS.items():
                s = sim._run(policy, qos, arrivals, speed)
                results["runs"].append({"capacity": capacity, "run": label, "variant": name, **s})
                rows.append([f"{capacity:.1f}", label, name, s["glitch_free_start_p95_s"], 100 * s["stall_fraction"],
                             s["throughput_audio_s_per_s"] / capacity])
                print(f"C={capacity:.1f} {label:17s} {name:40s} {s}", flush=True)
    path = common.write_results("scheduler_ablation", results)
    headers = ["C (audio-s/s)", "run", "variant", "glitch-free start p95 (s)", "stall (%)", "throughput (x C)"]
    common.report("Each rule off in turn, on the simulated Piper-like CPU", common.markdown_table(headers, rows))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
