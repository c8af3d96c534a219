"""HTTP routes for answers over time: stale answers and recheck (admin only: a trace names
a principal and a question), and why-not (any caller, told what it may learn).

Registered from :func:`glassrag.interfaces.http.app.create_app` with
:func:`router`, which is given the app's principal dependencies so that every route takes
its principal from the bearer token, as every other route does.
"""

# No ``from __future__ import annotations``: FastAPI reads these routes' annotations at
# runtime, and they name the dependencies passed to router().

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from glassrag.audit.recheck import recheck
from glassrag.audit.stale import stale_answers
from glassrag.audit.why_not import why_not
from glassrag.errors import Forbidden
from glassrag.kb import KnowledgeBase
from glassrag.records import NamedMode, Principal
from glassrag.settings import MAX_TOP_K


class WhyNotBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    doc_id: str
    lines: str | None = Field(default=None, description="A passage, e.g. \"12-20\"")
    mode: NamedMode | None = None
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    roles: list[str] | None = Field(
        default=None, description="Admin tokens only: explain the ask of a principal with "
        "these roles (and be told everything). Others are always explained their own ask.")


def router(kb: KnowledgeBase, who: Callable[..., Any], admin: Callable[..., Any]) -> APIRouter:
    """The routes over ``kb``; ``who`` and ``admin`` are the app's principal dependencies."""
    routes = APIRouter(tags=["audit"])

    @routes.get("/audit/stale-answers")
    def stale(_: Annotated[Principal, Depends(admin)], since: str | None = None
              ) -> dict[str, Any]:
        """Past answers whose citations no longer hold (admin only)."""
        return {"stale_answers": [s.to_dict() for s in stale_answers(kb, since=since)]}

    @routes.post("/audit/recheck/{trace_id}")
    async def recheck_route(trace_id: str, request: Request,
                            _: Annotated[Principal, Depends(admin)]) -> dict[str, Any]:
        """Ask a trace's question again as its principal; old and new side by side (admin
        only). Waits for a model slot like /ask."""
        gate = request.app.state.model_gate
        result: dict[str, Any] = await gate.run(lambda: recheck(kb, trace_id).to_dict())
        return result

    @routes.post("/audit/why-not")
    def why_not_route(body: WhyNotBody, caller: Annotated[Principal, Depends(who)]
                      ) -> dict[str, Any]:
        """The first stage that dropped a document from the caller's answer. A document the
        caller may not read is reported exactly like a missing one, unless the caller is an
        admin."""
        if body.roles is not None and not caller.admin:
            raise Forbidden("roles may only be given with an admin token")
        asker = caller if body.roles is None else Principal(caller.principal_id, body.roles)
        return why_not(kb, body.question, body.doc_id, lines=body.lines, principal=asker,
                       as_admin=caller.admin, mode=body.mode, top_k=body.top_k).to_dict()

    return routes
