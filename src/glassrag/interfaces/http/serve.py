"""Running an ASGI app under uvicorn with connection limits (``glassrag serve`` and
``glassrag mcp --transport streamable-http``).

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive``, but it starts no
timer while a request's headers are arriving, and any byte received cancels the keep-alive
timer: a client sending nothing, or one header byte at a time, holds its connection for
ever (1,000 such connections stayed open for 40 s and more). The protocol here closes a
connection whose request headers are not complete ``header_timeout`` seconds after it
opened or after its previous response ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

from glassrag.settings import ServerSettings

# Request headers larger than this are refused (uvicorn's h11 default, stated here).
MAX_HEADER_BYTES = 16 * 1024


def header_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing connections whose request headers take too long."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()  # the next request's headers get the same time

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(seconds, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return HeaderTimeoutProtocol


def uvicorn_config(app: Any, host: str, port: int, settings: ServerSettings,
                   log_level: str = "info") -> Any:
    """A ``uvicorn.Config`` for ``app`` with the ``[server]`` connection limits."""
    import uvicorn

    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level,
        http=header_timeout_protocol(settings.header_timeout),
        ws="none",  # no route serves websockets
        timeout_keep_alive=settings.keep_alive_timeout,
        limit_concurrency=settings.max_connections,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        server_header=False,
    )


def serve(app: Any, host: str, port: int, settings: ServerSettings) -> None:
    """Serve ``app`` until interrupted."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host, port, settings)).run()
