"""Who may read a trace: an admin, or the same principal id while it can still read all of
the trace's evidence. Anything else is "not found", exactly like a trace that does not exist,
and listing shows only the traces the caller may read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.errors import NotFound
from glassrag.interfaces.cli.main import app

HR_TEXT = "Salary bands are reviewed every March by the hr committee."
DOCS = [
    {"doc_id": "pay-bands", "title": "Pay bands", "source": "hr/bands.md", "roles": ["hr"],
     "text": HR_TEXT},
    {"doc_id": "holidays", "title": "Holidays", "source": "staff/holidays.md",
     "roles": ["public"], "text": "The office closes for public holidays in March."},
]
ALICE_HR = Principal("alice", roles=["hr"])
ALICE_PUBLIC = Principal("alice")
ADMIN = Principal("root", admin=True)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb") as base:
        base.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)])
        yield base


def _not_found_like_missing(kb: KnowledgeBase, trace_id: str, principal: Principal) -> None:
    """The error for an unreadable trace is the error for a missing one, id for id."""
    missing_id = "tr_0000000000000000"
    with pytest.raises(NotFound) as hidden:
        kb.trace(trace_id, principal=principal)
    with pytest.raises(NotFound) as missing:
        kb.trace(missing_id, principal=principal)
    assert json.dumps(hidden.value.to_dict()) == \
        json.dumps(missing.value.to_dict()).replace(missing_id, trace_id)


def test_same_principal_id_without_the_evidence_roles_gets_not_found(kb: KnowledgeBase) -> None:
    answer = kb.ask("When are salary bands reviewed?", principal=ALICE_HR)
    assert answer.status == "answered" and answer.citations[0].doc_id == "pay-bands"
    assert kb.trace(answer.trace_id, principal=ALICE_HR)["evidence"][0]["text"] == HR_TEXT
    # A public-only token issued to the same principal id.
    _not_found_like_missing(kb, answer.trace_id, ALICE_PUBLIC)
    assert kb.traces(principal=ALICE_PUBLIC) == []
    with pytest.raises(NotFound):
        kb.export_trace(answer.trace_id, kb.path / "out", principal=ALICE_PUBLIC)
    assert [t["trace_id"] for t in kb.traces(principal=ALICE_HR)] == [answer.trace_id]
    assert kb.trace(answer.trace_id, principal=ADMIN)["evidence"][0]["text"] == HR_TEXT


def test_public_evidence_stays_readable_to_its_principal(kb: KnowledgeBase) -> None:
    answer = kb.ask("When does the office close for holidays?", principal=ALICE_HR)
    assert answer.status == "answered" and answer.citations[0].doc_id == "holidays"
    assert kb.trace(answer.trace_id, principal=ALICE_PUBLIC)["trace_id"] == answer.trace_id
    assert [t["trace_id"] for t in kb.traces(principal=ALICE_PUBLIC)] == [answer.trace_id]
    with pytest.raises(NotFound):
        kb.trace(answer.trace_id, principal=Principal("bob"))  # another principal id


def test_roles_are_checked_again_when_the_trace_is_read(kb: KnowledgeBase,
                                                       tmp_path: Path) -> None:
    answer = kb.ask("When does the office close for holidays?", principal=ALICE_PUBLIC)
    assert kb.trace(answer.trace_id, principal=ALICE_PUBLIC)
    # The evidence document is now restricted to hr.
    restricted = [{**DOCS[1], "roles": ["hr"]}]
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], *restricted])])
    _not_found_like_missing(kb, answer.trace_id, ALICE_PUBLIC)
    assert kb.traces(principal=ALICE_PUBLIC) == []
    assert kb.trace(answer.trace_id, principal=ALICE_HR)


def test_deleted_evidence_leaves_the_trace_to_admins(kb: KnowledgeBase) -> None:
    answer = kb.ask("When are salary bands reviewed?", principal=ALICE_HR)
    kb.delete("pay-bands")
    _not_found_like_missing(kb, answer.trace_id, ALICE_HR)
    assert kb.traces(principal=ALICE_HR) == []
    assert kb.trace(answer.trace_id, principal=ADMIN)["evidence"][0]["doc_id"] == "pay-bands"
    assert kb.trace(answer.trace_id)["trace_id"] == answer.trace_id  # the local operator
    assert [t["trace_id"] for t in kb.traces(principal=ADMIN)] == [answer.trace_id]


def test_listing_skips_unreadable_traces_before_the_limit(kb: KnowledgeBase) -> None:
    readable = kb.ask("When does the office close for holidays?", principal=ALICE_HR)
    for _ in range(3):
        kb.ask("When are salary bands reviewed?", principal=ALICE_HR)
    listed = kb.traces(principal=ALICE_PUBLIC, limit=1)
    assert [t["trace_id"] for t in listed] == [readable.trace_id]


def test_a_token_for_cli_cannot_read_cli_traces_with_hidden_evidence(kb: KnowledgeBase) -> None:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    pytest.importorskip("httpx", reason="httpx is needed by fastapi's TestClient")
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    runner = CliRunner()
    base = ["--kb", str(kb.path), "ask", "--json"]
    hr = runner.invoke(app, [*base, "When are salary bands reviewed?", "--role", "hr"])
    public = runner.invoke(app, [*base, "When does the office close for holidays?"])
    assert hr.exit_code == 0 and public.exit_code == 0, hr.output + public.output
    kb.close()
    hr_id = kb_trace_id(hr.stdout)
    public_id = kb_trace_id(public.stdout)
    server = create_app(kb.path)
    with server.state.kb.lock:
        token = create_token(server.state.kb.store, "cli")  # public only
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(server, base_url="http://127.0.0.1") as client:
        hidden = client.get(f"/traces/{hr_id}", headers=headers)
        missing = client.get("/traces/tr_0000000000000000", headers=headers)
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"]["code"] == missing.json()["error"]["code"]
        assert HR_TEXT not in hidden.text
        own = client.get(f"/traces/{public_id}", headers=headers)
        assert own.status_code == 200 and own.json()["principal"]["principal_id"] == "cli"
    with KnowledgeBase.open(kb.path) as again:
        assert [t["trace_id"] for t in again.traces(principal=Principal("cli"))] == [public_id]


def kb_trace_id(stdout: str) -> str:
    trace_id: str = json.loads(stdout)["trace_id"]
    return trace_id


def test_a_version_closed_since_the_ask_is_not_shown_though_its_document_is_open(
        tmp_path: Path) -> None:
    """Tightening a version's roles closes it in traces and exports, even after a newer,
    public version of the same document reopens the document."""
    old = "The office closes at noon on the last Friday of each month."
    new = "The office now stays open on Fridays."
    doc = {"doc_id": "hours", "title": "Hours", "source": "staff/hours.md"}
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        def ingest(text: str, roles: list[str]) -> None:
            kb.ingest([write_jsonl(tmp_path / "docs.jsonl", [{**doc, "roles": roles,
                                                             "text": text}])])

        ingest(old, ["public"])
        answer = kb.ask("When does the office close on Fridays?", principal=ALICE_PUBLIC)
        assert answer.status == "answered"
        assert kb.trace(answer.trace_id, principal=ALICE_PUBLIC)["evidence"][0]["text"] == old
        ingest(old, ["hr"])  # the same text, now for hr only
        ingest(new, ["public"])  # a new public version
        _not_found_like_missing(kb, answer.trace_id, ALICE_PUBLIC)
        assert kb.traces(principal=ALICE_PUBLIC) == []
        with pytest.raises(NotFound):
            kb.export_trace(answer.trace_id, tmp_path / "out", principal=ALICE_PUBLIC)
        written = kb.export_trace(answer.trace_id, tmp_path / "admin", principal=ADMIN)
        assert any(old in p.read_text(encoding="utf-8") for p in written)
