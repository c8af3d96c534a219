"""OpenTelemetry spans for every ask, built from its stored trace.

One ask is one trace: a ``glassrag.ask`` span with a child per stage (``glassrag.retrieve``,
``rewrite``, ``answer``, ``verify``, ``disclose``), laid end to end with the stage timings
the glassrag trace recorded, and carrying its trace id, mode, statuses and counts. The
spans are made after the ask from what was stored, so the pipeline carries no tracing code
and a span never holds more than the trace does. (A rewrite's second retrieval is counted
in ``retrieve``, as the trace counts it.)

No question text, answer or document text, no chunk ids and no blocked chunk ids go into a
span unless ``[telemetry] capture_text`` (question, rewritten query, answer, quotes, cited
chunk ids) or ``[telemetry] capture_blocked_ids`` is true.

Where the spans go: a tracer provider given to :func:`use_tracer_provider`; else the
process's global one, when an application or ``opentelemetry-instrument`` has set it; else,
when the standard variables ask for it (``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_*``),
a provider made here with those exporters and the ``OTEL_SERVICE_NAME`` /
``OTEL_RESOURCE_ATTRIBUTES`` resource. ``OTEL_SDK_DISABLED=true`` turns it all off.
Without any of these, or without the ``otel`` extra, nothing is done.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from glassrag.settings import TelemetrySettings
    from glassrag.trace import Trace

log = logging.getLogger("glassrag.telemetry")

STAGES = ("retrieve", "rewrite", "answer", "verify", "disclose")
EXPORTER_GROUP = "opentelemetry_traces_exporter"

_lock = threading.Lock()
_explicit: Any = None
_from_env: Any = None
_env_checked = False
_warned = False
_api_missing = False


def use_tracer_provider(provider: Any) -> None:
    """Send glassrag's spans to ``provider`` (an SDK ``TracerProvider``); None goes back to
    the global provider or the ``OTEL_*`` variables."""
    global _explicit
    _explicit = provider


def _wanted_by_environment() -> bool:
    exporters = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters:
        return exporters != "none"
    return any(os.environ.get(name) for name in ("OTEL_EXPORTER_OTLP_ENDPOINT",
                                                 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _provider() -> Any:
    if _explicit is not None:
        return _explicit
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    global _api_missing
    if _api_missing:
        return None
    try:
        from opentelemetry import trace
    except ImportError:  # looked for once: an ask must not search sys.path every time
        _api_missing = True
        _warn_missing()
        return None
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):  # set by the application
        return current
    return _environment_provider()


def _warn_missing() -> None:
    global _warned
    if _wanted_by_environment() and not _warned:
        _warned = True
        log.warning("OTEL_* variables ask for traces, but OpenTelemetry is not installed; "
                    "install it with: pip install 'glassrag[otel]'")


def _environment_provider() -> Any:
    """A provider from the ``OTEL_*`` variables, made once per process (None if they do
    not ask for traces)."""
    global _from_env, _env_checked
    with _lock:
        if not _env_checked:
            _env_checked = True
            if _wanted_by_environment():
                _from_env = _build_from_environment()
        return _from_env


def _build_from_environment() -> Any:
    from importlib.metadata import entry_points

    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        _warn_missing()
        return None
    attributes = {}
    if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in os.environ.get(
            "OTEL_RESOURCE_ATTRIBUTES", ""):
        attributes["service.name"] = "glassrag"
    # The SDK flushes its processors when the process exits.
    provider = TracerProvider(resource=Resource.create(attributes))
    names = os.environ.get("OTEL_TRACES_EXPORTER", "otlp")
    for name in (n.strip() for n in names.split(",")):
        if not name or name == "none":
            continue
        found = list(entry_points(group=EXPORTER_GROUP, name=name))
        if not found:
            log.warning("OTEL_TRACES_EXPORTER names %r, which no installed package provides "
                        "(for otlp: pip install opentelemetry-exporter-otlp)", name)
            continue
        provider.add_span_processor(BatchSpanProcessor(found[0].load()()))
    return provider


def emit_ask(trace: Trace, settings: TelemetrySettings) -> None:
    """The spans of one stored ask (see the module docstring); nothing without a provider."""
    provider = _provider()
    if provider is None:
        return
    from opentelemetry import trace as otel

    tracer = provider.get_tracer("glassrag")
    timings = trace.timings_ms
    end = time.time_ns()
    total = _ns(timings.get("total", sum(timings.get(s, 0.0) for s in STAGES)))
    root = tracer.start_span("glassrag.ask", start_time=end - total,
                             attributes=ask_attributes(trace, settings))
    parent = otel.set_span_in_context(root)
    cursor = end - total
    for stage in STAGES:
        took = min(_ns(timings.get(stage, 0.0)), end - cursor)
        span = tracer.start_span(f"glassrag.{stage}", context=parent, start_time=cursor,
                                 attributes=stage_attributes(stage, trace, settings))
        cursor += took
        span.end(end_time=cursor)
    root.end(end_time=end)


def _ns(ms: float) -> int:
    return max(int(float(ms) * 1_000_000), 0)


def ask_attributes(trace: Trace, settings: TelemetrySettings) -> dict[str, Any]:
    """The ``glassrag.ask`` span's attributes."""
    out: dict[str, Any] = {
        "glassrag.trace_id": trace.trace_id,
        "glassrag.mode": trace.settings.mode,
        "glassrag.top_k": trace.settings.top_k,
        "glassrag.answerer": trace.settings.answerer,
        "glassrag.status": trace.status.value,
        "glassrag.reported_status": trace.reported_status.value,
        "glassrag.disclosure": trace.disclosure,
        "glassrag.candidate_count": len(trace.candidates),
        "glassrag.permitted_count": trace.permitted_count,
        "glassrag.blocked_count": trace.blocked_count,
        "glassrag.citation_count": len(trace.citations),
        "glassrag.duration_ms": float(trace.timings_ms.get("total", 0.0)),
    }
    if settings.capture_text:
        out["glassrag.question"] = trace.question
        out["glassrag.answer"] = trace.answer
    return out


def stage_attributes(stage: str, trace: Trace, settings: TelemetrySettings) -> dict[str, Any]:
    """One stage span's attributes: what that stage decided, counted."""
    took = float(trace.timings_ms.get(stage, 0.0))
    out: dict[str, Any] = {"glassrag.trace_id": trace.trace_id, "glassrag.duration_ms": took}
    if stage == "retrieve":
        out.update({
            "glassrag.mode": trace.settings.mode,
            "glassrag.query_term_count": len(trace.query_terms),
            "glassrag.candidate_count": len(trace.candidates),
            "glassrag.permitted_count": trace.permitted_count,
            "glassrag.blocked_count": trace.blocked_count,
            "glassrag.evidence_count": len(trace.evidence),
        })
        if settings.capture_blocked_ids:
            out["glassrag.blocked_chunk_ids"] = list(trace.blocked_chunk_ids)
    elif stage == "rewrite":
        rewrite = trace.rewrite or {}
        out["glassrag.rewrite.status"] = rewrite.get("status") or "off"
        out["glassrag.rewrite.rewriter"] = rewrite.get("rewriter") or ""
        if settings.capture_text and rewrite.get("rewritten_query"):
            out["glassrag.rewrite.query"] = rewrite["rewritten_query"]
    elif stage == "answer":
        out["glassrag.answerer"] = trace.settings.answerer
        out["glassrag.attempt_count"] = len(trace.attempts)
    elif stage == "verify":
        out["glassrag.verification.ok"] = trace.verification.ok
        out["glassrag.verification.problem_count"] = len(trace.verification.problems)
        out["glassrag.citation_count"] = len(trace.citations)
        if settings.capture_text:
            out["glassrag.citation.chunk_ids"] = [c.chunk_id for c in trace.citations]
            out["glassrag.citation.quotes"] = [c.quote for c in trace.citations]
    else:  # disclose
        out["glassrag.disclosure"] = trace.disclosure
        out["glassrag.status"] = trace.status.value
        out["glassrag.reported_status"] = trace.reported_status.value
        out["glassrag.concealed"] = trace.status != trace.reported_status
    return out
