"""Torch ops dispatched from Python by one ``BatchedGenerator.decode`` call, counted with torch.profiler."""

from __future__ import annotations

from torch.profiler import ProfilerActivity, profile, record_function

from tts_app.models.qwen3.generator import BatchedGenerator, RowState


def ops_per_decode_call(gen: BatchedGenerator, states: list[RowState]) -> dict[str, int]:
    """One warm-up call, then one profiled call: {"all": every aten op, "top": those called from Python directly}.

    "top" are the ops whose parent is the call's own range (not another op): what the host dispatches.
    """
    gen.decode(states)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("decode_call"):
            gen.decode(states)
    ops = [e for e in prof.events() if e.name.startswith("aten::")]
    top = [e for e in ops if e.cpu_parent is not None and e.cpu_parent.name == "decode_call"]
    return {"all": len(ops), "top": len(top)}
