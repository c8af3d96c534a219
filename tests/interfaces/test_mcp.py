"""The MCP server through the SDK's own in-process client: tools, strict schemas, no leaks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import glassrag

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from mcp import Client  # noqa: E402

from glassrag import KnowledgeBase, Principal  # noqa: E402
from glassrag.errors import GlassragError  # noqa: E402
from glassrag.interfaces.mcp import TOOL_NAMES, build_server, header_caller, token_caller  # noqa: E402,E501
from glassrag.store.bearer_tokens import TokenReader, create_token  # noqa: E402
from leak_fixtures import PRINCIPALS, QUERIES, UNSEARCHABLE, _check, build_leak_kb  # noqa: E402
from mcp_fixtures import _run


@pytest.fixture(scope="module")
def leak_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_leak_kb(tmp_path_factory.mktemp("mcp"))


def test_tools_and_strict_schemas(leak_dir: Path) -> None:
    tools, results = _run(leak_dir, Principal("p0"), [
        ("search_knowledge_base", {"query": "refund days", "top_k": 3}),
        ("ask", {"question": "How many days do learners have for refunds?"}),
        ("ask", {"question": "refunds", "roles": ["hr"]}),
        ("search_knowledge_base", {"query": "zebracanary", "principal": "root"}),
        ("ask", {"question": "refunds", "admin": True}),
        ("ask", {"question": " "}),
    ])
    assert sorted(t.name for t in tools.tools) == sorted(TOOL_NAMES)
    for tool in tools.tools:
        assert tool.input_schema["additionalProperties"] is False
    search, answer, *rejected, empty = results
    assert not search.is_error and 0 < len(search.structured_content["hits"]) <= 3
    assert not answer.is_error and answer.structured_content["status"] == "answered"
    assert answer.structured_content["citations"][0]["line_start"] >= 1
    for result, field in zip(rejected, ("roles", "principal", "admin"), strict=True):
        assert _error(result, "ask" if field != "principal" else "search_knowledge_base") == {
            "code": "invalid_input", "status": 400, "field": field,
            "message": f"{field}: Extra inputs are not permitted"}
    assert _error(empty, "ask")["code"] == "empty_query"


def test_server_info_names_the_package_version(leak_dir: Path) -> None:
    async def info() -> Any:
        with KnowledgeBase.open(leak_dir) as kb:
            async with Client(build_server(kb, Principal("p0"))) as client:
                return client.server_info

    server_info = anyio.run(info)
    assert server_info.name == "glassrag" and server_info.version == glassrag.__version__


def _error(result: Any, tool: str) -> dict[str, Any]:
    """The JSON error shape of a failed tool call, flattened: code, status, field, message."""
    assert result.is_error
    prefix = f"Error executing tool {tool}: "
    text = result.content[0].text
    assert text.startswith(prefix), text
    body = json.loads(text.removeprefix(prefix))["error"]
    return {"code": body["code"], "status": body["status"], "message": body["message"],
            "field": body.get("details", {}).get("field")}


def test_bad_arguments_are_the_error_shape_naming_the_argument(leak_dir: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_knowledge_base", {"query": "refund", "top_k": 0}),
        ("search_knowledge_base", {"query": "refund", "mode": "nope"}),
        ("search_knowledge_base", {}),
        ("ask", {"question": 7}),
        ("ask", {"question": "refund", "top_k": 10**6}),
        ("ask", {"question": "refund", "rewrite": "maybe"}),
        ("ask", {"question": "what is the"}),
        ("search_knowledge_base", {"query": "what is the"}),
    ]
    _, results = _run(leak_dir, Principal("p0"), calls)
    fields = ["top_k", "mode", "query", "question", "top_k", "rewrite", "question", "query"]
    for (tool, args), result, field in zip(calls, results, fields, strict=True):
        error = _error(result, tool)
        assert error["status"] == 400 and error["field"] == field, (args, error)
        assert "validation error" not in error["message"]  # not pydantic's own text
        assert "10000" not in error["message"] and "maybe" not in error["message"]


def test_principal_comes_from_the_token(leak_dir: Path) -> None:
    with KnowledgeBase.open(leak_dir) as kb:
        with kb.lock:
            token = create_token(kb.store, "hr-bot", ["hr"])
        tokens = TokenReader(kb.store)
        try:
            # stdio: the token the server started with; HTTP: each request's header.
            assert token_caller(tokens, token)(None) == Principal("hr-bot", ["hr"])
            assert header_caller(tokens)({"authorization": f"Bearer {token}"}) == \
                Principal("hr-bot", ["hr"])
            assert token_caller(tokens, "", allow_anonymous=True)(None) == \
                Principal("anonymous")
            for caller, message in ((token_caller(tokens, None), "--token"),
                                    (token_caller(tokens, "grt_nope"), "invalid or revoked"),
                                    (header_caller(tokens), "HTTP request"),
                                    (header_caller(tokens, allow_anonymous=True),
                                     "HTTP request")):
                with pytest.raises(GlassragError) as info:
                    caller(None)
                assert info.value.status == 401 and message in info.value.message
            with pytest.raises(GlassragError) as info:  # a wrong header is never anonymous
                header_caller(tokens, allow_anonymous=True)({"authorization": "Bearer x"})
            assert info.value.status == 401
        finally:
            tokens.close()
    _, (hr,) = _run(leak_dir, Principal("hr-bot", ["hr"]),
                    [("search_knowledge_base", {"query": "zebracanary", "top_k": 50})])
    assert {h["doc_id"] for h in hr.structured_content["hits"]} == {
        f"secretdoc-hr-{n}" for n in range(3)}


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_mcp_never_leaks(leak_dir: Path, principal: Principal) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    for query in QUERIES:
        calls += [("search_knowledge_base", {"query": query, "top_k": 50, "mode": mode})
                  for mode in ("bm25", "overlap")]
        calls.append(("ask", {"question": query, "top_k": 10}))
    _, results = _run(leak_dir, principal, calls)
    for (name, args), result in zip(calls, results, strict=True):
        if (args.get("query"), args.get("mode")) in UNSEARCHABLE:
            assert _error(result, name)["code"] == "empty_query"
            _check(result.content[0].text, principal, f"mcp {name} error")
            continue
        assert not result.is_error, (name, args, result.content[0].text)
        data = dict(result.structured_content)
        data.pop("question", None)
        _check(json.dumps(data, ensure_ascii=False), principal, f"mcp {name}")
        for content in result.content:
            text = {k: v for k, v in json.loads(content.text).items()
                    if k not in ("question", "query", "query_terms")}
            _check(json.dumps(text, ensure_ascii=False), principal, f"mcp {name} text")


def test_an_error_with_details_for_the_operator_logs_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller is told "the details are in the server log": they must be there."""
    monkeypatch.delenv("GLASSRAG_TEST_MISSING_KEY", raising=False)
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("[llm]\n", (
        # The profile's own hosted endpoint needs a key; without one no request is made.
        '[llm]\nprofile = "openai"\napi_key_env = "GLASSRAG_TEST_MISSING_KEY"\n'), 1).replace(
        "http_retries = 3", "http_retries = 0"), encoding="utf-8")
    (tmp_path / "a.md").write_text("Refunds take nine days.\n", encoding="utf-8")
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([tmp_path / "a.md"])
    with caplog.at_level("WARNING", logger="glassrag"):
        _, (result,) = _run(kb_dir, Principal("p0"), [("ask", {"question": "refund days?"})])
    error = _error(result, "ask")
    assert "details are in the server log" in error["message"]
    assert "GLASSRAG_TEST_MISSING_KEY" not in error["message"]
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("glassrag")]
    assert any("GLASSRAG_TEST_MISSING_KEY" in line for line in logged), logged
