"""Cold start: a fresh process's first 32 requests (16 clients, 2 each) against its warm throughput.

Each run is a new Python process: it creates ``Engine()`` (timed: model load and warm-up),
then serves the same 32-request closed-loop load three times; the first is the cold figure,
the median of the other two the warm one, so both see the same machine minutes apart.
Runs alternate between an empty model cache (a first start on a new machine) and the cache
the previous runs left (every later start: compiled graphs, logged shapes).

    python benchmarks/cold_start.py [--runs 3] [--precision exact]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import common

NAME = "cold_start"
CLIENTS, PER_CLIENT, GOAL = 16, 2, 0.9


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per cache state")
    parser.add_argument("--precision", choices=["exact", "fast"], default="exact")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)


def child(args: argparse.Namespace) -> None:
    """One fresh process: load, then three identical loads; prints one JSON line."""
    import engine_load

    from tts_app.engine import Engine

    sentences = common.load_sentences(args.shared)
    t0 = time.perf_counter()
    engine = Engine(precision=args.precision)
    load_s = time.perf_counter() - t0
    try:
        rounds = [engine_load.run_load(engine_load.engine_server(engine), sentences, CLIENTS, PER_CLIENT)["throughput"] for _ in range(3)]
    finally:
        engine.close()
    print(json.dumps({"load_s": load_s, "throughput": rounds}), flush=True)


def run_child(args: argparse.Namespace, cache_dir: str) -> dict[str, Any]:
    env = os.environ | {"TTS_APP_CACHE_DIR": cache_dir}
    cmd = [sys.executable, __file__, "--child", "--precision", args.precision, "--shared", str(args.shared)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    cold, warm = r["throughput"][0], common.median(r["throughput"][1:])
    return r | {"cold_over_warm": cold / warm}


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    if args.child:
        child(args)
        return
    info = common.machine_info()
    common.print_machine(info)
    results: dict[str, list[dict[str, Any]]] = {"empty cache": [], "cache from earlier runs": []}
    with tempfile.TemporaryDirectory() as kept:
        for i in range(args.runs):
            with tempfile.TemporaryDirectory() as empty:
                results["empty cache"].append(run_child(args, empty))
            results["cache from earlier runs"].append(run_child(args, kept))
            print(f"run {i + 1}: " + "; ".join(f"{k}: {v[-1]['cold_over_warm']:.2f} (load {v[-1]['load_s']:.1f} s)" for k, v in results.items()), flush=True)
    rows = []
    for state, runs in results.items():
        ratio = common.median([r["cold_over_warm"] for r in runs])
        rows.append([state, len(runs), common.median([r["load_s"] for r in runs]), common.median([r["throughput"][0] for r in runs]), common.median([common.median(r["throughput"][1:]) for r in runs]), ratio, "PASS" if ratio >= GOAL else "FAIL"])
    headers = ["model cache", "fresh processes", "load + warm-up (s)", "first 32 requests (audio s/s)", "warm (audio s/s)", "first 32 / warm (median)", f"goal >= {GOAL}"]
    table = common.markdown_table(headers, rows)
    common.report(f"Cold start, precision {args.precision} ({info['cpu_model']}, ISA {info['isa']})", table)
    path = common.write_results(f"{NAME}_{args.precision}", {"machine": info, "machine_after": common.machine_info(), "args": {k: str(v) for k, v in vars(args).items()}, "runs": results, "table_markdown": table})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
