"""Query rewriting against the stub OpenAI-compatible server on 127.0.0.1: the rewrite is
sent with the question alone, used alongside it, off by default, skipped without a model,
and a failed rewrite falls back to the question with the error in the trace."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from glassrag.llm.client import LLMAnswerer
from glassrag.llm.prompt import REWRITE_RULES
from glassrag.retrieval.rewrite import FUSED, NO_LLM, PREFIX
from llm_stub import Reply, StubLLM, answer_json
from rewrite_fixtures import (
    FAILURES,
    PUBLIC_DOCS,
    QUESTION,
    QUOTE,
    REWRITTEN,
    office_kb,
    rewrite_reply,
)
from rewrite_fixtures import stub as stub  # noqa: F401  (the fixture)


def test_rewrite_is_sent_and_finds_the_paraphrase(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True)
    assert kb.search(QUESTION).hits == []  # BM25 misses the question's own wording
    stub.push(Reply(rewrite_reply(REWRITTEN)),
              Reply(answer_json("answered", "Behind the east entrance.", [("C1", QUOTE)])))
    answer = kb.ask(QUESTION)
    assert answer.status == "answered" and answer.citations[0].chunk_id == "doc-bike-rack#1"
    rewrite_body, answer_body = stub.bodies()
    assert rewrite_body["messages"][1]["content"] == f"Question:\n{QUESTION}"
    # The answerer is given the user's question, not the rewrite.
    assert answer_body["messages"][1]["content"].startswith(f"Question:\n{QUESTION}\n")
    assert REWRITTEN not in json.dumps(answer_body)
    trace = kb.trace(answer.trace_id)
    stage = trace["rewrite"]
    assert stage["status"] == "used" and stage["rewritten_query"] == REWRITTEN
    assert stage["question"] == QUESTION and stage["rewriter"] == "llm:openai"
    assert stage["model"] == "stub-model" and stage["error"] is None
    assert stage["request"] == rewrite_body and stage["latency_ms"] > 0
    assert trace["timings_ms"]["rewrite"] > 0
    hit = trace["candidates"][0]
    assert hit["chunk_id"] == "doc-bike-rack#1"
    assert hit["scores"][f"{PREFIX}bm25"] > 0 and hit["ranks"][FUSED] == 1
    assert "bm25" not in hit["scores"]  # the question itself did not find it
    written = kb.export_trace(answer.trace_id, tmp_path / "records")
    request = next(p for p in written if p.name.endswith("-request.json"))
    assert json.loads(request.read_text())["rewrite"] == stage
    kb.close()


def test_rewrite_request_carries_only_the_question(tmp_path: Path, stub: StubLLM) -> None:
    # The question finds evidence before the rewrite is sent: none of it may go along.
    kb = office_kb(tmp_path, profile=True)
    question = "When does the canteen serve lunch?"
    lunch = "The canteen serves lunch between 11:30 and 14:00."
    stub.push(Reply(rewrite_reply("canteen lunch hours opening times")),
              Reply(answer_json("answered", "From 11:30 to 14:00.", [("C1", lunch)])))
    answer = kb.ask(question, rewrite=True)
    assert answer.status == "answered"
    sent = stub.bodies()[0]
    assert sent["messages"] == [
        {"role": "system", "content": sent["messages"][0]["content"]},
        {"role": "user", "content": f"Question:\n{question}"},
    ]
    assert sent["messages"][0]["content"].startswith(REWRITE_RULES)
    dumped = json.dumps(sent, ensure_ascii=False)
    for doc in PUBLIC_DOCS:
        for value in (doc["doc_id"], doc["title"], doc["source"], *doc["text"].split(". ")):
            assert value not in dumped
    assert "evidence" not in dumped.lower() and "C1" not in dumped
    kb.close()


def test_rewrite_is_off_by_default(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True)
    answer = kb.ask(QUESTION)
    assert answer.status == "no_evidence"
    assert stub.requests == []  # no rewrite, and no evidence means no answer call either
    assert kb.trace(answer.trace_id)["rewrite"]["status"] == "off"
    assert "rewrite" not in kb.trace(answer.trace_id)["timings_ms"]
    kb.close()


def test_rewrite_skipped_without_an_llm(tmp_path: Path, stub: StubLLM,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    kb = office_kb(tmp_path, rewrite_query=True)  # switched on, but no [llm] profile

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was set up: that could read a key")

    monkeypatch.setattr(LLMAnswerer, "__init__", forbidden)
    for rewrite in (None, True):
        answer = kb.ask(QUESTION, rewrite=rewrite)
        assert answer.status == "no_evidence"
        stage = kb.trace(answer.trace_id)["rewrite"]
        assert (stage["status"], stage["skipped_reason"]) == ("skipped", NO_LLM)
        assert stage["rewritten_query"] is None and stage["request"] is None
    dry = kb.dry_run(QUESTION)
    assert dry["rewrite"]["status"] == "skipped" and dry["rewrite"]["request"] is None
    assert stub.requests == []
    kb.close()


@pytest.mark.parametrize("case", list(FAILURES))
def test_failed_rewrite_falls_back_to_the_question(tmp_path: Path, stub: StubLLM,
                                                   case: str) -> None:
    reply, expected = FAILURES[case]
    kb = office_kb(tmp_path, profile=True, timeout=0.5)
    stub.push(reply)
    answer = kb.ask(QUESTION, rewrite=True)
    assert answer.status == "no_evidence"  # what the question alone gives
    assert len(stub.requests) == 1  # one try: a rewrite is not worth a retry's wait
    trace = kb.trace(answer.trace_id)
    stage = trace["rewrite"]
    assert stage["status"] == "failed" and expected in stage["error"]
    assert stage["rewritten_query"] is None and stage["request"] == stub.bodies()[0]
    assert trace["candidates"] == []
    kb.close()


def test_failed_rewrite_still_answers(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True)
    lunch = "The canteen serves lunch between 11:30 and 14:00."
    stub.push(Reply("down", status=500),
              Reply(answer_json("answered", "From 11:30 to 14:00.", [("C1", lunch)])))
    answer = kb.ask("When does the canteen serve lunch?", rewrite=True)
    assert answer.status == "answered"
    stage = kb.trace(answer.trace_id)["rewrite"]
    assert stage["status"] == "failed" and "HTTP 500" in stage["error"]
    kb.close()


def test_callable_rewriter_without_an_llm(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path)
    seen: list[str] = []

    def rewriter(question: str) -> str:
        seen.append(question)
        return REWRITTEN

    answer = kb.ask(QUESTION, rewrite=rewriter)
    # Extractive: the question's words cover nothing, the rewritten query's do.
    assert answer.status == "answered" and answer.citations[0].quote == QUOTE
    assert seen == [QUESTION] and stub.requests == []
    stage = kb.trace(answer.trace_id)["rewrite"]
    assert stage["rewriter"].startswith("callable:") and stage["status"] == "used"
    assert stage["model"] is None

    def broken(question: str) -> str:
        raise RuntimeError("rewriter offline")

    cases = {broken: "RuntimeError: rewriter offline",
             (lambda q: "the of and"): "cannot be searched",
             (lambda q: 42): "not a string"}
    for hook, expected in cases.items():
        failed = kb.ask(QUESTION, rewrite=hook)  # type: ignore[arg-type]
        assert failed.status == "no_evidence"
        stage = kb.trace(failed.trace_id)["rewrite"]
        assert stage["status"] == "failed" and expected in stage["error"]
    same = kb.ask(QUESTION, rewrite=lambda q: f"  {q} ")
    assert kb.trace(same.trace_id)["rewrite"]["status"] == "unchanged"
    kb.close()


def test_fusing_keeps_the_dense_gates_inputs() -> None:
    import numpy as np

    from glassrag.retrieval.rewrite import fuse_retrievals
    from glassrag.retrieval.search import Retrieval

    vector = np.ones(4, dtype=np.float32)
    asked = Retrieval("hybrid", ("a",), [], 0, dense_margin=0.01, dense_min_margin=0.045,
                      query_vector=vector)
    rewritten = Retrieval("hybrid", ("b",), [], 0, dense_margin=0.06, dense_min_margin=0.045)
    fused = fuse_retrievals(asked, rewritten, top_k=5, blocked_limit=5)
    # Without these the dense gate was off whenever a rewrite ran.
    assert (fused.dense_margin, fused.dense_min_margin) == (0.06, 0.045)
    assert fused.dense_stands_out and fused.query_vector is vector
    flat = fuse_retrievals(asked, dataclasses.replace(rewritten, dense_margin=0.02), 5, 5)
    assert flat.dense_margin == 0.02 and not flat.dense_stands_out
    lexical = fuse_retrievals(Retrieval("bm25", ("a",), [], 0), Retrieval("bm25", ("b",), [], 0),
                              5, 5)
    assert lexical.dense_margin is None and lexical.dense_stands_out
