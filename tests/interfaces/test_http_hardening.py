"""The HTTP server under hostile clients, on a real uvicorn server on 127.0.0.1 configured
as ``glassrag serve`` runs it: bodies refused before they are read, slow headers cut off,
the Host header checked, security headers, first-party API docs, and nested doc ids.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")
pytest.importorskip("uvicorn", reason="the [server] extra is not installed")

import httpx  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from glassrag import KnowledgeBase  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402
from live_server import LiveServer, read_response  # noqa: E402
from llm_stub import Reply, StubLLM, answer_json  # noqa: E402

BODY_LIMIT = 4096
NESTED = "guides/deep/parking.md"
# How long a test waits for the server before calling it stuck: a liveness bound, far
# above the 0.5 s header timeout configured here.
STUCK = 8.0


def configure(kb_dir: Path, changes: dict[str, str]) -> Path:
    """``glassrag init`` at ``kb_dir`` with some default lines of glassrag.toml replaced."""
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    text = config.read_text(encoding="utf-8")
    for old, new in changes.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    config.write_text(text, encoding="utf-8")
    return kb_dir


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    root = tmp_path_factory.mktemp("hardening")
    (root / "docs" / "guides" / "deep").mkdir(parents=True)
    (root / "docs" / "guides" / "deep" / "parking.md").write_text(
        "# Parking\n\nVisitors park on level 3 of the north garage.\n", encoding="utf-8")
    kb_dir = configure(root / "kb", {"max_body_bytes = 1000000": f"max_body_bytes = {BODY_LIMIT}",
                                     "header_timeout = 10.0": "header_timeout = 0.5"})
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.ingest([EXAMPLES, root / "docs"], exclude=["**/*.yaml", "README.md"]).failed == []
    app = create_app(kb_dir)
    with app.state.kb.lock:
        tokens = {"user": create_token(app.state.kb.store, "user", ["employee"]),
                  "root": create_token(app.state.kb.store, "root", admin=True)}
    with LiveServer(app) as server:
        yield server, tokens


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _raw(server: LiveServer, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    with server.connect(timeout=STUCK) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        return read_response(sock)


# -- bodies: refused before they are read ------------------------------------------------
def test_an_unauthenticated_body_is_refused_before_it_is_read(
        live: tuple[LiveServer, dict[str, str]]) -> None:
    server, tokens = live
    # 100 MB announced, 1 KB sent: the answer must come without waiting for the rest.
    head = ("POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100000000")
    status, headers, body = _raw(server, head, b"x" * 1024)
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert json.loads(body)["error"]["code"] == "unauthorized"
    status, _, body = _raw(server, head + "\r\nAuthorization: Bearer grt_wrong", b"x" * 1024)
    assert status == 401
    # A valid token with an oversized body: 413, again before the body is read.
    status, _, body = _raw(server, head + f"\r\nAuthorization: Bearer {tokens['user']}",
                           b"x" * 1024)
    assert status == 413 and json.loads(body)["error"]["code"] == "payload_too_large"


def test_a_chunked_body_is_cut_off_at_the_limit(live: tuple[LiveServer, dict[str, str]]) -> None:
    server, tokens = live
    head = ("POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\nAuthorization: Bearer {tokens['user']}")
    chunk = b"400\r\n" + b" " * 1024 + b"\r\n"  # 1 KB chunks, and never the final 0 chunk
    status, _, body = _raw(server, head, chunk * (BODY_LIMIT // 1024 + 2))
    assert status == 413 and json.loads(body)["error"]["code"] == "payload_too_large"
    # Below the limit a chunked body is read as usual.
    question = json.dumps({"question": "How many days do learners have for refunds?"}).encode()
    small = f"{len(question):x}\r\n".encode() + question + b"\r\n0\r\n\r\n"
    status, _, body = _raw(server, head, small)
    assert status == 200 and json.loads(body)["status"] == "answered"


# -- slow request headers --------------------------------------------------------------
def _closed_by_server(sock: socket.socket, drip: bytes = b"") -> bool:
    """Keep the connection's headers unfinished (sending ``drip`` a byte at a time) until
    the server closes it; False if it is still open after STUCK seconds."""
    sock.settimeout(0.1)
    deadline = time.monotonic() + STUCK
    sent = 0
    while time.monotonic() < deadline:
        try:
            if sent < len(drip):
                sock.send(drip[sent:sent + 1])
                sent += 1
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_connections_that_never_finish_their_headers_are_closed(
        live: tuple[LiveServer, dict[str, str]]) -> None:
    server, _ = live
    silent = [server.connect() for _ in range(20)]
    partial = [server.connect() for _ in range(20)]
    for sock in partial:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    try:
        assert all(_closed_by_server(s) for s in silent)
        assert all(_closed_by_server(s) for s in partial)
        # A client trickling header bytes (each byte used to restart uvicorn's only timer).
        with server.connect() as sock:
            assert _closed_by_server(sock, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           b"X-Slow: " + b"a" * 500)
        # The next request on a kept-alive connection gets the same bound.
        with server.connect() as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            status, _, _ = read_response(sock)
            assert status == 200
            assert _closed_by_server(sock, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 500)
    finally:
        for sock in silent + partial:
            sock.close()
    # The server still answers.
    assert httpx.get(server.url + "/healthz", timeout=STUCK).json() == {"status": "ok"}


# -- Host header, security headers, HEAD /healthz, /docs --------------------------------
def test_the_host_header_must_name_this_server(live: tuple[LiveServer, dict[str, str]]) -> None:
    server, tokens = live
    for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example"):
        r = httpx.get(server.url + "/documents", headers={"Host": host, **_auth(tokens["user"])})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_host", host
        assert "evil" not in r.text  # the rejected host is not echoed
    for host in ("localhost", f"localhost:{server.port}", "127.0.0.1", f"[::1]:{server.port}"):
        r = httpx.get(server.url + "/documents", headers={"Host": host, **_auth(tokens["user"])})
        assert r.status_code == 200, host


def test_allowed_hosts_setting(tmp_path: Path) -> None:
    kb_dir = configure(tmp_path / "kb", {"allowed_hosts = []": 'allowed_hosts = ["kb.example"]'})
    with LiveServer(create_app(kb_dir)) as server:
        assert httpx.get(server.url + "/healthz",
                         headers={"Host": "kb.example:443"}).status_code == 200
        # The configured list replaces the default one.
        assert httpx.get(server.url + "/healthz").status_code == 400
    star = configure(tmp_path / "any", {"allowed_hosts = []": 'allowed_hosts = ["*"]'})
    with LiveServer(create_app(star)) as server:
        assert httpx.get(server.url + "/healthz", headers={"Host": "x.test"}).status_code == 200
    bound = create_app(tmp_path / "kb", bind_host="10.1.2.3")
    with LiveServer(bound) as server:  # an explicit list is not widened by the bind host
        assert httpx.get(server.url + "/healthz", headers={"Host": "10.1.2.3"}).status_code == 400
    with LiveServer(create_app(tmp_path / "any", bind_host="10.1.2.3")) as server:
        assert httpx.get(server.url + "/healthz", headers={"Host": "10.1.2.3"}).status_code == 200


def test_default_hosts_include_the_bind_host(tmp_path: Path) -> None:
    KnowledgeBase.init(tmp_path / "kb").close()
    with LiveServer(create_app(tmp_path / "kb", bind_host="10.1.2.3")) as server:
        assert httpx.get(server.url + "/healthz", headers={"Host": "10.1.2.3:8000"}
                         ).status_code == 200
        assert httpx.get(server.url + "/healthz", headers={"Host": "10.1.2.4"}).status_code == 400


def test_security_headers(live: tuple[LiveServer, dict[str, str]]) -> None:
    server, tokens = live
    page = httpx.get(server.url + "/")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert "frame-ancestors 'none'" in csp
    for path in ("/", "/static/app.js", "/healthz"):
        r = httpx.get(server.url + path)
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["x-content-type-options"] == "nosniff", path
    for path in ("/", "/docs"):
        tags = _tags(httpx.get(server.url + path).text)
        scripts = [attrs for tag, attrs in tags if tag == "script"]
        assert scripts and all(a.get("src", "").startswith("/static/") for a in scripts), path
        inline = [(tag, name) for tag, attrs in tags for name in attrs
                  if name.startswith("on") or name == "style"]
        assert inline == [], f"inline handlers or styles in {path}: {inline}"
    user = _auth(tokens["user"])
    answer = httpx.post(server.url + "/ask", json={"question": "refund days"}, headers=user)
    replies = [answer,
               httpx.post(server.url + "/search", json={"query": "refund"}, headers=user),
               httpx.get(server.url + f"/traces/{answer.json()['trace_id']}", headers=user),
               httpx.get(server.url + "/traces/nope", headers=user),
               httpx.get(server.url + "/documents", headers=user),
               httpx.post(server.url + "/ask", json={"question": "refund"})]
    for r in replies:
        assert r.headers["cache-control"] == "no-store", r.request.url
    assert httpx.head(server.url + "/healthz").status_code == 200


def test_api_docs_use_no_third_party_script(live: tuple[LiveServer, dict[str, str]]) -> None:
    server, _ = live
    docs = httpx.get(server.url + "/docs")
    assert docs.status_code == 200 and "text/html" in docs.headers["content-type"]
    links = [v for _, attrs in _tags(docs.text) for k, v in attrs.items() if k in ("src", "href")]
    assert links and all(v.startswith("/") and not v.startswith("//") for v in links), links
    assert httpx.get(server.url + "/redoc").status_code in (401, 404)
    assert "/ask" in httpx.get(server.url + "/openapi.json").json()["paths"]


def test_websockets_are_refused(live: tuple[LiveServer, dict[str, str]]) -> None:
    from fastapi.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    server, tokens = live
    # Not entered as a context manager: its lifespan would close the live server's app.
    client = TestClient(server.server.config.app, base_url="http://127.0.0.1")
    with pytest.raises(WebSocketDisconnect) as closed, \
            client.websocket_connect("/ask", headers=_auth(tokens["user"])):
        pass
    assert closed.value.code == 1008


# -- doc ids with slashes ----------------------------------------------------------------
def test_nested_doc_ids_are_served(live: tuple[LiveServer, dict[str, str]]) -> None:
    server, tokens = live
    user = _auth(tokens["user"])
    for path in (NESTED, NESTED.replace("/", "%2F")):
        doc = httpx.get(f"{server.url}/documents/{path}", headers=user)
        assert doc.status_code == 200, doc.text
        assert doc.json()["doc_id"] == NESTED
        assert any("level 3" in c["text"] for c in doc.json()["chunks"])
        lines = httpx.get(f"{server.url}/documents/{path}/lines",
                          params={"line_start": 3, "line_end": 3}, headers=user)
        assert lines.status_code == 200, lines.text
        assert lines.json()["lines"] == [
            {"line": 3, "text": "Visitors park on level 3 of the north garage."}]
    missing = httpx.get(f"{server.url}/documents/guides/deep/nope.md", headers=user)
    assert missing.status_code == 404
    assert httpx.delete(f"{server.url}/documents/{NESTED}", headers=user).status_code == 403


def test_a_nested_doc_id_can_be_deleted(tmp_path: Path) -> None:
    (tmp_path / "docs" / "a" / "b").mkdir(parents=True)
    (tmp_path / "docs" / "a" / "b" / "note.md").write_text("Lockers are on floor 2.\n")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([tmp_path / "docs"])
    app = create_app(tmp_path / "kb")
    with app.state.kb.lock:
        root = _auth(create_token(app.state.kb.store, "root", admin=True))
    with LiveServer(app) as server:
        r = httpx.delete(f"{server.url}/documents/a/b/note.md", headers=root)
        assert r.status_code == 200 and r.json() == {"deleted": "a/b/note.md"}
        assert httpx.get(f"{server.url}/documents/a/b/note.md", headers=root).status_code == 404


def _tags(html: str) -> list[tuple[str, dict[str, str]]]:
    """Every start tag of ``html`` with its attributes."""
    found: list[tuple[str, dict[str, str]]] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, {k: v or "" for k, v in attrs}))

    Parser().feed(html)
    return found


# -- a slow model does not starve the server ---------------------------------------------
class HeldModel(StubLLM):
    """The stub model, made slow: every completion waits until the test releases it, and
    the stub counts how many wait at once (the concurrent model calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.calls = 0
        self.waiting = 0
        self.most = 0
        self._count = threading.Lock()

    def _next(self, path: str, body: Any, headers: dict[str, str]) -> Reply | None:
        with self._count:
            self.calls += 1
            self.waiting += 1
            self.most = max(self.most, self.waiting)
        self.release.wait(60)
        with self._count:
            self.waiting -= 1
        return Reply(answer_json("no_evidence"))


QUESTION = {"question": "How many days do learners have for refunds?"}


def _model_kb(root: Path, model: HeldModel, monkeypatch: pytest.MonkeyPatch, limit: int,
              waiting: int) -> tuple[Any, dict[str, str]]:
    """An app whose knowledge base answers with the held stub model; and a user token."""
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_MODEL", "stub-model")
    kb_dir = configure(root / "kb", {
        '# profile = "openai"': 'profile = "openai"', "retries = 2": "retries = 0",
        "http_retries = 3": "http_retries = 0",
        "max_concurrent_model_calls = 4": f"max_concurrent_model_calls = {limit}",
        "max_waiting_model_calls = 256": f"max_waiting_model_calls = {waiting}"})
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES], exclude=["**/*.yaml", "README.md"])
    app = create_app(kb_dir)
    with app.state.kb.lock:
        return app, _auth(create_token(app.state.kb.store, "user", ["employee"]))


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + STUCK
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_slow_model_does_not_starve_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asks, limit = 45, 2  # 45 asks: more than the 40 worker threads FastAPI lends sync routes
    with HeldModel() as model:
        app, user = _model_kb(tmp_path, model, monkeypatch, limit, waiting=asks)
        with LiveServer(app) as server, ThreadPoolExecutor(asks) as pool:
            pending = [pool.submit(httpx.post, server.url + "/ask", json=QUESTION, headers=user,
                                   timeout=60) for _ in range(asks)]
            try:
                _wait_for(lambda: model.waiting >= limit)
                # While every allowed model call hangs, the other routes answer at once.
                assert httpx.get(server.url + "/healthz", timeout=STUCK).status_code == 200
                assert httpx.head(server.url + "/healthz", timeout=STUCK).status_code == 200
                assert httpx.post(server.url + "/search", json={"query": "refund"}, headers=user,
                                  timeout=STUCK).status_code == 200
                assert httpx.get(server.url + "/documents", headers=user,
                                 timeout=STUCK).status_code == 200
                assert model.waiting == model.most == limit
                assert not any(f.done() for f in pending)
            finally:
                model.release.set()
            replies = [f.result() for f in pending]
    assert [r.status_code for r in replies] == [200] * asks
    assert model.most == limit and model.calls == asks


def test_asks_beyond_the_waiting_bound_are_refused_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with HeldModel() as model:
        app, user = _model_kb(tmp_path, model, monkeypatch, limit=1, waiting=2)
        with LiveServer(app) as server, ThreadPoolExecutor(3) as pool:
            ask = lambda: httpx.post(server.url + "/ask", json=QUESTION,  # noqa: E731
                                     headers=user, timeout=60)
            running = pool.submit(ask)
            _wait_for(lambda: model.waiting == 1)
            waiting = [pool.submit(ask) for _ in range(2)]
            try:
                _wait_for(lambda: app.state.model_gate.waiting == 2)
                refused = ask()
                assert refused.status_code == 503, refused.text
                assert refused.json()["error"]["code"] == "busy"
                assert model.waiting == 1 and not any(f.done() for f in [running, *waiting])
            finally:
                model.release.set()
            assert [f.result().status_code for f in [running, *waiting]] == [200] * 3
    assert model.most == 1 and model.calls == 3
