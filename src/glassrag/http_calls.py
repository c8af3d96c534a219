"""How glassrag calls a model server over HTTP: bounded retries, and a deadline per request.

Both the LLM answerer (:mod:`glassrag.llm.client`, through the ``openai`` SDK) and the
OpenAI-compatible embedder (:mod:`glassrag.dense.openai_embedder`, through urllib) use this
module. It lives at the top of the package, beside ``errors`` and ``locks``, because dense
retrieval must not depend on the answer side: it imports only the standard library.

* :class:`RetryPolicy` and :func:`with_retries`: which failures are transient (a timeout, a
  connection error, HTTP 408, 409, 429 and 5xx, the statuses the ``openai`` SDK itself
  retries) and how long to wait before trying again: the server's ``Retry-After`` (seconds,
  an HTTP date, or ``Retry-After-Ms``), capped, else an exponential backoff, capped.
* :class:`Deadline`: the ``timeout`` of either client bounds each connect, read and write, so
  a server that trickles its reply a few bytes at a time can hold a request for as long as it
  likes. A deadline bounds the whole request, connect to last byte: when it passes, the
  sockets the request uses are shut down, which ends any read blocked on them; the client
  then fails as on a dropped connection, and :attr:`Deadline.expired` tells the two apart.
"""

from __future__ import annotations

import contextlib
import email.utils
import socket
import threading
import time
from collections.abc import Callable, Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import urllib.request

__all__ = ["Deadline", "RetryPolicy", "current_deadline", "open_url", "transient_status",
           "with_retries"]

T = TypeVar("T")


def transient_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: 408, 409, 429 and 5xx."""
    return status in (408, 409, 429) or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` tries after the first; waits of ``base * 2**n`` seconds up to ``cap``, or
    the server's ``Retry-After`` up to ``retry_after_cap`` (a server asking for a longer wait
    is not waited for that long)."""

    retries: int
    base: float = 0.5
    cap: float = 8.0
    retry_after_cap: float = 30.0

    def wait(self, retry: int, headers: Mapping[str, str]) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first) after a reply
        with these (lower-case) ``headers``."""
        wanted = _retry_after(headers)
        if wanted is not None:
            return min(max(wanted, 0.0), self.retry_after_cap)
        return min(self.cap, self.base * 2 ** retry)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        if "retry-after" in headers:
            value = headers["retry-after"]
            try:
                return float(value)
            except ValueError:
                return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        pass
    return None


def with_retries(send: Callable[[int], T], retry_after: Callable[[T], Mapping[str, str] | None],
                 policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep) -> T:
    """``send(try_number)`` until a result is kept or the retries are spent; return the last.

    ``retry_after(result)`` is None for a result to keep (a success, or a failure not worth
    retrying), else the headers the wait is read from (``{}`` when there are none).
    """
    for attempt in range(policy.retries + 1):
        result = send(attempt)
        headers = retry_after(result)
        if headers is None or attempt == policy.retries:
            return result
        sleep(policy.wait(attempt, headers))
    raise AssertionError("unreachable")  # pragma: no cover - the loop always returns


# -- the deadline of one request ---------------------------------------------------------

_CURRENT: ContextVar[Deadline | None] = ContextVar("glassrag_deadline", default=None)


def current_deadline() -> Deadline | None:
    """The deadline of the request this thread is making, if any."""
    return _CURRENT.get()


class Deadline:
    """At most ``seconds`` for one request; use as ``with Deadline(s) as deadline: ...``.

    Inside the block, :meth:`watch` the sockets the request may use (a client does it as it
    connects); once ``seconds`` have passed they are shut down.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._groups: list[Collection[socket.socket]] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._token: Any = None

    def __enter__(self) -> Deadline:
        self._timer.start()
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _CURRENT.reset(self._token)

    def watch(self, sockets: Collection[socket.socket]) -> None:
        """Shut these sockets down when the deadline passes (at once if it has). A live
        collection may be given: sockets added to it later are covered too."""
        with self._lock:
            self._groups.append(sockets)
            if self.expired:
                _shut(sockets)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sockets in self._groups:
                _shut(sockets)


def _shut(sockets: Collection[socket.socket]) -> None:
    for sock in list(sockets):
        # The plain socket's own method, also for a TLS one: it wakes a blocked read at once
        # and leaves the TLS object to the thread that is using it.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


# -- urllib under a deadline -------------------------------------------------------------


def open_url(request: urllib.request.Request, timeout: float, deadline: Deadline) -> Any:
    """``urllib.request.urlopen(request, timeout=timeout)``, its connection watched by
    ``deadline`` from the moment it connects."""
    # Imported here: urllib.request brings ssl and http.client, which only the embedder needs.
    import urllib.request
    from http import client as http_client

    class Connection(http_client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            deadline.watch([self.sock])

    class SecureConnection(http_client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            deadline.watch([self.sock])

    class Handler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Connection, req)

    class SecureHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(SecureConnection, req)  # the default TLS context

    return urllib.request.build_opener(Handler, SecureHandler).open(request, timeout=timeout)

