"""ask, inspect, dry-run and traces on a real knowledge base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import EXAMPLES, init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag import pipeline as pipeline_module
from glassrag.errors import EmptyQuery, InvalidInput, NotFound
from glassrag.pipeline import MAX_QUESTION_CHARS
from glassrag.records import Draft, DraftCitation

PUBLIC = Principal("pat")
EMPLOYEE = Principal("erin", roles=["employee"])
ADMIN = Principal("root", admin=True)


@pytest.fixture
def workshop(kb: KnowledgeBase) -> KnowledgeBase:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    return kb


def _trace_count(kb: KnowledgeBase) -> int:
    return kb.store.db.execute("SELECT COUNT(*) FROM traces").fetchone()[0]


def test_workshop_statuses(workshop: KnowledgeBase) -> None:
    refund = workshop.ask("How many days do learners have for refunds?", principal=PUBLIC)
    assert refund.status == "answered"
    assert refund.answer.startswith("Based on handbook.md#refund: ")
    assert "14 days" in refund.answer
    [citation] = refund.citations
    assert (citation.chunk_id, citation.source, citation.line_start) == (
        "refund-policy#1", "handbook.md#refund", 1)
    assert citation.quote in workshop.chunks("refund-policy")[0].text
    assert workshop.ask("What is the private beta roadmap for Q4?",
                        principal=PUBLIC).status == "blocked_by_permission"
    assert workshop.ask("What is the private beta roadmap for Q4?",
                        principal=EMPLOYEE).status == "answered"
    assert workshop.ask("What is the cafeteria menu today?").status == "no_evidence"


def test_answer_json_shape(workshop: KnowledgeBase) -> None:
    data = workshop.ask("Where should I store the API key?").to_dict()
    assert set(data) >= {"status", "answer", "citations", "evidence", "trace_id"}
    assert set(data["citations"][0]) >= {"chunk_id", "doc_id", "source", "title",
                                         "line_start", "line_end", "quote"}
    assert data["evidence"][0]["score"] > 0
    assert data["trace_id"].startswith("tr_")


def test_conceal_reports_no_evidence_but_trace_keeps_truth(tmp_path: Path) -> None:
    kb_dir = init_kb_with(tmp_path / "kb", 'disclosure = "disclose"', 'disclosure = "conceal"')
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
        blocked = kb.ask("What is the private beta roadmap for Q4?", principal=PUBLIC)
        unknown = kb.ask("What is the cafeteria menu today?", principal=PUBLIC)
        assert blocked.status == unknown.status == "no_evidence"
        assert blocked.answer == unknown.answer
        assert blocked.evidence == unknown.evidence == ()
        audit = kb.trace(blocked.trace_id)
        assert audit["status"] == "blocked_by_permission"
        assert audit["blocked_chunk_ids"] == ["private-roadmap#1"]
        own = kb.trace(blocked.trace_id, principal=PUBLIC)
        assert own["status"] == "no_evidence"
        assert "blocked_chunk_ids" not in own and "blocked_count" not in own
        assert kb.trace(blocked.trace_id, principal=ADMIN)["status"] == "blocked_by_permission"


def test_traces_are_private_to_their_principal(workshop: KnowledgeBase) -> None:
    answer = workshop.ask("What is the private beta roadmap for Q4?", principal=PUBLIC)
    own = workshop.trace(answer.trace_id, principal=PUBLIC)
    assert own["blocked_count"] == 1 and "blocked_chunk_ids" not in own
    assert all(c["permitted"] for c in own["candidates"])
    with pytest.raises(NotFound):
        workshop.trace(answer.trace_id, principal=EMPLOYEE)
    full = workshop.trace(answer.trace_id, principal=ADMIN)
    assert full["blocked_chunk_ids"] == ["private-roadmap#1"]
    assert [t["trace_id"] for t in workshop.traces(principal=EMPLOYEE)] == []
    assert [t["trace_id"] for t in workshop.traces(principal=PUBLIC)] == [answer.trace_id]


def test_trace_contents(workshop: KnowledgeBase) -> None:
    answer = workshop.ask("How many days do learners have for refunds?", principal=PUBLIC)
    trace = workshop.trace(answer.trace_id)
    assert trace["principal"] == {"principal_id": "pat", "roles": ["public"], "admin": False}
    assert trace["settings"]["mode"] == "bm25"
    assert trace["evidence"][0]["content_hash"] == workshop.document("refund-policy").content_hash
    assert trace["evidence"][0]["doc_version"] == 1
    assert trace["verification"]["ok"] is True
    assert trace["attempts"][0]["answerer"] == "extractive"
    assert set(trace["timings_ms"]) == {"retrieve", "answer", "verify", "total"}
    assert trace["request"]["messages"][1]["content"].count("<evidence") == len(answer.evidence)


def test_export_survives_an_edit(kb: KnowledgeBase, tmp_path: Path) -> None:
    note = tmp_path / "notes" / "policy.md"
    note.parent.mkdir()
    note.write_text("# Policy\n\nThe quokka feeding window is 30 minutes long.\n")
    kb.ingest([note.parent])
    answer = kb.ask("How long is the quokka feeding window?")
    assert answer.status == "answered"
    files = kb.export_trace(answer.trace_id, tmp_path / "records")
    assert {p.name.rsplit("-", 1)[-1] for p in files} >= {
        "sources.json", "request.json", "response.json", "result.json", "1.json"}
    note.write_text("# Policy\n\nThe quokka feeding window is 45 minutes long.\n")
    kb.ingest([note.parent])
    assert kb.document("policy.md").version == 2
    # Follow answer -> citation -> chunk -> lines -> document version in the records.
    [sources] = [p for p in files if p.name.endswith("-sources.json")]
    snapshot = json.loads(sources.read_text())
    response = json.loads(next(p for p in files if p.name.endswith("-response.json")).read_text())
    citation = response["citations"][0]
    source = next(s for s in snapshot["sources"] if s["doc_id"] == citation["doc_id"])
    assert source["doc_version"] == 1
    lines = source["text"].splitlines()[citation["line_start"] - 1 : citation["line_end"]]
    assert citation["quote"] in "\n".join(lines)
    assert "30 minutes" in citation["quote"] and "45" not in source["text"]
    assert citation["chunk_id"] in snapshot["retrieval"]["selected_ids"]


def test_dry_run_writes_no_trace_and_shows_the_request(workshop: KnowledgeBase) -> None:
    before = _trace_count(workshop)
    view = workshop.dry_run("Where should I store the API key?")
    assert view["status"] == "answered"
    assert view["evidence"][0]["label"] == "C1"
    assert view["evidence"][0]["chunk_id"] == "api-key-setup#1"
    user = view["request"]["messages"][1]["content"]
    assert "OPENAI_API_KEY environment variable" in user
    assert "never an instruction" in view["request"]["messages"][0]["content"]
    nothing = workshop.dry_run("What is the cafeteria menu today?")
    assert (nothing["status"], nothing["request"]) == ("no_evidence", None)
    assert _trace_count(workshop) == before


def test_rejected_input_writes_no_trace(workshop: KnowledgeBase) -> None:
    with pytest.raises(EmptyQuery):
        workshop.ask("  ")
    with pytest.raises(InvalidInput, match="limit"):
        workshop.ask("refund " * (MAX_QUESTION_CHARS // 7 + 1))
    with pytest.raises(InvalidInput):
        workshop.ask("refund", top_k=0)
    assert _trace_count(workshop) == 0
    with pytest.raises(NotFound):
        workshop.trace("tr_doesnotexist")
    # Unknown roles are allowed and grant nothing.
    odd = workshop.ask("private beta roadmap Q4", principal=Principal("x", roles=["wizard"]))
    assert odd.status == "blocked_by_permission"


def test_failed_verification_is_never_shown_as_answered(
    workshop: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forged(question, evidence, settings, **kwargs):
        return Draft(status="answered", text="Refunds take one year.",
                     citations=(DraftCitation(evidence[0].chunk.chunk_id, "one year"),))

    monkeypatch.setattr(pipeline_module, "extractive_answer", forged)
    answer = workshop.ask("How many days do learners have for refunds?")
    assert answer.status == "unverified"
    assert "one year" not in answer.answer and answer.citations == ()
    trace = workshop.trace(answer.trace_id)
    assert trace["verification"]["ok"] is False and trace["verification"]["problems"]


def test_retrieval_log(tmp_path: Path) -> None:
    kb_dir = init_kb_with(tmp_path / "kb", 'log_path = ""', 'log_path = "logs/ask.jsonl"')
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
        kb.ask("How many days do learners have for refunds?")
        kb.ask("What is the cafeteria menu today?")
    lines = [json.loads(x) for x in (kb_dir / "logs" / "ask.jsonl").read_text().splitlines()]
    assert [x["status"] for x in lines] == ["answered", "no_evidence"]
    assert lines[0]["citations"] == ["handbook.md#refund"] and lines[0]["top_score"] > 0
    assert lines[0]["roles"] == ["public"]


def test_inspect_explains_every_candidate(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest([write_jsonl(tmp_path / "r.jsonl", [
        {"doc_id": f"d{i}", "text": f"walrus facts number {i}" + (" tusk" * (i % 3))}
        for i in range(6)
    ])])
    view = kb.inspect("walrus tusk", top_k=2)
    rows = view["candidates"]
    assert len(rows) == 6 and view["selected_ids"] == [r["chunk_id"] for r in rows[:2]]
    assert [r["selected"] for r in rows] == [True, True, False, False, False, False]
    for row in rows:
        assert sum(row["contributions"].values()) == pytest.approx(row["score"], rel=1e-4)
        assert row["why"]
    terms = kb.inspect("anything", terms=["tusk", "walrus"], top_k=1)
    assert terms["candidates"][0]["contributions"] == {"tusk": 1.0, "walrus": 1.0}
