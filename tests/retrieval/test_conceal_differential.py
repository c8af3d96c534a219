"""Under ``conceal``, what a non-admin gets back does not depend on documents it cannot read.

The differential test: the same questions, asked by the same principal, give byte-identical
output from a knowledge base that also holds hidden documents and from one that holds only
the documents the principal may read, through the Python API, the CLI (``--json``), HTTP and
MCP. Trace ids and creation times are the only differences allowed. The hidden documents
share the questions' words, are longer than the readable ones and are ingested first, so
BM25's N, document frequencies, average length and the row ids of readable chunks all
change when they are present.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conceal_fixtures import ALICE, EMBEDDER, P0, batched_kb, scrub
from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.interfaces.cli.main import app

PUBLIC = [
    {"doc_id": "refund-policy", "title": "Refund policy", "source": "policy/refunds.md",
     "roles": ["public"],
     "text": "Learners may ask for a refund within 14 days of purchase. Refunds go back to "
             "the card that paid."},
    # Two chunks with the same text score the same: their order must not come from row ids.
    {"doc_id": "twin-b", "title": "Refund times", "source": "faq/b.md", "roles": ["public"],
     "text": "Refund requests are answered within five working days."},
    {"doc_id": "twin-a", "title": "Refund times", "source": "faq/a.md", "roles": ["public"],
     "text": "Refund requests are answered within five working days."},
    {"doc_id": "api-key", "title": "API keys", "source": "dev/keys.md", "roles": ["public"],
     "text": "Store the API key in the environment, never in the repository."},
    {"doc_id": "office-hours", "title": "Office hours", "source": "office/hours.md",
     "roles": ["public"],
     "text": "Office hours are on Tuesdays. Bring refund questions and API key questions."},
]
EMPLOYEE = [
    {"doc_id": "emp-travel", "title": "Travel", "source": "staff/travel.md",
     "roles": ["employee"],
     "text": "Employees book travel through the portal. Refunds for cancelled trips take 30 "
             "days."},
    {"doc_id": "emp-keys", "title": "Key rotation", "source": "staff/keys.md",
     "roles": ["employee"], "text": "Every API key of an employee is rotated after 90 days."},
]
HR = [
    {"doc_id": f"hr-{n}", "title": f"Payroll {n}", "source": f"hr/payroll-{n}.md",
     "roles": ["hr"],
     "text": " ".join(["Salary refund days for learners and the API key of payroll office."]
                      * (n + 1)) + f" Bonus table {n} refund days refund."}
    for n in range(6)
]
QUESTIONS = [
    "How many days do learners have for a refund?",
    "Where should I store the API key?",
    "refund days",
    "office hours refund questions",
    "salary bonus payroll",  # only hidden documents match
    "cafeteria menu",  # nothing matches
]
# (mode, extra options) for search and ask.
MODES: list[tuple[str, dict[str, Any]]] = [
    ("bm25", {}), ("bm25", {"rerank": "lexical"}), ("hybrid", {"embedder": EMBEDDER}),
    ("dense", {"embedder": EMBEDDER}), ("overlap", {}),
]
_TRACE_ID = re.compile(r"tr_[0-9a-f]{16}")


def _kb(root: Path, name: str, batches: list[list[dict[str, Any]]]) -> Path:
    """A conceal knowledge base; each batch is its own ingest, in order."""
    return batched_kb(root, name, batches, embedder=EMBEDDER)


@pytest.fixture(scope="module")
def kbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``full`` holds everything (hidden documents first); the others only what p0 or
    alice may read, ingested in the same order."""
    root = tmp_path_factory.mktemp("differential")
    return {"full": _kb(root, "full", [HR, EMPLOYEE, PUBLIC]),
            "p0": _kb(root, "p0", [PUBLIC]),
            "alice": _kb(root, "alice", [EMPLOYEE, PUBLIC])}


def _dump(value: Any) -> str:
    return json.dumps(scrub(value), ensure_ascii=False)


def _python_outputs(kb_dir: Path, principal: Principal) -> list[str]:
    out = []
    with KnowledgeBase.open(kb_dir) as kb:
        for question in QUESTIONS:
            for mode, options in MODES:
                out.append(_dump(kb.search(question, principal=principal, top_k=10, mode=mode,
                                           **options).to_dict()))
                answer = kb.ask(question, principal=principal, top_k=5, mode=mode, **options)
                out.append(_dump(answer.to_dict()))
                out.append(_dump(kb.trace(answer.trace_id, principal=principal)))
                out.append(_dump(kb.inspect(question, principal=principal, top_k=3,
                                            mode=mode, **options)))
                out.append(_dump(kb.dry_run(question, principal=principal, mode=mode,
                                            **options)))
            out.append(_dump(kb.search(question, principal=principal,
                                       terms=["refund", "key"]).to_dict()))
        out.append(_dump(kb.traces(principal=principal, limit=1000)))
    return out


@pytest.mark.parametrize("principal", [P0, ALICE], ids=lambda p: p.principal_id)
def test_bm25_scores_use_only_readable_statistics(kbs: dict[str, Path],
                                                   principal: Principal) -> None:
    with KnowledgeBase.open(kbs["full"]) as full, \
            KnowledgeBase.open(kbs[principal.principal_id]) as alone:
        for question in QUESTIONS[:4]:
            seen = full.search(question, principal=principal, top_k=10)
            truth = alone.search(question, principal=principal, top_k=10)
            assert [(h.chunk.chunk_id, h.score) for h in seen.hits] == \
                [(h.chunk.chunk_id, h.score) for h in truth.hits]
            assert seen.hits, question
            view = full.inspect(question, principal=principal)
            assert view["candidates"] == alone.inspect(question, principal=principal)["candidates"]
    # Hidden chunks were ingested first, so the readable ones' row ids differ between the two.
    with KnowledgeBase.open(kbs["full"]) as full:
        rowid = full.store.db.execute("SELECT id FROM chunks WHERE chunk_id = 'twin-a#1'")
        assert rowid.fetchone()[0] > len(HR)


def test_equal_scores_are_ordered_by_doc_id(kbs: dict[str, Path]) -> None:
    with KnowledgeBase.open(kbs["full"]) as kb:
        hits = kb.search("refund requests answered", principal=P0, top_k=2).hits
    assert [h.chunk.chunk_id for h in hits] == ["twin-a#1", "twin-b#1"]
    assert hits[0].score == hits[1].score


@pytest.mark.parametrize("principal", [P0, ALICE], ids=lambda p: p.principal_id)
def test_python_api_output_is_identical_without_hidden_documents(
        kbs: dict[str, Path], principal: Principal) -> None:
    seen = _python_outputs(kbs["full"], principal)
    truth = _python_outputs(kbs[principal.principal_id], principal)
    assert len(seen) == len(truth)
    for got, want in zip(seen, truth, strict=True):
        assert got == want


def _cli_outputs(kb_dir: Path, roles: list[str]) -> list[str]:
    runner = CliRunner()
    base = ["--kb", str(kb_dir)]
    role_args = [a for r in roles for a in ("--role", r)]
    out = []
    for question in QUESTIONS:
        for mode, options in (MODES[0], MODES[2]):  # bm25 and hybrid: the rest is as above
            extra = [a for k, v in options.items() for a in (f"--{k}", v)]
            for command in ("search", "ask", "inspect"):
                result = runner.invoke(app, [*base, command, question, *role_args, "--json",
                                             "--mode", mode, *extra])
                assert result.exit_code == 0, result.output
                out.append(_TRACE_ID.sub("tr_X", result.stdout))
        result = runner.invoke(app, [*base, "search", question, *role_args])
        assert result.exit_code == 0, result.output
        out.append(result.stdout)  # the table: no timing under conceal either
    return out


@pytest.mark.parametrize("principal", [P0, ALICE], ids=lambda p: p.principal_id)
def test_cli_output_is_identical_without_hidden_documents(
        kbs: dict[str, Path], principal: Principal) -> None:
    roles = [r for r in principal.roles if r != "public"]
    assert _cli_outputs(kbs["full"], roles) == _cli_outputs(kbs[principal.principal_id], roles)


def _http_outputs(kb_dir: Path, principal: Principal) -> list[str]:
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    app_ = create_app(kb_dir)
    with app_.state.kb.lock:
        token = create_token(app_.state.kb.store, principal.principal_id, principal.roles)
    headers = {"Authorization": f"Bearer {token}"}
    out = []
    with TestClient(app_, base_url="http://127.0.0.1") as client:
        for question in QUESTIONS:
            for mode in ("bm25", "overlap"):
                search = client.post("/search", json={"query": question, "mode": mode},
                                     headers=headers)
                ask = client.post("/ask", json={"question": question, "mode": mode},
                                  headers=headers)
                assert search.status_code == ask.status_code == 200, ask.text
                trace = client.get(f"/traces/{ask.json()['trace_id']}", headers=headers)
                assert trace.status_code == 200, trace.text
                out += [_dump(search.json()), _dump(ask.json()), _dump(trace.json())]
    return out


@pytest.mark.parametrize("principal", [P0, ALICE], ids=lambda p: p.principal_id)
def test_http_output_is_identical_without_hidden_documents(
        kbs: dict[str, Path], principal: Principal) -> None:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    pytest.importorskip("httpx", reason="httpx is needed by fastapi's TestClient")
    assert _http_outputs(kbs["full"], principal) == \
        _http_outputs(kbs[principal.principal_id], principal)


def _mcp_outputs(kb_dir: Path, principal: Principal) -> list[str]:
    import anyio
    from mcp import Client

    from glassrag.interfaces.mcp import build_server

    calls = [(tool, {key: question, "mode": mode})
             for question in QUESTIONS for mode in ("bm25", "overlap")
             for tool, key in (("search_knowledge_base", "query"), ("ask", "question"))]

    async def go() -> list[str]:
        with KnowledgeBase.open(kb_dir) as kb:
            async with Client(build_server(kb, principal)) as client:
                results = [await client.call_tool(name, args) for name, args in calls]
        assert not any(r.is_error for r in results)
        return [_dump(r.structured_content) for r in results]

    return anyio.run(go)


@pytest.mark.parametrize("principal", [P0, ALICE], ids=lambda p: p.principal_id)
def test_mcp_output_is_identical_without_hidden_documents(
        kbs: dict[str, Path], principal: Principal) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    assert _mcp_outputs(kbs["full"], principal) == \
        _mcp_outputs(kbs[principal.principal_id], principal)


def test_admins_and_disclose_keep_timings(kbs: dict[str, Path]) -> None:
    admin = Principal("root", admin=True)
    with KnowledgeBase.open(kbs["full"]) as kb:
        assert "took_ms" in kb.search("refund days", principal=admin).to_dict()
        assert "took_ms" not in kb.search("refund days", principal=P0).to_dict()
        answer = kb.ask("salary bonus payroll", principal=P0)
        assert "timings_ms" not in kb.trace(answer.trace_id, principal=P0)
        assert set(kb.trace(answer.trace_id, principal=admin)["timings_ms"]) >= {
            "retrieve", "answer", "verify", "total"}
        assert "timings_ms" in kb.trace(answer.trace_id)  # the local operator


@pytest.fixture
def disclose_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([write_jsonl(tmp_path / "all.jsonl", HR + PUBLIC)])
        yield kb


def test_disclose_keeps_the_index_statistics_and_timings(disclose_kb: KnowledgeBase) -> None:
    # Under disclose nothing is concealed: the index's own BM25 (whole-index statistics,
    # so the admin's and the public user's scores agree) and the timings stay.
    public = disclose_kb.search("refund days", principal=P0)
    admin = disclose_kb.search("refund days", principal=Principal("root", admin=True),
                               top_k=50)
    readable = {h.chunk.chunk_id: h.score for h in admin.hits}
    assert public.hits and all(readable[h.chunk.chunk_id] == h.score for h in public.hits)
    assert "took_ms" in public.to_dict() and public.blocked_count > 0
    answer = disclose_kb.ask("refund days", principal=P0)
    assert "timings_ms" in disclose_kb.trace(answer.trace_id, principal=P0)
