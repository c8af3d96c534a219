"""``glassrag mcp`` as real processes, through the ``mcp`` client: over streamable HTTP every
request needs a valid bearer token and each call answers as that token's principal; over
either transport a token revoked while a session runs stops the very next call.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

import httpx  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client, MCPError, StdioServerParameters  # noqa: E402

from glassrag import KnowledgeBase  # noqa: E402
from glassrag.store.bearer_tokens import create_token, revoke_token  # noqa: E402
from leak_fixtures import PRINCIPALS as LEAK_PRINCIPALS  # noqa: E402
from leak_fixtures import _check, build_leak_kb  # noqa: E402

HR_DOCS = {f"secretdoc-hr-{n}" for n in range(3)}
SEARCH = ("search_knowledge_base", {"query": "zebracanary", "top_k": 50})
PUBLIC = LEAK_PRINCIPALS[0]  # p0: the public role only


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_leak_kb(tmp_path_factory.mktemp("mcp-transports"))


def _token(kb_dir: Path, principal: str, roles: list[str]) -> str:
    with KnowledgeBase.open(kb_dir) as kb, kb.lock:
        return create_token(kb.store, principal, roles)


def _revoke(kb_dir: Path, token: str) -> None:
    with KnowledgeBase.open(kb_dir) as kb, kb.lock:
        revoke_token(kb.store, token)


def _doc_ids(result: Any) -> set[str]:
    assert not result.is_error, result.content
    return {h["doc_id"] for h in result.structured_content["hits"]}


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error and result.structured_content is None
    text = result.content[0].text  # "Error executing tool NAME: " + the JSON error shape
    return dict(json.loads(text[text.index("{"):])["error"])


# -- stdio ------------------------------------------------------------------------------------
def test_stdio_session_ends_when_its_token_is_revoked(kb_dir: Path) -> None:
    token = _token(kb_dir, "hr-bot", ["hr"])
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "glassrag", "--kb", str(kb_dir), "mcp"],
        env={"GLASSRAG_TOKEN": token, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})

    async def go() -> tuple[Any, Any, Any]:
        async with Client(params) as client:
            before = await client.call_tool(*SEARCH)
            _revoke(kb_dir, token)
            after = await client.call_tool(*SEARCH)
            ask = await client.call_tool("ask", {"question": "zebracanary"})
            return before, after, ask

    before, after, ask = anyio.run(go)
    assert _doc_ids(before) == HR_DOCS
    for result in (after, ask):
        error = _error(result)
        assert (error["code"], error["status"]) == ("unauthorized", 401)
        assert "secretdoc" not in result.content[0].text


# -- streamable HTTP -------------------------------------------------------------------------
class HttpMcp:
    """``glassrag mcp --transport streamable-http --port 0`` as a child process."""

    def __init__(self, kb_dir: Path) -> None:
        env = {**os.environ, "GLASSRAG_TOKEN": ""}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "mcp",
             "--transport", "streamable-http", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.log: list[str] = []
        self.port = self._read_port()
        # Keep reading the log, so that a full pipe never blocks the server.
        threading.Thread(target=self._drain, daemon=True).start()

    def _read_port(self) -> int:
        assert self.process.stdout is not None
        for line in self.process.stdout:  # uvicorn's log, access lines included
            self.log.append(line)
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", line)
            if found:
                return int(found.group(1))
        raise AssertionError("the MCP server did not start: " + "".join(self.log))

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


@pytest.fixture(scope="module")
def http_mcp(kb_dir: Path) -> Iterator[HttpMcp]:
    server = HttpMcp(kb_dir)
    yield server
    server.stop()


def _calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]],
           between: Any = None) -> list[Any]:
    """Make ``calls`` in one session with ``token``; ``between()`` runs after the first."""
    async def go() -> list[Any]:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            from mcp.client.streamable_http import streamable_http_client

            async with Client(streamable_http_client(url, http_client=http)) as client:
                results = [await client.call_tool(*calls[0])]
                if between is not None:
                    between()
                for call in calls[1:]:
                    try:
                        results.append(await client.call_tool(*call))
                    except Exception as exc:  # the transport's own failure on a 401
                        results.append(exc)
                return results

    return anyio.run(go)


def test_http_requests_without_a_valid_token_get_401(kb_dir: Path, http_mcp: HttpMcp) -> None:
    revoked = _token(kb_dir, "gone", ["hr"])
    _revoke(kb_dir, revoked)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer grt_wrong"}, {"Authorization": "Basic eDp5"},
                 {"Authorization": f"Bearer {revoked}"}):
        for method in ("POST", "GET", "DELETE"):
            r = httpx.request(method, http_mcp.url, json=initialize if method == "POST" else None,
                              headers={**headers, **auth}, timeout=10)
            assert r.status_code == 401, (auth, method, r.text)
            assert r.headers["www-authenticate"] == "Bearer"
            assert r.json()["error"]["code"] == "unauthorized"
    # A valid token on a foreign Host is refused too (DNS rebinding).
    good = _token(kb_dir, "probe", [])
    r = httpx.post(http_mcp.url, json=initialize, timeout=10,
                   headers={**headers, "Authorization": f"Bearer {good}", "Host": "evil.test"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_host"


def test_http_calls_answer_as_the_requests_token(kb_dir: Path, http_mcp: HttpMcp) -> None:
    hr = _token(kb_dir, "hr-http", ["hr"])
    public = _token(kb_dir, "public-http", [])
    (hr_hits,) = _calls(http_mcp.url, hr, [SEARCH])
    assert _doc_ids(hr_hits) == HR_DOCS
    public_hits, answer = _calls(http_mcp.url, public, [SEARCH, ("ask", {"question":
                                                                  "zebracanary refund"})])
    assert not _doc_ids(public_hits) & HR_DOCS
    for result in (public_hits, answer):
        data = {k: v for k, v in result.structured_content.items()
                if k not in ("query", "query_terms", "question")}
        _check(json.dumps(data, ensure_ascii=False), PUBLIC, "mcp over http")


def test_http_session_ends_when_its_token_is_revoked(kb_dir: Path, http_mcp: HttpMcp) -> None:
    token = _token(kb_dir, "hr-revoked", ["hr"])
    refused = len([line for line in http_mcp.log if '"POST /mcp HTTP/1.1" 401' in line])
    before, after = _calls(http_mcp.url, token, [SEARCH, SEARCH],
                           between=lambda: _revoke(kb_dir, token))
    assert _doc_ids(before) == HR_DOCS
    # The next request is refused with 401 before it reaches the tool: the client gets an
    # error (the SDK's client reports "Server returned an error response"), never hits.
    assert isinstance(after, MCPError), after
    # The server's log is read by a background thread: wait for the line (a liveness
    # bound, not a timing check).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(
            [line for line in http_mcp.log if '"POST /mcp HTTP/1.1" 401' in line]) <= refused:
        time.sleep(0.05)
    assert len([line for line in http_mcp.log if '"POST /mcp HTTP/1.1" 401' in line]) > refused
