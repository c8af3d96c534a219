"""An OpenAI-compatible embeddings server for the embedder tests."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from glassrag.dense.base import Embedder
from glassrag.dense.embedders import parse_embedder


# -- an OpenAI-compatible endpoint -----------------------------------------------------
class Stub:
    """Scripted replies: each is (status, body, headers); the last one repeats."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, Any, dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        self.trickle = 0.0  # seconds between 64-byte pieces of the whole response

    def reply(self, status: int, body: Any, **headers: str) -> None:
        self.replies.append((status, body, headers))


def vectors_body(count: int, dim: int, value: float = 1.0) -> dict[str, Any]:
    return {"object": "list", "model": "m", "data": [
        {"object": "embedding", "index": i, "embedding": [value + i] + [0.5] * (dim - 1)}
        for i in reversed(range(count))  # out of order on purpose: index decides
    ]}


@pytest.fixture
def stub() -> Iterator[tuple[Stub, str]]:
    script = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length", 0))
            script.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                    "body": json.loads(self.rfile.read(length))})
            status, body, headers = script.replies.pop(0) if len(script.replies) > 1 \
                else script.replies[0]
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            if script.trickle:
                head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(raw)}\r\n" + "".join(
                    f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
                whole = (head + "\r\n").encode() + raw
                with contextlib.suppress(OSError):  # the client hangs up at its deadline
                    for start in range(0, len(whole), 64):
                        self.wfile.write(whole[start:start + 64])
                        self.wfile.flush()
                        time.sleep(script.trickle)
                self.close_connection = True
                return
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False  # server_close() then waits for a reply still trickling
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield script, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def api(base: str, **options: Any) -> Embedder:
    return parse_embedder("openai:text-embedding-3-small", base_url=base, backoff=0, **options)
