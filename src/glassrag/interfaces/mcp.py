"""An MCP server (official ``mcp`` SDK) exposing ``search_knowledge_base``, ``ask`` and
``why_not`` (:mod:`.mcp_why_not`).

The principal of every tool call comes from a bearer token, checked at that call: over
stdio the token the server was started with (so revoking it ends a running session at its
next call), over streamable HTTP the token of the HTTP request carrying the call (and
every HTTP request is refused with 401 before that without a valid one, by the same guard
as ``glassrag serve``). A tool call has no way to name a principal or roles, and its input
schema rejects unknown fields. A call whose arguments fail that schema gets the same JSON
error shape as an engine error, naming the argument (``details.field``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ConfigDict, Field, ValidationError

from glassrag import __version__
from glassrag.errors import GlassragError, Unauthorized, invalid_fields, needs_extra
from glassrag.interfaces import mcp_why_not
from glassrag.interfaces.model_gate import ModelGate
from glassrag.kb import KnowledgeBase
from glassrag.records import NamedMode, Principal
from glassrag.settings import MAX_TOP_K
from glassrag.store.bearer_tokens import TokenReader, authenticate

log = logging.getLogger("glassrag.interfaces.mcp")

TOOL_NAMES = ("search_knowledge_base", "ask", mcp_why_not.NAME)
# Who makes a tool call, from the call's HTTP headers (None over stdio); raises
# Unauthorized for a missing, wrong or revoked token.
Caller = Callable[[Mapping[str, str] | None], Principal]


STDIO_MISSING = "glassrag mcp needs a token (--token or $GLASSRAG_TOKEN)"


def token_caller(tokens: TokenReader, token: str | None, *,
                 allow_anonymous: bool = False) -> Caller:
    """Every call is made by ``token``'s principal, looked up again at each call (an
    empty token, as an unset variable gives, is no token)."""
    return lambda _headers: authenticate(tokens.principal, token or None,
                                         allow_anonymous=allow_anonymous,
                                         missing=STDIO_MISSING)


def header_caller(tokens: TokenReader, *, allow_anonymous: bool = False) -> Caller:
    """Each call is made by the principal of its own HTTP request's bearer token."""
    def caller(headers: Mapping[str, str] | None) -> Principal:
        if headers is None:  # an HTTP server's call always carries its request
            raise Unauthorized("this tool call came without its HTTP request")
        return tokens.authenticate(headers.get("authorization"),
                                   allow_anonymous=allow_anonymous)
    return caller


class StrictTool(Tool):
    """A tool that rejects unknown arguments, in its published schema and when called, and
    reports arguments that fail the schema in the one JSON error shape."""

    @classmethod
    def strict(cls, fn: Callable[..., Any], name: str) -> StrictTool:
        """The tool for ``fn`` under ``name``, with ``additionalProperties: false``."""
        tool = cls.from_function(fn, name=name, structured_output=True)
        base = tool.fn_metadata.arg_model
        tool.fn_metadata.arg_model = type(base.__name__, (base,), {
            "model_config": ConfigDict(**{**base.model_config, "extra": "forbid"}),
            "__module__": base.__module__,
        })
        tool.parameters = {**tool.parameters, "additionalProperties": False}
        return tool  # type: ignore[return-value]

    async def run(self, arguments: dict[str, Any], context: Any,
                  convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            # pydantic's text names the model and may quote the values sent: say instead
            # which arguments are wrong and why, as the HTTP API does.
            raise ToolError(f"Error executing tool {self.name}: " + _shape(
                invalid_fields(exc.__cause__.errors()))) from None


def build_server(kb: KnowledgeBase, caller: Principal | Caller,
                 gate: ModelGate | None = None) -> Any:
    """An ``MCPServer`` whose tools answer from ``kb`` as ``caller`` decides per call (a
    fixed :class:`Principal` for in-process use). ``ask`` runs through ``gate``."""
    with needs_extra("mcp", "mcp"):
        from mcp.server import MCPServer

    who: Caller = (lambda _headers: caller) if isinstance(caller, Principal) else caller
    settings = kb.settings.server
    asks = gate or ModelGate(settings.max_concurrent_model_calls,
                             settings.max_waiting_model_calls)

    async def search_knowledge_base(
        ctx: Context,
        query: Annotated[str, Field(description="What to search for")],
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many hits")] = 10,
        mode: Annotated[NamedMode | None, Field(description="Retrieval mode")] = None,
    ) -> dict[str, Any]:
        """Permitted passages for a query, with scores, matched terms and line numbers."""
        import anyio.to_thread

        try:
            principal = who(ctx.headers)
            return await anyio.to_thread.run_sync(lambda: kb.search(
                query, principal=principal, top_k=top_k, mode=mode).to_dict())
        except GlassragError as exc:
            raise _tool_error(exc) from None

    async def ask(
        ctx: Context,
        question: Annotated[str, Field(description="The question")],
        top_k: Annotated[int | None, Field(
            ge=1, le=MAX_TOP_K, description="How many passages the answer may draw on")] = None,
        mode: Annotated[NamedMode | None, Field(description="Retrieval mode")] = None,
        rewrite: Annotated[bool | None, Field(
            description="Ask the model for a search query first and search with both "
                        "(only when a model is configured); omitted: the server's "
                        "[llm] rewrite_query setting")] = None,
    ) -> dict[str, Any]:
        """An answer with status (answered, no_evidence, blocked_by_permission, unverified),
        verified citations, the evidence used and a trace id."""
        try:
            principal = who(ctx.headers)
            return await asks.run(lambda: kb.ask(question, principal=principal, top_k=top_k,
                                                 mode=mode, rewrite=rewrite).to_dict())
        except GlassragError as exc:
            raise _tool_error(exc) from None

    return MCPServer(
        name="glassrag", version=__version__,
        instructions="Search and ask a permission-aware knowledge base. Answers carry "
                     "verified citations (doc_id, source, line_start, line_end, quote).",
        tools=[StrictTool.strict(search_knowledge_base, "search_knowledge_base"),
               StrictTool.strict(ask, "ask"),
               StrictTool.strict(mcp_why_not.why_not_tool(kb, who, _tool_error),
                                 mcp_why_not.NAME)],
    )


def _shape(exc: GlassragError) -> str:
    return json.dumps(exc.to_dict(), ensure_ascii=False)


def _tool_error(exc: GlassragError) -> Exception:
    """The tool error for an engine error: its text is the JSON error shape of the HTTP API
    (the SDK puts "Error executing tool NAME: " in front). Details the caller does not get
    (an error with a public message) go to the log, where that message says they are."""
    if exc.public_message is not None:
        log.warning("%s: %s", exc.code, exc.message)
    return ToolError(_shape(exc))


def run(kb_path: str | Path, token: str | None, *, transport: str = "stdio",
        host: str = "127.0.0.1", port: int = 8765, allow_anonymous: bool = False) -> None:
    """Serve until interrupted over ``stdio`` or ``streamable-http``.

    Over stdio ``token`` is the principal of every call (refused at start if invalid);
    over streamable HTTP it is not used: each request brings its own.
    """
    kb = KnowledgeBase.open(kb_path, create=False)
    tokens = TokenReader(kb.store)
    anonymous = allow_anonymous or kb.settings.server.allow_anonymous
    try:
        if transport == "stdio":
            caller = token_caller(tokens, token, allow_anonymous=anonymous)
            caller(None)  # refuse to start without a valid token
            build_server(kb, caller).run("stdio")
        else:
            _serve_http(kb, tokens, host, port, anonymous)
    finally:
        tokens.close()
        kb.close()


def _serve_http(kb: KnowledgeBase, tokens: TokenReader, host: str, port: int,
                allow_anonymous: bool) -> None:
    from glassrag.interfaces.http.guard import Guard, guard_policy
    from glassrag.interfaces.http.serve import serve

    server = build_server(kb, header_caller(tokens, allow_anonymous=allow_anonymous))
    settings = kb.settings.server
    policy = guard_policy(settings, tokens, allow_anonymous=allow_anonymous, bind_host=host)
    app = server.streamable_http_app(host=host, max_request_body_size=settings.max_body_bytes,
                                     transport_security=_sdk_security(policy.hosts))
    serve(Guard(app, policy), host, port, settings)


def _sdk_security(hosts: frozenset[str] | None) -> Any:
    """The SDK's own Host and Origin check, given the same hosts as the guard (its default
    would accept only the loopback names whatever ``[server] allowed_hosts`` says)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = [f"[{h}]" if ":" in h else h for h in sorted(hosts)]
    return TransportSecuritySettings(
        allowed_hosts=[p for n in names for p in (n, f"{n}:*")],
        allowed_origins=[p for n in names for p in (f"http://{n}", f"http://{n}:*",
                                                    f"https://{n}", f"https://{n}:*")],
    )
