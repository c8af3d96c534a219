"""Traces directly: the typed Trace saved, read and redacted (store/traces.py), its JSON the
same keys in the same order as every trace has been stored with, and older bodies read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.disclosure import disclose
from glassrag.records import Status
from glassrag.store import traces
from glassrag.trace import Trace
from llm_stub import Reply, StubLLM, answer_json

#: The stored shape of a trace, in order.
KEYS = ["trace_id", "created_at", "principal", "question", "rewrite", "settings", "disclosure",
        "query_terms", "candidates", "permitted_count", "blocked_count", "blocked_chunk_ids",
        "evidence", "request", "attempts", "verification", "status", "reported_status",
        "answer", "citations", "timings_ms"]
QUOTE = "Learners may ask for a refund within 14 days of purchase."
DOCS = [
    {"doc_id": "refunds", "title": "Refund policy", "source": "policy/refunds.md",
     "roles": ["public"], "text": f"{QUOTE} Refunds go back to the card that paid."},
    {"doc_id": "payroll", "title": "Payroll", "source": "hr/payroll.md", "roles": ["hr"],
     "text": "Salary bands are reviewed every March by the payroll committee."},
]
ALICE = Principal("alice")
ADMIN = Principal("root", admin=True)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubLLM]:
    with StubLLM() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "stub-model")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield server


def _kb(tmp_path: Path, disclosure: str) -> KnowledgeBase:
    kb_dir = init_kb_with(tmp_path / "kb", 'disclosure = "disclose"',
                          f'disclosure = "{disclosure}"')
    kb = KnowledgeBase.open(kb_dir)
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)])
    return kb


def _stored(kb: KnowledgeBase, trace_id: str) -> dict:
    row = kb.store.db.execute("SELECT body FROM traces WHERE trace_id = ?",
                              (trace_id,)).fetchone()
    return json.loads(row[0])


def _traces_of(kb: KnowledgeBase, stub: StubLLM) -> list[str]:
    """Traces of every kind: extractive answered, blocked, a model's verified answer after a
    rejected one, with a rewrite, and a model that cannot be reached."""
    ids = [kb.ask("How many days for a refund?", principal=ALICE).trace_id,
           kb.ask("When are salary bands reviewed?", principal=ALICE).trace_id]
    forged = answer_json("answered", "Never.", [("C1", "ninety days")])
    good = answer_json("answered", QUOTE, [("C1", QUOTE)])
    stub.push(Reply(json.dumps({"query": "refund days"})), Reply(forged), Reply(good))
    ids.append(kb.ask("How long is the refund window?", principal=ALICE, llm="openai",
                      rewrite=True).trace_id)
    stub.push(*[Reply(status=503)] * 8)
    ids.append(kb.ask("How long is the refund window?", principal=ALICE, llm="openai")
               .trace_id)
    return [i for i in ids if i is not None]


@pytest.mark.parametrize("disclosure", ["disclose", "conceal"])
def test_a_stored_trace_reads_back_as_the_same_json(tmp_path: Path, stub: StubLLM,
                                                    disclosure: str) -> None:
    kb = _kb(tmp_path, disclosure)
    try:
        ids = _traces_of(kb, stub)
        assert len(ids) == 4
        for trace_id in ids:
            body = _stored(kb, trace_id)
            assert list(body) == KEYS
            trace = traces.read(kb.store, trace_id)
            assert isinstance(trace, Trace)
            assert trace.to_dict() == body and list(trace.to_dict()) == KEYS
            assert json.dumps(trace.to_dict(), ensure_ascii=False) == \
                json.dumps(body, ensure_ascii=False)
            assert Trace.from_dict(trace.to_dict()) == trace
            # The operator and an admin read it whole.
            assert kb.trace(trace_id) == body == kb.trace(trace_id, principal=ADMIN)
        statuses = [traces.read(kb.store, i).status for i in ids]  # type: ignore[union-attr]
        assert statuses == [Status.ANSWERED, Status.BLOCKED, Status.ANSWERED,
                            Status.UNVERIFIED]
        assert traces.read(kb.store, "tr_missing") is None
    finally:
        kb.close()


@pytest.mark.parametrize("disclosure", ["disclose", "conceal"])
def test_redaction_is_decided_from_the_trace_and_the_policy(tmp_path: Path, stub: StubLLM,
                                                            disclosure: str) -> None:
    kb = _kb(tmp_path, disclosure)
    try:
        for trace_id in _traces_of(kb, stub):
            trace = traces.read(kb.store, trace_id)
            assert trace is not None
            view = traces.redact(trace, ALICE)
            told = disclose(trace.status, trace.blocked_count,
                            conceal=disclosure == "conceal")
            assert view["status"] == told.status
            assert "blocked_chunk_ids" not in view
            assert all(c["permitted"] for c in view["candidates"])
            assert ("blocked_count" in view) is (disclosure == "disclose")
            assert ("timings_ms" in view) is (disclosure == "disclose")
            assert [("latency_ms" in a) for a in view["attempts"]] == [
                "latency_ms" in a and disclosure == "disclose" for a in trace.attempts]
            assert "problems" not in view["verification"]
            assert "payroll" not in json.dumps(view) and "Salary" not in json.dumps(view)
            assert kb.trace(trace_id, principal=ALICE) == view
            assert traces.redact(trace, ADMIN) == trace.to_dict()
        listed = {row["trace_id"]: row["status"] for row in kb.traces(principal=ALICE)}
        blocked = "no_evidence" if disclosure == "conceal" else "blocked_by_permission"
        assert sorted(listed.values()) == sorted(["answered", blocked, "answered",
                                                  "unverified"])
    finally:
        kb.close()


def test_a_trace_stored_before_a_key_existed_still_reads(tmp_path: Path, stub: StubLLM) -> None:
    kb = _kb(tmp_path, "conceal")
    try:
        trace_id = kb.ask("When are salary bands reviewed?", principal=ALICE).trace_id
        assert trace_id is not None
        body = _stored(kb, trace_id)
        for key in ("rewrite", "disclosure", "reported_status", "timings_ms"):
            body.pop(key)
        kb.store.db.execute("UPDATE traces SET body = ? WHERE trace_id = ?",
                            (json.dumps(body), trace_id))
        old = traces.read(kb.store, trace_id)
        assert old is not None and old.rewrite is None and old.disclosure == "disclose"
        assert old.reported_status is Status.BLOCKED  # the truth: no policy was recorded
        assert kb.trace(trace_id, principal=ALICE)["status"] == "blocked_by_permission"
    finally:
        kb.close()
