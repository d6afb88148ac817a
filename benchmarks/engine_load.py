"""The engine under concurrent load, beside stock piper serving the same requests one at a time.

Clients are threads in a closed loop: each submits its next sentence once the
previous one has finished, a fixed number of requests each. The engine streams
(time to first audio = first chunk seen by the client); stock piper is one
worker serving the same request stream FIFO, so its time to first audio is
queue wait plus its first sentence (piper yields a chunk a sentence). For every client count, stock piper and
the engine run back to back in the same process.

    python benchmarks/engine_load.py [--shared PATH]
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import common
from tts_app.engine import Engine
from tts_app.backends.params import SpeechParams

NAME = "engine_load"
DEFAULT_BATCH = 32  # $TTS_APP_ENGINE_SLOTS default (the engine reads the setting when max_batch_size is None)
DEFAULT_THREADS = 2
GOAL_CLIENTS, GOAL_RATIO, GOAL_P95_TTFA_S = 16, 1.3, 1.0
GOAL_SINGLE_TTFA_S, SINGLE_WORDS = 0.25, 30


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--passes", type=int, default=2, help="passes of the client sweep (order alternates)")
    parser.add_argument("--min-requests", type=int, default=48, help="requests per run at least (split over clients)")
    parser.add_argument("--min-per-client", type=int, default=3)
    parser.add_argument("--sweep-batch", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--sweep-threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sweep-passes", type=int, default=2)
    parser.add_argument("--single-repeats", type=int, default=10)
    parser.add_argument("--precision", choices=["exact", "fast"], default="exact", help="the engine's precision (tts_app/models/piper/precision.py)")
    parser.add_argument("--single-only", action="store_true",
                        help=f"only the one-client {SINGLE_WORDS}-word time to first audio (results/{NAME}_single.json)")


@dataclass(frozen=True)
class Served:
    """One request as its client saw it."""

    ttfa_s: float
    total_s: float
    audio_s: float


Serve = Callable[[str, int], Served]


# -- the two servers ----------------------------------------------------------------
def stock_server(voice: Any, pool: ThreadPoolExecutor) -> Serve:
    """Stock piper behind one FIFO worker: a request waits for all before it, then gets its audio a
    sentence at a time (time to first audio: the wait plus its first sentence's chunk)."""

    def serve(text: str, seed: int) -> Served:
        t0 = time.perf_counter()
        timed = pool.submit(common.stock_synthesize, voice, text).result()
        total = time.perf_counter() - t0
        return Served(total - timed.wall_s + timed.first_s, total, timed.audio_s)

    return serve


def engine_server(engine: Any) -> Serve:
    """The engine, streaming: time to first audio is the first chunk the client receives."""

    def serve(text: str, seed: int) -> Served:
        t0 = time.perf_counter()
        handle = engine.submit(text, SpeechParams(seed=seed))
        first, samples = float("nan"), 0
        for chunk in handle:
            if samples == 0 and chunk.size:
                first = time.perf_counter() - t0
            samples += chunk.size
        return Served(first, time.perf_counter() - t0, samples / engine.sample_rate)

    return serve


PRECISION = ["exact"]  # set from --precision in main(); every engine of the run uses it


def make_engine(threads: int, max_batch_size: int) -> Any:
    engine = Engine(common.load_backend(threads, PRECISION[0]), max_batch_size=max_batch_size)
    engine.submit("Warm up.", SpeechParams(seed=0)).result()
    return engine


# -- load ------------------------------------------------------------------------------
def requests_per_client(n_clients: int, min_requests: int, min_per_client: int) -> int:
    return max(min_per_client, math.ceil(min_requests / n_clients))


def run_load(serve: Serve, sentences: Sequence[str], n_clients: int, per_client: int) -> dict[str, Any]:
    """Closed loop: client i sends sentence (i + k * n_clients) for k = 0..per_client-1."""

    def client(i: int) -> list[Served]:
        return [serve(sentences[(i + k * n_clients) % len(sentences)], 1000 * i + k) for k in range(per_client)]

    t0, cpu0 = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=n_clients) as pool:
        served = [s for per in pool.map(client, range(n_clients)) for s in per]
    wall = time.perf_counter() - t0
    # Cores this process got (2.0 = the whole machine); stock piper's spinning onnxruntime threads count too.
    cpu_share = (time.process_time() - cpu0) / wall
    return summarize(served, wall) | {"clients": n_clients, "requests": len(served), "cpu_share": cpu_share}


def summarize(served: Sequence[Served], wall_s: float) -> dict[str, float]:
    ttfa = [s.ttfa_s for s in served]
    total = [s.total_s for s in served]
    audio = sum(s.audio_s for s in served)
    return {
        "wall_s": wall_s,
        "audio_s": audio,
        "throughput": audio / wall_s,
        "ttfa_p50_s": common.percentile(ttfa, 50),
        "ttfa_p95_s": common.percentile(ttfa, 95),
        "total_p50_s": common.percentile(total, 50),
        "total_p95_s": common.percentile(total, 95),
    }


def engine_run(threads: int, batch: int, sentences: Sequence[str], n_clients: int, per_client: int) -> dict[str, Any]:
    """One load run on a fresh engine; its own stats ride along."""
    engine = make_engine(threads, batch)
    try:
        result = run_load(engine_server(engine), sentences, n_clients, per_client)
        stats = engine.stats()
    finally:
        engine.close()
    return result | {"threads": threads, "max_batch_size": batch, "mean_batch": stats["mean_batch"], "mean_step_s": stats["mean_step_s"]}


# -- the three parts ---------------------------------------------------------------------
def client_pass(stock: Serve, sentences: Sequence[str], n: int, per: int, flip: bool) -> dict[str, Any]:
    """Stock and engine (defaults) back to back at ``n`` clients; ``flip`` runs the engine first."""
    order = ("engine", "stock") if flip else ("stock", "engine")
    runs = {
        name: run_load(stock, sentences, n, per) if name == "stock" else engine_run(DEFAULT_THREADS, DEFAULT_BATCH, sentences, n, per)
        for name in order
    }
    return runs | {"ratio": runs["engine"]["throughput"] / runs["stock"]["throughput"]}


def _median_run(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Field-wise median of numeric figures over passes."""
    return {k: common.median([r[k] for r in runs]) if isinstance(v, float) else v for k, v in runs[0].items()}


def client_sweep(stock: Serve, sentences: Sequence[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """At every client count, ``passes`` interleaved stock/engine pairs; medians over passes."""
    passes: dict[int, list[dict[str, Any]]] = {n: [] for n in args.clients}
    for i in range(args.passes):
        for n in args.clients:
            per = requests_per_client(n, args.min_requests, args.min_per_client)
            passes[n].append(client_pass(stock, sentences, n, per, flip=i % 2 == 1))
            p = passes[n][-1]
            print(f"pass {i + 1}, {n} clients: stock {p['stock']['throughput']:.2f} / engine {p['engine']['throughput']:.2f} audio s per s", flush=True)
    return [
        {
            "clients": n,
            "per_client": requests_per_client(n, args.min_requests, args.min_per_client),
            "stock": _median_run([p["stock"] for p in ps]),
            "engine": _median_run([p["engine"] for p in ps]),
            "ratio": common.median([p["ratio"] for p in ps]),
            "passes": ps,
        }
        for n, ps in passes.items()
    ]


def config_sweep(voices: dict[str, Serve], sentences: Sequence[str], args: argparse.Namespace) -> dict[str, Any]:
    """At GOAL_CLIENTS: every max_batch_size, then threads, ``sweep_passes`` times.

    The order reverses between passes, and stock piper runs before every pass
    and after the last; each configuration's figures are medians over passes.
    """
    per = requests_per_client(GOAL_CLIENTS, args.min_requests, args.min_per_client)
    grid_configs = [(DEFAULT_THREADS, b) for b in args.sweep_batch]
    thread_configs = [(t, DEFAULT_BATCH) for t in args.sweep_threads]
    # A configuration in both lists (the defaults) runs once and is reported in both.
    configs = list(dict.fromkeys(grid_configs + thread_configs))
    stock_runs: dict[str, list[dict[str, Any]]] = {key: [] for key in voices}
    runs: dict[tuple, list[dict[str, Any]]] = {c: [] for c in configs}
    for i in range(args.sweep_passes):
        for key, serve in voices.items():
            stock_runs[key].append(run_load(serve, sentences, GOAL_CLIENTS, per))
        for c in configs[:: -1 if i % 2 else 1]:
            runs[c].append(engine_run(*c, sentences, GOAL_CLIENTS, per))
    for key, serve in voices.items():
        stock_runs[key].append(run_load(serve, sentences, GOAL_CLIENTS, per))
    stock_tp = {key: common.median([r["throughput"] for r in rs]) for key, rs in stock_runs.items()}
    merged = {c: _median_run(rs) | {"ratio": common.median([r["throughput"] for r in rs]) / stock_tp["stock"]} for c, rs in runs.items()}
    grid, threads = [merged[c] for c in grid_configs], [merged[c] for c in thread_configs]
    return {"per_client": per, "stock": stock_runs, "stock_throughput": stock_tp, "grid": grid, "threads": threads, "best": best_config(grid), "passes": [rs for rs in runs.values()]}


def best_config(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Highest throughput among runs meeting the p95 TTFA goal; else the lowest p95 TTFA."""
    if not runs:
        raise ValueError("the sweep ran no configuration")
    ok = [r for r in runs if r["ttfa_p95_s"] <= GOAL_P95_TTFA_S]
    return max(ok, key=lambda r: r["throughput"]) if ok else min(runs, key=lambda r: r["ttfa_p95_s"])


def single_client_ttfa(voice: Any, sentences: Sequence[str], repeats: int) -> dict[str, Any]:
    """One client, a 30-word text: the engine's first chunk vs stock piper's first chunk (its first
    sentence: piper yields a chunk a sentence), interleaved; stock's whole synthesis beside them."""
    text = common.text_of_words(sentences, SINGLE_WORDS)
    engine = make_engine(DEFAULT_THREADS, DEFAULT_BATCH)
    serve = engine_server(engine)
    stock, stock_whole, ours = [], [], []
    try:
        for k in range(repeats):
            timed = common.stock_synthesize(voice, text)
            stock.append(timed.first_s)
            stock_whole.append(timed.wall_s)
            ours.append(serve(text, k).ttfa_s)
    finally:
        engine.close()
    return {
        "text": text,
        "words": len(text.split()),
        "engine_ttfa_p50_s": common.percentile(ours, 50),
        "engine_ttfa_p95_s": common.percentile(ours, 95),
        "stock_ttfa_p50_s": common.percentile(stock, 50),
        "stock_ttfa_p95_s": common.percentile(stock, 95),
        "stock_whole_p50_s": common.percentile(stock_whole, 50),
    }


# -- tables --------------------------------------------------------------------------------
def _pf(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def clients_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["clients", "requests", "system", "throughput (audio s/s)", "x stock (median of pass ratios)", "TTFA p50 (s)", "TTFA p95 (s)", "total p50 (s)", "total p95 (s)", "mean batch", "CPU cores used", "audio s per CPU s"]
    out = []
    for r in rows:
        for name, m, ratio in (("stock piper (FIFO)", r["stock"], 1.0), ("engine", r["engine"], r["ratio"])):
            out.append([r["clients"], m["requests"], name, m["throughput"], ratio, m["ttfa_p50_s"], m["ttfa_p95_s"], m["total_p50_s"], m["total_p95_s"], m.get("mean_batch", "-"), m["cpu_share"], m["throughput"] / m["cpu_share"]])
    return common.markdown_table(headers, out)


def sweep_table(runs: Sequence[dict[str, Any]]) -> str:
    headers = ["threads", "max_batch_size", "throughput (audio s/s)", "x stock", "TTFA p50 (s)", "TTFA p95 (s)", "total p95 (s)", "mean batch", "CPU cores used", "audio s per CPU s"]
    out = [
        [r["threads"], r["max_batch_size"], r["throughput"], r["ratio"], r["ttfa_p50_s"], r["ttfa_p95_s"], r["total_p95_s"], r["mean_batch"], r["cpu_share"], r["throughput"] / r["cpu_share"]]
        for r in runs
    ]
    return common.markdown_table(headers, out)


def goals_table(rows: Sequence[dict[str, Any]], single: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    at = next(r for r in rows if r["clients"] == GOAL_CLIENTS)
    goals = [
        {"goal": f"{GOAL_CLIENTS} clients: throughput >= {GOAL_RATIO}x stock", "measured": f"{at['ratio']:.2f}x", "ok": at["ratio"] >= GOAL_RATIO},
        {"goal": f"{GOAL_CLIENTS} clients: p95 TTFA <= {GOAL_P95_TTFA_S} s", "measured": f"{at['engine']['ttfa_p95_s']:.3f} s", "ok": at["engine"]["ttfa_p95_s"] <= GOAL_P95_TTFA_S},
        {"goal": f"1 client, {SINGLE_WORDS} words: TTFA <= {GOAL_SINGLE_TTFA_S} s (p50)", "measured": f"{single['engine_ttfa_p50_s']:.3f} s (p95 {single['engine_ttfa_p95_s']:.3f} s; stock piper's first sentence {single['stock_ttfa_p50_s']:.3f} s, whole text {single['stock_whole_p50_s']:.3f} s)", "ok": single["engine_ttfa_p50_s"] <= GOAL_SINGLE_TTFA_S},
    ]
    table = common.markdown_table(["goal", "measured", "result"], [[g["goal"], g["measured"], _pf(g["ok"])] for g in goals])
    return table, goals


def _single_only(voice: Any, sentences: Sequence[str], args: argparse.Namespace, info_before: dict[str, Any]) -> None:
    """The one-client figure alone: a minute where the whole benchmark takes many."""
    common.stock_synthesize(voice, sentences[0])  # warm-up
    single = single_client_ttfa(voice, sentences, args.single_repeats)
    for key, value in single.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    path = common.write_results(f"{NAME}_single", {
        "machine_before": info_before, "machine_after": common.machine_info(),
        "args": {k: str(v) if k == "shared" else v for k, v in vars(args).items()}, "single_client_30_words": single,
    })
    print(f"wrote {path}")


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    PRECISION[0] = args.precision
    info_before = common.machine_info()
    common.print_machine(info_before)
    sentences = common.load_sentences(args.shared)
    voice = common.load_stock_piper()
    if args.single_only:
        _single_only(voice, sentences, args, info_before)
        return
    voice_1thread = common.load_stock_piper(intra_op_threads=1)  # reference point, not the baseline
    for v in (voice, voice_1thread):
        common.stock_synthesize(v, sentences[0])  # warm-up
    # OpenVINO prepares kernels per input shape on first use (the model warms up its
    # typical shapes at load; the rest come with the first requests): one discarded
    # run per thread count, as a server that has been up for a while.
    cold = {t: engine_run(t, DEFAULT_BATCH, sentences, GOAL_CLIENTS, 2)["throughput"] for t in sorted({DEFAULT_THREADS, *args.sweep_threads})}
    print("warm-up runs (discarded), audio s per s:", {t: round(v, 2) for t, v in cold.items()}, flush=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        stock = stock_server(voice, pool)
        t0 = time.perf_counter()
        single = single_client_ttfa(voice, sentences, args.single_repeats)
        rows = client_sweep(stock, sentences, args)
        sweep = config_sweep({"stock": stock, "stock_1thread": stock_server(voice_1thread, pool)}, sentences, args)
        run_s = time.perf_counter() - t0
    t_goals, goals = goals_table(rows, single)
    t_clients = clients_table(rows)
    t_sweep = sweep_table(sweep["grid"] + sweep["threads"])
    best = sweep["best"]
    best_line = f"best at {GOAL_CLIENTS} clients: max_batch_size={best['max_batch_size']} ({best['throughput']:.2f} audio s/s, p95 TTFA {best['ttfa_p95_s']:.3f} s)"
    common.report(f"Goals (engine precision {args.precision}; {info_before['cpu_model']}, ISA {info_before['isa']})", t_goals)
    common.report(f"Clients (engine defaults: max_batch_size={DEFAULT_BATCH}, threads={DEFAULT_THREADS})", t_clients)
    tp = sweep["stock_throughput"]
    common.report(f"Sweep at {GOAL_CLIENTS} clients ({sweep['per_client']} requests each; stock {tp['stock']:.2f} audio s/s, stock with 1 intra-op thread {tp['stock_1thread']:.2f})", t_sweep)
    print(best_line)
    path = common.write_results(
        NAME,
        {
            "machine_before": info_before,
            "machine_after": common.machine_info(),
            "run_s": run_s,
            "warm_up_throughput": cold,
            "args": {k: str(v) if k == "shared" else v for k, v in vars(args).items()},
            "goals": goals,
            "single_client_30_words": single,
            "clients": rows,
            "sweep": sweep,
            "best": best_line,
            "tables_markdown": {"goals": t_goals, "clients": t_clients, "sweep": t_sweep},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
