"""One request path: the knowledge base's lock is held around store and index access only
(never while a model embeds a query), a model answering means no extractive draft is made,
dry-run reports the status ask decides, and the ``conceal`` policy reads the same on every
output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.dense import embedders
from glassrag.disclosure import disclose
from glassrag.records import Status
from llm_stub import Reply, StubLLM, answer_json
from request_path_fixtures import DOCS, SLOW, WAIT, GatedEmbedder


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[KnowledgeBase]:
    monkeypatch.setitem(embedders.EMBEDDER_KINDS, "gated",
                        lambda target, **opts: GatedEmbedder(int(target), **opts))
    kb = KnowledgeBase.open(tmp_path / "kb")
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)], embedder="gated:64")
    yield kb
    kb.close()


def _embedder(kb: KnowledgeBase) -> GatedEmbedder:
    side = kb.dense()
    assert side is not None and isinstance(side.embedder, GatedEmbedder)
    return side.embedder


def test_reads_go_on_while_another_querys_embedding_runs(gated: KnowledgeBase) -> None:
    embedder = _embedder(gated)
    with ThreadPoolExecutor(max_workers=4) as pool:
        slow = pool.submit(gated.search, f"refunds {SLOW}", mode="dense")
        try:
            assert embedder.entered.wait(WAIT)
            # The slow search is inside the embedder now. On the same knowledge base a
            # dense search, a hybrid ask, a bm25 search and a status still complete.
            dense = pool.submit(gated.search, "refunds card", mode="dense").result(WAIT)
            assert dense.hits and dense.hits[0].chunk.doc_id == "refunds"
            # Two of its words in the text: one shared word alone is no evidence.
            answer = pool.submit(gated.ask, "How long do refunds take to reach the card?",
                                 mode="hybrid").result(WAIT)
            assert answer.status == Status.ANSWERED
            assert pool.submit(gated.search, "refunds").result(WAIT).hits
            assert pool.submit(gated.status).result(WAIT)["chunks"] >= 2
            assert not slow.done()
        finally:
            embedder.release.set()
        assert slow.result(WAIT).hits[0].chunk.doc_id == "refunds"


def test_a_model_answering_means_no_extractive_draft(gated: KnowledgeBase,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = _embedder(gated)
    # A paraphrase: no sentence covers the question's words, so the extractive path falls
    # back to the sentence closest in meaning, embedding every candidate sentence.
    monkeypatch.setattr(gated.settings, "dense",
                        gated.settings.dense.model_copy(update={"min_score": 0.05}))
    question = "when does money come back to the card"
    before = embedder.passages
    extractive = gated.ask(question, mode="dense")
    assert embedder.passages > before, "the extractive path embeds the candidate sentences"
    assert extractive.status == Status.ANSWERED
    with StubLLM() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "stub-model")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        quote = "Refunds reach the original card within fourteen days."
        stub.push(Reply(answer_json("answered", quote, [("C1", quote)])))
        before = embedder.passages
        answer = gated.ask(question, mode="dense", llm="openai")
        assert answer.status == Status.ANSWERED and answer.answer == quote
        assert embedder.passages == before, "a draft was made and thrown away"
        preview = gated.dry_run(question, mode="dense", llm="openai")
        assert preview["status"] == "decided_by_model" and preview["request"]
        assert embedder.passages == before
        assert len(stub.requests) == 1  # dry-run sends nothing


@pytest.fixture(params=["disclose", "conceal"])
def policy_kb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb_dir = init_kb_with(tmp_path / "kb", 'disclosure = "disclose"',
                          f'disclosure = "{request.param}"')
    kb = KnowledgeBase.open(kb_dir)
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)])
    yield kb
    kb.close()


def test_dry_run_reports_the_status_ask_decides(policy_kb: KnowledgeBase) -> None:
    alice = Principal("alice")
    for question in ("How long do refunds take?", "When are salary bands reviewed?",
                     "What is the capital of France?"):
        for principal in (alice, Principal("hr-1", roles=["hr"]), None):
            asked = policy_kb.ask(question, principal=principal)
            assert policy_kb.dry_run(question, principal=principal)["status"] == asked.status


def test_the_conceal_policy_reads_the_same_on_every_output(policy_kb: KnowledgeBase) -> None:
    conceal = policy_kb.settings.permissions.disclosure == "conceal"
    alice, question = Principal("alice"), "When are salary bands reviewed?"
    told = disclose(Status.BLOCKED, 1, conceal=conceal)
    search = policy_kb.search("salary bands reviewed", principal=alice)
    assert search.blocked_count == told.blocked_count
    assert ("took_ms" in search.to_dict()) is not conceal
    assert policy_kb.inspect(question, principal=alice)["blocked_count"] == told.blocked_count
    assert policy_kb.dry_run(question, principal=alice)["status"] == told.status
    answer = policy_kb.ask(question, principal=alice)
    assert answer.status == told.status
    trace = policy_kb.trace(answer.trace_id or "", principal=alice)
    assert trace["status"] == told.status and ("blocked_count" in trace) is not conceal
    assert [t["status"] for t in policy_kb.traces(principal=alice)] == [told.status]
    # Admins and the operator are told the truth under either policy.
    root = Principal("root", admin=True)
    assert policy_kb.ask(question, principal=root).status != Status.BLOCKED  # it may read it
    assert policy_kb.trace(answer.trace_id or "")["status"] == Status.BLOCKED
    assert json.loads(json.dumps(answer.to_dict()))["status"] == told.status


def test_disclose_is_the_policy() -> None:
    assert disclose(Status.BLOCKED, 3, conceal=False) == disclose("blocked_by_permission", 3,
                                                                  conceal=False)
    truth = disclose(Status.BLOCKED, 3, conceal=False)
    assert (truth.status, truth.blocked_count, truth.concealed) == (Status.BLOCKED, 3, False)
    hidden = disclose(Status.BLOCKED, 3, conceal=True)
    assert (hidden.status, hidden.blocked_count, hidden.concealed) == \
        (Status.NO_EVIDENCE, 0, True)
    for status in (Status.ANSWERED, Status.NO_EVIDENCE, Status.UNVERIFIED, None):
        assert disclose(status, 2, conceal=True).status == status
