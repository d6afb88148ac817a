"""benchmarks/gpu_check.py --tiny: the prepared GPU check's code paths (Qwen3-TTS, its codec per bucket, Chatterbox's
T3 and S3Gen flow in fixed shapes) run on CPU and write every field."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu_check.py"


def _load(monkeypatch):
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_check", module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_tiny_run_writes_every_section(tmp_path, monkeypatch):
    module = _load(monkeypatch)
    module.main(["--tiny", "--out", str(tmp_path)])
    got = json.loads((tmp_path / "gpu_check.json").read_text())
    assert got["env"]["device"] == "cpu"
    assert got["agreement"]["batched_vs_alone_eager"] == [1.0] * 4  # a row's tokens do not depend on its batch
    assert got["agreement"]["graphs_vs_eager"] == "no CUDA"
    assert set(got["ops"]) == {"1", "4"} and got["ops"]["4"]["all"] <= got["ops"]["1"]["all"]
    rows = got["throughput"]
    assert [(r["model"], r["batch"]) for r in rows] == [("tiny", 1), ("tiny", 4)]
    assert all(r["frames"] == 8 * r["batch"] and r["frames_per_s"] > 0 and r["cpu_s_per_wall_s"] > 0 for r in rows)
    assert set(got["first_audio"]["ms_median"]) == {"1", "2"}
    engine = got["engine"]
    assert [(r["policy"], r["streams"]) for r in engine] == [("fifo", 1), ("fifo", 2), ("deadline", 1), ("deadline", 2)]
    for r in engine:
        assert r["finished"] == r["streams"]
        assert {"first_audio_p50_s", "first_audio_p95_s", "stall_fraction", "audio_s_per_s"} <= set(r)
    codec = got["codec"]
    assert [r["batch"] for r in codec] == [1, 4]
    assert all(r["graph_ms"] == "no CUDA" and r["eager_ms"] > 0 and r["ragged_ms"] > 0 and r["x_real_time_eager"] > 0 for r in codec)
    chatterbox = got["chatterbox"]
    assert [r["rows"] for r in chatterbox] == [1, 2]
    for r in chatterbox:
        assert r["t3_tokens_per_s_eager"] > 0 and r["flow_ms_eager"] > 0 and r["vocoder_ms_per_row"] > 0 and r["audio_s_per_s"] > 0
        assert "t3_tokens_per_s_graph" not in r  # no CUDA: nothing captured


def test_only_runs_the_named_sections(tmp_path, monkeypatch):
    module = _load(monkeypatch)
    module.main(["--tiny", "--only", "codec", "--out", str(tmp_path)])
    got = json.loads((tmp_path / "gpu_check.json").read_text())
    assert set(got) == {"plan", "env", "codec", "seconds"}
    with pytest.raises(SystemExit):
        module.main(["--tiny", "--only", "codec,nope", "--out", str(tmp_path)])
