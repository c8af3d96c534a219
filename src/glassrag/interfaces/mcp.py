"""An MCP server (official ``mcp`` SDK) exposing ``search_knowledge_base`` and ``ask``.

The principal is fixed when the server starts, from a bearer token: a tool call has no way
to name a principal or roles, and its input schema rejects unknown fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from glassrag.errors import GlassragError, MissingExtra
from glassrag.kb import KnowledgeBase
from glassrag.records import Principal
from glassrag.store.bearer_tokens import Unauthorized, principal_for

TOOL_NAMES = ("search_knowledge_base", "ask")
Mode = Literal["bm25", "dense", "hybrid", "overlap"]


def principal_from_token(kb: KnowledgeBase, token: str | None, *,
                         allow_anonymous: bool = False) -> Principal:
    """The principal for ``token``; anonymous (public only) without one, if allowed."""
    if not token:
        if allow_anonymous:
            return Principal("anonymous")
        raise Unauthorized("glassrag mcp needs a token (--token or $GLASSRAG_TOKEN)")
    with kb.lock:
        found = principal_for(kb.store, token)
    if found is None:
        raise Unauthorized("invalid or revoked token")
    return found


def _strict(server: Any) -> None:
    """Make every tool reject unknown arguments, in its published schema and when called."""
    for tool in server._tool_manager.list_tools():
        base = tool.fn_metadata.arg_model
        strict = type(base.__name__, (base,), {
            "model_config": ConfigDict(**{**base.model_config, "extra": "forbid"}),
            "__module__": base.__module__,
        })
        tool.fn_metadata.arg_model = strict
        tool.parameters = {**tool.parameters, "additionalProperties": False}


def build_server(kb: KnowledgeBase, principal: Principal) -> Any:
    """An ``MCPServer`` whose tools answer as ``principal`` from ``kb``."""
    try:
        from mcp.server import MCPServer
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise MissingExtra("mcp", "mcp") from exc

    server = MCPServer(
        name="glassrag",
        instructions="Search and ask a permission-aware knowledge base. Answers carry "
                     "verified citations (doc_id, source, line_start, line_end, quote).",
    )

    @server.tool(name="search_knowledge_base", structured_output=True)
    def search_knowledge_base(
        query: Annotated[str, Field(description="What to search for")],
        top_k: Annotated[int, Field(ge=1, le=100, description="How many hits")] = 10,
        mode: Annotated[Mode | None, Field(description="Retrieval mode")] = None,
    ) -> dict[str, Any]:
        """Permitted passages for a query, with scores, matched terms and line numbers."""
        return _call(lambda: kb.search(query, principal=principal, top_k=top_k,
                                       mode=mode).to_dict())

    @server.tool(name="ask", structured_output=True)
    def ask(
        question: Annotated[str, Field(description="The question")],
        top_k: Annotated[int | None, Field(
            ge=1, le=100, description="How many passages the answer may draw on")] = None,
        mode: Annotated[Mode | None, Field(description="Retrieval mode")] = None,
        rewrite: Annotated[bool | None, Field(
            description="Ask the model for a search query first and search with both "
                        "(only when a model is configured); omitted: the server's "
                        "[llm] rewrite_query setting")] = None,
    ) -> dict[str, Any]:
        """An answer with status (answered, no_evidence, blocked_by_permission, unverified),
        verified citations, the evidence used and a trace id."""
        return _call(lambda: kb.ask(question, principal=principal, top_k=top_k,
                                    mode=mode, rewrite=rewrite).to_dict())

    _strict(server)
    return server


def _call(fn: Any) -> dict[str, Any]:
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        result: dict[str, Any] = fn()
    except GlassragError as exc:
        # The tool error text is the same JSON error shape the HTTP API uses.
        raise ToolError(json.dumps(exc.to_dict(), ensure_ascii=False)) from None
    return result


def run(kb_path: str | Path, token: str | None, *, transport: str = "stdio",
        host: str = "127.0.0.1", port: int = 8765, allow_anonymous: bool = False) -> None:
    """Serve until interrupted over ``stdio`` or ``streamable-http``."""
    kb = KnowledgeBase.open(kb_path, create=False)
    try:
        server = build_server(kb, principal_from_token(
            kb, token, allow_anonymous=allow_anonymous or kb.settings.server.allow_anonymous))
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        kb.close()
