"""OpenTelemetry: every ask is one trace with a span per stage, checked through the SDK's
in-memory exporter; the standard OTEL_* variables are honoured in a real subprocess.

The spans must carry the stored trace id, the statuses, counts and timings, and nothing of
the question, the documents or the blocked chunks unless [telemetry] opts in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from conftest import EXAMPLES, init_kb_with  # noqa: E402
from glassrag import KnowledgeBase, Principal, telemetry  # noqa: E402

WORKSHOP = EXAMPLES / "workshop" / "documents.jsonl"
ROADMAP = "What is the private beta roadmap for Q4?"
REFUNDS = "How many days do learners have for refunds?"
STAGES = ["glassrag.retrieve", "glassrag.rewrite", "glassrag.answer", "glassrag.verify",
          "glassrag.disclose"]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield exporter
    telemetry.use_tracer_provider(None)


def _kb(kb_dir: Path, *changes: tuple[str, str]) -> KnowledgeBase:
    KnowledgeBase.init(kb_dir).close()
    for old, new in changes:
        init_kb_with(kb_dir, old, new)
    kb = KnowledgeBase.open(kb_dir)
    kb.ingest([WORKSHOP], chunker="sentences")
    return kb


def _by_name(exporter: InMemorySpanExporter) -> dict[str, object]:
    found = exporter.get_finished_spans()
    return {s.name: s for s in found}


def test_one_trace_per_ask_with_a_span_per_stage(tmp_path: Path,
                                                 spans: InMemorySpanExporter) -> None:
    with _kb(tmp_path / "kb") as kb:
        answer = kb.ask(REFUNDS)
        trace = kb.trace(answer.trace_id)
    found = spans.get_finished_spans()
    assert sorted(s.name for s in found) == sorted(["glassrag.ask", *STAGES])
    assert len({s.context.trace_id for s in found}) == 1
    root = next(s for s in found if s.name == "glassrag.ask")
    assert root.parent is None
    children = sorted((s for s in found if s is not root), key=lambda s: s.start_time)
    assert [s.name for s in children] == STAGES
    assert all(s.parent.span_id == root.context.span_id for s in children)
    # Laid end to end inside the ask, each as long as the trace's timing for its stage.
    assert children[0].start_time == root.start_time
    for before, after in zip(children, children[1:], strict=False):
        assert before.end_time == after.start_time
    timings = trace["timings_ms"]
    for span in children:
        stage = span.name.removeprefix("glassrag.")
        assert span.attributes["glassrag.duration_ms"] == timings.get(stage, 0.0)
        assert span.attributes["glassrag.trace_id"] == answer.trace_id
    assert root.end_time - root.start_time == int(timings["total"] * 1_000_000)
    attributes = dict(root.attributes)
    assert attributes["glassrag.trace_id"] == answer.trace_id
    assert attributes["glassrag.mode"] == "bm25" and attributes["glassrag.status"] == "answered"
    assert attributes["glassrag.permitted_count"] == trace["permitted_count"]
    assert attributes["glassrag.citation_count"] == 1
    verify = next(s for s in children if s.name == "glassrag.verify")
    assert verify.attributes["glassrag.verification.ok"] is True
    spans.clear()
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ask(ROADMAP)
    assert len(spans.get_finished_spans()) == 6


def test_spans_carry_no_text_and_no_blocked_ids_by_default(tmp_path: Path,
                                                          spans: InMemorySpanExporter) -> None:
    with _kb(tmp_path / "kb") as kb:
        answer = kb.ask(ROADMAP, principal=Principal("pat"))
        trace = kb.trace(answer.trace_id)
        kb.ask(REFUNDS)
    assert trace["blocked_chunk_ids"] == ["private-roadmap#1"]
    dumped = json.dumps([dict(s.attributes) for s in spans.get_finished_spans()])
    for secret in ("private-roadmap", "roadmap", "Roadmap", "Learners", "refund", "handbook",
                   "pat", "14 days"):
        assert secret not in dumped
    disclose = _by_name(spans)["glassrag.disclose"]
    assert disclose.attributes["glassrag.reported_status"] == "answered"  # the last ask


def test_settings_opt_in_to_text_and_blocked_ids(tmp_path: Path,
                                                 spans: InMemorySpanExporter) -> None:
    kb = _kb(tmp_path / "kb", ("capture_text = false", "capture_text = true"),
             ("capture_blocked_ids = false", "capture_blocked_ids = true"))
    with kb:
        kb.ask(ROADMAP)
    found = _by_name(spans)
    assert found["glassrag.ask"].attributes["glassrag.question"] == ROADMAP
    assert list(found["glassrag.retrieve"].attributes["glassrag.blocked_chunk_ids"]) == [
        "private-roadmap#1"]
    spans.clear()
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ask(REFUNDS)
    verify = _by_name(spans)["glassrag.verify"]
    assert list(verify.attributes["glassrag.citation.chunk_ids"]) == ["refund-policy#1"]
    assert "14 days" in verify.attributes["glassrag.citation.quotes"][0]


def test_conceal_keeps_the_true_status_in_the_spans(tmp_path: Path,
                                                    spans: InMemorySpanExporter) -> None:
    kb = _kb(tmp_path / "kb", ('disclosure = "disclose"', 'disclosure = "conceal"'))
    with kb:
        answer = kb.ask(ROADMAP)
    assert answer.status == "no_evidence"
    disclose = _by_name(spans)["glassrag.disclose"]
    assert disclose.attributes["glassrag.status"] == "blocked_by_permission"
    assert disclose.attributes["glassrag.reported_status"] == "no_evidence"
    assert disclose.attributes["glassrag.concealed"] is True


def _cli_ask(kb_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ask", REFUNDS, "--json"],
        capture_output=True, text=True, timeout=120, env={**environ, **env}, check=False)


def test_the_otel_variables_configure_an_exporter(tmp_path: Path) -> None:
    _kb(tmp_path / "kb").close()
    done = _cli_ask(tmp_path / "kb", OTEL_TRACES_EXPORTER="console",
                    OTEL_SERVICE_NAME="kb-assistant")
    assert done.returncode == 0, done.stderr
    # The CLI's JSON answer comes first; the console exporter writes the spans at exit.
    decoder = json.JSONDecoder()
    answer, end = decoder.raw_decode(done.stdout)
    rest = done.stdout[end:].strip()
    exported = []
    while rest:
        span, end = decoder.raw_decode(rest)
        exported.append(span)
        rest = rest[end:].strip()
    assert sorted(s["name"] for s in exported) == sorted(["glassrag.ask", *STAGES])
    root = next(s for s in exported if s["name"] == "glassrag.ask")
    assert root["attributes"]["glassrag.trace_id"] == answer["trace_id"]
    assert root["resource"]["attributes"]["service.name"] == "kb-assistant"


def test_no_spans_without_a_provider_or_when_disabled(tmp_path: Path) -> None:
    _kb(tmp_path / "kb").close()
    for env in ({}, {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
                {"OTEL_TRACES_EXPORTER": "none"}):
        done = _cli_ask(tmp_path / "kb", **env)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)  # nothing but the answer on stdout
        assert answer["status"] == "answered"
