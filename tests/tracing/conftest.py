"""Fresh in-memory OpenTelemetry providers per test, injected into the observer (a global provider
can be set once per process), and the span tree as plain data to compare exactly."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chatclient.tracing import OpenTelemetryObserver

VOLATILE = frozenset(
    {
        "gen_ai.response.time_to_first_chunk",
        "chatclient.confirmation.wait",
        "chatclient.retry.wait",
        "chatclient.confirmation.id",
        "gen_ai.response.id",
    }
)
"""Values that differ per run (times, a hash of a random nonce, the scripted model's reply ids from
a process-wide counter): compared as ``"<set>"``."""


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    tracer_provider: TracerProvider
    reader: InMemoryMetricReader
    meter_provider: MeterProvider

    def observer(self, **kwargs: Any) -> OpenTelemetryObserver:
        return OpenTelemetryObserver(tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **kwargs)

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def tree(self) -> list[dict[str, Any]]:
        return tree(self.spans())

    def metrics(self) -> dict[str, list[Any]]:
        """Metric name → its data points."""
        found: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(exporter, tracer_provider, reader, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def _value(key: str, value: Any) -> Any:
    if key in VOLATILE:
        return "<set>"
    return list(value) if isinstance(value, tuple) else value


def _attributes(attributes: Any) -> dict[str, Any]:
    return {key: _value(key, value) for key, value in (attributes or {}).items()}


def node(span: ReadableSpan) -> dict[str, Any]:
    out: dict[str, Any] = {"name": span.name, "kind": span.kind.name, "attributes": _attributes(span.attributes)}
    if span.status.status_code.name != "UNSET":
        out["status"] = span.status.status_code.name
    if span.events:
        out["events"] = [(event.name, _attributes(event.attributes)) for event in span.events]
    if span.links:
        out["links"] = [_attributes(link.attributes) for link in span.links]
    return out


def tree(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Roots with their ``children`` (each list in start order), one trace or several."""
    ids = {span.context.span_id for span in spans}
    nodes = {span.context.span_id: node(span) for span in spans}
    roots: list[dict[str, Any]] = []
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        if parent in ids:
            nodes[parent].setdefault("children", []).append(nodes[span.context.span_id])
        else:
            roots.append(nodes[span.context.span_id])
    return roots
