"""Print the figures the test run recorded in tests/artifacts, with the machine, as one block.

CI runs this after the tests so that its log carries the browser's time to first sound and the
memory soak's figures from a machine that runs nothing else (they go into docs/benchmarks-log.md).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parent.parent / "tests" / "artifacts"
ISA = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")


def cpu_line() -> str:
    model, flags = platform.processor() or "?", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, ISA: {' '.join(f for f in ISA if f in flags) or 'none of ' + '/'.join(ISA)}"


def main() -> None:
    print("machine:", cpu_line(), "| load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    gaps = ARTIFACTS / "stream_gaps.json"
    if gaps.exists():
        d = json.loads(gaps.read_text())
        print(
            "browser stream: time to first sound {} ms, engine first audio {} ms, player started {} ms; "
            "inserted {} ms, sent audio aligned {}, stalls after start {}".format(
                d.get("time_to_first_sound_ms"), d.get("engine_first_audio_ms"), d.get("time_to_play_ms"),
                d.get("gaps", {}).get("inserted_total_ms"), d.get("gaps", {}).get("aligned_fraction"),
                d.get("stalls_after_start"),
            )
        )
    soak = ARTIFACTS / "soak_rss.json"
    if soak.exists():
        print("memory soak:", soak.read_text().replace("\n", " "))


if __name__ == "__main__":
    main()
