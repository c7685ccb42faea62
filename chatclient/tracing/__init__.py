"""OpenTelemetry GenAI tracing and metrics for chatclient.

Turn it on per client::

    pip install 'chatclient[otel]'          # opentelemetry-api; add the SDK and an exporter
    from chatclient.tracing import OpenTelemetryObserver
    client = ChatClient.builder(model).observers(OpenTelemetryObserver()).build()

Why this shape: the observer seam (``chatclient.observation``) is where every call, advisor, model
round, tool, retry and confirmation step is already reported, so tracing is one observer and not a
patch over the library; a client without it pays nothing, and a client with it but no recording
tracer provider pays one no-op span per call (``benchmarks``: S1 with and without, one run).
``opentelemetry-api`` is an optional extra rather than a dependency, and is imported only when an
``OpenTelemetryObserver`` is built: ``import chatclient`` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .observer import OpenTelemetryObserver, capture_from_env

__all__ = ["OpenTelemetryObserver", "capture_from_env"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import observer

        return getattr(observer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
