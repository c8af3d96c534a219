"""The leak test for why-not, on every interface it is exposed on: the Python API, the CLI
(JSON and text), HTTP (``POST /audit/why-not``) and MCP (the ``why_not`` tool).

On the leak test's knowledge base (the examples plus canary documents per role), for every
principal: why-not about a document it may not read gives exactly the reply for a document
that does not exist (the doc_id the caller typed aside), and no reply, about any document,
holds an id, title, source or text of a document it may not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag import KnowledgeBase, Principal
from glassrag.audit.why_not import why_not
from glassrag.interfaces.cli.main import app
from leak_fixtures import PRINCIPALS, SECRETS, _check, build_leak_kb

QUESTIONS = ["What is the private beta roadmap for Q4?",
             "zebracanary textcanaryemployee0 secrettitle sourcecanary0",
             "How many days do learners have for refunds?"]
PUBLIC_DOCS = ["refund-policy", "private-roadmap", "office-hours"]
MISSING = "no-such-document"


@pytest.fixture(scope="module")
def leak_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_leak_kb(tmp_path_factory.mktemp("whynot"))


def _unreadable(principal: Principal) -> list[str]:
    return [d["doc_id"] for d in SECRETS if not principal.can_read(d["roles"])]


def _same_as_missing(asked: str, about: str, missing: str) -> None:
    """``about`` (the reply for a hidden doc_id) equals ``missing`` (for MISSING), once the
    doc_id each caller typed is taken out; then the hidden reply is checked for canaries."""
    assert about.replace(asked, "<doc>") == missing.replace(MISSING, "<doc>")


def _replies(principal: Principal, ask) -> None:  # type: ignore[no-untyped-def]
    for question in QUESTIONS:
        missing = ask(question, MISSING)
        for doc_id in _unreadable(principal):
            about = ask(question, doc_id)
            _same_as_missing(doc_id, about, missing)
        for doc_id in PUBLIC_DOCS:
            _check(ask(question, doc_id), principal, f"why-not {doc_id}")


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_python_why_not_tells_nothing_of_hidden_documents(leak_kb: Path,
                                                         principal: Principal) -> None:
    with KnowledgeBase.open(leak_kb) as kb:
        def ask(question: str, doc_id: str) -> str:
            return json.dumps(why_not(kb, question, doc_id, principal=principal).to_dict())

        _replies(principal, ask)


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_cli_why_not_tells_nothing_of_hidden_documents(leak_kb: Path, principal: Principal,
                                                      as_json: bool) -> None:
    runner = CliRunner()
    roles = [arg for role in principal.roles if role != "public" for arg in ("--role", role)]

    def ask(question: str, doc_id: str) -> str:
        args = ["--kb", str(leak_kb), "why-not", question, "--doc", doc_id, *roles,
                *(["--json"] if as_json else [])]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        return result.stdout

    _replies(principal, ask)


@pytest.fixture(scope="module")
def http(leak_kb: Path) -> Iterator[tuple[object, dict[str, str]]]:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    application = create_app(leak_kb)
    kb = application.state.kb
    with kb.lock:
        tokens = {p.principal_id: create_token(kb.store, p.principal_id, p.roles, p.admin)
                  for p in [*PRINCIPALS, Principal("root", admin=True)]}
    with TestClient(application, base_url="http://127.0.0.1") as client:
        yield client, tokens


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_http_why_not_tells_nothing_of_hidden_documents(http, principal: Principal) -> None:  # type: ignore[no-untyped-def]
    client, tokens = http
    headers = {"Authorization": f"Bearer {tokens[principal.principal_id]}"}

    def ask(question: str, doc_id: str) -> str:
        r = client.post("/audit/why-not", json={"question": question, "doc_id": doc_id},
                        headers=headers)
        assert r.status_code == 200, r.text
        return r.text

    _replies(principal, ask)
    # Only an admin may explain another principal's ask.
    widened = client.post("/audit/why-not", headers=headers, json={
        "question": QUESTIONS[0], "doc_id": SECRETS[0]["doc_id"], "roles": ["employee"]})
    assert widened.status_code == 403
    _check(widened.text, principal, "why-not roles")


def test_http_admin_is_told_the_role_stage(http) -> None:  # type: ignore[no-untyped-def]
    client, tokens = http
    r = client.post("/audit/why-not", headers={"Authorization": f"Bearer {tokens['root']}"},
                    json={"question": QUESTIONS[1], "doc_id": "secretdoc-hr-0",
                          "roles": ["employee"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["stage"] == "not_readable"
    assert body["details"] == {"principal_roles": ["employee", "public"],
                               "document_roles": ["hr"]}
    no_token = client.post("/audit/why-not", json={"question": "x", "doc_id": "y"})
    assert no_token.status_code == 401


def _mcp_replies(kb_dir: Path, principal: Principal,
                 calls: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The ``why_not`` tool's reply to each (question, doc_id), through the SDK's client:
    its structured result and its text content, both as the caller gets them."""
    import anyio
    from mcp import Client

    from glassrag.interfaces.mcp import build_server

    async def go() -> dict[tuple[str, str], str]:
        replies = {}
        with KnowledgeBase.open(kb_dir) as kb:
            async with Client(build_server(kb, principal)) as client:
                for question, doc_id in calls:
                    result = await client.call_tool(
                        "why_not", {"question": question, "doc_id": doc_id})
                    assert not result.is_error, result.content[0].text
                    text = " ".join(c.text for c in result.content)
                    replies[(question, doc_id)] = (
                        json.dumps(result.structured_content, ensure_ascii=False) + "\n" + text)
        return replies

    return anyio.run(go)


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_mcp_why_not_tells_nothing_of_hidden_documents(leak_kb: Path,
                                                      principal: Principal) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    calls = [(q, d) for q in QUESTIONS
             for d in [MISSING, *_unreadable(principal), *PUBLIC_DOCS]]
    replies = _mcp_replies(leak_kb, principal, calls)
    _replies(principal, lambda question, doc_id: replies[(question, doc_id)])


def test_mcp_why_not_explains_the_callers_own_ask(leak_kb: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    question = "How many days do learners have for refunds?"
    replies = _mcp_replies(leak_kb, Principal("p0"), [(question, "refund-policy")])
    body = json.loads(replies[(question, "refund-policy")].split("\n", 1)[0])
    assert body["doc_id"] == "refund-policy" and body["stage"] == "cited"
