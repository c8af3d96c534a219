"""A real uvicorn server on 127.0.0.1 in a thread, configured as ``glassrag serve`` runs it.

Port 0: the OS picks a free port, read back once uvicorn is listening (no race). The
connection limits (header timeout, keep-alive, max connections) come from the app's own
``[server]`` settings through :func:`glassrag.interfaces.http.serve.uvicorn_config`.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from glassrag.interfaces.http.serve import uvicorn_config
from glassrag.settings import ServerSettings


class LiveServer:
    def __init__(self, app: Any, settings: ServerSettings | None = None) -> None:
        if settings is None:
            settings = app.state.kb.settings.server
        config = uvicorn_config(app, "127.0.0.1", 0, settings, log_level="warning")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            assert self._thread.is_alive(), "uvicorn stopped while starting"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def connect(self, timeout: float = 10.0) -> socket.socket:
        """A raw TCP connection to the server (for requests no HTTP client would send)."""
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP/1.1 response (status, lower-cased headers, body) from ``sock``.

    The body is read up to Content-Length, or to the end of the connection.
    """
    data = b""
    while b"\r\n\r\n" not in data:
        block = sock.recv(65536)
        if not block:
            raise ConnectionError(f"closed before a complete response: {data!r}")
        data += block
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {k.strip().lower(): v.strip()
               for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(body) < length:
        block = sock.recv(65536)
        if not block:
            break
        body += block
    return status, headers, body
