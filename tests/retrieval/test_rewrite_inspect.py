"""`kb.inspect(rewrite=...)` and `glassrag inspect --rewrite/--no-rewrite` against the stub
server on 127.0.0.1: the one rewrite request (never an answer request), the candidates ask
would rank, the fall-back to the question, and no leak of what the rewrite matched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag import Principal
from glassrag.interfaces.cli.main import app
from glassrag.llm.client import LLMAnswerer
from glassrag.retrieval.rewrite import FUSED, NO_LLM, PREFIX
from llm_stub import Reply, StubLLM, answer_json
from rewrite_fixtures import (
    CAGE_QUESTION,
    CAGE_REWRITTEN,
    FAILURES,
    QUESTION,
    QUOTE,
    REWRITTEN,
    office_kb,
    rewrite_reply,
)
from rewrite_fixtures import stub as stub  # noqa: F401  (the fixture)
from rewrite_leak_fixtures import NOBODY, _clean

runner = CliRunner()
LUNCH_QUESTION = "When does the canteen serve lunch?"


def _forbid_models(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was set up: that could read a key")

    monkeypatch.setattr(LLMAnswerer, "__init__", forbidden)


def test_inspect_ranks_the_rewrite_as_ask_does(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True)
    stub.push(Reply(rewrite_reply(REWRITTEN)))
    view = kb.inspect(QUESTION)
    # One request, the rewrite: inspect never asks for an answer.
    assert len(stub.requests) == 1
    sent = stub.bodies()[0]
    assert sent["messages"][1]["content"] == f"Question:\n{QUESTION}"
    stage = view["rewrite"]
    assert stage["status"] == "used" and stage["rewritten_query"] == REWRITTEN
    assert stage["rewriter"] == "llm:openai" and stage["model"] == "stub-model"
    assert stage["request"] == sent and stage["latency_ms"] > 0
    top = view["candidates"][0]
    assert top["chunk_id"] == "doc-bike-rack#1" and top["selected"]
    assert top["scores"][f"{PREFIX}bm25"] > 0 and top["ranks"][FUSED] == 1
    assert "bm25" not in top["scores"]  # the question's own words did not find it
    assert view["selected_ids"] == ["doc-bike-rack#1"]
    assert kb.traces() == []  # inspect writes no trace

    # ask with the same rewrite selects the same evidence, and its stage has the same shape.
    stub.push(Reply(rewrite_reply(REWRITTEN)),
              Reply(answer_json("answered", "Behind the east entrance.", [("C1", QUOTE)])))
    answer = kb.ask(QUESTION)
    assert [h.chunk.chunk_id for h in answer.evidence] == view["selected_ids"]
    traced = kb.trace(answer.trace_id)["rewrite"]
    assert set(traced) == set(stage)
    assert {k: traced[k] for k in ("status", "rewritten_query", "rewriter", "request")} == {
        k: stage[k] for k in ("status", "rewritten_query", "rewriter", "request")}
    kb.close()


def test_inspect_without_rewrite_calls_no_model(tmp_path: Path, stub: StubLLM,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True)
    _forbid_models(monkeypatch)  # off means not even an answerer is set up
    view = kb.inspect(QUESTION, rewrite=False)
    assert view["rewrite"]["status"] == "off" and view["rewrite"]["request"] is None
    assert view["candidates"] == [] and stub.requests == []
    kb.close()
    default_off = office_kb(tmp_path / "b", profile=True)  # rewrite_query = false
    assert default_off.inspect(QUESTION)["rewrite"]["status"] == "off"
    assert stub.requests == []
    default_off.close()


def test_inspect_rewrite_without_a_model_is_skipped(tmp_path: Path, stub: StubLLM,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    kb = office_kb(tmp_path, rewrite_query=True)  # switched on, no [llm] profile
    _forbid_models(monkeypatch)
    for rewrite in (None, True):
        view = kb.inspect(QUESTION, rewrite=rewrite)
        stage = view["rewrite"]
        assert (stage["status"], stage["skipped_reason"]) == ("skipped", NO_LLM)
        assert view["candidates"] == []
    assert stub.requests == []
    kb.close()


def test_inspect_with_a_callable_rewriter(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path)
    seen: list[str] = []

    def rewriter(question: str) -> str:
        seen.append(question)
        return REWRITTEN

    view = kb.inspect(QUESTION, rewrite=rewriter)
    assert seen == [QUESTION] and stub.requests == []
    assert view["rewrite"]["rewriter"].startswith("callable:")
    assert view["selected_ids"] == ["doc-bike-rack#1"]
    unsearchable = kb.inspect(QUESTION, rewrite=lambda q: "the of and")
    assert unsearchable["rewrite"]["status"] == "failed"
    assert "cannot be searched" in unsearchable["rewrite"]["error"]
    assert unsearchable["candidates"] == []
    kb.close()


@pytest.mark.parametrize("case", ["timeout", "http_error", "garbage", "refusal"])
def test_failed_rewrite_falls_back_to_the_question(tmp_path: Path, stub: StubLLM,
                                                   case: str) -> None:
    reply, expected = FAILURES[case]
    kb = office_kb(tmp_path, profile=True, timeout=0.5)
    alone = kb.inspect(LUNCH_QUESTION, rewrite=False)
    assert alone["selected_ids"] == ["doc-canteen-hours#1"]
    stub.push(reply)
    view = kb.inspect(LUNCH_QUESTION, rewrite=True)
    assert len(stub.requests) == 1  # tried once, and no answer request after it
    stage = view["rewrite"]
    assert stage["status"] == "failed" and expected in stage["error"]
    assert stage["rewritten_query"] is None and stage["request"] == stub.bodies()[0]
    # Exactly what the question alone ranks.
    assert view["candidates"] == alone["candidates"]
    assert view["query_terms"] == alone["query_terms"]
    kb.close()


@pytest.mark.parametrize("disclosure", ["disclose", "conceal"])
def test_inspect_rewrite_hides_what_it_may_not_read(tmp_path: Path, stub: StubLLM,
                                                    disclosure: str) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True, disclosure=disclosure,
                   secret=True)
    stub.push(Reply(rewrite_reply(CAGE_REWRITTEN)))
    view = kb.inspect(CAGE_QUESTION, principal=NOBODY)
    assert len(stub.requests) == 1 and view["rewrite"]["status"] == "used"
    assert view["candidates"] == [] and view["selected_ids"] == []
    # The rewrite did match the secret: it is counted where disclosure allows, ...
    assert view["blocked_count"] == (1 if disclosure == "disclose" else 0)
    _clean([view, stub.bodies()])
    # ... and a reader of it gets it.
    stub.push(Reply(rewrite_reply(CAGE_REWRITTEN)))
    reader = kb.inspect(CAGE_QUESTION, principal=Principal("f", roles=["facilities"]))
    assert reader["selected_ids"] == ["cagedocsecret#1"]
    kb.close()


def test_cli_inspect_rewrite_under_conceal(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True, disclosure="conceal", secret=True)
    kb.close()
    base = ["--kb", str(tmp_path / "office"), "inspect", QUESTION]
    off = runner.invoke(app, base)
    assert off.exit_code == 0, off.output
    assert "rewrite: off" in off.stdout and stub.requests == []

    # "bicycle" is in the public rack notice and in the secret: only the notice is shown.
    stub.push(Reply(rewrite_reply(REWRITTEN)))
    data = json.loads(runner.invoke(app, [*base, "--rewrite", "--json"]).stdout)
    assert len(stub.requests) == 1
    assert data["rewrite"]["status"] == "used" and data["selected_ids"] == ["doc-bike-rack#1"]
    assert data["blocked_count"] == 0
    _clean(data)

    stub.push(Reply(rewrite_reply(REWRITTEN)))
    shown = runner.invoke(app, [*base, "--rewrite"])
    assert shown.exit_code == 0, shown.output
    assert len(stub.requests) == 2
    assert "rewrite: used (llm:openai, stub-model, " in shown.stdout
    assert f'"{REWRITTEN}"' in shown.stdout and "doc-bike-rack#1" in shown.stdout
    assert "may not read" not in shown.stdout
    _clean(shown.output)


def test_cli_inspect_llm_flag_and_failure(tmp_path: Path, stub: StubLLM) -> None:
    office_kb(tmp_path, rewrite_query=True).close()  # on, but no [llm] profile
    base = ["--kb", str(tmp_path / "office"), "inspect", QUESTION]
    skipped = runner.invoke(app, base)
    assert "rewrite: skipped (no LLM is configured" in skipped.stdout
    assert stub.requests == []
    assert "rewrite: off" in runner.invoke(app, [*base, "--llm", "openai",
                                                 "--no-rewrite"]).stdout
    assert stub.requests == []

    stub.push(Reply("nope", status=503))
    failed = runner.invoke(app, [*base, "--llm", "openai"])
    assert failed.exit_code == 0, failed.output
    assert len(stub.requests) == 1
    assert "rewrite: failed (llm:openai, stub-model" in failed.stdout
    assert "HTTP 503" in failed.stdout and "searched as asked" in failed.stdout
