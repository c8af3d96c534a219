"""``glassrag serve`` as a real process on 127.0.0.1, for the tests that run several."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServeProcess:
    """One server process; its output goes to ``serve.log`` in its knowledge-base folder."""

    def __init__(self, kb_dir: Path, env: dict[str, str] | None = None) -> None:
        self.kb_dir = kb_dir
        self.env = {**os.environ, **(env or {})}
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> ServeProcess:
        self.port = free_port()
        log = open(self.kb_dir / "serve.log", "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "glassrag", "--kb", str(self.kb_dir), "serve",
             "--port", str(self.port)], stdout=log, stderr=log, env=self.env)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"serve exited: {self.log()[-2000:]}"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            assert time.monotonic() < deadline, f"serve did not start: {self.log()[-2000:]}"
            time.sleep(0.1)

    def log(self) -> str:
        return (self.kb_dir / "serve.log").read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no shutdown of any kind."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)
        assert self.proc.returncode == -signal.SIGKILL

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)

    def request(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        return httpx.request(method, f"{self.url}{path}", timeout=120,
                             headers={"Authorization": f"Bearer {token}"}, **kwargs)
