"""An OpenAI-compatible chat endpoint: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Chat front-ends and agent frameworks speak this API, so they can use glassrag as a model
named ``glassrag``. The caller's principal comes from the bearer token (the API key an
OpenAI client sends), as on every route. The last user message is the question; earlier
user messages only widen the search (they are appended to a second search query, fused
with the question's own, never shown to an answerer as evidence); system and assistant
messages are not read. The reply's content is the verified answer with its sources, or
the status's refusal text; a ``glassrag`` field carries the status, the citations and the
trace id. With ``stream: true`` the answer is verified first and only then sent as
server-sent-event chunks: no unverified token is ever streamed.
"""

# No ``from __future__ import annotations``: FastAPI reads these routes' annotations at
# runtime, and they name the dependency passed to router().

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from glassrag.errors import InvalidInput, NotFound
from glassrag.kb import KnowledgeBase
from glassrag.records import Answer, Principal
from glassrag.retrieval.rewrite import MAX_REWRITE_CHARS

MODEL = "glassrag"
# Words per streamed chunk: small enough to look like streaming, few enough events.
WORDS_PER_CHUNK = 8


class ChatMessage(BaseModel):
    # A message may carry more (name, tool_calls, refusal ...): none of it is read.
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatBody(BaseModel):
    """The chat-completions request. Sampling and tool options are accepted and have no
    effect (the answer is extractive or verified, not sampled); anything else is an error."""

    model_config = ConfigDict(extra="forbid")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    n: int = Field(default=1, ge=1, le=1)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    user: str | None = None
    metadata: dict[str, Any] | None = None
    store: bool | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    logit_bias: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    service_tier: str | None = None


@dataclass(frozen=True)
class EarlierTurns:
    """A query rewriter: the question followed by the earlier user turns, latest first, so
    a follow-up ("and for contractors?") is also searched with what it follows up on."""

    turns: tuple[str, ...]

    def __call__(self, question: str) -> str:
        text = " ".join(" ".join((question, *reversed(self.turns))).split())
        if len(text) <= MAX_REWRITE_CHARS:
            return text
        return text[:MAX_REWRITE_CHARS].rsplit(" ", 1)[0]


def message_text(message: ChatMessage, number: int) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    parts = []
    for part in message.content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise InvalidInput(f"messages[{number}].content: only text parts are read, got "
                               f"{str(part.get('type'))[:40]!r}", field="messages")
        parts.append(part["text"])
    return "\n".join(parts)


def question_and_turns(messages: Sequence[ChatMessage]) -> tuple[str, tuple[str, ...]]:
    """The last user message, and the user messages before it."""
    users = [(n, m) for n, m in enumerate(messages) if m.role == "user"]
    if not users:
        raise InvalidInput("messages: there is no user message to answer", field="messages")
    texts = [message_text(m, n) for n, m in users]
    return texts[-1], tuple(t for t in texts[:-1] if t.strip())


def reply_content(answer: Answer) -> str:
    """The answer (or refusal) text, then its sources, one line each."""
    if not answer.citations:
        return answer.answer
    sources = [f"[{n}] {c.source}, lines {c.line_start}-{c.line_end}"
               for n, c in enumerate(answer.citations, start=1)]
    return answer.answer + "\n\nSources:\n" + "\n".join(sources)


def glassrag_field(answer: Answer) -> dict[str, Any]:
    return {"status": answer.status, "trace_id": answer.trace_id,
            "citations": [c.to_dict() for c in answer.citations]}


def completion(answer: Answer, created: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{answer.trace_id}", "object": "chat.completion", "created": created,
        "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": reply_content(answer),
                                 "refusal": None}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "glassrag": glassrag_field(answer),
    }


def stream_events(answer: Answer, created: int, include_usage: bool) -> Iterator[str]:
    """The verified reply as server-sent events: a role chunk, the text in pieces, a final
    chunk with ``finish_reason`` and the ``glassrag`` field, then ``[DONE]``."""
    base = {"id": f"chatcmpl-{answer.trace_id}", "object": "chat.completion.chunk",
            "created": created, "model": MODEL}

    def event(delta: dict[str, Any], finish: str | None = None,
              **extra: Any) -> str:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                                     "logprobs": None}], **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    yield event({"role": "assistant", "content": ""})
    pieces = re.findall(r"\s*\S+", reply_content(answer))
    for start in range(0, len(pieces), WORDS_PER_CHUNK):
        yield event({"content": "".join(pieces[start:start + WORDS_PER_CHUNK])})
    yield event({}, "stop", glassrag=glassrag_field(answer))
    if include_usage:
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


def _model_entry() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "created": 0, "owned_by": "glassrag"}


def router(kb: KnowledgeBase, who: Callable[..., Any], admin: Callable[..., Any]) -> APIRouter:
    """The chat routes over ``kb`` (``admin`` is unused: any token may chat)."""
    routes = APIRouter(tags=["openai"])

    @routes.get("/v1/models")
    def models(_: Annotated[Principal, Depends(who)]) -> dict[str, Any]:
        """The one model this server serves: ``glassrag``."""
        return {"object": "list", "data": [_model_entry()]}

    @routes.get("/v1/models/{model}")
    def model(model: str, _: Annotated[Principal, Depends(who)]) -> dict[str, Any]:
        if model != MODEL:
            raise NotFound(f"no model {model!r}; this server serves {MODEL!r}", model=model)
        return _model_entry()

    @routes.post("/v1/chat/completions", response_model=None)
    async def chat(body: ChatBody, request: Request,
                   caller: Annotated[Principal, Depends(who)]) -> Any:
        """Answer the last user message from the documents the caller may read."""
        if body.model != MODEL:
            raise NotFound(f"no model {body.model!r}; this server serves {MODEL!r}",
                           model=body.model)
        question, turns = question_and_turns(body.messages)
        rewrite = EarlierTurns(turns) if turns else None
        gate = request.app.state.model_gate
        answer: Answer = await gate.run(
            lambda: kb.ask(question, principal=caller, rewrite=rewrite))
        created = int(time.time())
        if not body.stream:
            return completion(answer, created)
        usage = bool((body.stream_options or {}).get("include_usage"))
        return StreamingResponse(stream_events(answer, created, usage),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    return routes
