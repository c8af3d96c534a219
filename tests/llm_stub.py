"""A scripted OpenAI-compatible server on 127.0.0.1 for the LLM answerer's tests.

A real HTTP server (``http.server`` in a thread, port 0) with ``POST /v1/chat/completions``,
``POST /v1/responses`` and ``GET /v1/models``. Each POST takes the next :class:`Reply` from
the script queue and records the request body it received, so a test can compare what the
SDK actually sent. A reply given as ``content`` is wrapped in the right shape for whichever
endpoint was called, so one script serves both APIs. When the queue is empty, a
``responder`` (if set) makes the reply from the request body: a scripted model that cites
whichever evidence label holds its quote (:func:`citing`).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
TRICKLE_BYTES = 64


@dataclass
class Reply:
    content: str | None = None  # the model's text, wrapped for the endpoint called
    status: int = 200
    raw: Any = None  # the exact response body instead (dict -> JSON, str/bytes -> as is)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering
    # Seconds between pieces of TRICKLE_BYTES: the whole response (status line, headers,
    # body) then arrives a little at a time, each piece well within any read timeout.
    trickle: float = 0.0
    finish_reason: str = "stop"
    refusal: str | None = None


def answer_json(status: str = "answered", answer: str = "",
                citations: list[tuple[str, str]] | None = None) -> str:
    return json.dumps({"status": status, "answer": answer,
                       "citations": [{"chunk_id": c, "quote": q} for c, q in citations or []]})


_BLOCK = re.compile(r'<evidence label="(C\d+)"[^>]*>\n(.*?)\n</evidence>', re.DOTALL)


def _flat(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def citing(answer: str, quotes: list[str], status: str = "answered") -> Callable[[Any], Reply]:
    """A responder answering ``answer`` with each quote cited by the label of the first
    evidence block that contains it (``C1`` when none does, so verification fails loudly)."""
    def respond(body: Any) -> Reply:
        messages = body.get("messages") or body.get("input") or []
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        blocks = _BLOCK.findall(user)
        cited = []
        for quote in quotes:
            label = next((lab for lab, text in blocks if _flat(quote) in _flat(text)), "C1")
            cited.append((label, quote))
        return Reply(answer_json(status, answer, cited))
    return respond


def chat_body(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content,
                               "refusal": reply.refusal}
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": USAGE}


def responses_body(reply: Reply, model: str) -> dict[str, Any]:
    part: dict[str, Any] = ({"type": "refusal", "refusal": reply.refusal} if reply.refusal
                            else {"type": "output_text", "text": reply.content or "",
                                  "annotations": []})
    incomplete = reply.finish_reason == "length"
    return {"id": "resp_stub", "object": "response", "created_at": 0, "model": model,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "output": [{"type": "message", "id": "msg_stub", "role": "assistant",
                        "status": "completed", "content": [part]}],
            "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}}


class StubLLM:
    def __init__(self, models: tuple[str, ...] = ("stub-model",)) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.models = list(models)
        self.trickle_models = 0.0  # seconds between pieces of the GET /models reply
        self.responder: Callable[[Any], Reply] | None = None  # used when the script is empty
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply) -> StubLLM:
        with self._lock:
            self.script.extend(replies)
        return self

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def start(self) -> StubLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, path: str, body: Any, headers: dict[str, str]) -> Reply | None:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
            if self.script:
                return self.script.popleft()
        return self.responder(body) if self.responder is not None else None


def _handler(stub: StubLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def handle(self) -> None:
            # The client may hang up mid-reply (a timeout, a reply over its size limit).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            self._send(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "stub"}
                for m in stub.models]}, trickle=stub.trickle_models)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            if self.path not in ("/v1/chat/completions", "/v1/responses"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = stub._next(self.path, body, headers)
            if reply is None:
                self._send(500, {"error": {"message": "stub: no scripted reply left"}})
                return
            if reply.delay:
                time.sleep(reply.delay)
            model = body.get("model", "stub-model") if isinstance(body, dict) else "stub-model"
            if reply.raw is not None:
                payload = reply.raw
            elif reply.status >= 400:
                payload = {"error": {"message": reply.content or f"stub error {reply.status}",
                                     "type": "stub_error"}}
            elif self.path == "/v1/responses":
                payload = responses_body(reply, model)
            else:
                payload = chat_body(reply, model)
            self._send(reply.status, payload, reply.headers, trickle=reply.trickle)

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                  trickle: float = 0.0) -> None:
            data = (payload if isinstance(payload, bytes)
                    else (payload if isinstance(payload, str) else json.dumps(payload)).encode())
            if trickle:
                self._trickle(status, data, headers or {}, trickle)
                return
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to tell it

        def _trickle(self, status: int, data: bytes, headers: dict[str, str],
                     pause: float) -> None:
            head = [f"HTTP/1.1 {status} OK", "content-type: application/json",
                    f"content-length: {len(data)}", *(f"{k}: {v}" for k, v in headers.items())]
            raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
            try:
                for start in range(0, len(raw), TRICKLE_BYTES):
                    self.wfile.write(raw[start:start + TRICKLE_BYTES])
                    self.wfile.flush()
                    time.sleep(pause)
            except OSError:
                pass  # the client hung up: a deadline test
            self.close_connection = True

    return Handler
