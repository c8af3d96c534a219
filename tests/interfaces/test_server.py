"""The HTTP API in-process: routes, the one error shape, bearer-token auth, and the leak test.

The leak test reuses tests/test_leak.py's canary documents and checks: every route's output
for every principal is searched for the ids, titles, sources and text of the documents that
principal may not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")
pytest.importorskip("httpx", reason="httpx is needed by fastapi's TestClient")

from fastapi.testclient import TestClient  # noqa: E402

from glassrag import KnowledgeBase, Principal  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token, revoke_token  # noqa: E402
from leak_fixtures import (  # noqa: E402
    PRINCIPALS,
    QUERIES,
    SECRETS,
    UNSEARCHABLE,
    _check,
    build_leak_kb,
)
from server_fixtures import ADMIN, _auth, _error_shape

# The Host the test client sends: a loopback name, as the server accepts by default.
LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def leak_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_leak_kb(tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="module")
def server(leak_dir: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    app = create_app(leak_dir)
    kb = app.state.kb
    with kb.lock:
        tokens = {p.principal_id: create_token(kb.store, p.principal_id, p.roles, p.admin)
                  for p in [*PRINCIPALS, ADMIN]}
    with TestClient(app, base_url=LOCAL) as client:
        yield client, tokens


# -- routes --------------------------------------------------------------------------------
def test_healthz_openapi_and_page(server: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = server
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    for path in ("/ask", "/search", "/documents", "/documents/{doc_id}", "/traces/{trace_id}"):
        assert path in spec["paths"]
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert client.get("/static/app.js").status_code == 200
    # Unknown routes need a token like every other non-public path: they tell nothing.
    _error_shape(client.get("/no-such-route"), 401)
    _error_shape(client.get("/no-such-route", headers=_auth(tokens["p0"])), 404)


def test_ask_returns_the_cli_json(server: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = server
    r = client.post("/ask", json={"question": "How many days do learners have for refunds?"},
                    headers=_auth(tokens["p0"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"status", "answer", "citations", "evidence", "trace_id", "question",
                         "mode"}
    assert body["status"] == "answered"
    cite = body["citations"][0]
    assert {"doc_id", "line_start", "line_end", "quote", "content_hash"} <= set(cite)
    # The cited lines can be fetched and contain the quote's start.
    lines = client.get(f"/documents/{cite['doc_id']}/lines",
                       params={"line_start": cite["line_start"], "line_end": cite["line_end"],
                               "content_hash": cite["content_hash"]},
                       headers=_auth(tokens["p0"])).json()
    assert lines["current"] is True
    assert cite["quote"][:20] in "\n".join(line["text"] for line in lines["lines"])
    trace = client.get(f"/traces/{body['trace_id']}", headers=_auth(tokens["p0"]))
    assert trace.status_code == 200
    # Another principal's trace is missing for them; the admin sees it.
    _error_shape(client.get(f"/traces/{body['trace_id']}", headers=_auth(tokens["p-hr"])), 404)
    assert client.get(f"/traces/{body['trace_id']}",
                      headers=_auth(tokens["root"])).status_code == 200


def test_search_and_documents(server: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = server
    r = client.post("/search", json={"query": "refund", "top_k": 3, "mode": "overlap"},
                    headers=_auth(tokens["p0"]))
    assert r.status_code == 200 and r.json()["mode"] == "overlap"
    assert 0 < len(r.json()["hits"]) <= 3
    docs = client.get("/documents", headers=_auth(tokens["p-hr"])).json()["documents"]
    ids = {d["doc_id"] for d in docs}
    assert {f"secretdoc-hr-{n}" for n in range(3)} <= ids
    assert not any(i.startswith(("secretdoc-finance", "secretdoc-employee")) for i in ids)
    doc = client.get("/documents/secretdoc-hr-0", headers=_auth(tokens["p-hr"])).json()
    assert doc["chunks"] and doc["chunks"][0]["text"]


@pytest.mark.parametrize(("body", "field"), [
    ({"question": "refunds", "roles": ["hr"]}, "roles"),
    ({"question": "refunds", "role": "hr"}, "role"),
    ({"question": "refunds", "principal": "root"}, "principal"),
    ({"question": "refunds", "admin": True}, "admin"),
    ({"question": "refunds", "principal_id": "p-hr"}, "principal_id"),
    ({"question": "refunds", "top_k": 0}, "top_k"),
    ({"question": "refunds", "top_k": 10**6}, "top_k"),
    ({"question": "refunds", "mode": "nope"}, "mode"),
    ({}, "question"),
    ({"question": 7}, "question"),
])
def test_bad_or_widening_ask_bodies_are_rejected(
    server: tuple[TestClient, dict[str, str]], body: dict, field: str
) -> None:
    client, tokens = server
    err = _error_shape(client.post("/ask", json=body, headers=_auth(tokens["p0"])), 400)
    assert err["code"] == "invalid_input"
    assert err["details"]["field"] == field


def test_query_fields_do_not_widen_roles(server: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = server
    query = {"query": "zebracanary textcanaryhr0", "top_k": 50}
    plain = client.post("/search", json=query, headers=_auth(tokens["p0"])).json()
    assert plain["hits"] == [] and plain["blocked_count"] > 0
    _error_shape(client.post("/search", json={**query, "roles": ["hr"]},
                             headers=_auth(tokens["p0"])), 400)
    for params in ({"roles": "hr"}, {"role": "hr"}, {"admin": "true"}, {"principal": "root"},
                   {"principal_id": "p-hr"}):
        r = client.post("/search", json=query, params=params, headers=_auth(tokens["p0"]))
        assert r.status_code == 200
        assert r.json()["hits"] == [] and r.json()["blocked_count"] == plain["blocked_count"]
        docs = client.get("/documents", params=params, headers=_auth(tokens["p0"])).json()
        assert not any(d["doc_id"].startswith("secretdoc") for d in docs["documents"])
        _error_shape(client.get("/documents/secretdoc-hr-0", params=params,
                                headers=_auth(tokens["p0"])), 404)


def test_empty_question_is_400_in_the_error_shape(
    server: tuple[TestClient, dict[str, str]]
) -> None:
    client, tokens = server
    err = _error_shape(client.post("/ask", json={"question": "  "},
                                   headers=_auth(tokens["p0"])), 400)
    assert err["code"] == "empty_query"


# -- authentication ------------------------------------------------------------------------
def test_missing_wrong_and_malformed_tokens_are_401(
    server: tuple[TestClient, dict[str, str]]
) -> None:
    client, tokens = server
    for headers in ({}, _auth("grt_wrong"), {"Authorization": "Basic abc"},
                    {"Authorization": "Bearer"}, _auth(tokens["p0"] + "x")):
        for method, path, body in (("post", "/ask", {"question": "refund"}),
                                   ("post", "/search", {"query": "refund"}),
                                   ("get", "/documents", None),
                                   ("get", "/documents/refund-policy", None),
                                   ("get", "/traces/whatever", None)):
            r = client.request(method, path, json=body, headers=headers)
            err = _error_shape(r, 401)
            assert err["code"] == "unauthorized"
            assert r.headers["www-authenticate"] == "Bearer"


def test_revoked_token_is_401(leak_dir: Path) -> None:
    app = create_app(leak_dir)
    kb = app.state.kb
    with kb.lock:
        token = create_token(kb.store, "temp", ["hr"])
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/documents", headers=_auth(token)).status_code == 200
        with kb.lock:
            revoke_token(kb.store, token)
        _error_shape(client.get("/documents", headers=_auth(token)), 401)


def test_anonymous_access_is_public_only_when_enabled(leak_dir: Path) -> None:
    with TestClient(create_app(leak_dir, allow_anonymous=True), base_url=LOCAL) as client:
        r = client.post("/search", json={"query": "zebracanary", "top_k": 50})
        assert r.status_code == 200 and r.json()["hits"] == []
        docs = client.get("/documents").json()["documents"]
        assert docs and not any(d["doc_id"].startswith("secretdoc") for d in docs)
        # A token that is sent but wrong is still refused.
        _error_shape(client.get("/documents", headers=_auth("grt_nope")), 401)
    with TestClient(create_app(leak_dir), base_url=LOCAL) as client:
        _error_shape(client.get("/documents"), 401)


def test_upload_and_delete_are_admin_only(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    (kb_dir / "glassrag.toml").write_text(
        (kb_dir / "glassrag.toml").read_text().replace("max_upload_bytes = 20000000",
                                                       "max_upload_bytes = 2000"))
    app = create_app(kb_dir)
    kb = app.state.kb
    with kb.lock:
        admin = create_token(kb.store, "root", admin=True)
        user = create_token(kb.store, "u", ["employee"])
    note = ("notes.md", b"# Parking\n\nVisitors park on level 3 of the garage.\n", "text/plain")
    with TestClient(app, base_url=LOCAL) as client:
        err = _error_shape(client.post("/documents", files={"file": note},
                                       headers=_auth(user)), 403)
        assert err["code"] == "forbidden"
        r = client.post("/documents", files={"file": note}, data={"roles": "employee"},
                        headers=_auth(admin))
        assert r.status_code == 201, r.text
        assert r.json()["added"] == 1
        doc_id = client.get("/documents", headers=_auth(user)).json()["documents"][0]["doc_id"]
        got = client.get(f"/documents/{doc_id}", headers=_auth(user)).json()
        assert got["roles"] == ["employee"]
        assert any("level 3" in c["text"] for c in got["chunks"])
        big = ("big.txt", b"word " * 1000, "text/plain")
        assert _error_shape(client.post("/documents", files={"file": big},
                                        headers=_auth(admin)), 413)["code"] == \
            "payload_too_large"
        _error_shape(client.delete(f"/documents/{doc_id}", headers=_auth(user)), 403)
        assert client.delete(f"/documents/{doc_id}", headers=_auth(admin)).status_code == 200
        _error_shape(client.get(f"/documents/{doc_id}", headers=_auth(user)), 404)
        _error_shape(client.delete(f"/documents/{doc_id}", headers=_auth(admin)), 404)


# -- the leak test over HTTP ---------------------------------------------------------------
def _missing_like(client: TestClient, token: str, doc_id: str, suffix: str = "") -> None:
    """An unreadable document answers exactly like a missing one (same status, same body)."""
    got = client.get(f"/documents/{doc_id}{suffix}", headers=_auth(token))
    absent = client.get(f"/documents/no-such-doc-000{suffix}", headers=_auth(token))
    assert got.status_code == absent.status_code == 404
    assert got.text.replace(doc_id, "X") == absent.text.replace("no-such-doc-000", "X")


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_http_never_leaks(server: tuple[TestClient, dict[str, str]],
                          principal: Principal) -> None:
    client, tokens = server
    headers = _auth(tokens[principal.principal_id])
    for query in QUERIES:
        for mode in ("bm25", "overlap"):
            r = client.post("/search", json={"query": query, "top_k": 50, "mode": mode},
                            headers=headers)
            if (query, mode) in UNSEARCHABLE:
                assert _error_shape(r, 400)["code"] == "empty_query"
            else:
                assert r.status_code == 200, (query, mode, r.text)
            _check(r.text, principal, f"POST /search {mode}")
        r = client.post("/ask", json={"question": query, "top_k": 10}, headers=headers)
        assert r.status_code == 200
        _check(json.dumps({k: v for k, v in r.json().items() if k != "question"},
                          ensure_ascii=False), principal, "POST /ask")
        trace = client.get(f"/traces/{r.json()['trace_id']}", headers=headers)
        assert trace.status_code == 200
        _check(trace.text, principal, "GET /traces")
    _check(client.get("/documents", headers=headers).text, principal, "GET /documents")
    for doc in SECRETS:
        if principal.can_read(doc["roles"]):
            continue
        _missing_like(client, tokens[principal.principal_id], doc["doc_id"])
        _missing_like(client, tokens[principal.principal_id], doc["doc_id"], "/lines")


def test_secrets_reach_their_readers_over_http(
    server: tuple[TestClient, dict[str, str]]
) -> None:
    # Guard against a leak test that passes because nothing secret is ever returned.
    client, tokens = server
    r = client.post("/search", json={"query": "zebracanary", "top_k": 50},
                    headers=_auth(tokens["p-hr"])).json()
    assert {h["doc_id"] for h in r["hits"]} == {f"secretdoc-hr-{n}" for n in range(3)}
    admin = client.post("/search", json={"query": "zebracanary", "top_k": 50},
                        headers=_auth(tokens["root"])).json()
    assert len({h["doc_id"] for h in admin["hits"]}) == 9


def test_errors_name_the_callers_own_field(server: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = server
    for path, field in (("/ask", "question"), ("/search", "query")):
        for text in ("  ", "what is the", "?!"):
            err = _error_shape(client.post(path, json={field: text},
                                           headers=_auth(tokens["p0"])), 400)
            assert err["code"] == "empty_query"
            assert err["details"]["field"] == field, (path, text, err)
            assert err["message"].startswith(f"the {field} ")


def test_a_dense_mode_without_an_embedder_names_the_setting_not_a_cli_flag(
        server: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = server
    for path, field in (("/ask", "question"), ("/search", "query")):
        err = _error_shape(client.post(path, json={field: "parking", "mode": "hybrid"},
                                       headers=_auth(tokens["p0"])), 400)
        assert err["details"]["field"] == "mode"
        assert "[dense] embedder" in err["message"]
        assert "(--embedder)" not in err["message"]


def test_capabilities_name_only_the_modes_the_knowledge_base_serves(tmp_path: Path) -> None:
    from conftest import init_kb_with

    plain = tmp_path / "plain"
    KnowledgeBase.init(plain).close()
    dense = init_kb_with(tmp_path / "dense", 'embedder = ""', 'embedder = "hash:64"')
    for kb_dir, modes in ((plain, ["bm25", "overlap"]),
                          (dense, ["bm25", "hybrid", "dense", "overlap"])):
        with TestClient(create_app(kb_dir), base_url=LOCAL) as client:
            r = client.get("/capabilities")  # public: the page reads it before any token
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["modes"] == modes
            assert body["default_mode"] == "bm25" and body["max_top_k"] == 1000
            assert body["version"] == client.get("/openapi.json").json()["info"]["version"]


def test_openapi_says_a_bad_field_is_400_in_the_error_shape(
    server: tuple[TestClient, dict[str, str]]
) -> None:
    client, _ = server
    spec = client.get("/openapi.json").json()
    import glassrag

    assert spec["info"]["version"] == glassrag.__version__
    for path, method in (("/ask", "post"), ("/search", "post"), ("/documents", "post"),
                         ("/documents/{doc_id}/lines", "get")):
        responses = spec["paths"][path][method]["responses"]
        assert "422" not in responses and "400" in responses, path
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    assert spec["components"]["schemas"]["Error"]["required"] == ["error"]
    assert spec["paths"]["/documents"]["post"]["operationId"].startswith("ingest")


def test_uploading_a_name_again_updates_it_and_never_takes_another_files_id(
        tmp_path: Path) -> None:
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe archive room opens at nine.\n")
    kb_dir = tmp_path / "kb"
    kb = KnowledgeBase.init(kb_dir)
    kb.ingest([folder], roles=["hr"])
    kb.close()
    app = create_app(kb_dir)
    with app.state.kb.lock:
        admin = create_token(app.state.kb.store, "root", admin=True)
    first = ("faq.md", b"# FAQ\n\nBadges are collected at the front desk.\n", "text/plain")
    second = ("faq.md", b"# FAQ\n\nBadges are collected in room 12.\n", "text/plain")
    clash = ("notes.md", b"# Notes\n\nEveryone may read this.\n", "text/plain")
    with TestClient(app, base_url=LOCAL) as client:
        r = client.post("/documents", files={"file": first}, headers=_auth(admin))
        assert r.status_code == 201 and r.json()["added"] == 1, r.text
        r = client.post("/documents", files={"file": second}, headers=_auth(admin))
        assert r.status_code == 201 and r.json()["updated"] == 1, r.text
        faq = client.get("/documents/faq.md", headers=_auth(admin)).json()
        assert any("room 12" in c["text"] for c in faq["chunks"])
        # notes.md came from the handbook folder: an upload of that name is refused...
        err = _error_shape(client.post("/documents", files={"file": clash},
                                       headers=_auth(admin)), 400)
        assert "already belongs to" in err["message"]
        notes = client.get("/documents/notes.md", headers=_auth(admin)).json()
        assert notes["roles"] == ["hr"] and "archive room" in notes["chunks"][0]["text"]
        # ...unless the admin says it replaces it.
        r = client.post("/documents", files={"file": clash}, data={"replace": "true"},
                        headers=_auth(admin))
        assert r.status_code == 201 and r.json()["updated"] == 1, r.text
