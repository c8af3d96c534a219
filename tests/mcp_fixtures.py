"""Running MCP tool calls through the SDK's in-process client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client  # noqa: E402

from glassrag import KnowledgeBase, Principal  # noqa: E402
from glassrag.interfaces.mcp import build_server  # noqa: E402,E501


def _run(kb_dir: Path, principal: Principal, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    async def go() -> Any:
        with KnowledgeBase.open(kb_dir) as kb:
            async with Client(build_server(kb, principal)) as client:
                tools = await client.list_tools()
                results = [await client.call_tool(name, args) for name, args in calls]
                return tools, results

    return anyio.run(go)
