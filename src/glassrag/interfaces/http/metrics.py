"""``GET /metrics``: the server's metrics in the Prometheus text format (admin token).

- ``glassrag_asks_total{status}``: asks this server answered, by true status (an admin
  metric, so ``conceal`` does not apply);
- ``glassrag_ask_stage_seconds{stage}``: a latency histogram per stage (retrieve, rewrite,
  answer, verify, total), from each ask's trace;
- ``glassrag_ingests_total`` and ``glassrag_ingested_documents_total{outcome}`` (added,
  updated, unchanged, deleted, failed) for ingests through this process;
- ``glassrag_documents``, ``glassrag_chunks``, and ``glassrag_index_lag_changes``: change-log
  entries the lexical index has not applied yet, read at each scrape.

Counters start at zero when the server starts, as Prometheus expects of a process.
"""

# No ``from __future__ import annotations``: FastAPI reads the route's annotations at
# runtime, and they name the dependency passed to router().

from collections.abc import Callable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from glassrag import observe
from glassrag.errors import MissingExtra, needs_extra
from glassrag.kb import KnowledgeBase
from glassrag.records import STATUSES
from glassrag.store.database import Store
from glassrag.trace import Trace

TIMED_STAGES = ("retrieve", "rewrite", "answer", "verify", "total")
# Seconds: a bm25 ask takes about a millisecond, a model's answer several seconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0, 30.0, 60.0)
INGEST_OUTCOMES = ("added", "updated", "unchanged", "deleted")


class Recorder:
    """The metrics of one knowledge base, fed by :mod:`glassrag.observe`."""

    def __init__(self, kb: KnowledgeBase) -> None:
        with needs_extra("server", "prometheus-client"):
            from prometheus_client import CollectorRegistry, Counter, Histogram

        self.kb = kb
        self.registry = CollectorRegistry()
        self.asks = Counter("glassrag_asks", "Asks answered, by true status", ["status"],
                            registry=self.registry)
        for status in STATUSES:
            self.asks.labels(status)
        self.stages = Histogram("glassrag_ask_stage_seconds", "Time an ask spent per stage",
                                ["stage"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.ingests = Counter("glassrag_ingests", "Ingests run", registry=self.registry)
        self.ingested = Counter("glassrag_ingested_documents",
                                "Documents per ingest outcome, and failed files", ["outcome"],
                                registry=self.registry)
        for outcome in (*INGEST_OUTCOMES, "failed"):
            self.ingested.labels(outcome)
        self.registry.register(_Levels(kb))
        observe.watch(self)

    def on_ask(self, store: Store, trace: Trace) -> None:
        if store is not self.kb.store:
            return
        self.asks.labels(trace.status.value).inc()
        for stage in TIMED_STAGES:
            if stage in trace.timings_ms:
                self.stages.labels(stage).observe(float(trace.timings_ms[stage]) / 1000)

    def on_ingest(self, store: Store, report: dict[str, Any]) -> None:
        if store is not self.kb.store:
            return
        self.ingests.inc()
        for outcome in INGEST_OUTCOMES:
            self.ingested.labels(outcome).inc(int(report.get(outcome) or 0))
        self.ingested.labels("failed").inc(len(report.get("failed") or []))

    def exposition(self) -> tuple[bytes, str]:
        """The metrics as text, and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _Levels:
    """Gauges read when scraped: stored documents and chunks, and the index lag."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        kb = self.kb
        with kb.lock:
            counts = kb.store.counts()
            lag = max(kb.store.last_seq() - kb.lexical.applied_seq, 0)
        yield GaugeMetricFamily("glassrag_documents", "Documents stored",
                                value=counts["documents"])
        yield GaugeMetricFamily("glassrag_chunks", "Chunks stored", value=counts["chunks"])
        yield GaugeMetricFamily("glassrag_index_lag_changes",
                                "Change-log entries the lexical index has not applied yet",
                                value=lag)


def router(kb: KnowledgeBase, who: Callable[..., Any], admin: Callable[..., Any]) -> APIRouter:
    """``/metrics`` for ``kb`` (``who`` is unused: the route is for admins only)."""
    routes = APIRouter(tags=["meta"])
    recorder: Recorder | None = None
    missing: MissingExtra | None = None
    try:
        recorder = Recorder(kb)
    except MissingExtra as exc:  # the server runs without metrics; /metrics says why
        missing = exc
    # Held by the route, so the recorder lives as long as the app (observe keeps it weakly).

    @routes.get("/metrics", response_class=Response)
    def metrics(_: Annotated[Any, Depends(admin)]) -> Response:
        """Prometheus text format (admin token)."""
        if recorder is None:
            assert missing is not None
            raise missing.with_traceback(None)  # one stored error; no traceback piles up
        body, content_type = recorder.exposition()
        return Response(body, media_type=content_type)

    return routes
