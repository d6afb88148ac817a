"""``GET /metrics``: the engines' figures in the Prometheus text format, one label per model.

Read at scrape time from each loaded engine (nothing is kept here); a model not loaded yet has no
series. The route takes no input, so it reveals only aggregates (no request, text or client).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Iterator

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

router = APIRouter()

_GAUGES = (
    ("tts_queue_depth", "Requests waiting in the engine's queue.", "queued"),
    ("tts_admitted_streams", "Streams admitted and being made now.", "streams_admitted"),
    ("tts_estimated_capacity_audio_seconds_per_second", "Seconds of audio a second the engine is estimated to make at its admitted load.", "capacity_audio_s_per_s"),
)
_HISTOGRAMS = (
    ("tts_time_to_first_audio_seconds", "Streamed requests: submission to first audio.", "ttfa"),
    ("tts_stall_seconds", "Finished streams: how long a 1x player started at the first chunk waited for audio.", "stall"),
)


def _histogram(name: str, doc: str, per_model: dict[str, Any]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=["model"])
    for model, h in per_model.items():
        buckets = [(repr(float(b)), n) for b, n in zip(h.bounds, h.counts)] + [("+Inf", h.count)]
        family.add_metric([model], buckets, h.total)
    return family


class EngineCollector:
    """A prometheus_client collector over ``figures``: model id -> Engine.qos_figures()."""

    def __init__(self, figures: dict[str, dict[str, Any]]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        for name, doc, key in _HISTOGRAMS:
            yield _histogram(name, doc, {m: f[key] for m, f in self.figures.items()})
        for name, doc, key in _GAUGES:
            gauge = GaugeMetricFamily(name, doc, labels=["model"])
            for model, f in self.figures.items():
                gauge.add_metric([model], float(f[key]))
            yield gauge
        produced = CounterMetricFamily("tts_audio_produced_seconds", "Seconds of audio the engine has made.", labels=["model"])
        for model, f in self.figures.items():
            produced.add_metric([model], float(f["audio_produced_s"]))
        yield produced


class DocumentParseCollector:
    """Documents read in (parsed) since start and the most parsed at once (documents/parse_gate.py)."""

    def __init__(self, figures: dict[str, int]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("tts_documents_parsed", "Documents read in (parsed) since start.", value=self.figures["parsed"])
        yield GaugeMetricFamily("tts_document_parses_running", "Documents being read in now.", value=self.figures["running"])
        yield GaugeMetricFamily("tts_document_parses_most_at_once", "The most documents read in at once since start.",
                                value=self.figures["most_at_once"])  # fmt: skip


def _scrape() -> bytes:
    from tts_app.catalog.engines import loaded_engines  # heavy: the engine package, on the first scrape

    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector({m: e.qos_figures() for m, e in loaded_engines().items()}))
    gate = sys.modules.get("tts_app.documents.parse_gate")  # loaded with the first document; not loaded here for a scrape
    if gate is not None:
        registry.register(DocumentParseCollector(gate.GATE.figures()))
    return generate_latest(registry)


@router.get("/metrics", include_in_schema=False)
async def metrics() -> Response:
    return Response(await asyncio.to_thread(_scrape), media_type=CONTENT_TYPE_LATEST)
