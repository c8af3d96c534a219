"""The MCP `ask` tool's `rewrite` argument, through the SDK's in-process client, against a
knowledge base whose [llm] is the stub server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from glassrag import KnowledgeBase  # noqa: E402
from llm_stub import Reply, StubLLM, answer_json  # noqa: E402
from mcp_fixtures import _run  # noqa: E402
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


def _stage(kb_dir: Path, result: Any) -> dict[str, Any]:
    with KnowledgeBase.open(kb_dir) as kb:
        stage: dict[str, Any] = kb.trace(result.structured_content["trace_id"])["rewrite"]
        return stage


def test_ask_tool_rewrite_argument(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True)  # rewrite_query = false
    kb_dir = kb.path
    kb.close()
    stub.push(Reply(rewrite_reply(REWRITTEN)),
              Reply(answer_json("answered", "Behind the east entrance.", [("C1", QUOTE)])))
    tools, (on, off, absent) = _run(kb_dir, NOBODY, [
        ("ask", {"question": QUESTION, "rewrite": True}),
        ("ask", {"question": QUESTION, "rewrite": False}),
        ("ask", {"question": QUESTION}),
    ])
    ask = next(t for t in tools.tools if t.name == "ask")
    assert "rewrite_query" in str(ask.input_schema["properties"]["rewrite"])
    assert not any(r.is_error for r in (on, off, absent))
    assert on.structured_content["status"] == "answered"
    assert on.structured_content["citations"][0]["quote"] == QUOTE
    # Only the first call sent anything: its rewrite, then its answer request.
    assert len(stub.requests) == 2
    assert stub.bodies()[0]["messages"][1]["content"] == f"Question:\n{QUESTION}"
    assert _stage(kb_dir, on)["status"] == "used"
    for result in (off, absent):
        assert result.structured_content["status"] == "no_evidence"
        assert _stage(kb_dir, result)["status"] == "off"


def test_ask_tool_rewrite_false_overrides_the_setting(tmp_path: Path, stub: StubLLM) -> None:
    office_kb(tmp_path, profile=True, rewrite_query=True).close()
    kb_dir = tmp_path / "office"
    stub.push(Reply("overloaded", status=503))
    _, (off, followed) = _run(kb_dir, NOBODY, [
        ("ask", {"question": QUESTION, "rewrite": False}),
        ("ask", {"question": QUESTION}),  # the setting: on
    ])
    assert len(stub.requests) == 1  # the second call's rewrite, which failed
    assert _stage(kb_dir, off)["status"] == "off"
    failed = _stage(kb_dir, followed)
    assert failed["status"] == "failed" and "HTTP 503" in failed["error"]
    assert followed.structured_content["status"] == "no_evidence"


def test_ask_tool_rewrite_leaks_nothing_under_conceal(tmp_path: Path, stub: StubLLM) -> None:
    office_kb(tmp_path, profile=True, disclosure="conceal", secret=True).close()
    kb_dir = tmp_path / "office"
    stub.push(Reply(rewrite_reply(CAGE_REWRITTEN)))
    _, (result,) = _run(kb_dir, NOBODY, [
        ("ask", {"question": CAGE_QUESTION, "rewrite": True}),
    ])
    assert not result.is_error and len(stub.requests) == 1
    data = result.structured_content
    assert data["status"] == "no_evidence" and data["evidence"] == []
    with KnowledgeBase.open(kb_dir) as kb:  # the rewrite did reach the secret
        audit = kb.trace(data["trace_id"])
        mine = kb.trace(data["trace_id"], NOBODY)
    assert audit["blocked_chunk_ids"] == ["cagedocsecret#1"]
    assert "blocked_count" not in mine and mine["status"] == "no_evidence"
    _clean([data, [c.text for c in result.content], mine, stub.bodies()])
