"""The MCP tool ``why_not``: the first stage that dropped a document from the caller's answer.

Made by :func:`why_not_tool` for :func:`glassrag.interfaces.mcp.build_server`, which adds it
to the server's tools. The caller is the token's principal, as for every tool, and the
explanation is about that principal's own ask: there is no argument naming roles. Only an
admin token is told the role stage and ingest failures; anyone else gets, for a document
it may not read, exactly the reply for one that does not exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from glassrag.audit.why_not import why_not
from glassrag.errors import GlassragError
from glassrag.kb import KnowledgeBase
from glassrag.records import NamedMode, Principal
from glassrag.settings import MAX_TOP_K

NAME = "why_not"


def why_not_tool(kb: KnowledgeBase, who: Callable[[Mapping[str, str] | None], Principal],
                 tool_error: Callable[[GlassragError], Exception]
                 ) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The tool function over ``kb``: ``who`` names the caller from a call's headers and
    ``tool_error`` turns an engine error into the server's tool error."""

    async def why_not_used(
        ctx: Context,
        question: Annotated[str, Field(description="The question")],
        doc_id: Annotated[str, Field(description="The document that was expected")],
        lines: Annotated[str | None, Field(
            description="Only this passage of it, e.g. \"12-20\"")] = None,
        top_k: Annotated[int | None, Field(
            ge=1, le=MAX_TOP_K, description="How many passages the answer may draw on")] = None,
        mode: Annotated[NamedMode | None, Field(description="Retrieval mode")] = None,
    ) -> dict[str, Any]:
        """The first stage of an ask that dropped a document or passage: not in the
        knowledge base, no query term in it, ranked below the cut-off, below the evidence
        threshold, not selected, or cited."""
        import anyio.to_thread

        try:
            principal = who(ctx.headers)
            return await anyio.to_thread.run_sync(lambda: why_not(
                kb, question, doc_id, lines=lines, principal=principal,
                as_admin=principal.admin, mode=mode, top_k=top_k).to_dict())
        except GlassragError as exc:
            raise tool_error(exc) from None

    return why_not_used
