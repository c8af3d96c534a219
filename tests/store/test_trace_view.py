"""What a non-admin sees of its own trace (traces.redact): no unverified model text, no raw
model replies, no model endpoint, model name or key variable, and under ``conceal`` no
timings. The admin and the local operator keep all of it. The web page's trace view shows
GET /traces/{id} as it comes, so the HTTP checks here are the page's too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from llm_fixtures import stub as stub  # noqa: F401 - the env-pointing fixture
from llm_stub import Reply, StubLLM, answer_json
from rewrite_fixtures import rewrite_reply

QUESTION = "How many days do learners have for a refund?"
QUOTE = "Learners may ask for a refund within 14 days of purchase."
FORGED = "Refunds are never accepted after ninety days."
DOCS = [{"doc_id": "refund-policy", "title": "Refund policy", "source": "policy/refunds.md",
         "roles": ["public"], "text": f"{QUOTE} Refunds go back to the card that paid."}]
P0 = Principal("p0")
ADMIN = Principal("root", admin=True)
KEY_ENV = "OPENAI_API_KEY"
MODEL = "stub-model"


def _kb(tmp_path: Path, disclosure: str) -> KnowledgeBase:
    kb_dir = init_kb_with(tmp_path / "kb", 'disclosure = "disclose"',
                          f'disclosure = "{disclosure}"')
    kb = KnowledgeBase.open(kb_dir)
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)])
    return kb


@pytest.fixture(params=["disclose", "conceal"])
def kb(request: pytest.FixtureRequest, tmp_path: Path, stub: StubLLM) -> Iterator[KnowledgeBase]:
    base = _kb(tmp_path, request.param)
    yield base
    base.close()


def _internal(stub: StubLLM) -> list[str]:
    """Strings only an admin may see: the endpoint, the model name and the key variable."""
    return [stub.base_url.split("://", 1)[1], MODEL, KEY_ENV]


def _assert_clean(view: dict[str, Any], stub: StubLLM, *unverified: str) -> None:
    text = json.dumps(view, ensure_ascii=False)
    for needle in [*_internal(stub), *unverified, "raw_response"]:
        assert needle not in text, f"{needle!r} is in a non-admin's trace"


def test_unverified_drafts_and_raw_replies_are_for_admins(kb: KnowledgeBase,
                                                          stub: StubLLM) -> None:
    forged = answer_json("answered", FORGED, [("C1", "ninety days")])
    stub.push(Reply(forged), Reply(forged), Reply(forged))
    answer = kb.ask(QUESTION, principal=P0, llm="openai")
    assert answer.status == "unverified" and FORGED not in answer.answer
    mine = kb.trace(answer.trace_id, principal=P0)
    _assert_clean(mine, stub, FORGED, "ninety days")
    assert [a["outcome"] for a in mine["attempts"]] == ["rejected"] * 3
    assert all("draft" not in a and "request" not in a for a in mine["attempts"])
    assert mine["verification"]["ok"] is False and mine["verification"]["problem_count"] >= 1
    assert mine["settings"]["llm"] == {"profile": "openai"}
    assert mine["request"]["messages"] and "model" not in mine["request"]
    for full in (kb.trace(answer.trace_id, principal=ADMIN), kb.trace(answer.trace_id)):
        assert full["attempts"][0]["draft"]["text"] == FORGED
        assert full["attempts"][0]["raw_response"]["model"] == MODEL
        assert full["settings"]["llm"]["model"] == MODEL
        assert full["settings"]["llm"]["api_key_env"] == KEY_ENV
        assert full["verification"]["problems"]


def test_a_verified_draft_is_shown_with_its_attempt(kb: KnowledgeBase, stub: StubLLM) -> None:
    stub.push(Reply(answer_json("answered", "Within 14 days.", [("C1", QUOTE)])))
    answer = kb.ask(QUESTION, principal=P0, llm="openai")
    assert answer.status == "answered"
    mine = kb.trace(answer.trace_id, principal=P0)
    _assert_clean(mine, stub)
    [attempt] = mine["attempts"]
    assert attempt["outcome"] == "verified" and attempt["draft"]["text"] == "Within 14 days."
    assert attempt["http_status"] == 200 and attempt["attempt"] == 1


def test_transport_errors_do_not_name_the_endpoint(kb: KnowledgeBase, stub: StubLLM) -> None:
    stub.push(*[Reply("overloaded", status=503, headers={"retry-after-ms": "1"})] * 8)
    answer = kb.ask(QUESTION, principal=P0, llm="openai")
    assert answer.status == "unverified"
    mine = kb.trace(answer.trace_id, principal=P0)
    _assert_clean(mine, stub, "overloaded")
    assert {a["outcome"] for a in mine["attempts"]} == {"transport_error"}
    assert "overloaded" in json.dumps(kb.trace(answer.trace_id, principal=ADMIN))


def test_the_rewrite_stage_keeps_the_query_not_the_model_exchange(kb: KnowledgeBase,
                                                                  stub: StubLLM) -> None:
    stub.push(Reply(rewrite_reply("refund days learners")),
              Reply(answer_json("answered", "Within 14 days.", [("C1", QUOTE)])))
    answer = kb.ask("refund window?", principal=P0, llm="openai", rewrite=True)
    mine = kb.trace(answer.trace_id, principal=P0)
    _assert_clean(mine, stub)
    stage = mine["rewrite"]
    assert stage["status"] == "used" and stage["rewritten_query"] == "refund days learners"
    assert not {"request", "raw_response", "model"} & set(stage)
    assert kb.trace(answer.trace_id, principal=ADMIN)["rewrite"]["model"] == MODEL


def test_a_failed_rewrite_says_so_without_the_error(kb: KnowledgeBase, stub: StubLLM) -> None:
    stub.push(Reply("overloaded", status=503),
              Reply(answer_json("answered", "Within 14 days.", [("C1", QUOTE)])))
    answer = kb.ask(QUESTION, principal=P0, llm="openai", rewrite=True)
    stage = kb.trace(answer.trace_id, principal=P0)["rewrite"]
    assert stage["status"] == "failed" and stage["error"]
    assert "503" not in stage["error"]
    _assert_clean(kb.trace(answer.trace_id, principal=P0), stub, "overloaded")
    assert "503" in kb.trace(answer.trace_id, principal=ADMIN)["rewrite"]["error"]


def test_http_trace_view_is_the_same_redaction(kb: KnowledgeBase, stub: StubLLM) -> None:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    pytest.importorskip("httpx", reason="httpx is needed by fastapi's TestClient")
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    kb.close()
    config = kb.path / "glassrag.toml"
    config.write_text(config.read_text().replace('# profile = "openai"', 'profile = "openai"', 1))
    forged = answer_json("answered", FORGED, [("C1", "ninety days")])
    stub.push(Reply(forged), Reply(forged), Reply(forged))
    server = create_app(kb.path)
    with server.state.kb.lock:
        tokens = {who: create_token(server.state.kb.store, who, admin=who == "root")
                  for who in ("p0", "root")}
    with TestClient(server, base_url="http://127.0.0.1") as client:
        asked = client.post("/ask", json={"question": QUESTION},
                            headers={"Authorization": f"Bearer {tokens['p0']}"})
        assert asked.status_code == 200 and asked.json()["status"] == "unverified"
        url = f"/traces/{asked.json()['trace_id']}"
        seen = client.get(url, headers={"Authorization": f"Bearer {tokens['p0']}"})
        audit = client.get(url, headers={"Authorization": f"Bearer {tokens['root']}"})
    assert seen.status_code == audit.status_code == 200
    _assert_clean(seen.json(), stub, FORGED, "ninety days")
    assert FORGED in audit.text and MODEL in audit.text


def test_conceal_drops_every_timing_for_non_admins(tmp_path: Path, stub: StubLLM) -> None:
    kb = _kb(tmp_path, "conceal")
    stub.push(Reply(rewrite_reply("refund days")),
              Reply(answer_json("answered", "Within 14 days.", [("C1", QUOTE)])))
    answer = kb.ask(QUESTION, principal=P0, llm="openai", rewrite=True)
    mine = json.dumps(kb.trace(answer.trace_id, principal=P0))
    assert "timings_ms" not in mine and "latency_ms" not in mine
    full = kb.trace(answer.trace_id, principal=ADMIN)
    assert full["timings_ms"]["total"] > 0 and full["attempts"][0]["latency_ms"] > 0
    extractive = kb.ask(QUESTION, principal=P0)
    assert "timings_ms" not in kb.trace(extractive.trace_id, principal=P0)
    kb.close()
