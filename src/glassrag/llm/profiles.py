"""LLM provider profiles: where to send a request and what its body looks like.

The settings are the ``[llm]`` section's model, :class:`glassrag.settings.LLMSettings`.

Nothing here reads a key or opens a connection: :func:`resolve` turns settings plus the
environment into an :class:`Endpoint` (base URL, model, the *name* of the key variable),
and :func:`build_body` writes the exact JSON body for one attempt. ``--dry-run`` can print
that body with no key anywhere in sight.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args
from urllib.parse import urlparse

from glassrag.llm.prompt import (
    ANSWER_SCHEMA,
    REWRITE_MAX_TOKENS,
    REWRITE_SCHEMA,
    rewrite_messages,
    system_prompt,
    user_message,
)
from glassrag.records import Hit
from glassrag.settings import LLMSettings, StructuredOutput

STRUCTURED_MODES: tuple[str, ...] = get_args(StructuredOutput)
SCHEMA_NAME = "grounded_answer"
# OpenAI reasoning models reject a temperature other than the default.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)


@dataclass(frozen=True)
class Profile:
    name: str
    api: str  # "chat" (Chat Completions) or "responses" (OpenAI Responses API)
    base_url: str
    base_url_env: str | None  # an environment variable that overrides base_url
    model: str | None  # None: ask the server (GET /models) for the model it serves
    model_env: str | None
    key_env: str | None  # None: the server needs no key
    key_required: bool  # only ever enforced against the profile's own hosted base_url
    structured: str
    token_param: str = "max_tokens"
    schema_in_json_object: bool = False  # llama.cpp: json_object plus a "schema" to obey
    extra: dict[str, Any] = field(default_factory=dict)


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("openai", "chat", "https://api.openai.com/v1", "OPENAI_BASE_URL", "gpt-4o-mini",
            "OPENAI_MODEL", "OPENAI_API_KEY", True, "json_schema"),
    Profile("openai-responses", "responses", "https://api.openai.com/v1", "OPENAI_BASE_URL",
            "gpt-4o-mini", "OPENAI_MODEL", "OPENAI_API_KEY", True, "json_schema",
            token_param="max_output_tokens"),
    # Seed 001: deepseek-flash, thinking explicitly off, non-streaming JSON output.
    Profile("deepseek", "chat", "https://api.deepseek.com", None, "deepseek-flash", None,
            "DEEPSEEK_API_KEY", True, "json_object",
            extra={"thinking": {"type": "disabled"}, "stream": False}),
    Profile("ollama", "chat", "http://127.0.0.1:11434/v1", None, "llama3.2", None, None,
            False, "json_object"),
    Profile("vllm", "chat", "http://127.0.0.1:8000/v1", "OPENAI_BASE_URL", None,
            "OPENAI_MODEL", None, False, "json_schema"),
    Profile("llamacpp", "chat", "http://127.0.0.1:8080/v1", "OPENAI_BASE_URL", None,
            "OPENAI_MODEL", None, False, "json_object", schema_in_json_object=True),
)}


@dataclass(frozen=True)
class Endpoint:
    """Settings resolved against the profile and the environment. Holds no key."""

    profile: Profile
    base_url: str
    model: str | None
    key_env: str | None
    key_required: bool
    structured: str
    settings: LLMSettings

    @property
    def api(self) -> str:
        return self.profile.api

    @property
    def url(self) -> str:
        path = "/responses" if self.api == "responses" else "/chat/completions"
        return self.base_url.rstrip("/") + path

    def describe(self) -> dict[str, Any]:
        return {"profile": self.profile.name, "api": self.api, "endpoint": self.url,
                "model": self.model, "api_key_env": self.key_env,
                "structured_output": self.structured}


def resolve(settings: LLMSettings, environ: Mapping[str, str] | None = None) -> Endpoint:
    """Explicit settings first, then the profile's environment variables, then its defaults."""
    env = os.environ if environ is None else environ
    profile = PROFILES[settings.profile_name]
    base_url = (settings.base_url
                or (env.get(profile.base_url_env) if profile.base_url_env else None)
                or profile.base_url)
    model = (settings.model or (env.get(profile.model_env) if profile.model_env else None)
             or profile.model)
    hosted = _same_host(base_url, profile.base_url)
    return Endpoint(profile=profile, base_url=base_url, model=model,
                    key_env=settings.api_key_env or profile.key_env,
                    key_required=profile.key_required and hosted,
                    structured=settings.structured_output or profile.structured,
                    settings=settings)


def _same_host(a: str, b: str) -> bool:
    return urlparse(a).hostname == urlparse(b).hostname


def build_body(endpoint: Endpoint, question: str, evidence: Sequence[Hit], *,
               problems: Sequence[str] | None = None, model: str | None = None) -> dict[str, Any]:
    """The exact JSON body of one request; ``problems`` (a retry) makes the prompt stricter."""
    messages = [
        {"role": "system",
         "content": system_prompt(tagged=endpoint.structured == "text", strict=bool(problems))},
        {"role": "user", "content": user_message(question, evidence, problems)},
    ]
    return request_body(endpoint, messages, model=model)


def rewrite_body(endpoint: Endpoint, question: str, *,
                 model: str | None = None) -> dict[str, Any]:
    """The body of the query-rewrite request: the user's question and nothing else."""
    messages = rewrite_messages(question, tagged=endpoint.structured == "text")
    return request_body(endpoint, messages, model=model, schema=REWRITE_SCHEMA,
                        name="search_query",
                        max_tokens=min(REWRITE_MAX_TOKENS, endpoint.settings.max_output_tokens))


def request_body(endpoint: Endpoint, messages: list[dict[str, str]], *, model: str | None = None,
                 schema: dict[str, Any] | None = None, name: str = SCHEMA_NAME,
                 max_tokens: int | None = None) -> dict[str, Any]:
    """Messages wrapped the way the profile's API and structured-output mode want them."""
    s, profile = endpoint.settings, endpoint.profile
    chosen = model or endpoint.model or "default"
    body: dict[str, Any] = {"model": chosen}
    body["input" if endpoint.api == "responses" else "messages"] = messages
    if not (profile.name.startswith("openai") and _REASONING_MODEL.match(chosen)):
        body["temperature"] = s.temperature
    token_param = profile.token_param
    if profile.name == "openai" and _same_host(endpoint.base_url, profile.base_url):
        token_param = "max_completion_tokens"  # what api.openai.com's newer models accept
    body[token_param] = s.max_output_tokens if max_tokens is None else max_tokens
    if endpoint.structured != "text":
        fmt = response_format(endpoint, responses=endpoint.api == "responses", schema=schema,
                              name=name)
        if endpoint.api == "responses":
            body["text"] = {"format": fmt}
        else:
            body["response_format"] = fmt
    if endpoint.api == "responses":
        body["store"] = False  # the evidence is the user's; do not keep it server-side
    body.update(profile.extra)
    return body


def response_format(endpoint: Endpoint, *, responses: bool = False,
                    schema: dict[str, Any] | None = None,
                    name: str = SCHEMA_NAME) -> dict[str, Any]:
    """``response_format`` (Chat Completions) or ``text.format`` (Responses) for the mode."""
    schema = ANSWER_SCHEMA if schema is None else schema
    if endpoint.structured == "json_object":
        fmt: dict[str, Any] = {"type": "json_object"}
        if endpoint.profile.schema_in_json_object:
            fmt["schema"] = schema
        return fmt
    if responses:
        return {"type": "json_schema", "name": name, "strict": True, "schema": schema}
    return {"type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema}}
