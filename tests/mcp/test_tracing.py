"""The SDK's per-message OpenTelemetry spans: dropped when no tracer provider is installed (they
would go nowhere and cost every call), kept when the host installed one before the server is built."""

from __future__ import annotations

import subprocess
import sys

from mcp.server._otel import OpenTelemetryMiddleware

from taskgate.mcp.server import _build


def test_no_tracer_provider_no_span_middleware() -> None:
    server = _build()  # as the process builds it (root logger left alone)
    assert not any(isinstance(m, OpenTelemetryMiddleware) for m in server.middleware)
    assert server.middleware  # the SDK's other middleware (request state) stays


KEEPS_SPANS = """
from opentelemetry import trace

class Provider(trace.TracerProvider):
    def get_tracer(self, *args, **kwargs):
        return trace.NoOpTracer()

trace.set_tracer_provider(Provider())
from mcp.server._otel import OpenTelemetryMiddleware
from taskgate.mcp.server import _build
print(sum(isinstance(m, OpenTelemetryMiddleware) for m in _build().middleware))
"""


def test_an_installed_tracer_provider_keeps_the_spans() -> None:
    # A fresh interpreter: a tracer provider can be installed once per process.
    out = subprocess.run([sys.executable, "-c", KEEPS_SPANS], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
