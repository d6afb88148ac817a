"""First audio of OpenAI's speech events against the plain stream (issue 48, item 12).

Starts ``python app.py``, warms it, then alternates plain streamed requests (``stream_format`` audio) and
SSE requests (``stream_format`` sse) for the same text and format, one at a time, and takes for each the
seconds from sending to the first audio byte (plain: the first body byte after a WAV's 44-byte header;
SSE: the first ``speech.audio.delta`` event). Prints the CPU, the medians per format and the ratio
SSE / plain (alternation puts both under the same load).

    python benchmarks/sse_first_delta.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.voice_similarity import cpu_name  # noqa: E402
from tests.support.app_server import serve_app  # noqa: E402

TEXT = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."


def first_audio_s(http: httpx.Client, fmt: str, sse: bool) -> float:
    body = {"model": "gpt-4o-mini-tts", "input": TEXT, "voice": "alloy", "response_format": fmt,
            "stream_format": "sse" if sse else "audio", "stream": True}  # fmt: skip
    skip = 44 if fmt == "wav" and not sse else 0
    start = time.perf_counter()
    with http.stream("POST", "/v1/audio/speech", json=body) as response:
        response.raise_for_status()
        if sse:
            for line in response.iter_lines():
                if line.startswith("data:") and "speech.audio.delta" in line:
                    return time.perf_counter() - start
        got = 0
        for piece in response.iter_bytes():
            got += len(piece)
            if got > skip:
                return time.perf_counter() - start
    raise RuntimeError("no audio")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])
    print(cpu_name(), "flags:", " ".join(f for f in flags if f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                                                  "avx512_vnni", "avx512_bf16", "amx_bf16")))
    with tempfile.TemporaryDirectory() as tmp, serve_app(Path(tmp) / "server.log") as (base, _process):
        with httpx.Client(base_url=base, timeout=120) as http:
            while http.get("/readyz").status_code != 200:
                time.sleep(0.5)
            for fmt in ("pcm", "mp3", "wav"):
                first_audio_s(http, fmt, False), first_audio_s(http, fmt, True)  # warm
                plain, sse = [], []
                for _ in range(args.rounds):
                    plain.append(first_audio_s(http, fmt, False))
                    sse.append(first_audio_s(http, fmt, True))
                p, s = statistics.median(plain), statistics.median(sse)
                print(f"{fmt}: plain first audio median {p * 1000:.1f} ms, sse first delta median {s * 1000:.1f} ms, "
                      f"ratio {s / p:.2f} ({args.rounds} rounds each, alternating)")


if __name__ == "__main__":
    main()
