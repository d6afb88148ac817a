"""Cost of the API's response formats: encode CPU per audio second, time to first encoded bytes, ffmpeg start.

No model: a real speech clip (tts_app/assets/voices/lj_female_us.wav, 22,050 Hz) is fed in 100 ms
chunks, paced at 10x real time (about the engine's pace on 2 cores), through each format's
streaming encoder, as the API does. Run: python -m benchmarks.api_formats
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import time
from collections.abc import AsyncIterator

import numpy as np
import soundfile as sf

from tts_app.audio.formats import FORMATS, open_encoder
from tts_app.assets import BUILTIN_VOICES_DIR

CLIP = BUILTIN_VOICES_DIR / "lj_female_us.wav"
CHUNK_S = 0.1
PACE = 10.0  # audio seconds fed per wall second


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


async def _paced(audio_T: np.ndarray, rate: int) -> AsyncIterator[np.ndarray]:
    step = int(CHUNK_S * rate)
    for start in range(0, len(audio_T), step):
        yield audio_T[start : start + step]
        await asyncio.sleep(CHUNK_S / PACE)


async def _one(name: str, audio_T: np.ndarray, rate: int) -> tuple[float, float, int]:
    """(seconds to the first bytes, CPU seconds per audio second, bytes)."""
    cpu0, t0 = _cpu_s(), time.perf_counter()
    first, size = None, 0
    async for data in open_encoder(name, rate).stream(_paced(audio_T, rate)):
        first = time.perf_counter() - t0 if first is None else first
        size += len(data)
    return first or 0.0, (_cpu_s() - cpu0) / (len(audio_T) / rate), size


def _start_s(exe: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([exe, "-hide_banner", "-version"], capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    print(subprocess.run(["lscpu"], capture_output=True, text=True).stdout.split("Flags:")[0].strip())
    flags = subprocess.run(["lscpu"], capture_output=True, text=True).stdout.split("Flags:")[-1].split()
    print("ISA:", " ".join(f for f in flags if f.startswith(("avx", "sse4", "fma"))))
    audio_T, rate = sf.read(CLIP, dtype="float32")
    print(f"clip {len(audio_T) / rate:.2f} s at {rate} Hz, {CHUNK_S * 1000:.0f} ms chunks at {PACE:g}x real time")
    print("| format | first bytes (s) | CPU s per audio s | kbit/s |")
    print("|---|---|---|---|")
    for name in FORMATS:
        first, cpu, size = asyncio.run(_one(name, audio_T, rate))
        print(f"| {name} | {first:.3f} | {cpu:.4f} | {size * 8 / 1000 / (len(audio_T) / rate):.0f} |")
    import shutil

    import imageio_ffmpeg

    for label, exe in (("system", shutil.which("ffmpeg")), ("imageio-ffmpeg", imageio_ffmpeg.get_ffmpeg_exe())):
        if exe:
            print(f"ffmpeg start ({label}, {exe}): median {_start_s(exe) * 1000:.0f} ms of 5")


if __name__ == "__main__":
    main()
