"""One check of questions and top_k for every interface: a lone UTF-16 surrogate is a 400
naming its field (never a 500 or a traceback), and top_k has one cap, MAX_TOP_K, in the
Python API, the CLI, HTTP and MCP (an unbounded top_k used to abort the process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from conftest import EXAMPLES
from glassrag import KnowledgeBase, Principal
from glassrag.errors import InvalidInput
from glassrag.interfaces.cli.app import EXIT_INVALID
from glassrag.settings import MAX_TOP_K

SURROGATES = ["\ud800", "refund \ud800 days", "refund days\udfff", "\udcff退款"]


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("limits") / "kb"
    with KnowledgeBase.open(path) as kb:
        assert kb.ingest([EXAMPLES], exclude=["**/*.yaml", "README.md"]).failed == []
    return path


# -- Python API ------------------------------------------------------------------------
@pytest.mark.parametrize("text", SURROGATES)
def test_python_api_refuses_lone_surrogates(kb_dir: Path, text: str) -> None:
    with KnowledgeBase.open(kb_dir) as kb:
        calls: list[tuple[str, Any]] = [
            ("query", lambda: kb.search(text)),
            ("query", lambda: kb.search(text, mode="overlap")),
            ("terms", lambda: kb.search("refund", terms=[text])),
            ("question", lambda: kb.ask(text)),
            ("question", lambda: kb.inspect(text)),
            ("question", lambda: kb.dry_run(text)),
        ]
        for field, call in calls:
            with pytest.raises(InvalidInput) as caught:
                call()
            assert caught.value.status == 400 and caught.value.details["field"] == field
            json.dumps(caught.value.to_dict(), ensure_ascii=False).encode("utf-8")


def test_python_api_caps_top_k(kb_dir: Path) -> None:
    with KnowledgeBase.open(kb_dir) as kb:
        for top_k in (0, -1, MAX_TOP_K + 1, 10**9, 10**100):
            for call in (kb.search, kb.ask, kb.inspect):
                with pytest.raises(InvalidInput) as caught:
                    call("refund days", top_k=top_k)
                assert caught.value.details == {"field": "top_k", "limit": MAX_TOP_K}
                assert str(MAX_TOP_K) in caught.value.message
        # The cap itself is allowed everywhere, ask included.
        assert kb.search("refund", top_k=MAX_TOP_K).hits
        assert kb.ask("How many days do learners have for refunds?",
                      top_k=MAX_TOP_K).status == "answered"


# -- CLI (a real subprocess: an abort would kill it) -------------------------------------
def _cli(kb_dir: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "glassrag", "--kb", str(kb_dir), *args],
                          capture_output=True, timeout=120, env=os.environ.copy())


@pytest.mark.slow
def test_cli_caps_top_k_and_refuses_undecodable_arguments(kb_dir: Path) -> None:
    done = _cli(kb_dir, "search", "refund", "--top-k", "100000000", "--json")
    assert done.returncode == EXIT_INVALID, done.stderr.decode(errors="replace")
    assert json.loads(done.stdout)["error"]["details"]["field"] == "top_k"
    # Bytes that are not UTF-8 reach Python as lone surrogates ("\udcff").
    for command in (["search", b"refund \xff", "--json"], ["ask", b"\xffrefund", "--json"]):
        done = _cli(kb_dir, *command)
        assert done.returncode == EXIT_INVALID, done.stderr.decode(errors="replace")
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "invalid_input" and error["status"] == 400
        assert b"Traceback" not in done.stderr


# -- HTTP (a real server) ----------------------------------------------------------------
@pytest.fixture(scope="module")
def http(kb_dir: Path) -> Iterator[tuple[str, dict[str, str]]]:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token
    from live_server import LiveServer

    app = create_app(kb_dir)
    with app.state.kb.lock:
        token = create_token(app.state.kb.store, "u", ["employee"])
    with LiveServer(app) as server:
        yield server.url, {"Authorization": f"Bearer {token}",
                           "Content-Type": "application/json"}


@pytest.mark.parametrize("text", SURROGATES)
def test_http_refuses_lone_surrogates(http: tuple[str, dict[str, str]], text: str) -> None:
    url, headers = http
    # json.dumps writes the surrogate as the escape "\ud800", as a fuzzer's client would.
    for path, field in (("/ask", "question"), ("/search", "query")):
        r = httpx.post(url + path, content=json.dumps({field: text}), headers=headers)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["details"]["field"] == field
        assert set(r.json()) == {"error"}
    # A surrogate in a field name or another field's value is a 400 naming it, not a 500.
    for body, field in (({"question": "refund", text: 1}, "body"),
                        ({"question": "refund", "mode": text}, "mode"),
                        ({"question": "refund", "top_k": text}, "top_k")):
        r = httpx.post(url + "/ask", content=json.dumps(body), headers=headers)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["details"]["field"] == field
    # Percent-encoded surrogate bytes (not UTF-8) in a path and a query parameter.
    for path in ("/documents/x%ED%A0%80/lines?content_hash=%ED%A0%80", "/documents/%ED%A0%80"):
        assert httpx.get(url + path, headers=headers).status_code == 404


def test_http_top_k_cap_is_the_engine_cap(http: tuple[str, dict[str, str]]) -> None:
    url, headers = http
    for path, key in (("/ask", "question"), ("/search", "query")):
        ok = httpx.post(url + path, json={key: "refund days", "top_k": MAX_TOP_K},
                        headers=headers)
        assert ok.status_code == 200, ok.text
        for top_k in (MAX_TOP_K + 1, 10**9):
            r = httpx.post(url + path, json={key: "refund days", "top_k": top_k},
                           headers=headers)
            assert r.status_code == 400 and "top_k" in r.json()["error"]["message"]
            assert r.json()["error"]["details"]["field"] == "top_k"
    schema = httpx.get(url + "/openapi.json").json()["components"]["schemas"]
    for name in ("AskBody", "SearchBody"):
        top_k = schema[name]["properties"]["top_k"]["anyOf"][0]
        assert top_k["maximum"] == MAX_TOP_K


# -- MCP ----------------------------------------------------------------------------------
def test_mcp_top_k_cap_and_surrogates(kb_dir: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp import Client

    from glassrag.interfaces.mcp import build_server

    async def go() -> tuple[Any, list[Any]]:
        with KnowledgeBase.open(kb_dir) as kb:
            async with Client(build_server(kb, Principal("p"))) as client:
                tools = await client.list_tools()
                calls = [("search_knowledge_base", {"query": "refund", "top_k": MAX_TOP_K}),
                         ("search_knowledge_base", {"query": "refund", "top_k": MAX_TOP_K + 1}),
                         ("ask", {"question": "refund", "top_k": MAX_TOP_K + 1}),
                         ("search_knowledge_base", {"query": "refund \ud800"}),
                         ("ask", {"question": "\ud800"})]
                return tools, [await client.call_tool(name, args) for name, args in calls]

    tools, (fine, *refused) = anyio.run(go)
    for tool in tools.tools:
        assert tool.input_schema["properties"]["top_k"].get("maximum", None) == MAX_TOP_K or \
            tool.input_schema["properties"]["top_k"]["anyOf"][0]["maximum"] == MAX_TOP_K
    assert not fine.is_error
    assert all(r.is_error for r in refused)
    for result, field in zip(refused[2:], ("query", "question"), strict=True):
        text = result.content[0].text  # "Error executing tool NAME: " + the JSON error shape
        error = json.loads(text[text.index("{"):])["error"]
        assert error["code"] == "invalid_input" and error["details"]["field"] == field
