"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint over plain HTTP.

OpenAI, Ollama, vLLM, TEI and llama.cpp all speak this shape. Only the standard library is
used (urllib): no SDK is needed for one POST, and the dense extra stays small. Transient
failures (HTTP 408, 409, 429, 5xx, connection errors, timeouts) are retried a bounded number
of times, as :mod:`glassrag.http_calls` decides for every model call; each request has a
deadline as well as a per-read ``timeout``. Every error names the endpoint and the HTTP
status, never the API key.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from glassrag.dense.base import BaseEmbedder, check_prefixes, prefixed_name
from glassrag.errors import EmbeddingError
from glassrag.http_calls import Deadline, RetryPolicy, open_url, transient_status, with_retries

DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass
class _Reply:
    """What one try of a request gave: the body, or why there is none."""

    attempt: int
    raw: bytes | None = None
    status: int | None = None  # an HTTP error status
    headers: dict[str, str] = field(default_factory=dict)
    detail: str = ""  # the error body's excerpt, or why the transport failed
    late: bool = False  # the deadline passed
    retryable: bool = False


class OpenAIEmbedder(BaseEmbedder):
    """``openai:MODEL``. ``dimensions`` is sent to the server (text-embedding-3 truncation);
    ``dim`` only declares what to expect. Without either, the first response sets it.

    ``query_prefix`` / ``passage_prefix`` are prepended before sending, for an asymmetric
    model (E5, BGE…) behind a server that does not add its instructions itself.

    ``timeout`` bounds each connect and read; ``deadline`` the whole of one request."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        batch_size: int = 64,
        timeout: float = 60.0,
        deadline: float = 120.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        dimensions: int | None = None,
        dim: int | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        if batch_size < 1 or max_retries < 0 or timeout <= 0 or deadline <= 0:
            raise ValueError("batch_size >= 1, max_retries >= 0, timeout > 0 and deadline > 0 "
                             "are required")
        check_prefixes(query_prefix, passage_prefix)
        self.model = model
        self.name = prefixed_name(f"openai:{model}", query_prefix, passage_prefix)
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self.endpoint = self.base_url.rstrip("/") + "/embeddings"
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout = float(timeout)
        self.deadline = float(deadline)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.dimensions = dimensions
        self._dim = dimensions or dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            # Learn it the only way the API offers: embed something once.
            self._request(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._request([self.passage_prefix + text for text in texts])

    def _embed_query_batch(self, texts: list[str]) -> np.ndarray:
        return self._request([self.query_prefix + text for text in texts])

    def _request(self, texts: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        reply = self._post(body)
        vectors = self._parse(reply, len(texts))
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        return vectors

    # -- HTTP ---------------------------------------------------------------------------
    def _post(self, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:  # local servers (Ollama, vLLM) usually need none
            headers["Authorization"] = f"Bearer {key}"

        def send(attempt: int) -> _Reply:
            request = urllib.request.Request(self.endpoint, data=data, headers=headers,
                                             method="POST")
            with Deadline(self.deadline) as deadline:
                return self._send(request, deadline, attempt + 1)

        policy = RetryPolicy(self.max_retries, base=self.backoff)
        reply = with_retries(send, lambda r: r.headers if r.retryable else None, policy,
                             time.sleep)
        tries = _tries(reply.attempt)
        if reply.late:
            raise EmbeddingError(
                f"{self.endpoint}: no complete reply within the {self.deadline:g}s deadline"
                f"{tries} (the embedder's deadline option)", endpoint=self.endpoint)
        if reply.status is not None:
            raise EmbeddingError(
                f"{self.endpoint}: HTTP {reply.status} for model {self.model!r}"
                f"{tries}: {reply.detail}{self._hint(reply.status)}",
                endpoint=self.endpoint, http_status=reply.status,
            )
        if reply.raw is None:
            raise EmbeddingError(f"{self.endpoint}: unreachable{tries}: {reply.detail}",
                                 endpoint=self.endpoint)
        try:
            return json.loads(reply.raw)
        except ValueError:
            raise EmbeddingError(
                f"{self.endpoint}: the reply is not JSON: {_excerpt(reply.raw)}",
                endpoint=self.endpoint,
            ) from None

    def _send(self, request: urllib.request.Request, deadline: Deadline,
              attempt: int) -> _Reply:
        """One try, its error body read within the deadline too."""
        try:
            with open_url(request, self.timeout, deadline) as response:
                return _Reply(attempt, raw=response.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = _excerpt(exc.read())
            except (OSError, http.client.HTTPException):
                detail = "(the error body could not be read)"
            if deadline.expired:
                return _Reply(attempt, late=True, retryable=True)
            return _Reply(attempt, status=exc.code, detail=detail,
                          headers={k.lower(): v for k, v in exc.headers.items()},
                          retryable=transient_status(exc.code))
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
            if deadline.expired:
                return _Reply(attempt, late=True, retryable=True)
            return _Reply(attempt, detail=str(getattr(exc, "reason", exc)), retryable=True)

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return f" (is ${self.api_key_env} set to a valid key?)"
        if status == 404:
            return " (is base_url right? it should end in /v1)"
        return ""

    def _parse(self, reply: Any, count: int) -> np.ndarray:
        try:
            items = reply["data"]
            if len(items) != count:
                raise EmbeddingError(
                    f"{self.endpoint}: asked for {count} embeddings, got {len(items)}",
                    endpoint=self.endpoint,
                )
            if all("index" in item for item in items):
                items = sorted(items, key=lambda item: item["index"])
            return np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except EmbeddingError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            # ValueError here is numpy refusing vectors of different lengths or non-numbers.
            raise EmbeddingError(
                f"{self.endpoint}: unexpected reply shape ({type(exc).__name__}: {exc}): "
                f"{_excerpt(json.dumps(reply)[:400].encode())}",
                endpoint=self.endpoint,
            ) from None


def _tries(attempt: int) -> str:
    return f" after {attempt} attempts" if attempt > 1 else ""


def _excerpt(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace").strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"
