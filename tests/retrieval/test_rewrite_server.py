"""`POST /ask` with `rewrite: true | false | null` against a knowledge base whose [llm] is the
stub server on 127.0.0.1: the rewrite request is sent exactly when asked for (or when the
setting says so), the trace has the stage, and under `conceal` nothing the rewrite matched in
a document the caller may not read reaches them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")
pytest.importorskip("httpx", reason="httpx is needed by fastapi's TestClient")

from fastapi.testclient import TestClient  # noqa: E402

from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402
from llm_stub import Reply, StubLLM, answer_json  # noqa: E402
from rewrite_fixtures import (  # noqa: E402
    CAGE_QUESTION,
    CAGE_REWRITTEN,
    QUESTION,
    QUOTE,
    REWRITTEN,
    office_kb,
    rewrite_reply,
)
from rewrite_fixtures import stub as stub  # noqa: E402,F401  (the fixture)
from rewrite_leak_fixtures import NOBODY, _clean  # noqa: E402
from server_fixtures import _auth, _error_shape  # noqa: E402

ANSWER = answer_json("answered", "Behind the east entrance.", [("C1", QUOTE)])


class Api:
    """A TestClient on an office knowledge base, with tokens for p0 (public) and an admin."""

    def __init__(self, client: TestClient, tokens: dict[str, str]) -> None:
        self.client, self.tokens = client, tokens

    def ask(self, body: dict[str, Any], who: str = "p0") -> dict[str, Any]:
        r = self.client.post("/ask", json=body, headers=_auth(self.tokens[who]))
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()
        return result

    def trace(self, trace_id: str, who: str = "p0") -> dict[str, Any]:
        r = self.client.get(f"/traces/{trace_id}", headers=_auth(self.tokens[who]))
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()
        return result


def _api(tmp_path: Path, **settings: Any) -> Iterator[Api]:
    kb = office_kb(tmp_path, profile=True, **settings)
    kb_dir = kb.path
    kb.close()
    app = create_app(kb_dir)
    with app.state.kb.lock:
        tokens = {"p0": create_token(app.state.kb.store, NOBODY.principal_id),
                  "root": create_token(app.state.kb.store, "root", admin=True)}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield Api(client, tokens)


@pytest.fixture
def api_off(tmp_path: Path, stub: StubLLM) -> Iterator[Api]:
    """[llm] rewrite_query = false (the default)."""
    yield from _api(tmp_path)


@pytest.fixture
def api_on(tmp_path: Path, stub: StubLLM) -> Iterator[Api]:
    """[llm] rewrite_query = true."""
    yield from _api(tmp_path, rewrite_query=True)


@pytest.fixture
def api_secret(tmp_path: Path, stub: StubLLM) -> Iterator[Api]:
    """disclosure = "conceal", and a facilities-only document the rewrites can match."""
    yield from _api(tmp_path, disclosure="conceal", secret=True)


def test_rewrite_true_asks_for_a_rewrite(api_off: Api, stub: StubLLM) -> None:
    absent = api_off.ask({"question": QUESTION})
    assert absent["status"] == "no_evidence" and stub.requests == []
    assert api_off.trace(absent["trace_id"])["rewrite"]["status"] == "off"
    assert api_off.ask({"question": QUESTION, "rewrite": None})["status"] == "no_evidence"
    assert stub.requests == []

    stub.push(Reply(rewrite_reply(REWRITTEN)), Reply(ANSWER))
    on = api_off.ask({"question": QUESTION, "rewrite": True})
    assert on["status"] == "answered" and on["citations"][0]["quote"] == QUOTE
    rewrite_body, answer_body = stub.bodies()
    assert rewrite_body["messages"][1]["content"] == f"Question:\n{QUESTION}"
    assert answer_body["messages"][1]["content"].startswith(f"Question:\n{QUESTION}\n")
    stage = api_off.trace(on["trace_id"])["rewrite"]
    assert stage["status"] == "used" and stage["rewritten_query"] == REWRITTEN
    # The exact request (it names the model) is in the admin's view only.
    assert "request" not in stage
    assert api_off.trace(on["trace_id"], "root")["rewrite"]["request"] == rewrite_body


def test_rewrite_false_overrides_the_setting(api_on: Api, stub: StubLLM) -> None:
    off = api_on.ask({"question": QUESTION, "rewrite": False})
    assert off["status"] == "no_evidence" and stub.requests == []
    assert api_on.trace(off["trace_id"])["rewrite"]["status"] == "off"

    for body in ({"question": QUESTION}, {"question": QUESTION, "rewrite": None}):
        stub.push(Reply(rewrite_reply(REWRITTEN)), Reply(ANSWER))
        followed = api_on.ask(body)  # absent or null: the setting, which is on
        assert followed["status"] == "answered"
        assert stub.bodies()[-2]["messages"][1]["content"] == f"Question:\n{QUESTION}"
        assert api_on.trace(followed["trace_id"])["rewrite"]["status"] == "used"
    assert len(stub.requests) == 4


def test_rewrite_field_is_a_boolean(api_off: Api, stub: StubLLM) -> None:
    r = api_off.client.post("/ask", json={"question": QUESTION, "rewrite": "maybe"},
                            headers=_auth(api_off.tokens["p0"]))
    err = _error_shape(r, 400)
    assert err["code"] == "invalid_input" and err["details"]["field"] == "rewrite"
    spec = api_off.client.get("/openapi.json").json()
    field = spec["components"]["schemas"]["AskBody"]["properties"]["rewrite"]
    assert "rewrite_query" in field["description"]
    assert stub.requests == []


def test_http_rewrite_leaks_nothing_under_conceal(api_secret: Api, stub: StubLLM) -> None:
    api = api_secret
    # The rewrite matches the facilities-only document and nothing public.
    stub.push(Reply(rewrite_reply(CAGE_REWRITTEN)))
    hidden = api.ask({"question": CAGE_QUESTION, "rewrite": True})
    assert len(stub.requests) == 1  # the rewrite was sent; no evidence, so no answer request
    assert hidden["status"] == "no_evidence" and hidden["evidence"] == []
    mine = api.trace(hidden["trace_id"])
    assert mine["rewrite"]["status"] == "used" and mine["status"] == "no_evidence"
    assert "blocked_count" not in mine and mine["candidates"] == []
    # The operator's view shows the rewrite did reach the secret.
    audit = api.trace(hidden["trace_id"], "root")
    assert audit["blocked_chunk_ids"] == ["cagedocsecret#1"]
    assert audit["status"] == "blocked_by_permission"

    # "bicycle" is in the public rack notice and in the secret: only the notice is evidence.
    stub.push(Reply(rewrite_reply(REWRITTEN)), Reply(ANSWER))
    mixed = api.ask({"question": QUESTION, "rewrite": True})
    assert mixed["status"] == "answered"
    assert [e["doc_id"] for e in mixed["evidence"]] == ["doc-bike-rack"]
    assert api.trace(mixed["trace_id"], "root")["blocked_chunk_ids"] == ["cagedocsecret#1"]
    _clean([hidden, mine, mixed, api.trace(mixed["trace_id"]), stub.bodies(),
            api.client.get("/documents", headers=_auth(api.tokens["p0"])).json()])
