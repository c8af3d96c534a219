"""``GET /metrics``: Prometheus text format, parsed by prometheus_client's own parser, for
admin tokens only; asks by status, stage latency histograms, ingest counts, index lag."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")
pytest.importorskip("prometheus_client", reason="the [server] extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from conftest import EXAMPLES, write_jsonl  # noqa: E402
from glassrag import KnowledgeBase  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402

ASKS = {"How many days do learners have for refunds?": "answered",
        "What is the private beta roadmap for Q4?": "blocked_by_permission",
        "What is the cafeteria menu today?": "no_evidence"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], Path]]:
    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"], chunker="sentences")
        tokens = {"root": create_token(kb.store, "root", admin=True),
                  "pat": create_token(kb.store, "pat", ["employee"])}
    app = create_app(kb_dir)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client, {k: f"Bearer {v}" for k, v in tokens.items()}, kb_dir


def _scrape(client: TestClient, token: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    r = client.get("/metrics", headers={"Authorization": token})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = \
                sample.value
    return samples


def _one(samples: dict[str, Any], name: str, **labels: str) -> float:
    value: float = samples[name][tuple(sorted(labels.items()))]
    return value


def test_metrics_need_an_admin_token(server: tuple[TestClient, dict[str, str], Path]) -> None:
    client, tokens, _ = server
    assert client.get("/metrics").status_code == 401
    r = client.get("/metrics", headers={"Authorization": tokens["pat"]})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"


def test_asks_by_status_and_stage_histograms(server: tuple[TestClient, dict[str, str], Path]
                                            ) -> None:
    client, tokens, _ = server
    before = _scrape(client, tokens["root"])
    for status in ("answered", "no_evidence", "blocked_by_permission", "unverified"):
        assert _one(before, "glassrag_asks_total", status=status) == 0
    trace_ids = []
    anonymous = create_token_for(client, "anon")
    for question, status in ASKS.items():
        r = client.post("/ask", json={"question": question},
                        headers={"Authorization": anonymous})
        assert r.status_code == 200 and r.json()["status"] == status
        trace_ids.append(r.json()["trace_id"])
    after = _scrape(client, tokens["root"])
    for status in ASKS.values():
        assert _one(after, "glassrag_asks_total", status=status) == 1
    timings = [client.get(f"/traces/{t}", headers={"Authorization": tokens["root"]}).json()
               ["timings_ms"] for t in trace_ids]
    for stage in ("retrieve", "answer", "verify", "total"):
        assert _one(after, "glassrag_ask_stage_seconds_count", stage=stage) == 3
        assert _one(after, "glassrag_ask_stage_seconds_bucket", stage=stage, le="+Inf") == 3
        assert _one(after, "glassrag_ask_stage_seconds_sum", stage=stage) == pytest.approx(
            sum(t[stage] for t in timings) / 1000)
    assert "glassrag_ask_stage_seconds_count" in after
    assert (("stage", "rewrite"),) not in after["glassrag_ask_stage_seconds_count"]


def create_token_for(client: TestClient, principal: str) -> str:
    kb = client.app.state.kb  # type: ignore[attr-defined]
    with kb.lock:
        return f"Bearer {create_token(kb.store, principal)}"


def test_ingest_counts_documents_and_index_lag(server: tuple[TestClient, dict[str, str], Path],
                                               tmp_path: Path) -> None:
    client, tokens, kb_dir = server
    root = {"Authorization": tokens["root"]}
    first = _scrape(client, tokens["root"])
    assert _one(first, "glassrag_documents") == 4 and _one(first, "glassrag_chunks") == 4
    assert _one(first, "glassrag_ingests_total") == 0
    assert _one(first, "glassrag_index_lag_changes") == 0
    upload = client.post("/documents", headers=root,
                         files={"file": ("notes.md", b"# Notes\n\nA short note.\n")})
    assert upload.status_code == 201, upload.text
    counted = _scrape(client, tokens["root"])
    assert _one(counted, "glassrag_ingests_total") == 1
    assert _one(counted, "glassrag_ingested_documents_total", outcome="added") == 1
    assert _one(counted, "glassrag_ingested_documents_total", outcome="failed") == 0
    assert _one(counted, "glassrag_documents") == 5
    # Another process writes to the knowledge base: this server's index is one change behind
    # until its next search catches up.
    with KnowledgeBase.open(kb_dir) as other:
        other.ingest([write_jsonl(tmp_path / "more.jsonl", [
            {"doc_id": "more", "title": "More", "text": "Another document."}])])
    assert _one(_scrape(client, tokens["root"]), "glassrag_index_lag_changes") == 1
    assert client.post("/search", json={"query": "another"}, headers=root).status_code == 200
    caught_up = _scrape(client, tokens["root"])
    assert _one(caught_up, "glassrag_index_lag_changes") == 0
    # The other process's ingest is its own, not this server's.
    assert _one(caught_up, "glassrag_ingests_total") == 1
